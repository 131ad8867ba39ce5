//! `.spt` (binary, any format): any bytes either decode to a valid tensor or give an error.
//! The input is a file without its checksum, which the target appends, so that mutations
//! reach the validation of the levels instead of stopping at a checksum mismatch (the seeds
//! are `.spt` files less their last 32 bytes). A decoded tensor's storage is walked by its
//! level functions (what kernels do), and encoding it again gives a file that decodes to
//! the same entries.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sparsec::io::{decode_spt, encode_spt};

fuzz_target!(|content: &[u8]| {
    let mut file = content.to_vec();
    file.extend_from_slice(blake3::hash(content).as_bytes());
    let Ok(tensor) = decode_spt("fuzz.spt", &file) else {
        return;
    };
    let entries = tensor.to_coo();
    let again = decode_spt("again.spt", &encode_spt(&tensor))
        .expect("re-encoded tensor decodes")
        .to_coo();
    // Bit patterns, so that stored NaNs compare equal to themselves.
    let bits = |values: &[f64]| values.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
    assert_eq!(
        again.dims, entries.dims,
        "dimensions change through encode and decode"
    );
    assert_eq!(
        again.coords, entries.coords,
        "coordinates change through encode and decode"
    );
    assert_eq!(
        bits(&again.values),
        bits(&entries.values),
        "values change through encode and decode"
    );
});
