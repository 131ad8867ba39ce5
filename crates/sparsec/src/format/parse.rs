//! The format-string syntax.
//!
//! A format string is either a sequence of level letters with an optional mode ordering,
//! compatible with TACO's command line, or a named format:
//!
//! | spelling | meaning |
//! |---|---|
//! | `d` | dense level |
//! | `s` | compressed level |
//! | `u` | compressed level, non-unique (COO top level) |
//! | `q` | singleton level |
//! | `c` | singleton level, non-unique (inner COO levels) |
//! | `h` | hashed level |
//! | `b` | bytemap level (dense positions plus a presence flag per coordinate) |
//! | `r`, `o` | range and offset levels (only inside DIA; see `dia`) |
//! | `(!o)`, `(!u)` after a letter | mark the level unordered / non-unique |
//! | `:2,0,1` after the letters | mode ordering: level `k` stores mode `order[k]` |
//! | `dense`, `csr`, `csc`, `coo`, `dcsr`, `dcsc`, `csf`, `sv`, `hash` | named formats (any order where it makes sense; `csf` and `coo` accept a mode ordering) |
//! | `bcsr:RxC` | blocked CSR with `R x C` dense blocks |
//! | `ell` | ELLPACK (slot, row, column) |
//! | `sell:C` | sliced ELLPACK: slices of `C` rows (8 if not given), each padded to its longest row (slice, slot, row in the slice, column) |
//! | `dia` | diagonal (diagonal, row range, column offset) |

use std::fmt;

use super::levels::LETTERS;
use super::{
    Compressed, Dense, Format, Hashed, Level, LevelCoord, LevelSpec, Offset, Range, Singleton,
};

/// A format string or level composition that does not describe a valid format.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FormatError {
    message: String,
}

impl FormatError {
    pub(crate) fn new(message: impl Into<String>) -> FormatError {
        FormatError {
            message: message.into(),
        }
    }
}

impl fmt::Display for FormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for FormatError {}

pub(super) fn parse_format(text: &str, order: usize) -> Result<Format, FormatError> {
    let text = text.trim();
    let wrap = |e: FormatError| FormatError::new(format!("format `{text}`: {}", e.message));
    parse_inner(text, order).map_err(wrap)
}

fn parse_inner(text: &str, order: usize) -> Result<Format, FormatError> {
    let (head, ordering) = match text.split_once(':') {
        Some((h, o)) => (h, Some(o)),
        None => (text, None),
    };
    let lower = head.to_ascii_lowercase();
    let identity: Vec<usize> = (0..order).collect();
    let mode_order = |default: &[usize]| -> Result<Vec<usize>, FormatError> {
        match ordering {
            Some(o) if lower != "bcsr" && lower != "sell" => parse_mode_order(o, order),
            _ => Ok(default.to_vec()),
        }
    };
    let require_order = |n: usize| {
        if order == n {
            Ok(())
        } else {
            Err(FormatError::new(format!(
                "`{lower}` is a format for order-{n} tensors, but this tensor has order {order}"
            )))
        }
    };
    let repeat = |first: Level, rest: fn() -> Level, last: Option<Level>| -> Vec<Level> {
        let mut levels: Vec<Level> = Vec::with_capacity(order);
        if order > 0 {
            levels.push(first);
        }
        for k in 1..order {
            match (&last, k + 1 == order) {
                (Some(l), true) => levels.push(l.clone()),
                _ => levels.push(rest()),
            }
        }
        levels
    };
    match lower.as_str() {
        "dense" => Format::with_mode_order(
            repeat(Dense::level(), Dense::level, None),
            &mode_order(&identity)?,
        ),
        "csr" => {
            require_order(2)?;
            Format::with_mode_order(
                vec![Dense::level(), Compressed::level(true, true)],
                &mode_order(&[0, 1])?,
            )
        }
        "csc" => {
            require_order(2)?;
            Format::with_mode_order(
                vec![Dense::level(), Compressed::level(true, true)],
                &mode_order(&[1, 0])?,
            )
        }
        "dcsr" => {
            require_order(2)?;
            Format::with_mode_order(csf_levels(2), &mode_order(&[0, 1])?)
        }
        "dcsc" => {
            require_order(2)?;
            Format::with_mode_order(csf_levels(2), &mode_order(&[1, 0])?)
        }
        "csf" => Format::with_mode_order(csf_levels(order), &mode_order(&identity)?),
        "coo" => {
            let levels = repeat(
                Compressed::level(true, false),
                || Singleton::level(true, false),
                Some(Singleton::level(true, true)),
            );
            let levels = if order == 1 {
                vec![Compressed::level(true, true)]
            } else {
                levels
            };
            Format::with_mode_order(levels, &mode_order(&identity)?)
        }
        "sv" | "sparsevec" => {
            require_order(1)?;
            Format::with_mode_order(vec![Compressed::level(true, true)], &[0])
        }
        "hash" | "hashmap" => Format::with_mode_order(
            repeat(Hashed::level(), Hashed::level, None),
            &mode_order(&identity)?,
        ),
        "ell" => {
            require_order(2)?;
            Format::new(
                2,
                vec![
                    spec(Dense::level(), LevelCoord::EllSlot),
                    spec(Dense::level(), LevelCoord::Mode(0)),
                    spec(Singleton::level(true, true), LevelCoord::Mode(1)),
                ],
            )
        }
        "sell" => {
            require_order(2)?;
            let rows = match ordering {
                Some(c) => parse_slice_rows(c)?,
                None => DEFAULT_SLICE_ROWS,
            };
            Format::new(2, sell_levels(rows))
        }
        "dia" => {
            require_order(2)?;
            Format::new(2, dia_levels())
        }
        "bcsr" => {
            require_order(2)?;
            let blocks = ordering
                .ok_or_else(|| FormatError::new("`bcsr` needs block sizes, e.g. `bcsr:4x4`"))?;
            let (r, c) = parse_blocks(blocks)?;
            Format::new(
                2,
                vec![
                    spec(Dense::level(), LevelCoord::BlockOuter { mode: 0, block: r }),
                    spec(
                        Compressed::level(true, true),
                        LevelCoord::BlockOuter { mode: 1, block: c },
                    ),
                    spec(Dense::level(), LevelCoord::BlockInner { mode: 0, block: r }),
                    spec(Dense::level(), LevelCoord::BlockInner { mode: 1, block: c }),
                ],
            )
        }
        _ => {
            let levels = parse_letters(head).map_err(|e| e.suggesting(&lower))?;
            if levels.len() != order {
                let error = FormatError::new(format!(
                    "{} level letters for a tensor of order {order}; give one letter per mode",
                    levels.len()
                ));
                return Err(error.suggesting(&lower));
            }
            Format::with_mode_order(levels, &mode_order(&identity)?)
        }
    }
}

