//! Borrowed tensors: storage that another owner keeps (a NumPy array, a SciPy matrix's
//! `indptr`/`indices`/`data`), which a kernel reads in place, without a copy.
//!
//! A kernel reads its inputs' index arrays without bounds checks, so a view over memory
//! sparsec did not build is only made after its structure is checked: offsets that never
//! decrease and end at the number of indices, indices in range and strictly increasing
//! within each row. A view of a [`Tensor`] needs no check: packing made it so.

use std::borrow::Cow;
use std::sync::LazyLock;

use super::{Tensor, TensorError, Values};
use crate::format::{Format, IndexArray, LevelStorage};
use crate::ir::{ArrayKind, IndexWidth, ParamKind, ValueType};

/// An index array that another owner keeps, at its width.
#[derive(Clone, Copy, Debug)]
pub enum IndexSlice<'a> {
    /// `int32_t` indices.
    I32(&'a [i32]),
    /// `int64_t` indices.
    I64(&'a [i64]),
}

impl IndexSlice<'_> {
    /// The element width.
    pub fn width(&self) -> IndexWidth {
        match self {
            IndexSlice::I32(_) => IndexWidth::I32,
            IndexSlice::I64(_) => IndexWidth::I64,
        }
    }
    /// Number of indices.
    pub fn len(&self) -> usize {
        match self {
            IndexSlice::I32(a) => a.len(),
            IndexSlice::I64(a) => a.len(),
        }
    }
    /// True when the slice holds no index.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The index at position `p`, widened.
    pub fn get(&self, p: usize) -> i64 {
        match self {
            IndexSlice::I32(a) => i64::from(a[p]),
            IndexSlice::I64(a) => a[p],
        }
    }
    /// Address of the first element, for a kernel's argument.
    pub fn as_ptr(&self) -> *const std::ffi::c_void {
        match self {
            IndexSlice::I32(a) => a.as_ptr().cast(),
            IndexSlice::I64(a) => a.as_ptr().cast(),
        }
    }
    /// The bytes the indices take.
    pub fn size_in_bytes(&self) -> usize {
        match self {
            IndexSlice::I32(a) => std::mem::size_of_val(*a),
            IndexSlice::I64(a) => std::mem::size_of_val(*a),
        }
    }
    /// An owned copy at the same width.
    pub fn to_array(&self) -> IndexArray {
        match self {
            IndexSlice::I32(a) => IndexArray::I32(a.to_vec()),
            IndexSlice::I64(a) => IndexArray::I64(a.to_vec()),
        }
    }
}

impl<'a> From<&'a IndexArray> for IndexSlice<'a> {
    fn from(array: &'a IndexArray) -> IndexSlice<'a> {
        match array {
            IndexArray::I32(a) => IndexSlice::I32(a),
            IndexArray::I64(a) => IndexSlice::I64(a),
        }
    }
}

/// Component values that another owner keeps.
#[derive(Clone, Copy, Debug)]
pub enum ValueSlice<'a> {
    /// `double` values.
    F64(&'a [f64]),
    /// `float` values.
    F32(&'a [f32]),
}

impl ValueSlice<'_> {
    /// Number of values.
    pub fn len(&self) -> usize {
        match self {
            ValueSlice::F64(v) => v.len(),
            ValueSlice::F32(v) => v.len(),
        }
    }
    /// True when no values are held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The value type.
    pub fn value_type(&self) -> ValueType {
        match self {
            ValueSlice::F64(_) => ValueType::F64,
            ValueSlice::F32(_) => ValueType::F32,
        }
    }
    /// Address of the first value, for a kernel's argument.
    pub fn as_ptr(&self) -> *const std::ffi::c_void {
        match self {
            ValueSlice::F64(v) => v.as_ptr().cast(),
            ValueSlice::F32(v) => v.as_ptr().cast(),
        }
    }
    /// The bytes the values take.
    pub fn size_in_bytes(&self) -> usize {
        match self {
            ValueSlice::F64(v) => std::mem::size_of_val(*v),
            ValueSlice::F32(v) => std::mem::size_of_val(*v),
        }
    }
    /// An owned copy.
    pub fn to_values(&self) -> Values {
        match self {
            ValueSlice::F64(v) => Values::F64(v.to_vec()),
            ValueSlice::F32(v) => Values::F32(v.to_vec()),
        }
    }
    /// An owned copy as `ty`, each value rounded to the nearest `float` when narrowed.
    pub fn to_values_as(&self, ty: ValueType) -> Values {
        match (self, ty) {
            (ValueSlice::F64(v), ValueType::F32) => {
                Values::F32(v.iter().map(|&x| x as f32).collect())
            }
            (ValueSlice::F32(v), ValueType::F64) => {
                Values::F64(v.iter().map(|&x| f64::from(x)).collect())
            }
            _ => self.to_values(),
        }
    }
}

