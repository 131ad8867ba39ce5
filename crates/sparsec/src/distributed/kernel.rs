//! A statement over a row-distributed matrix, compiled for this rank's rows: its local
//! form binds the statement to the rows the rank owns and the columns they read (own
//! block, then ghosts), so that the ordinary pipeline compiles it in any format and
//! schedule; a product exchanges the dense operands' ghost rows and runs that kernel.

use super::comm::Ranks;
use super::product::RowDistributed;
use crate::format::Format;
use crate::kernel::Kernel;
use crate::notation::ast::Assignment;
use crate::notation::cin::Statement;
use crate::notation::{self, TensorDecl};
use crate::tensor::{Tensor, TensorView, ValueSlice, ValueType};

/// A dense operand of a distributed statement: its name and global dimensions, rows first
/// (the matrix's columns).
#[derive(Clone, Debug)]
pub struct DenseOperand {
    pub name: String,
    pub dims: Vec<usize>,
}

impl DenseOperand {
    /// Values per row.
    pub fn width(&self) -> usize {
        self.dims[1..].iter().product()
    }

    fn local_dims(&self, rows: usize) -> Vec<usize> {
        let mut dims = self.dims.clone();
        dims[0] = rows;
        dims
    }
}

/// The statement `assignment` bound to this rank's part of `layout`: the matrix `matrix`
/// stored in `format` with the rank's rows and the columns they read, each dense operand
/// with those columns' rows, the output (in `output_format`, dense by default) with the
/// rank's rows.
pub fn local_statement(
    layout: &RowDistributed,
    assignment: &Assignment,
    (matrix, format): (&str, &Format),
    operands: &[DenseOperand],
    output_format: Option<Format>,
) -> Result<Statement, String> {
    let columns = layout.plan.local_columns();
    let mut decls = vec![
        TensorDecl {
            name: assignment.lhs.tensor.clone(),
            dims: None,
            format: output_format,
            fill: 0.0,
        },
        TensorDecl {
            name: matrix.to_string(),
            dims: Some(vec![layout.local.dims[0], columns]),
            format: Some(format.clone()),
            fill: 0.0,
        },
    ];
    for o in operands {
        decls.push(TensorDecl {
            name: o.name.clone(),
            dims: Some(o.local_dims(columns)),
            format: Some(Format::dense(o.dims.len())),
            fill: 0.0,
        });
    }
    let statement = notation::bind(assignment, &decls, &[]).map_err(|e| e.to_string())?;
    if !statement.tensors[0].format.is_all_dense() {
        return Err("a distributed statement's output is dense (its rows are gathered)".into());
    }
    Ok(statement)
}

/// A distributed statement ready to run: the layout, this rank's kernel (compiled from
/// [`local_statement`]) and its rows of the matrix.
pub struct DistributedKernel {
    pub layout: RowDistributed,
    pub kernel: Kernel,
    matrix: Tensor,
    operands: Vec<DenseOperand>,
}

impl DistributedKernel {
    /// `kernel`, compiled from [`local_statement`] for `layout` with the matrix in
    /// `format` and these `operands`.
    pub fn new(
        layout: RowDistributed,
        kernel: Kernel,
        format: &Format,
        operands: Vec<DenseOperand>,
    ) -> Result<DistributedKernel, String> {
        let matrix =
            Tensor::from_coo(&layout.local, format, ValueType::F64).map_err(|e| e.to_string())?;
        Ok(DistributedKernel {
            layout,
            kernel,
            matrix,
            operands,
        })
    }

    /// The output's rows on this rank, from each dense operand's rows on this rank (in
    /// the order of [`Self::new`]'s operands): the ghosts are exchanged, then the kernel
    /// runs. A collective.
    pub fn apply(&self, ranks: &Ranks, own: &[&[f64]]) -> Result<Tensor, String> {
        let columns = self.layout.plan.local_columns();
        let extended = self
            .operands
            .iter()
            .zip(own)
            .map(|(o, own)| self.layout.with_ghosts(ranks, own, o.width()))
            .collect::<Result<Vec<_>, _>>()?;
        let mut views = vec![self.matrix.view()];
        for (o, values) in self.operands.iter().zip(&extended) {
            let view = TensorView::dense(o.local_dims(columns), ValueSlice::F64(values))
                .map_err(|e| e.to_string())?;
            views.push(view);
        }
        self.kernel.run(&views).map_err(|e| e.to_string())
    }

    /// Values each rank sends per product, and the lower bound it must receive.
    pub fn volume(&self) -> (usize, usize) {
        self.layout
            .volume(self.operands.iter().map(DenseOperand::width).sum())
    }
}
