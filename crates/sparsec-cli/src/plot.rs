//! `sparsec tune --plot`: a spy plot of a matrix input's nonzero pattern with the chosen
//! blocks (a blocked format's blocks) and tiles (the splits of its row and column
//! variables) drawn over it.

use std::path::Path;
use std::sync::OnceLock;

use miette::{miette, Result};
use plotters::prelude::*;
use sparsec::format::LevelCoord;
use sparsec::notation::cin::{CExpr, Statement, TensorId, VarId};
use sparsec::tensor::Tensor;
use sparsec::tune::Point;

/// The longest side of the picture, in pixels.
const MAX_SIDE: usize = 800;

/// Grid lines closer than this many pixels are left out (they would fill the picture).
const MIN_SPACING: f64 = 4.0;

/// Draw `tensor` (input `tensor_id` of `statement`, a matrix) as a spy plot into `path`
/// (PNG), with `point`'s blocks in red and tiles in blue. `format` is the chosen format of
/// the tensor.
pub fn spy(
    path: &Path,
    statement: &Statement,
    tensor_id: TensorId,
    tensor: &Tensor,
    format: &sparsec::format::Format,
    point: &Point,
) -> Result<()> {
    let dims = tensor.dims();
    if dims.len() != 2 {
        return Err(miette!(
            "--plot draws matrices; `{}` has order {}",
            statement.tensors[tensor_id].name,
            dims.len()
        ));
    }
    let (rows, cols) = (dims[0].max(1), dims[1].max(1));
    let scale = (rows.max(cols) as f64 / MAX_SIDE as f64).max(1.0);
    let width = ((cols as f64 / scale).ceil() as u32).max(1);
    let height = ((rows as f64 / scale).ceil() as u32).max(1);
    let root = BitMapBackend::new(path, (width, height)).into_drawing_area();
    let failed = |e: &dyn std::fmt::Display| miette!("cannot draw {}: {e}", path.display());
    root.fill(&WHITE).map_err(|e| failed(&e))?;
    let pixel = |c: i64| (c as f64 / scale) as i32;
    let mut drawn = Ok(());
    tensor.for_each_stored(|c, _| {
        if drawn.is_ok() {
            drawn = root.draw_pixel((pixel(c[1]), pixel(c[0])), &BLACK);
        }
    });
    drawn.map_err(|e| failed(&e))?;

    // Blocks of a blocked format: the inner block size of each mode.
    let mut block = [1usize; 2];
    for spec in format.levels() {
        if let LevelCoord::BlockInner { mode, block: b } = spec.coord {
            block[mode] = b;
        }
    }
    // Tiles: the split factor of the variable that indexes each mode.
    let mut tile = [1usize; 2];
    if let Some(indices) = access_of(&statement.rhs, tensor_id) {
        for (mode, &v) in indices.iter().enumerate() {
            tile[mode] = point.splits[v];
        }
    }
    for (sizes, color) in [(tile, BLUE), (block, RED)] {
        for (mode, &size) in sizes.iter().enumerate() {
            if size <= 1 || (size as f64 / scale) < MIN_SPACING {
                continue;
            }
            let extent = dims[mode];
            for k in (size..extent).step_by(size) {
                let at = pixel(k as i64);
                let line = if mode == 0 {
                    [(0, at), (width as i32, at)]
                } else {
                    [(at, 0), (at, height as i32)]
                };
                root.draw(&PathElement::new(line.to_vec(), color.mix(0.6)))
                    .map_err(|e| failed(&e))?;
            }
        }
    }
    root.present().map_err(|e| failed(&e))
}

/// Register a TrueType font for the figures' text (plotters lays text out with
/// `ab_glyph`, which needs the font's bytes): `SPARSEC_FONT`, else DejaVu Sans where
/// Debian's `fonts-dejavu-core` and other distributions put it.
pub fn load_font() -> Result<()> {
    static LOADED: OnceLock<std::result::Result<(), String>> = OnceLock::new();
    LOADED
        .get_or_init(|| {
            let candidates = std::env::var("SPARSEC_FONT").into_iter().chain(
                [
                    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
                    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
                    "/usr/share/fonts/TTF/DejaVuSans.ttf",
                ]
                .map(String::from),
            );
            for path in candidates {
                if let Ok(bytes) = std::fs::read(&path) {
                    // Registered once for the life of the process, as plotters requires.
                    let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
                    return plotters::style::register_font("sans-serif", FontStyle::Normal, bytes)
                        .map_err(|_| format!("{path} is not a TrueType font"));
                }
            }
            Err(
                "no TrueType font found for the figure's text: set SPARSEC_FONT to a .ttf \
                 file, or install DejaVu Sans (Debian: apt-get install fonts-dejavu-core)"
                    .into(),
            )
        })
        .clone()
        .map_err(|e| miette!("{e}"))
}

/// The indices of the first access of `tensor` in `expr`.
fn access_of(expr: &CExpr, tensor: TensorId) -> Option<&[VarId]> {
    match expr {
        CExpr::Access(a) if a.tensor == tensor => Some(&a.indices),
        CExpr::Access(_) | CExpr::Literal(_) => None,
        CExpr::Neg(x) | CExpr::Sum(_, x) => access_of(x, tensor),
        CExpr::Binary(_, l, r) => access_of(l, tensor).or_else(|| access_of(r, tensor)),
        CExpr::Math(_, args) => args.iter().find_map(|a| access_of(a, tensor)),
    }
}
