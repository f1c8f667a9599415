//! The routed-call core of socket mode: scripts of connections accepted and opened, frames,
//! closes, RAS requests, C-LAN faults and time over phones registered beforehand (see
//! `rasgk_fuzz::relay`); no panic, and no count, cap or command inconsistent with what the
//! glue saw.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| rasgk_fuzz::relay::run(data));
