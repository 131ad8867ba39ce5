//! FROSTT `.tns`: any bytes either parse or give an error, with dimensions inferred or
//! given (the first byte chooses); what parses has every coordinate inside its dimensions.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sparsec::io::parse_tns;

fuzz_target!(|data: &[u8]| {
    let Some((&choice, text)) = data.split_first() else {
        return;
    };
    let dims: Vec<usize> = (0..usize::from(choice % 4)).map(|m| 2 + m).collect();
    let given = (choice & 4 != 0).then_some(&dims[..]);
    if let Ok(coo) = parse_tns("fuzz.tns", text, given) {
        coo.validate()
            .expect("a parsed tensor's coordinates fit its dimensions");
    }
});
