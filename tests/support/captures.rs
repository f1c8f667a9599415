//! Where the real third-party captures are: the shared folder `../shared/captures/` beside
//! the checkout (CARGO_MANIFEST_DIR/../shared/captures, as CI lays it out), and nowhere
//! else. They are read from there at test time and never copied into the repository; where
//! they come from is in the docs/testing.md, *Third-party captures*. A test that needs one and does
//! not find it skips, saying why on standard error, or fails under `RASGK_REQUIRE_TOOLS=1`
//! (as a missing tshark does, tests/support/tshark.rs), so that CI cannot pass without them.
#![allow(dead_code)] // each test binary uses a different part of this module

use std::path::{Path, PathBuf};

/// Where the captures are looked for, as the skip messages say it.
pub const LOOKED_IN: &str =
    "../shared/captures beside the checkout (docs/testing.md: Third-party captures)";

/// The shared folder's path, whether or not it is there.
pub fn shared_folder() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/captures")
}

/// Skips test `test` for `why`, or fails it under `RASGK_REQUIRE_TOOLS=1`.
fn missing(test: &str, why: &str) {
    if std::env::var("RASGK_REQUIRE_TOOLS").as_deref() == Ok("1") {
        panic!("{test}: {why}, and RASGK_REQUIRE_TOOLS=1");
    }
    eprintln!("skipping {test}: {why}");
}

/// The shared folder of real captures for test `test`, or `None` after saying why the
/// test skips (a panic under `RASGK_REQUIRE_TOOLS=1`).
pub fn dir(test: &str) -> Option<PathBuf> {
    let dir = shared_folder();
    if dir.is_dir() {
        return Some(dir);
    }
    missing(test, &format!("no real captures in {LOOKED_IN}"));
    None
}

/// A file of the shared folder for test `test`, or `None` after saying why the test skips
/// (a panic under `RASGK_REQUIRE_TOOLS=1`).
pub fn file(test: &str, name: &str) -> Option<PathBuf> {
    let path = shared_folder().join(name);
    if path.is_file() {
        return Some(path);
    }
    missing(
        test,
        &format!("real capture {name} not found in {LOOKED_IN}"),
    );
    None
}