impl<'a> From<&'a Values> for ValueSlice<'a> {
    fn from(values: &'a Values) -> ValueSlice<'a> {
        match values {
            Values::F64(v) => ValueSlice::F64(v),
            Values::F32(v) => ValueSlice::F32(v),
        }
    }
}

// Parsed once: views are made on every call that lends arrays.
static CSR: LazyLock<Format> =
    LazyLock::new(|| Format::parse("csr", 2).expect("csr is a format of matrices"));
static CSC: LazyLock<Format> =
    LazyLock::new(|| Format::parse("csc", 2).expect("csc is a format of matrices"));

/// One level's arrays and parameters, borrowed.
#[derive(Clone, Debug)]
struct LevelView<'a> {
    arrays: Vec<(ArrayKind, IndexSlice<'a>)>,
    params: Vec<(ParamKind, i64)>,
}

/// A tensor whose arrays are borrowed: from a [`Tensor`] ([`Tensor::view`]) or, checked,
/// from memory another owner keeps ([`TensorView::dense`], [`TensorView::compressed`]).
/// Kernels read views in place (see [`crate::kernel::Kernel::run`]).
///
/// ```
/// use sparsec::tensor::{IndexSlice, TensorView, ValueSlice};
/// // The 2x3 CSR matrix [[1, 0, 2], [0, 0, 3]], as SciPy holds it.
/// let (indptr, indices, data) = ([0i32, 2, 3], [0i32, 2, 2], [1.0, 2.0, 3.0]);
/// let a = TensorView::compressed(
///     vec![2, 3], false,
///     IndexSlice::I32(&indptr), IndexSlice::I32(&indices), ValueSlice::F64(&data),
/// ).unwrap();
/// assert_eq!(a.format().spelling(), "ds");
/// assert_eq!(a.to_tensor().to_coo().values, vec![1.0, 2.0, 3.0]);
/// // Indices out of order are not a canonical CSR matrix: the caller must copy and pack.
/// let unsorted = [2i32, 0, 2];
/// assert!(TensorView::compressed(
///     vec![2, 3], false,
///     IndexSlice::I32(&indptr), IndexSlice::I32(&unsorted), ValueSlice::F64(&data),
/// ).is_err());
/// ```
#[derive(Clone, Debug)]
pub struct TensorView<'a> {
    dims: Cow<'a, [usize]>,
    format: Cow<'a, Format>,
    levels: Vec<LevelView<'a>>,
    values: ValueSlice<'a>,
    /// The tensor viewed, when there is one: converting it needs no copy of the view first.
    owner: Option<&'a Tensor>,
}

impl<'a> TensorView<'a> {
    /// A dense tensor of shape `dims` whose values are `values` in row-major order.
    pub fn dense(dims: Vec<usize>, values: ValueSlice<'a>) -> Result<TensorView<'a>, TensorError> {
        let components = dims.iter().try_fold(1usize, |n, &d| n.checked_mul(d));
        if components != Some(values.len()) {
            return Err(TensorError::Malformed(format!(
                "a dense tensor of shape {dims:?} has {} components, but {} values were given",
                components.map_or_else(|| "too many".to_string(), |n| n.to_string()),
                values.len()
            )));
        }
        let format = Format::dense(dims.len());
        let levels =
            plain_level_views(&format, &dims, |_, _| None).expect("dense levels store no arrays");
        Ok(TensorView {
            dims: Cow::Owned(dims),
            format: Cow::Owned(format),
            levels,
            values,
            owner: None,
        })
    }

    /// A matrix in compressed rows (CSR, or CSC with `column_major`) from SciPy's
    /// `indptr`, `indices` and `data`, borrowed. It must be canonical (offsets from 0 that
    /// never decrease and end at the number of indices, indices in range and strictly
    /// increasing within each row or column); anything else is an error that says what
    /// is wrong, and the caller copies and packs the entries instead.
    pub fn compressed(
        dims: Vec<usize>,
        column_major: bool,
        indptr: IndexSlice<'a>,
        indices: IndexSlice<'a>,
        values: ValueSlice<'a>,
    ) -> Result<TensorView<'a>, TensorError> {
        if dims.len() != 2 {
            return Err(TensorError::Malformed(format!(
                "compressed rows or columns describe a matrix, but the shape is {dims:?}"
            )));
        }
        let (outer, inner) = if column_major {
            (dims[1], dims[0])
        } else {
            (dims[0], dims[1])
        };
        if values.len() != indices.len() {
            return Err(TensorError::Malformed(format!(
                "{} values but {} indices",
                values.len(),
                indices.len()
            )));
        }
        check_canonical_at_widths(indptr, indices, outer, inner).map_err(TensorError::Malformed)?;
        let format: &'static Format = if column_major { &CSC } else { &CSR };
        let levels = plain_level_views(format, &dims, |level, kind| match (level, kind) {
            (1, ArrayKind::Pos) => Some(indptr),
            (1, ArrayKind::Idx) => Some(indices),
            _ => None,
        })
        .expect("compressed rows store exactly positions and coordinates");
        Ok(TensorView {
            dims: Cow::Owned(dims),
            format: Cow::Borrowed(format),
            levels,
            values,
            owner: None,
        })
    }

