//! Format strings: any text, for a tensor of order 0 to 5 (the first byte), either parses
//! or gives an error. A format that parses stores a small tensor with duplicates and an
//! explicit zero, or says why it cannot, and reads back the summed entries.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sparsec::format::Format;
use sparsec::tensor::{Coo, Tensor, ValueType};

fuzz_target!(|data: &[u8]| {
    let Some((&choice, text)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(text) else {
        return;
    };
    let order = usize::from(choice % 6);
    let Ok(format) = Format::parse(text, order) else {
        return;
    };
    // Dimensions 3, 4, 5, ...: the entries are the diagonal, one duplicate and a zero.
    let dims: Vec<usize> = (0..order).map(|m| 3 + m).collect();
    let mut coords = Vec::new();
    let mut values = Vec::new();
    for (k, value) in [(0, 1.0), (1, 2.0), (2, 0.0), (1, 3.0)] {
        coords.extend((0..order).map(|_| k as i64));
        values.push(value);
    }
    if order == 0 {
        coords.clear();
    }
    let coo = Coo::new(dims, coords, values).expect("coordinates fit");
    if let Ok(tensor) = Tensor::from_coo(&coo, &format, ValueType::F64) {
        let mut expected = coo.clone();
        expected.sort_and_sum();
        // Storage order is the format's (mode orderings, hashed levels): sort to compare.
        let mut stored = tensor.to_coo();
        stored.sort_and_sum();
        assert!(
            stored.max_difference(&expected) == 0.0,
            "format {format} stores {stored:?}, expected {expected:?}"
        );
    }
});
