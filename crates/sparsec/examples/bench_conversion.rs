//! How fast the tuner can move an input between formats: for each format family, the
//! median time to convert a CSR matrix to it (`Tensor::convert`, what the tuner does per
//! candidate) against building it from the coordinate list (`Tensor::from_coo`), and the
//! median time to convert it back to CSR.
//!
//! ```sh
//! cargo run --release -p sparsec --example bench_conversion -- [--runs N] FILE.mtx...
//! ```

use std::time::{Duration, Instant};

use sparsec::format::Format;
use sparsec::io;
use sparsec::tensor::{Tensor, ValueType};

/// Format families the tuner draws from, by a representative spelling.
const FAMILIES: &[(&str, &str)] = &[
    ("CSR", "ds"),
    ("CSC", "ds:1,0"),
    ("DCSR", "ss"),
    ("COO", "uq"),
    ("hashed rows", "dh"),
    ("hashed both", "hh"),
    ("BCSR 4x4", "bcsr:4x4"),
    ("BCSR 8x1", "bcsr:8x1"),
    ("ELL", "ell"),
];

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort_unstable();
    times[times.len() / 2]
}

fn time(runs: usize, mut f: impl FnMut()) -> Duration {
    median(
        (0..runs)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed()
            })
            .collect(),
    )
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut runs = 5;
    if let Some(k) = args.iter().position(|a| a == "--runs") {
        runs = args.get(k + 1).ok_or("--runs N")?.parse()?;
        args.drain(k..k + 2);
    }
    println!("input,nnz,family,format,from_csr_ms,from_coo_ms,ratio,to_csr_ms");
    for file in &args {
        let coo = io::read_any(std::path::Path::new(file))?.into_coo();
        let csr = Tensor::from_coo(&coo, &Format::parse("csr", 2)?, ValueType::F64)?;
        let name = std::path::Path::new(file)
            .file_stem()
            .map_or(file.clone(), |s| s.to_string_lossy().into_owned());
        for (family, spelling) in FAMILIES {
            let format = Format::parse(spelling, 2)?;
            let convert = time(runs, || {
                csr.convert(&format).expect("converts");
            });
            let build = time(runs, || {
                Tensor::from_coo(&coo, &format, ValueType::F64).expect("builds");
            });
            let converted = csr.convert(&format)?;
            let back = time(runs, || {
                converted.convert(csr.format()).expect("converts back");
            });
            println!(
                // Spellings with a mode order hold a comma (`ds:1,0`): quoted.
                "{name},{},{family},\"{spelling}\",{:.3},{:.3},{:.2},{:.3}",
                coo.len(),
                convert.as_secs_f64() * 1e3,
                build.as_secs_f64() * 1e3,
                convert.as_secs_f64() / build.as_secs_f64(),
                back.as_secs_f64() * 1e3
            );
        }
    }
    Ok(())
}
