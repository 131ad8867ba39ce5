//! `sparsec info FILE`: shape and sparsity statistics.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use miette::{IntoDiagnostic, WrapErr};
use sparsec::io::{self, TensorFile};
use sparsec::tensor::Coo;

const EXAMPLES: &str = "\
OUTPUT
  shape, stored entries (as in the file) and entries after symmetric expansion, value field,
  symmetry, explicit zeros; for matrices the entries per row (min / mean / max), empty rows,
  bandwidth (max |i - j|) and the number of diagonals touched; for higher orders the same
  per mode (entries per slice, empty slices).

EXAMPLES
  sparsec info bcsstk13.mtx
  sparsec info fao_trade.tns
  sparsec info A.spt";

#[derive(clap::Args)]
#[command(after_long_help = EXAMPLES)]
pub struct InfoArgs {
    /// Tensor file: .mtx (MatrixMarket), .tns (FROSTT) or .spt (sparsec binary).
    pub file: PathBuf,

    /// Benchmarking: read the file N times and report the median read time.
    #[arg(long, value_name = "N", hide_short_help = true)]
    pub repeat: Option<usize>,
}

pub fn run(args: &InfoArgs) -> miette::Result<()> {
    let mut out = String::new();
    let file = match args.repeat {
        Some(n) => {
            let mut times = Vec::with_capacity(n.max(1));
            let mut file = None;
            for _ in 0..n.max(1) {
                let start = Instant::now();
                let f = io::read_any(&args.file)?;
                times.push(start.elapsed());
                file = Some(f);
            }
            times.sort();
            let median = times[times.len() / 2];
            let bytes = std::fs::metadata(&args.file).map_or(0, |m| m.len());
            let mb_s = bytes as f64 / 1e6 / median.as_secs_f64().max(1e-12);
            let _ = writeln!(
                out,
                "read time:        median {} (min {}, {} reads, {mb_s:.0} MB/s)",
                show(median),
                show(times[0]),
                times.len()
            );
            let _ = writeln!(out, "read_median_seconds: {:.9}", median.as_secs_f64());
            file.expect("at least one read")
        }
        None => io::read_any(&args.file)?,
    };
    describe(&mut out, args, &file);
    std::io::stdout()
        .lock()
        .write_all(out.as_bytes())
        .into_diagnostic()
        .wrap_err("cannot write to standard output")
}

fn show(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s < 1e-3 {
        format!("{:.1} us", s * 1e6)
    } else if s < 1.0 {
        format!("{:.3} ms", s * 1e3)
    } else {
        format!("{s:.3} s")
    }
}

fn describe(out: &mut String, args: &InfoArgs, file: &TensorFile) {
    let coo = file.coo();
    let dims: Vec<String> = coo.dims.iter().map(usize::to_string).collect();
    let _ = writeln!(out, "file:             {}", args.file.display());
    match file {
        TensorFile::MatrixMarket(m) => {
            let h = &m.header;
            let _ = writeln!(out, "type:             MatrixMarket {}", h.layout);
            let _ = writeln!(out, "field:            {}", h.field);
            let _ = writeln!(out, "symmetry:         {}", h.symmetry);
            let _ = writeln!(out, "shape:            {}", dims.join(" x "));
            let _ = writeln!(out, "stored entries:   {}", h.stored_entries);
            let _ = writeln!(
                out,
                "entries:          {} (after symmetric expansion)",
                coo.len()
            );
        }
        TensorFile::Frostt(_) => {
            let _ = writeln!(out, "type:             FROSTT text");
            let _ = writeln!(out, "field:            real");
            let _ = writeln!(out, "symmetry:         general");
            let _ = writeln!(out, "shape:            {}", dims.join(" x "));
            let _ = writeln!(out, "stored entries:   {}", coo.len());
            let _ = writeln!(out, "entries:          {}", coo.len());
        }
        TensorFile::Binary(t) => {
            let _ = writeln!(out, "type:             sparsec binary");
            let _ = writeln!(out, "format:           {}", t.format().spelling());
            let _ = writeln!(out, "field:            {}", t.value_type().c_name());
            let _ = writeln!(out, "shape:            {}", dims.join(" x "));
            let _ = writeln!(
                out,
                "stored values:    {} (padding included)",
                t.stored_values()
            );
            let _ = writeln!(
                out,
                "entries:          {} (stored components; padding counts as explicit zeros)",
                coo.len()
            );
        }
    }
    let _ = writeln!(out, "order:            {}", coo.order());
    let total: f64 = coo.dims.iter().map(|&d| d as f64).product();
    if total > 0.0 {
        let _ = writeln!(out, "density:          {:.3e}", coo.len() as f64 / total);
    }
    let zeros = coo.values.iter().filter(|&&v| v == 0.0).count();
    let _ = writeln!(out, "explicit zeros:   {zeros}");
    match coo.order() {
        2 => matrix_stats(out, &coo),
        0 | 1 => {}
        _ => mode_stats(out, &coo),
    }
}