    /// Dimension sizes, one per mode.
    pub fn dims(&self) -> &[usize] {
        &self.dims
    }

    /// The storage format.
    pub fn format(&self) -> &Format {
        &self.format
    }

    /// The value type.
    pub fn value_type(&self) -> ValueType {
        self.values.value_type()
    }

    /// The value of the components the storage does not hold: the viewed tensor's
    /// ([`Tensor::fill`]), else 0.
    pub fn fill(&self) -> f64 {
        self.owner.map_or(0.0, Tensor::fill)
    }

    /// The values, borrowed.
    pub fn values(&self) -> ValueSlice<'a> {
        self.values
    }

    /// The array of `kind` of level `level` (counted from 1), if the level has one.
    pub fn array(&self, level: usize, kind: ArrayKind) -> Option<IndexSlice<'a>> {
        self.levels[level - 1]
            .arrays
            .iter()
            .find(|(k, _)| *k == kind)
            .map(|(_, a)| *a)
    }

    /// The parameter of `kind` of level `level` (counted from 1; 0 when it has none).
    pub fn param(&self, level: usize, kind: ParamKind) -> i64 {
        self.levels[level - 1]
            .params
            .iter()
            .find(|(k, _)| *k == kind)
            .map_or(0, |(_, v)| *v)
    }

    /// An owned copy of the tensor (the viewed tensor's clone for a [`Tensor::view`]).
    pub fn to_tensor(&self) -> Tensor {
        if let Some(owner) = self.owner {
            return owner.clone();
        }
        let levels = self
            .levels
            .iter()
            .map(|l| LevelStorage {
                arrays: l.arrays.iter().map(|(k, a)| (*k, a.to_array())).collect(),
                params: l.params.clone(),
            })
            .collect();
        Tensor::from_parts(
            self.dims.to_vec(),
            self.format.as_ref().clone(),
            levels,
            self.values.to_values(),
        )
    }

    /// The same tensor with `values` (as many as its own, in the same order) in place of
    /// its values: a kernel that reads another value type borrows the index arrays and
    /// copies only the values.
    pub(crate) fn with_values<'b>(&self, values: ValueSlice<'b>) -> TensorView<'b>
    where
        'a: 'b,
    {
        debug_assert_eq!(values.len(), self.values.len());
        TensorView {
            dims: self.dims.clone(),
            format: self.format.clone(),
            levels: self.levels.clone(),
            values,
            owner: None,
        }
    }

    /// The generation of the viewed tensor's contents, where this views a [`Tensor`]
    /// (which the view's borrow keeps unchanged); `None` for storage another owner keeps,
    /// which may change between calls without sparsec knowing.
    pub fn generation(&self) -> Option<super::Generation> {
        self.owner.map(Tensor::generation)
    }

    /// The viewed tensor, or an owned copy of storage another owner keeps.
    pub(crate) fn as_tensor(&self) -> Cow<'a, Tensor> {
        match self.owner {
            Some(owner) => Cow::Borrowed(owner),
            None => Cow::Owned(self.to_tensor()),
        }
    }

    /// The same tensor in another format (a copy).
    pub fn convert(&self, format: &Format) -> Result<Tensor, TensorError> {
        self.as_tensor().convert(format)
    }
}

impl Tensor {
    /// The tensor's storage, borrowed, as kernels read it.
    pub fn view(&self) -> TensorView<'_> {
        let levels = self
            .levels()
            .iter()
            .map(|l| LevelView {
                arrays: l.arrays.iter().map(|(k, a)| (*k, a.into())).collect(),
                params: l.params.clone(),
            })
            .collect();
        TensorView {
            dims: Cow::Borrowed(self.dims()),
            format: Cow::Borrowed(self.format()),
            levels,
            values: self.values().into(),
            owner: Some(self),
        }
    }
}

/// The level views of a plain `format` over `dims` (see [`Format::plain_levels`]).
fn plain_level_views<'a>(
    format: &Format,
    dims: &[usize],
    array: impl FnMut(usize, ArrayKind) -> Option<IndexSlice<'a>>,
) -> Option<Vec<LevelView<'a>>> {
    let levels = format.plain_levels(dims, array)?;
    Some(
        levels
            .into_iter()
            .map(|(arrays, params)| LevelView { arrays, params })
            .collect(),
    )
}

