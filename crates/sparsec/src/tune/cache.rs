//! Tuning results cached by a fingerprint of the statement and the inputs' structure, so
//! that `sparsec run --tuned` and [`super::lookup`] reuse a choice without searching.
//!
//! One file per fingerprint, `<cache>/tune/<hex>.txt` (the directory is
//! `SPARSEC_TUNE_DIR` when set, else `tune/` in the kernel cache), in lines of
//! `key value`:
//!
//! ```text
//! sparsec-tune 1
//! threads 2
//! format A ds:1,0
//! schedule split(i,i0,i1,8),parallelize(i0,CPUThread,NoRaces,dynamic,16)
//! speedup 1.42
//! ```
//!
//! An empty schedule line means sparsec's default schedule. Files are written to a
//! temporary name and renamed, so a reader never sees half of one.

use std::path::{Path, PathBuf};

use crate::format::Format;
use crate::jit::Toolchain;
use crate::notation::cin::Statement;
use crate::tensor::Tensor;
use crate::Error;

/// The first line of a cache file.
const HEADER: &str = "sparsec-tune 1";

/// A tuned choice: what `sparsec run` needs to reproduce it.
#[derive(Clone, Debug, PartialEq)]
pub struct Choice {
    /// The format of each tuned tensor, by name.
    pub formats: Vec<(String, Format)>,
    /// The schedule text (empty: the default schedule).
    pub schedule: String,
    /// Threads of parallel loops.
    pub threads: usize,
    /// Measured speedup over sparsec's default when it was chosen.
    pub speedup: f64,
}

/// The fingerprint of a tuning problem: the statement (tensors, their declared formats and
/// dimensions, index variables, the right-hand side), the inputs' structure (their stored
/// coordinates, not their values) and the largest thread count. Hex digits of a BLAKE3
/// hash.
pub fn fingerprint(statement: &Statement, inputs: &[Tensor], max_threads: usize) -> String {
    let mut h = blake3::Hasher::new();
    // Length-prefixed, so that no two sequences of strings hash alike.
    let text = |h: &mut blake3::Hasher, s: &str| {
        h.update(&(s.len() as u64).to_le_bytes());
        h.update(s.as_bytes());
    };
    for t in &statement.tensors {
        text(&mut h, &t.name);
        text(&mut h, &t.format.spelling());
        text(&mut h, &format!("{:?}", t.dims));
    }
    for v in &statement.vars {
        text(&mut h, &format!("{}={}", v.name, v.size));
    }
    text(
        &mut h,
        &format!(
            "{:?} {} {:?}",
            statement.lhs, statement.accumulate, statement.rhs
        ),
    );
    text(&mut h, &max_threads.to_string());
    for input in inputs {
        text(&mut h, &input.format().spelling());
        text(&mut h, &format!("{:?}", input.dims()));
        // The structure: every level's arrays and parameters, in the declared format.
        for level in input.levels() {
            for (kind, array) in &level.arrays {
                text(&mut h, &format!("{kind:?}"));
                // At 64 bits whatever the storage's width: the structure is the same.
                for x in array.to_i64().iter() {
                    h.update(&x.to_le_bytes());
                }
            }
            for (kind, value) in &level.params {
                text(&mut h, &format!("{kind:?}={value}"));
            }
        }
        // A format without arrays (all dense) is told apart by its count of values.
        h.update(&(input.values().len() as u64).to_le_bytes());
    }
    h.finalize().to_hex().to_string()
}

/// The tuning cache's directory refused ([`crate::trust`]).
fn untrusted(refused: crate::trust::Untrusted) -> Error {
    Error::Tune(format!(
        "tuning cache: {refused} (SPARSEC_TUNE_DIR sets the directory)"
    ))
}

/// Where tuning results are cached.
pub fn cache_dir() -> PathBuf {
    std::env::var_os("SPARSEC_TUNE_DIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| Toolchain::default().cache_dir.join("tune"))
}

fn entry_path(dir: &Path, fingerprint: &str) -> PathBuf {
    dir.join(format!("{fingerprint}.txt"))
}

/// Store `choice` under `fingerprint` in `dir`.
pub fn store(dir: &Path, fingerprint: &str, choice: &Choice) -> Result<(), Error> {
    let io = |e: std::io::Error| Error::Tune(format!("cannot write the tuning cache: {e}"));
    crate::trust::private_dir(dir).map_err(untrusted)?;
    let mut text = format!("{HEADER}\nthreads {}\n", choice.threads);
    for (name, format) in &choice.formats {
        text.push_str(&format!("format {name} {}\n", format.spelling()));
    }
    text.push_str(&format!("schedule {}\n", choice.schedule));
    text.push_str(&format!("speedup {}\n", choice.speedup));
    let path = entry_path(dir, fingerprint);
    let temporary = path.with_extension(format!("tmp{}", std::process::id()));
    crate::trust::write_private(&temporary, text.as_bytes()).map_err(io)?;
    std::fs::rename(&temporary, &path).map_err(io)
}

/// The choice stored under `fingerprint` in `dir`, if any; `orders[name]` gives each
/// tensor's order, to read its format back.
pub fn load(
    dir: &Path,
    fingerprint: &str,
    order_of: impl Fn(&str) -> Option<usize>,
) -> Result<Option<Choice>, Error> {
    // Choices steer the code generated: only from a directory no one else may write.
    if !crate::trust::existing_private_dir(dir).map_err(untrusted)? {
        return Ok(None);
    }
    let path = entry_path(dir, fingerprint);
    // An entry that is a link, or that others may write, is no entry.
    let Some(mut file) = crate::trust::open_private(&path) else {
        return Ok(None);
    };
    let mut text = String::new();
    match std::io::Read::read_to_string(&mut file, &mut text) {
        Ok(_) => {}
        Err(e) => {
            return Err(Error::Tune(format!(
                "cannot read the tuning cache {}: {e}",
                path.display()
            )))
        }
    };
    let bad = |line: usize, why: &str| {
        Error::Tune(format!(
            "{}:{}: not a tuning cache entry: {why}",
            path.display(),
            line + 1
        ))
    };
    let mut lines = text.lines().enumerate();
    if lines.next().map(|(_, l)| l) != Some(HEADER) {
        return Err(bad(0, &format!("the first line is not `{HEADER}`")));
    }
    let mut choice = Choice {
        formats: Vec::new(),
        schedule: String::new(),
        threads: 0,
        speedup: 1.0,
    };
    for (n, line) in lines {
        let (key, value) = line.split_once(' ').unwrap_or((line, ""));
        match key {
            "threads" => {
                choice.threads = value
                    .parse()
                    .ok()
                    .filter(|&t| t > 0)
                    .ok_or_else(|| bad(n, "the thread count is not a positive integer"))?
            }
            "format" => {
                let (name, spelling) = value
                    .split_once(' ')
                    .ok_or_else(|| bad(n, "expected `format NAME FORMAT`"))?;
                let order = order_of(name)
                    .ok_or_else(|| bad(n, &format!("the statement has no tensor `{name}`")))?;
                let format = Format::parse(spelling, order).map_err(|e| bad(n, &e.to_string()))?;
                choice.formats.push((name.to_string(), format));
            }
            "schedule" => choice.schedule = value.to_string(),
            "speedup" => {
                choice.speedup = value
                    .parse()
                    .map_err(|_| bad(n, "the speedup is not a number"))?
            }
            _ => return Err(bad(n, &format!("unknown key `{key}`"))),
        }
    }
    if choice.threads == 0 {
        return Err(bad(0, "no `threads` line"));
    }
    Ok(Some(choice))
}
