//! What the front end does to its functions once their loops are read back: the IR
//! passes made for loops over index arrays, and where a sparse output's entries go.

use super::Context;
use crate::format::{Format, Streaming};
use crate::ir::segments::Order;
use crate::ir::{self, ArrayKind, ArrayRef, Function};
use crate::spf::parse::Program;

/// The IR passes made for loops over index arrays: a row's running value kept in a local,
/// a guard tested twice in a row tested once, and loops over an ordered segment bounded by
/// a search (`formats`: the inputs').
pub(super) fn index_array_passes(function: &mut Function, formats: &[Format]) {
    ir::promote::promote_invariant_elements(function);
    ir::guards::merge_repeated_guards(function);
    ir::segments::bound_ordered_segments(function, &|array| ordered(formats, array));
}

/// How the input level whose coordinate array is `array` orders each segment
/// (`formats` in input order).
fn ordered(formats: &[Format], array: ArrayRef) -> Order {
    let ArrayRef::Level {
        operand,
        level,
        kind: ArrayKind::Idx,
    } = array
    else {
        return Order::Unordered;
    };
    let format = operand
        .0
        .checked_sub(1)
        .and_then(|input| formats.get(input));
    let level = format.and_then(|f| f.levels().get(level.wrapping_sub(1)));
    match level.map(|l| l.format.properties()) {
        Some(p) if p.ordered && p.unique => Order::StrictlyIncreasing,
        Some(p) if p.ordered => Order::Increasing,
        _ => Order::Unordered,
    }
}

/// Where a sparse output's entries are placed in its storage by the kernel itself, in a
/// counting pass and a placing pass over the same loops ([`ir::rows`]): the format
/// conversion synthesised from the relations, with no sort where the loops produce each
/// row in order. Chosen when the loops are serial (no two threads fill one row) and every
/// level above the leaf is dense, so the rows are the output's own (a compressed upper
/// level would need a row array as large as the product of its dimensions, which only
/// run time knows); other sparse outputs are emitted and packed.
pub(super) fn placed_rows(
    prog: &Program,
    format: Option<&Format>,
    cx: &Context,
) -> Option<ir::rows::RowLayout> {
    let (upper, leaf_mode) = format?.row_levels()?;
    let serial = prog.parallel.is_none() && prog.wavefront.is_none();
    if !serial || upper.iter().any(|&(_, kind)| kind != Streaming::Inserted) {
        return None;
    }
    let sizes = cx.dims(&prog.output.as_ref()?.dims);
    Some(ir::rows::RowLayout {
        leaf_level: upper.len() + 1,
        leaf_mode,
        upper: upper.iter().map(|&(m, _)| (m, sizes[m].clone())).collect(),
    })
}
