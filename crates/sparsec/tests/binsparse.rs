//! binsparse HDF5 files: every format binsparse can describe survives a round trip with
//! its format and values, named formats are written under their binsparse names, the rest
//! as custom descriptors, and malformed files are refused with a reason.
#![cfg(feature = "binsparse")]

mod common;

use rand::rngs::StdRng;
use rand::SeedableRng;
use sparsec::format::Format;
use sparsec::io;
use sparsec::tensor::{Tensor, ValueType};

fn descriptor(path: &std::path::Path) -> serde_json::Value {
    let file = hdf5::File::open(path).unwrap();
    let text: hdf5::types::VarLenUnicode = file.attr("binsparse").unwrap().read_scalar().unwrap();
    serde_json::from_str(text.as_str()).unwrap()
}

#[test]
fn every_describable_format_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = StdRng::seed_from_u64(7);
    let cases: &[(&[usize], &str, &str)] = &[
        (&[9], "dense", "DVEC"),
        (&[9], "sv", "CVEC"),
        (&[7, 5], "dense", "DMAT"),
        (&[7, 5], "dd:1,0", "DMATC"),
        (&[7, 5], "csr", "CSR"),
        (&[7, 5], "csc", "CSC"),
        (&[7, 5], "dcsr", "DCSR"),
        (&[7, 5], "dcsc", "DCSC"),
        (&[7, 5], "coo", "COO"),
        (&[7, 5], "uq:1,0", "COOC"),
        (&[7, 5], "sd", "custom"),
        (&[4, 5, 6], "csf", "custom"),
        (&[4, 5, 6], "dss:2,0,1", "custom"),
        (&[4, 5, 6], "coo", "custom"),
        (&[0, 3], "csr", "CSR"),
        (&[1, 1], "dcsr", "DCSR"),
    ];
    for (k, &(dims, spelling, name)) in cases.iter().enumerate() {
        let format = Format::parse(spelling, dims.len()).unwrap();
        let coo = common::random_coo(&mut rng, dims, 0.3);
        for value_type in [ValueType::F64, ValueType::F32] {
            let tensor = Tensor::from_coo(&coo, &format, value_type).unwrap();
            let path = dir.path().join(format!("t{k}.bsp.h5"));
            io::write_binsparse(&path, &tensor).unwrap();
            let desc = descriptor(&path);
            assert_eq!(desc["binsparse"]["format"], name, "{spelling}");
            let back = io::read_binsparse(&path).unwrap();
            assert_eq!(back.format(), tensor.format(), "{spelling}");
            assert_eq!(back.value_type(), value_type);
            assert_eq!(back, tensor, "{spelling} {value_type:?}");
        }
    }
}

/// binsparse's `fill_value` is the tensor's fill value, written and read back; a tensor
/// whose fill value is 0 writes none.
#[test]
fn fill_values_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = StdRng::seed_from_u64(8);
    let coo = common::random_coo(&mut rng, &[7, 5], 0.3);
    for (spelling, fill) in [("csr", f64::INFINITY), ("sd", -2.5), ("dcsr", 0.0)] {
        let format = Format::parse(spelling, 2).unwrap();
        for value_type in [ValueType::F64, ValueType::F32] {
            let tensor = Tensor::from_coo(&coo, &format, value_type)
                .unwrap()
                .with_fill(fill)
                .unwrap();
            let path = dir.path().join(format!("{spelling}.bsp.h5"));
            io::write_binsparse(&path, &tensor).unwrap();
            let desc = descriptor(&path);
            assert_eq!(desc["binsparse"]["fill"] == true, fill != 0.0, "{spelling}");
            let back = io::read_binsparse(&path).unwrap();
            assert_eq!(back.fill(), fill, "{spelling}");
            assert_eq!(back, tensor, "{spelling} {value_type:?}");
        }
    }
}

#[test]
fn formats_without_a_descriptor_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let coo = sparsec::tensor::Coo::new(vec![4, 4], vec![0, 0, 1, 1], vec![1.0, 2.0]).unwrap();
    for spelling in ["hash", "ell", "dia", "bcsr:2x2", "db", "sell:8"] {
        let tensor =
            Tensor::from_coo(&coo, &Format::parse(spelling, 2).unwrap(), ValueType::F64).unwrap();
        let err = io::write_binsparse(dir.path().join("x.h5"), &tensor).unwrap_err();
        assert!(
            err.to_string().contains("binsparse has no layout"),
            "{spelling}: {err}"
        );
    }
}

