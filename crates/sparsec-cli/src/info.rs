//! `sparsec info FILE`: shape and sparsity statistics.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use miette::{IntoDiagnostic, WrapErr};
use sparsec::io::{self, TensorFile};
use sparsec::tensor::Coo;

const INFO_HELP: &str = "\
EXAMPLES:
  sparsec info bcsstk13.mtx
  sparsec info fao_trade.tns
  sparsec info A.spt --json

OUTPUT:
  shape, stored entries (as in the file) and entries after symmetric expansion, value field,
  symmetry, explicit zeros; for matrices the entries per row (min / mean / max), empty rows,
  bandwidth (max |i - j|) and the number of diagonals touched; for higher orders the same
  per mode (entries per slice, empty slices).";

#[derive(clap::Args)]
#[command(after_help = format!("{INFO_HELP}\n\n{}", crate::formats::FILE_TYPES_HELP))]
pub struct InfoArgs {
    /// Tensor file: .mtx (MatrixMarket), .tns (FROSTT) or .spt (sparsec binary).
    pub file: PathBuf,

    /// Benchmarking: read the file N times and report the median read time.
    #[arg(long, value_name = "N", hide_short_help = true)]
    pub repeat: Option<usize>,

    /// Print the statistics as one JSON object (keys in snake case), for scripts.
    #[arg(long)]
    pub json: bool,
}

/// What `info` reports: each field as people read it and under its key for `--json`.
#[derive(Default)]
struct Fields {
    text: String,
    json: serde_json::Map<String, serde_json::Value>,
}

impl Fields {
    fn add(
        &mut self,
        key: &str,
        label: &str,
        value: impl Into<serde_json::Value>,
        shown: impl std::fmt::Display,
    ) {
        let _ = writeln!(self.text, "{:<18}{shown}", format!("{label}:"));
        self.json.insert(key.to_string(), value.into());
    }
}

pub fn run(args: &InfoArgs) -> miette::Result<()> {
    let mut out = Fields::default();
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
            out.add(
                "read_median_seconds",
                "read time",
                median.as_secs_f64(),
                format!(
                    "median {} (min {}, {} reads, {mb_s:.0} MB/s)",
                    show(median),
                    show(times[0]),
                    times.len()
                ),
            );
            out.json
                .insert("read_min_seconds".into(), times[0].as_secs_f64().into());
            out.json.insert("reads".into(), times.len().into());
            // Scripts before --json read this line.
            let _ = writeln!(out.text, "read_median_seconds: {:.9}", median.as_secs_f64());
            file.expect("at least one read")
        }
        None => io::read_any(&args.file)?,
    };
    describe(&mut out, args, &file);
    let text = if args.json {
        format!("{}\n", serde_json::Value::Object(out.json))
    } else {
        out.text
    };
    std::io::stdout()
        .lock()
        .write_all(text.as_bytes())
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

fn describe(out: &mut Fields, args: &InfoArgs, file: &TensorFile) {
    let coo = file.coo();
    let dims: Vec<String> = coo.dims.iter().map(usize::to_string).collect();
    let shape = dims.join(" x ");
    out.add(
        "file",
        "file",
        args.file.display().to_string(),
        args.file.display(),
    );
    let entries = coo.len();
    match file {
        TensorFile::MatrixMarket(m) => {
            let h = &m.header;
            let kind = format!("MatrixMarket {}", h.layout);
            out.add("type", "type", kind.clone(), kind);
            out.add("field", "field", h.field.to_string(), h.field);
            out.add("symmetry", "symmetry", h.symmetry.to_string(), h.symmetry);
            out.add("shape", "shape", coo.dims.clone(), &shape);
            out.add(
                "stored_entries",
                "stored entries",
                h.stored_entries,
                h.stored_entries,
            );
            out.add(
                "entries",
                "entries",
                entries,
                format!("{entries} (after symmetric expansion)"),
            );
        }
        TensorFile::Frostt(_) => {
            out.add("type", "type", "FROSTT text", "FROSTT text");
            out.add("field", "field", "real", "real");
            out.add("symmetry", "symmetry", "general", "general");
            out.add("shape", "shape", coo.dims.clone(), &shape);
            out.add("stored_entries", "stored entries", entries, entries);
            out.add("entries", "entries", entries, entries);
        }
        TensorFile::Binary(t) => {
            out.add("type", "type", "sparsec binary", "sparsec binary");
            let format = t.format().spelling();
            out.add("format", "format", format.clone(), format);
            let field = t.value_type().c_name();
            out.add("field", "field", field, field);
            out.add("shape", "shape", coo.dims.clone(), &shape);
            out.add(
                "stored_values",
                "stored values",
                t.stored_values(),
                format!("{} (padding included)", t.stored_values()),
            );
            out.add(
                "entries",
                "entries",
                entries,
                format!("{entries} (stored components; padding counts as explicit zeros)"),
            );
        }
    }
    out.add("order", "order", coo.order(), coo.order());
    let total: f64 = coo.dims.iter().map(|&d| d as f64).product();
    if total > 0.0 {
        let density = entries as f64 / total;
        out.add("density", "density", density, format!("{density:.3e}"));
    }
    let zeros = coo.values.iter().filter(|&&v| v == 0.0).count();
    out.add("explicit_zeros", "explicit zeros", zeros, zeros);
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

fn matrix_stats(out: &mut Fields, coo: &Coo) {
    let (rows, cols) = (coo.dims[0], coo.dims[1]);
    let (min, max, used) = slice_counts(coo, 0);
    let mean = mean_per_slice(coo, rows);
    out.add(
        "entries_per_row",
        "entries per row",
        serde_json::json!({"min": min, "mean": mean, "max": max}),
        format!("min {min}, mean {mean:.2}, max {max}"),
    );
    out.add("empty_rows", "empty rows", rows - used, rows - used);
    let (_, _, used_cols) = slice_counts(coo, 1);
    out.add(
        "empty_columns",
        "empty columns",
        cols - used_cols,
        cols - used_cols,
    );
    let mut bandwidth = 0u64;
    let mut offsets: Vec<i64> = Vec::with_capacity(coo.len());
    for e in 0..coo.len() {
        let d = coo.coords[2 * e + 1] - coo.coords[2 * e];
        bandwidth = bandwidth.max(d.unsigned_abs());
        offsets.push(d);
    }
    offsets.sort_unstable();
    offsets.dedup();
    out.add(
        "bandwidth",
        "bandwidth",
        bandwidth,
        format!("{bandwidth} (max |i - j|)"),
    );
    out.add("diagonals", "diagonals", offsets.len(), offsets.len());
}

fn mode_stats(out: &mut Fields, coo: &Coo) {
    let mut table = format!(
        "{:>5} {:>12} {:>12} {:>10} {:>12} {:>10}",
        "mode", "size", "empty", "min/slice", "mean/slice", "max/slice"
    );
    let mut modes = Vec::new();
    for mode in 0..coo.order() {
        let size = coo.dims[mode];
        let (min, max, used) = slice_counts(coo, mode);
        let mean = mean_per_slice(coo, size);
        let _ = write!(
            table,
            "\n                  {mode:>5} {size:>12} {:>12} {min:>10} {mean:>12.2} {max:>10}",
            size - used
        );
        modes.push(serde_json::json!({
            "mode": mode, "size": size, "empty": size - used,
            "min_per_slice": min, "mean_per_slice": mean, "max_per_slice": max,
        }));
    }
    out.add("per_mode", "per mode", modes, table);
}
