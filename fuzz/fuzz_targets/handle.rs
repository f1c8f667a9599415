//! The whole `Gatekeeper::handle` path: scripts of datagrams from many sources to every local
//! address over time (see `rasgk_fuzz`); no panic, and no cap, bound or count broken.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| rasgk_fuzz::run(data));
