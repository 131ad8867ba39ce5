//! `.h5` (binsparse) files on the command line: converted both ways when the `binsparse`
//! feature is on, refused with the way to get it when it is off.

mod common;
use common::shared_data;

use std::process::{Command, Output};

fn sparsec(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sparsec"))
        .args(args)
        .output()
        .expect("run sparsec")
}

#[cfg(feature = "binsparse")]
#[test]
fn convert_to_binsparse_and_back() {
    use sparsec::io;
    let dir = tempfile::tempdir().unwrap();
    let mtx = shared_data("matrices/west0479.mtx");
    let h5 = dir.path().join("west0479.bsp.h5");
    let back = dir.path().join("back.mtx");
    for format in ["csr", "csc", "coo", "dcsc"] {
        let out = sparsec(&[
            "convert",
            mtx.to_str().unwrap(),
            h5.to_str().unwrap(),
            "--format",
            format,
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let out = sparsec(&["convert", h5.to_str().unwrap(), back.to_str().unwrap()]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let original = io::read_matrix_market(&mtx).unwrap().coo;
        let mut original = original.clone();
        original.sort_and_sum();
        let mut again = io::read_matrix_market(&back).unwrap().coo;
        again.sort_and_sum();
        assert_eq!(again, original, "{format}");
    }
}

#[cfg(not(feature = "binsparse"))]
#[test]
fn binsparse_files_name_the_feature_they_need() {
    let dir = tempfile::tempdir().unwrap();
    let mtx = shared_data("matrices/karate.mtx");
    let h5 = dir.path().join("karate.h5");
    let out = sparsec(&["convert", mtx.to_str().unwrap(), h5.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("`binsparse` feature"), "{err}");
}