/// Entry counts per index of `mode`: (min, max, non-empty indices), over all `size` indices.
fn slice_counts(coo: &Coo, mode: usize) -> (usize, usize, usize) {
    let size = coo.dims[mode];
    let n = coo.order();
    if size == 0 {
        return (0, 0, 0);
    }
    if size <= (1 << 26).max(4 * coo.len()) {
        let mut counts = vec![0usize; size];
        for e in 0..coo.len() {
            counts[coo.coords[e * n + mode] as usize] += 1;
        }
        let min = counts.iter().copied().min().unwrap_or(0);
        let max = counts.iter().copied().max().unwrap_or(0);
        let used = counts.iter().filter(|&&c| c > 0).count();
        (min, max, used)
    } else {
        // Huge, sparse dimension: count by sorting the indices.
        let mut idx: Vec<i64> = (0..coo.len()).map(|e| coo.coords[e * n + mode]).collect();
        idx.sort_unstable();
        let (mut used, mut max, mut run) = (0, 0, 0);
        for k in 0..idx.len() {
            run += 1;
            if k + 1 == idx.len() || idx[k + 1] != idx[k] {
                used += 1;
                max = max.max(run);
                run = 0;
            }
        }
        // More indices than entries, so some slice is empty.
        (0, max, used)
    }
}

/// Entries per slice of a mode with `slices` slices (0 for an empty mode).
fn mean_per_slice(coo: &Coo, slices: usize) -> f64 {
    if slices > 0 {
        coo.len() as f64 / slices as f64
    } else {
        0.0
    }
}

fn matrix_stats(out: &mut String, coo: &Coo) {
    let (rows, cols) = (coo.dims[0], coo.dims[1]);
    let (min, max, used) = slice_counts(coo, 0);
    let mean = mean_per_slice(coo, rows);
    let _ = writeln!(
        out,
        "entries per row:  min {min}, mean {mean:.2}, max {max}"
    );
    let _ = writeln!(out, "empty rows:       {}", rows - used);
    let (_, _, used_cols) = slice_counts(coo, 1);
    let _ = writeln!(out, "empty columns:    {}", cols - used_cols);
    let mut bandwidth = 0u64;
    let mut offsets: Vec<i64> = Vec::with_capacity(coo.len());
    for e in 0..coo.len() {
        let d = coo.coords[2 * e + 1] - coo.coords[2 * e];
        bandwidth = bandwidth.max(d.unsigned_abs());
        offsets.push(d);
    }
    offsets.sort_unstable();
    offsets.dedup();
    let _ = writeln!(out, "bandwidth:        {bandwidth} (max |i - j|)");
    let _ = writeln!(out, "diagonals:        {}", offsets.len());
}

fn mode_stats(out: &mut String, coo: &Coo) {
    let _ = writeln!(
        out,
        "per mode:         {:>5} {:>12} {:>12} {:>10} {:>12} {:>10}",
        "mode", "size", "empty", "min/slice", "mean/slice", "max/slice"
    );
    for mode in 0..coo.order() {
        let size = coo.dims[mode];
        let (min, max, used) = slice_counts(coo, mode);
        let mean = mean_per_slice(coo, size);
        let _ = writeln!(
            out,
            "                  {mode:>5} {size:>12} {:>12} {min:>10} {mean:>12.2} {max:>10}",
            size - used
        );
    }
}
