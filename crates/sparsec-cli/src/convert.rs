//! `sparsec convert IN OUT [--format FORMAT]`: change file type and/or storage format.

use std::path::PathBuf;

use miette::miette;
use sparsec::format::Format;
use sparsec::io::{self, FileKind, MtxLayout, MtxWriteOptions, TensorFile};
use sparsec::tensor::{Tensor, ValueType};

const EXAMPLES: &str = "\
EXAMPLES:
  sparsec convert bcsstk13.mtx bcsstk13.spt --format csr
  sparsec convert bcsstk13.mtx bcsstk13-blocks.spt --format bcsr:4x4
  sparsec convert fao_trade.tns fao.spt --format sss:2,0,1
  sparsec convert fao_trade.tns fao.tns --dims 339,183,183
  sparsec convert A.spt A.mtx
  sparsec convert bcsstk13.mtx bcsstk13.bsp.h5 --format csc   (built with --features binsparse)
  sparsec convert small.mtx small-dense.mtx --array

TEXT OUTPUTS:
  Text outputs (.mtx, .tns) receive the stored components of the tensor: without --format
  the entries as read (symmetric files expanded); with a padded format (dense, ell, sell,
  dia, bcsr, hashed) its padding is written as explicit zeros.";

/// Scalar type of stored values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ValueTypeArg {
    /// 64-bit `double`.
    F64,
    /// 32-bit `float`.
    F32,
}

#[derive(clap::Args)]
#[command(after_help = format!(
    "{EXAMPLES}\n\n{}\n\n{}",
    crate::formats::FILE_TYPES_HELP,
    crate::formats::FORMAT_HELP
))]
pub struct ConvertArgs {
    /// Input file: .mtx, .tns, .spt or .h5 (binsparse; needs the `binsparse` feature).
    pub input: PathBuf,

    /// Output file: .mtx (order <= 2), .tns (any order), .spt (keeps the format) or .h5
    /// (binsparse: formats of dense and compressed levels, named CSR, COO, ... or custom).
    pub output: PathBuf,

    /// Storage format to build, e.g. csr, csc, coo, dcsr, csf, ell, sell:8, dia, bcsr:4x4,
    /// ds:1,0, sss:2,0,1 (see FORMAT STRINGS below). Default: an .spt input's own format, else csr
    /// for matrices and csf for other orders.
    #[arg(long, short = 'f', value_name = "FORMAT")]
    pub format: Option<String>,

    /// Value type stored in .spt output.
    #[arg(long, value_enum, default_value = "f64")]
    pub value_type: ValueTypeArg,

    /// Write .mtx output in the dense `array` layout (column-major) instead of `coordinate`.
    #[arg(long)]
    pub array: bool,

    /// Dimensions of a .tns input, comma-separated (default: the largest index per mode).
    #[arg(long, value_delimiter = ',', value_name = "N,N,...")]
    pub dims: Option<Vec<usize>>,
}

pub fn run(args: &ConvertArgs) -> miette::Result<()> {
    let in_kind = FileKind::from_path(&args.input)?;
    let out_kind = FileKind::from_path(&args.output)?;
    if let Some(why) = crate::run::unwritable(&args.output) {
        return Err(miette!("the output {}: {why}", args.output.display()));
    }
    if args.array && out_kind != FileKind::MatrixMarket {
        return Err(miette!("--array applies to .mtx output only"));
    }
    let file = match (&args.dims, in_kind) {
        (Some(dims), FileKind::Frostt) => {
            TensorFile::Frostt(io::read_tns(&args.input, Some(dims))?)
        }
        (Some(_), _) => {
            return Err(miette!(
                "--dims applies to .tns input only; {} stores its dimensions",
                args.input.display()
            ))
        }
        (None, _) => io::read_any(&args.input)?,
    };
    let order = file.dims().len();
    if out_kind == FileKind::MatrixMarket && order > 2 {
        return Err(miette!(
            help = "write a .tns or .spt file instead",
            "{}: MatrixMarket holds matrices and vectors, but {} has order {order}",
            args.output.display(),
            args.input.display()
        ));
    }
    let value_type = match args.value_type {
        ValueTypeArg::F64 => ValueType::F64,
        ValueTypeArg::F32 => ValueType::F32,
    };
    let mtx_options = MtxWriteOptions {
        layout: if args.array {
            MtxLayout::Array
        } else {
            MtxLayout::Coordinate
        },
        comments: vec![format!(
            " converted by sparsec from {}",
            args.input.file_name().map_or_else(
                || args.input.display().to_string(),
                |n| n.to_string_lossy().into_owned()
            )
        )],
    };

    let spelling = match (&args.format, &file) {
        (Some(f), _) => Some(f.clone()),
        (None, TensorFile::Binary(t)) => Some(t.format().spelling()),
        (None, _) if matches!(out_kind, FileKind::Binary | FileKind::Binsparse) => {
            Some(if order == 2 { "csr" } else { "csf" }.to_string())
        }
        (None, _) => None,
    };
    let Some(spelling) = spelling else {
        // Text to text without a format: write the entries as read.
        let coo = file.into_coo();
        let count = coo.len();
        match out_kind {
            FileKind::MatrixMarket => io::write_matrix_market(&args.output, &coo, &mtx_options)?,
            _ => io::write_tns(&args.output, &coo)?,
        }
        println!("wrote {}: {} entries", args.output.display(), count);
        return Ok(());
    };
    let format = Format::parse(&spelling, order).map_err(|e| {
        miette!(
            help = "run `sparsec convert --help` for the format strings",
            "{e}"
        )
    })?;
    let tensor: Tensor = file
        .into_tensor(&format, value_type)
        .map_err(|e| miette!("cannot store {} as `{spelling}`: {e}", args.input.display()))?;
    match out_kind {
        FileKind::MatrixMarket => {
            io::write_matrix_market_tensor(&args.output, &tensor, &mtx_options)?
        }
        FileKind::Frostt => io::write_tns(&args.output, &tensor.to_coo())?,
        FileKind::Binary => io::write_spt(&args.output, &tensor)?,
        FileKind::Binsparse => io::write_binsparse_file(&args.output, &tensor)?,
    }
    println!(
        "wrote {}: format {}, {} stored values",
        args.output.display(),
        tensor.format().spelling(),
        tensor.stored_values()
    );
    Ok(())
}
