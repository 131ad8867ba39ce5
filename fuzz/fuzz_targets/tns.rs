//! FROSTT `.tns`: any bytes either parse or give an error, with dimensions inferred or
//! given (the first byte chooses); what parses has every coordinate inside its dimensions,
//! and stores in CSF and dense (memory in proportion to the dimensions, which an index of
//! billions makes huge) or is refused with an error, under a limited address space.
#![no_main]

#[path = "common/memory.rs"]
mod memory;

use libfuzzer_sys::fuzz_target;
use sparsec::format::Format;
use sparsec::io::parse_tns;
use sparsec::tensor::{Tensor, ValueType};

fuzz_target!(|data: &[u8]| {
    memory::limit();
    let Some((&choice, text)) = data.split_first() else {
        return;
    };
    let dims: Vec<usize> = (0..usize::from(choice % 4)).map(|m| 2 + m).collect();
    let given = (choice & 4 != 0).then_some(&dims[..]);
    let Ok(coo) = parse_tns("fuzz.tns", text, given) else {
        return;
    };
    coo.validate()
        .expect("a parsed tensor's coordinates fit its dimensions");
    for name in ["csf", "dense"] {
        let Ok(format) = Format::parse(name, coo.order()) else {
            continue;
        };
        if let Ok(tensor) = Tensor::from_coo(&coo, &format, ValueType::F64) {
            assert_eq!(
                tensor.dims(),
                &coo.dims[..],
                "storing changed the dimensions"
            );
        }
    }
});
