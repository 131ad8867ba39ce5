//! Helpers shared by the CLI tests: running the built binary, and the shared data.
// Each test crate uses some of the helpers.
#![allow(dead_code, unused_imports)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

#[path = "../../../sparsec/tests/common/shared_data.rs"]
mod shared_data;
pub use shared_data::shared_data;

/// Run the built binary with its kernel cache in the temporary directory.
pub fn sparsec(args: &[&str]) -> Output {
    let cache = std::env::temp_dir().join("sparsec-cli-test-cache");
    Command::new(env!("CARGO_BIN_EXE_sparsec"))
        .args(args)
        .env(
            "SPARSEC_CACHE_DIR",
            std::env::var_os("SPARSEC_CACHE_DIR").unwrap_or(cache.into()),
        )
        .env("NO_COLOR", "1")
        .output()
        .expect("the sparsec binary runs")
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Run and require success; returns stdout.
pub fn ok(args: &[&str]) -> String {
    let out = sparsec(args);
    assert!(
        out.status.success(),
        "sparsec {args:?} failed:\n{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    text(&out.stdout)
}

/// Run and require a clean failure (non-zero exit, no panic); returns stderr.
pub fn fails(args: &[&str]) -> String {
    let out = sparsec(args);
    let stderr = text(&out.stderr);
    assert!(!out.status.success(), "sparsec {args:?} should fail");
    assert_ne!(
        out.status.code(),
        Some(101),
        "sparsec {args:?} panicked: {stderr}"
    );
    // An abort or a kill by the system leaves no exit code.
    assert!(
        out.status.code().is_some(),
        "sparsec {args:?} was killed by a signal: {stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    stderr
}

pub fn write(dir: &Path, name: &str, content: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, content).unwrap();
    path
}

/// The error's words, without the frame the report wraps its lines in.
pub fn flat(stderr: &str) -> String {
    stderr
        .replace('│', " ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}
