//! binsparse HDF5 files: any descriptor and any datasets either read as a valid tensor or
//! give an error. The files are well-formed HDF5, written by the HDF5 library from the
//! input, so that mutations reach sparsec's reading of the binsparse content (its JSON
//! descriptor, the datasets' presence, types, lengths and values) rather than the HDF5
//! library's own parsing, which sparsec does not own.
//!
//! The input: a byte choosing each of four datasets' presence and element type, a
//! length-prefixed descriptor text (lossily UTF-8), then the datasets' elements, taken in
//! turn from the rest. Seeds are files made from valid tensors.
#![no_main]

use libfuzzer_sys::fuzz_target;

/// The datasets a binsparse matrix or vector uses.
const DATASETS: [&str; 5] = [
    "values",
    "indices_0",
    "indices_1",
    "pointers_to_1",
    "indices_2",
];

fuzz_target!(|input: &[u8]| {
    let Some((&choice, rest)) = input.split_first() else {
        return;
    };
    let Some((&len, rest)) = rest.split_first() else {
        return;
    };
    let text_len = (len as usize * 4).min(rest.len());
    let (text, mut data) = rest.split_at(text_len);
    let text = String::from_utf8_lossy(text).into_owned();
    let dir = std::env::temp_dir().join(format!("sparsec-fuzz-binsparse-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join("fuzz.bsp.h5");
    {
        let Ok(file) = hdf5::File::create(&path) else {
            return;
        };
        if let Ok(text) = text.parse::<hdf5::types::VarLenUnicode>() {
            let _ = file
                .new_attr::<hdf5::types::VarLenUnicode>()
                .create("binsparse")
                .and_then(|a| a.write_scalar(&text));
        }
        for (n, name) in DATASETS.iter().enumerate() {
            // Two bits a dataset: absent, 64-bit integers, 8-bit integers, doubles.
            let kind = (choice as usize >> (2 * (n % 4))) & 3;
            let count = data.first().map_or(0, |&c| c as usize % 16);
            data = data.get(1..).unwrap_or(&[]);
            let taken = count.min(data.len() / 8);
            let (elements, more) = data.split_at(taken * 8);
            data = more;
            let words = elements
                .chunks_exact(8)
                .map(|c| i64::from_le_bytes(c.try_into().expect("8 bytes")));
            let builder = file.new_dataset_builder();
            let _ = match kind {
                1 => builder
                    .with_data(&words.map(|w| w % 64).collect::<Vec<i64>>())
                    .create(*name),
                2 => builder
                    .with_data(&words.map(|w| w as i8).collect::<Vec<i8>>())
                    .create(*name),
                3 => builder
                    .with_data(&words.map(|w| w as f64).collect::<Vec<f64>>())
                    .create(*name),
                _ => continue,
            };
        }
    }
    // An error is a valid answer; a tensor must walk and convert like any other.
    if let Ok(tensor) = sparsec::io::read_binsparse(&path) {
        let entries = tensor.to_coo();
        assert_eq!(entries.values.len() * entries.order(), entries.coords.len());
    }
    let _ = std::fs::remove_file(&path);
});
