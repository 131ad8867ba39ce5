//! Where the tests find the shared data: one definition for this crate's tests and the
//! CLI's (which include this file by path).

use std::path::{Path, PathBuf};

/// The shared data file or directory `rel` (relative to `shared/data` beside the
/// repository, `""` for the directory itself). Panics naming the missing path: a test that
/// needs the data must fail when it is absent, not pass without checking anything.
pub fn shared_data(rel: &str) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data");
    let path = root.join(rel);
    assert!(
        path.exists(),
        "shared data {} is missing (expected under {}, see its SOURCES.md); these tests need \
         it and do not skip",
        path.display(),
        root.display()
    );
    path
}