#[test]
fn malformed_files_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let write =
        |name: &str, desc: serde_json::Value, arrays: &[(&str, Vec<i64>)], values: &[f64]| {
            let path = dir.path().join(name);
            let file = hdf5::File::create(&path).unwrap();
            for (n, a) in arrays {
                file.new_dataset_builder()
                    .with_data(a.as_slice())
                    .create(*n)
                    .unwrap();
            }
            file.new_dataset_builder()
                .with_data(values)
                .create("values")
                .unwrap();
            let text: hdf5::types::VarLenUnicode = desc.to_string().parse().unwrap();
            file.new_attr::<hdf5::types::VarLenUnicode>()
                .create("binsparse")
                .unwrap()
                .write_scalar(&text)
                .unwrap();
            path
        };
    let types =
        serde_json::json!({"pointers_to_1": "int64", "indices_1": "int64", "values": "float64"});
    let csr = |shape: serde_json::Value, n: usize| {
        serde_json::json!({"binsparse": {"version": "0.1", "format": "CSR", "shape": shape,
            "number_of_stored_values": n, "data_types": types}})
    };
    let cases = [
        (
            write(
                "ptr.h5",
                csr(serde_json::json!([2, 2]), 2),
                &[("pointers_to_1", vec![0, 3, 2]), ("indices_1", vec![0, 1])],
                &[1.0, 2.0],
            ),
            "pointers_to_1",
        ),
        (
            write(
                "range.h5",
                csr(serde_json::json!([2, 2]), 2),
                &[("pointers_to_1", vec![0, 1, 2]), ("indices_1", vec![0, 7])],
                &[1.0, 2.0],
            ),
            "outside",
        ),
        (
            write(
                "count.h5",
                csr(serde_json::json!([2, 2]), 3),
                &[("pointers_to_1", vec![0, 1, 2]), ("indices_1", vec![0, 1])],
                &[1.0, 2.0],
            ),
            "number_of_stored_values",
        ),
        (
            write(
                "missing.h5",
                csr(serde_json::json!([2, 2]), 2),
                &[("pointers_to_1", vec![0, 1, 2])],
                &[1.0, 2.0],
            ),
            "indices_1",
        ),
        (
            write(
                "huge.h5",
                serde_json::json!({"binsparse": {"version": "0.1", "format": "DMAT",
                "shape": [1u64 << 40, 1u64 << 40], "number_of_stored_values": 1,
                "data_types": {"values": "float64"}}}),
                &[],
                &[1.0],
            ),
            "more positions",
        ),
        (
            write(
                "version.h5",
                serde_json::json!({"binsparse": {"version": "2.0", "format": "DVEC",
                "shape": [1], "number_of_stored_values": 1, "data_types": {"values": "float64"}}}),
                &[],
                &[1.0],
            ),
            "version",
        ),
        (
            write("shape.h5", csr(serde_json::json!([2]), 2), &[], &[1.0, 2.0]),
            "dimensions",
        ),
    ];
    for (path, expected) in cases {
        let err = io::read_binsparse(&path).unwrap_err().to_string();
        assert!(err.contains(expected), "{}: {err}", path.display());
    }
}

#[test]
fn real_matrix_converts_and_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    let m = io::read_matrix_market(common::shared_data("matrices/bcsstk13.mtx")).unwrap();
    for spelling in ["csr", "csc", "coo", "dcsr"] {
        let format = Format::parse(spelling, 2).unwrap();
        let tensor = Tensor::from_coo(&m.coo, &format, ValueType::F64).unwrap();
        let path = dir.path().join(format!("bcsstk13.{spelling}.bsp.h5"));
        io::write_any(&path, &tensor).unwrap();
        let back = match io::read_any(&path).unwrap() {
            io::TensorFile::Binary(t) => t,
            other => panic!("{other:?}"),
        };
        assert_eq!(back, tensor);
    }
}
