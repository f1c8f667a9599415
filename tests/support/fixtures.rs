//! The fixture files of a folder of `fixtures/`, as the tests that check every one of them
//! list them.

#![allow(dead_code)] // each test binary uses a different part of this module

use std::path::{Path, PathBuf};

/// `fixtures/<folder>` of this checkout.
pub fn folder(folder: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(folder)
}

/// The `.toml` files of `fixtures/<folder>` (not of its subfolders) whose names start with
/// `prefix`, sorted.
pub fn toml_files(folder_name: &str, prefix: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(folder(folder_name))
        .unwrap_or_else(|e| panic!("fixtures/{folder_name} is readable: {e}"))
        .map(|entry| entry.expect("directory entry").path())
        .filter(|path| {
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            path.is_file() && name.starts_with(prefix) && name.ends_with(".toml")
        })
        .collect();
    files.sort();
    files
}

/// A fixture's file name.
pub fn file_name(path: &Path) -> &str {
    path.file_name()
        .and_then(|n| n.to_str())
        .expect("UTF-8 file name")
}