/// `Ok` when `indptr`/`indices` describe an `outer x inner` matrix in compressed rows in
/// SciPy's canonical form, which sparsec's compressed level requires; else what is wrong.
///
/// This runs on every call that lends arrays and on every sparse output a kernel places,
/// so the indices are checked in one pass without branches that the compiler vectorizes,
/// counting the places where an index does not increase (which must all be row
/// boundaries), and one look at each row's ends. Only a failure looks at rows one by one,
/// to say where.
/// [`check_canonical`] of offsets and coordinates at whatever widths they are stored.
pub(super) fn check_canonical_at_widths(
    indptr: IndexSlice,
    indices: IndexSlice,
    outer: usize,
    inner: usize,
) -> Result<(), String> {
    match (indptr, indices) {
        (IndexSlice::I32(p), IndexSlice::I32(i)) => check_canonical(p, i, outer, inner),
        (IndexSlice::I32(p), IndexSlice::I64(i)) => check_canonical(p, i, outer, inner),
        (IndexSlice::I64(p), IndexSlice::I32(i)) => check_canonical(p, i, outer, inner),
        (IndexSlice::I64(p), IndexSlice::I64(i)) => check_canonical(p, i, outer, inner),
    }
}

fn check_canonical<P, I>(
    indptr: &[P],
    indices: &[I],
    outer: usize,
    inner: usize,
) -> Result<(), String>
where
    P: Copy + Into<i64>,
    I: Copy + Ord + Into<i64>,
{
    if indptr.len() != outer.saturating_add(1) {
        return Err(format!(
            "indptr has {} offsets, but {outer} rows or columns need {}",
            indptr.len(),
            outer.saturating_add(1)
        ));
    }
    let first: i64 = indptr[0].into();
    let last: i64 = indptr[outer].into();
    if first != 0 || last as u64 != indices.len() as u64 {
        return Err(format!(
            "indptr must run from 0 to the number of indices ({}), not from {first} to {last}",
            indices.len()
        ));
    }
    // Offsets from 0 to `len` that never decrease: every row's slice is in bounds.
    if let Some(row) = indptr.windows(2).position(|w| w[0].into() > w[1].into()) {
        return Err(format!("indptr decreases after offset {row}"));
    }
    let inner = inner as u64;
    // With no descent inside a row every row strictly increases, and then its first and
    // last index bound the rest: one access per row besides the pass over the indices.
    let descents = descents(indices);
    let (mut at_row_starts, mut in_range) = (0usize, true);
    for w in indptr.windows(2) {
        let (begin, end) = (w[0].into() as usize, w[1].into() as usize);
        if begin < end {
            in_range &= indices[begin].into() >= 0 && (indices[end - 1].into() as u64) < inner;
            if begin > 0 {
                at_row_starts += usize::from(indices[begin - 1] >= indices[begin]);
            }
        }
    }
    if in_range && descents == at_row_starts {
        return Ok(());
    }
    for (row, w) in indptr.windows(2).enumerate() {
        let (begin, end) = (w[0].into() as usize, w[1].into() as usize);
        let indices = &indices[begin..end];
        let in_range = indices.iter().all(|&i| (i.into() as u64) < inner);
        let increasing = indices.windows(2).all(|p| p[0] < p[1]);
        if !(in_range && increasing) {
            return Err(malformed_row(indices, row, inner));
        }
    }
    // The passes above found a row that the scan did not: never, but say something.
    Err("the indices are out of range or not strictly increasing within a row".into())
}

/// The number of places where an index is not smaller than the next. Chunks keep the
/// counter narrow and the loop free of branches, so that it vectorizes.
fn descents<I: Copy + Ord>(indices: &[I]) -> usize {
    let mut descents = 0usize;
    // Pairs (indices[k], indices[k + 1]) for k in start..end.
    let mut start = 0;
    while start + 1 < indices.len() {
        let end = (start + 4096).min(indices.len() - 1);
        let mut in_chunk = 0u32;
        for (&a, &b) in indices[start..end].iter().zip(&indices[start + 1..=end]) {
            in_chunk += u32::from(a >= b);
        }
        descents += in_chunk as usize;
        start = end;
    }
    descents
}

/// What is wrong with the indices of row (or column) `row`, which are not strictly
/// increasing or not all in `0..inner`.
fn malformed_row<I: Copy + Into<i64>>(indices: &[I], row: usize, inner: u64) -> String {
    let mut previous = -1i64;
    for &i in indices {
        let i: i64 = i.into();
        if i as u64 >= inner {
            return format!("index {i} of row or column {row} is out of range");
        }
        if i <= previous {
            break;
        }
        previous = i;
    }
    format!("the indices of row or column {row} are not strictly increasing")
}