/// The named formats, as [`parse`] spells them.
const NAMED: [&str; 15] = [
    "dense",
    "csr",
    "csc",
    "dcsr",
    "dcsc",
    "csf",
    "coo",
    "sv",
    "sparsevec",
    "hash",
    "hashmap",
    "ell",
    "sell",
    "dia",
    "bcsr",
];

/// The named format `text` most likely misspells: one at most two edits away (a letter
/// added, dropped, changed or two swapped), where one is.
fn misspelled_name(text: &str) -> Option<&'static str> {
    NAMED
        .iter()
        .map(|name| (strsim::damerau_levenshtein(text, name), *name))
        .filter(|&(distance, _)| distance <= 2 && distance < text.len())
        .min()
        .map(|(_, name)| name)
}

impl FormatError {
    /// This error with, where `text` looks like a misspelled named format, the question
    /// whether that format was meant.
    fn suggesting(self, text: &str) -> FormatError {
        match misspelled_name(text) {
            Some(name) => FormatError::new(format!(
                "not a named format; did you mean `{name}`? (read as level letters: {})",
                self.message
            )),
            None => self,
        }
    }
}

/// Rows in a slice of `sell` when the format string does not say: eight `double` lanes
/// fill an AVX-512 register (two AVX2 ones).
pub const DEFAULT_SLICE_ROWS: usize = 8;

/// The most rows a slice of `sell` may hold: one slot of every slice is that many values.
pub const MAX_SLICE_ROWS: usize = 1024;

fn parse_slice_rows(text: &str) -> Result<usize, FormatError> {
    match text.trim().parse::<usize>() {
        Ok(rows) if (1..=MAX_SLICE_ROWS).contains(&rows) => Ok(rows),
        _ => Err(FormatError::new(format!(
            "slice rows `{text}` must be an integer from 1 to {MAX_SLICE_ROWS}, e.g. `sell:8`"
        ))),
    }
}

/// The levels of sliced ELLPACK (SELL-C): a dense level of slices of `rows` rows, a
/// compressed level of the slots of each slice (as many as its longest row has entries),
/// a dense level of the slice's rows and a singleton column level. A slot of a slice
/// holds one entry of each of its rows, so a kernel runs the rows in SIMD lanes; each
/// slice is padded only to its own longest row, where ELL pads every row to the longest.
pub(super) fn sell_levels(rows: usize) -> Vec<LevelSpec> {
    vec![
        spec(
            Dense::level(),
            LevelCoord::BlockOuter {
                mode: 0,
                block: rows,
            },
        ),
        spec(Compressed::level(true, true), LevelCoord::EllSlot),
        spec(
            Dense::level(),
            LevelCoord::BlockInner {
                mode: 0,
                block: rows,
            },
        ),
        spec(Singleton::level(true, true), LevelCoord::Mode(1)),
    ]
}

/// The levels of DIA: a dense diagonal level, a range row level and an offset column level.
pub(super) fn dia_levels() -> Vec<LevelSpec> {
    vec![
        spec(Dense::level(), LevelCoord::Diagonal),
        spec(Range::level(), LevelCoord::Mode(0)),
        spec(Offset::level(), LevelCoord::Mode(1)),
    ]
}

