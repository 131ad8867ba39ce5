//! The Rust API chapter of the guide (`docs/guide/src/rust-api.md`) shows
//! `examples/guide_api.rs` and the command that runs it on the karate club matrix: the
//! example, which `cargo test` builds beside this test, runs and prints what it promises.

#[path = "common/shared_data.rs"]
mod shared_data;

use std::process::Command;

#[test]
fn the_guides_rust_example_runs_on_the_shared_matrix() {
    let test = std::env::current_exe().expect("the test's path");
    let examples = test
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>/deps")
        .join("examples");
    let example = examples.join(format!("guide_api{}", std::env::consts::EXE_SUFFIX));
    assert!(
        example.is_file(),
        "{} is missing: `cargo test -p sparsec` builds the examples beside the tests",
        example.display()
    );
    let output = Command::new(&example)
        .arg(shared_data::shared_data("matrices/karate.mtx"))
        .output()
        .expect("the example starts");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let difference: f64 = stdout
        .trim()
        .strip_prefix("y has 34 entries; largest difference from the reference ")
        .and_then(|rest| rest.parse().ok())
        .unwrap_or_else(|| panic!("unexpected output: {stdout}"));
    assert!(difference <= 1e-12, "{stdout}");
}
