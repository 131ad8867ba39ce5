//! MatrixMarket: any bytes either parse or give an error; what parses stores in COO (memory
//! in proportion to the entries) and reads back the same entries, and stores in CSR and
//! dense (memory in proportion to the dimensions) or is refused with an error, under a
//! limited address space (`common/memory.rs`).
#![no_main]

#[path = "common/memory.rs"]
mod memory;

use libfuzzer_sys::fuzz_target;
use sparsec::format::Format;
use sparsec::io::parse_matrix_market;
use sparsec::tensor::{Tensor, ValueType};

fuzz_target!(|data: &[u8]| {
    memory::limit();
    let Ok(matrix) = parse_matrix_market("fuzz.mtx", data) else {
        return;
    };
    let coo = &matrix.coo;
    let format = Format::parse("coo", coo.order()).expect("coo has every order");
    if let Ok(tensor) = Tensor::from_coo(coo, &format, ValueType::F64) {
        assert!(tensor.to_coo().len() <= coo.len(), "storing added entries");
    }
    for letters in ["ds", "dd"] {
        let letters = &letters[..coo.order().min(2)];
        let Ok(format) = Format::parse(letters, coo.order()) else {
            continue;
        };
        if let Ok(tensor) = Tensor::from_coo(coo, &format, ValueType::F64) {
            assert_eq!(
                tensor.dims(),
                &coo.dims[..],
                "storing changed the dimensions"
            );
        }
    }
});
