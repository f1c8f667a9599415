//! Where the real third-party captures are: `../shared/captures/` beside the checkout (as CI
//! lays it out), or `/work/shared/captures` for a checkout elsewhere on a developer machine.
//! They are read from there at test time and never copied into the repository; where they
//! come from is in docs/testing.md, *Third-party captures*. A test that needs one and does not
//! find it skips, saying so on standard error.
#![allow(dead_code)] // each test binary uses a different part of this module

use std::path::{Path, PathBuf};

/// Where the captures are looked for, as the skip messages say it.
pub const LOOKED_IN: &str =
    "../shared/captures beside the checkout (docs/testing.md: Third-party captures)";

/// The shared folder of real captures, if it is there.
pub fn dir() -> Option<PathBuf> {
    let beside = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/captures");
    [beside, PathBuf::from("/work/shared/captures")]
        .into_iter()
        .find(|d| d.is_dir())
}

/// A file of the shared folder, or `None` after saying why test `test` skips it.
pub fn file(test: &str, name: &str) -> Option<PathBuf> {
    match dir().map(|d| d.join(name)) {
        Some(path) if path.is_file() => Some(path),
        _ => {
            eprintln!("skipping {test}: real capture {name} not found in {LOOKED_IN}");
            None
        }
    }
}