fn spec(format: Level, coord: LevelCoord) -> LevelSpec {
    LevelSpec { format, coord }
}

fn csf_levels(order: usize) -> Vec<Level> {
    (0..order).map(|_| Compressed::level(true, true)).collect()
}

fn parse_mode_order(text: &str, order: usize) -> Result<Vec<usize>, FormatError> {
    let modes = text
        .split(',')
        .map(|t| {
            t.trim().parse::<usize>().map_err(|_| {
                FormatError::new(format!(
                    "mode ordering `{text}`: `{t}` is not a mode number"
                ))
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut seen = vec![false; order];
    for &m in &modes {
        if m >= order || std::mem::replace(&mut seen[m], true) {
            return Err(FormatError::new(format!(
                "mode ordering `{text}` must be a permutation of 0..{order}"
            )));
        }
    }
    if modes.len() != order {
        return Err(FormatError::new(format!(
            "mode ordering `{text}` names {} modes; the tensor has {order}",
            modes.len()
        )));
    }
    Ok(modes)
}

/// Most values one BCSR block may hold. Every stored block is dense, so a tensor with a
/// single entry already allocates a whole block: without a limit, `bcsr:1x88888888` made
/// storing a 3 x 4 matrix exhaust memory instead of failing.
const MAX_BLOCK_VALUES: usize = 1 << 16;

fn parse_blocks(text: &str) -> Result<(usize, usize), FormatError> {
    let bad = || {
        FormatError::new(format!(
            "block sizes `{text}` must look like `4x4` (positive integers)"
        ))
    };
    let (r, c) = text.split_once(['x', 'X', ',']).ok_or_else(bad)?;
    let r: usize = r.trim().parse().map_err(|_| bad())?;
    let c: usize = c.trim().parse().map_err(|_| bad())?;
    if r == 0 || c == 0 {
        return Err(bad());
    }
    if r.checked_mul(c)
        .is_none_or(|values| values > MAX_BLOCK_VALUES)
    {
        return Err(FormatError::new(format!(
            "blocks of `{text}` would hold more than {MAX_BLOCK_VALUES} values each"
        )));
    }
    Ok((r, c))
}

fn parse_letters(text: &str) -> Result<Vec<Level>, FormatError> {
    let mut levels = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(letter) = chars.next() {
        let entry = LETTERS.iter().find(|l| l.letter == letter).ok_or_else(|| {
            let known: Vec<String> = LETTERS
                .iter()
                .map(|l| format!("{} ({})", l.letter, l.meaning))
                .collect();
            FormatError::new(format!(
                "unknown level letter `{letter}`; expected {}, or a named format \
                 (dense, csr, csc, coo, dcsr, dcsc, csf, sv, hash, ell, sell:C, dia, bcsr:RxC)",
                known.join(", ")
            ))
        })?;
        let (mut ordered, mut unique) = (true, entry.unique);
        if chars.peek() == Some(&'(') {
            chars.next();
            let mut flags = String::new();
            for c in chars.by_ref() {
                if c == ')' {
                    break;
                }
                flags.push(c);
            }
            for flag in flags.split(',').map(str::trim).filter(|f| !f.is_empty()) {
                match flag {
                    "!o" => ordered = false,
                    "!u" => unique = false,
                    "o" => ordered = true,
                    "u" => unique = true,
                    other => {
                        return Err(FormatError::new(format!(
                            "unknown level property `{other}` after `{letter}`; use `!o` (unordered) or `!u` (non-unique)"
                        )))
                    }
                }
            }
        }
        levels.push((entry.make)(ordered, unique));
    }
    if levels.is_empty() && !text.is_empty() {
        return Err(FormatError::new("no level letters"));
    }
    Ok(levels)
}

pub(super) fn spell(format: &Format) -> String {
    if let Some(order) = format.mode_order() {
        let letters: String = format
            .levels()
            .iter()
            .map(|l| l.format.spelling())
            .collect();
        if order.iter().enumerate().all(|(k, &m)| k == m) {
            letters
        } else {
            let modes: Vec<String> = order.iter().map(usize::to_string).collect();
            format!("{letters}:{}", modes.join(","))
        }
    } else {
        match format.levels()[0].coord {
            LevelCoord::EllSlot => "ell".into(),
            LevelCoord::BlockOuter { block, .. }
                if format.levels().get(1).map(|l| l.coord) == Some(LevelCoord::EllSlot) =>
            {
                format!("sell:{block}")
            }
            LevelCoord::Diagonal => "dia".into(),
            _ => {
                let block = |m: usize| {
                    format
                        .levels()
                        .iter()
                        .find_map(|l| match l.coord {
                            LevelCoord::BlockInner { mode, block } if mode == m => Some(block),
                            _ => None,
                        })
                        .unwrap_or(1)
                };
                format!("bcsr:{}x{}", block(0), block(1))
            }
        }
    }
}
