//! Sparse polyhedral computations: any text parses or gives an error, and what parses is
//! lowered to IR or gives an error (never a panic); lowering verifies the IR it builds.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sparsec::spf::{codegen, parse_program};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(program) = parse_program(text) {
        let _ = codegen::lower(&program);
    }
});
