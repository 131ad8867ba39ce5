//! Tensor storage: a [`Format`], the arrays of each level and the values.
//!
//! Tensors are built from coordinate lists ([`Coo`]), which may be unsorted and hold
//! duplicates (summed) and explicit zeros (kept as stored entries). Reading back walks the
//! coordinate hierarchy: natively through levels whose [`Layout`](crate::format::Layout) the runtime knows (dense,
//! compressed, singleton), and through the level functions of every other level format
//! ([`crate::ir::interp`]). The tests compare the two readings on every format, so storage
//! and generated code cannot disagree about layout.

mod coo;
mod levels;
mod order;
mod pack;
mod rows;
mod stream;
mod transpose;
mod view;
mod walk;

use std::fmt;

pub use coo::Coo;
pub use rows::Rows;
pub use view::{IndexSlice, TensorView, ValueSlice};
use walk::Reading;

use crate::format::{Format, IndexArray, LevelStorage};

pub use crate::ir::{IndexWidth, ValueType};

/// Component values, indexed by the positions of the last level.
#[derive(Clone, Debug, PartialEq)]
pub enum Values {
    F64(Vec<f64>),
    F32(Vec<f32>),
}

impl Values {
    /// Zero-filled values of the given type.
    pub fn zeros(ty: ValueType, len: usize) -> Values {
        match ty {
            ValueType::F64 => Values::F64(vec![0.0; len]),
            ValueType::F32 => Values::F32(vec![0.0; len]),
        }
    }
    /// [`Values::zeros`], or an error saying how many bytes `len` values need when they
    /// cannot be allocated (`None`: a count that overflowed).
    pub(crate) fn try_zeros(ty: ValueType, len: Option<usize>) -> Result<Values, String> {
        let what = || "the values array".to_string();
        Ok(match ty {
            ValueType::F64 => Values::F64(crate::memory::filled(len, 0.0, &what)?),
            ValueType::F32 => Values::F32(crate::memory::filled(len, 0.0, &what)?),
        })
    }
    /// Set every value to `x` (narrowed to the value type).
    pub fn fill(&mut self, x: f64) {
        match self {
            Values::F64(v) => v.fill(x),
            Values::F32(v) => v.fill(x as f32),
        }
    }
    /// Number of stored values.
    pub fn len(&self) -> usize {
        match self {
            Values::F64(v) => v.len(),
            Values::F32(v) => v.len(),
        }
    }
    /// True when no values are stored.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Value at position `p`, widened to `f64`.
    pub fn get(&self, p: usize) -> f64 {
        match self {
            Values::F64(v) => v[p],
            Values::F32(v) => v[p] as f64,
        }
    }
    /// Store `x` (narrowed to the value type) at position `p`.
    pub fn set(&mut self, p: usize, x: f64) {
        match self {
            Values::F64(v) => v[p] = x,
            Values::F32(v) => v[p] = x as f32,
        }
    }
    /// The value type.
    /// Set every value to the sum of the `sums` entries whose slot it is:
    /// `self[slots[e]] += sums[e]` after zeroing.
    pub fn scatter_sums(&mut self, slots: &[usize], sums: &[f64]) {
        match self {
            Values::F64(v) => {
                v.fill(0.0);
                for (&slot, &x) in slots.iter().zip(sums) {
                    v[slot] += x;
                }
            }
            Values::F32(v) => {
                v.fill(0.0);
                for (&slot, &x) in slots.iter().zip(sums) {
                    v[slot] += x as f32;
                }
            }
        }
    }

    pub fn value_type(&self) -> ValueType {
        match self {
            Values::F64(_) => ValueType::F64,
            Values::F32(_) => ValueType::F32,
        }
    }
}

/// Why a tensor could not be built or converted.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum TensorError {
    /// The format's order differs from the tensor's.
    #[error("format `{format}` has order {format_order}, but the tensor has order {tensor_order}")]
    OrderMismatch {
        format: String,
        format_order: usize,
        tensor_order: usize,
    },
    /// A coordinate lies outside the tensor's dimensions.
    #[error(
        "entry {entry}: coordinate {coord} of mode {mode} is outside the dimension of size {size}"
    )]
    OutOfRange {
        entry: usize,
        mode: usize,
        coord: i64,
        size: usize,
    },
    /// The format cannot represent this tensor (a level's precondition failed).
    #[error("format `{format}` cannot hold this tensor: {reason}")]
    Unrepresentable { format: String, reason: String },
    /// Coordinate and value arrays disagree in length.
    #[error("{0}")]
    Malformed(String),
    /// An array the tensor needs cannot be allocated: what it is and how many bytes.
    #[error("{0}")]
    TooLarge(String),
}

/// The levels of a dense `format` over `dims`: each stores only its size, as the format
/// lays it out.
fn dense_levels(dims: &[usize], format: &Format) -> Result<Vec<LevelStorage>, String> {
    if !format.is_all_dense() {
        return Err(format!("`{}` is not dense", format.spelling()));
    }
    Ok(format
        .plain_levels(dims, |_, _| None::<std::convert::Infallible>)
        .ok_or_else(|| format!("`{}` is not dense over modes", format.spelling()))?
        .into_iter()
        .map(|(_, params)| LevelStorage {
            arrays: vec![],
            params,
        })
        .collect())
}

/// A tensor stored in some format.
#[derive(Clone)]
pub struct Tensor {
    dims: Vec<usize>,
    format: Format,
    levels: Vec<LevelStorage>,
    values: Values,
    /// The value of every component the storage does not hold (0 unless set; `+inf` for
    /// the result of a `(min, +)` product).
    fill: f64,
    /// Names these contents: a copy shares it, a change gives a fresh one.
    generation: Generation,
}

impl PartialEq for Tensor {
    fn eq(&self, other: &Tensor) -> bool {
        self.dims == other.dims
            && self.format == other.format
            && self.levels == other.levels
            && self.values == other.values
            && self.fill.to_bits() == other.fill.to_bits()
    }
}

/// A name for a tensor's contents, unique in the process: two tensors with one generation
/// hold the same arrays, and a tensor gets a fresh one whenever its arrays may change
/// (through [`Tensor::values_mut`]). What a device keeps of a tensor's arrays between
/// calls is keyed by it, so that it is never stale.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Generation(u64);

impl Generation {
    /// Its number, unique in the process.
    pub fn number(self) -> u64 {
        self.0
    }

    fn fresh() -> Generation {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        Generation(NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
    }
}

impl fmt::Debug for Tensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tensor")
            .field("dims", &self.dims)
            .field("format", &self.format.spelling())
            .field("levels", &self.levels)
            .field("values", &self.values)
            .finish()
    }
}

/// Threads that run the parts of a task divided among them: conversions share their
/// copying with the threads a kernel computes on, which wait for work in between.
pub(crate) trait Team: Sync {
    /// The most parts it runs at once.
    fn size(&self) -> usize;
    /// Call `work(part)` once for every `part` below `parts` (at most [`Team::size`]),
    /// returning when every call has.
    fn run(&self, parts: usize, work: &(dyn Fn(usize) + Sync));
}

/// The team of the calling thread alone.
pub(crate) struct CallingThread;

impl Team for CallingThread {
    fn size(&self) -> usize {
        1
    }

    fn run(&self, parts: usize, work: &(dyn Fn(usize) + Sync)) {
        (0..parts).for_each(work);
    }
}

impl Tensor {
    /// Build a tensor in `format` from a coordinate list (sorted or not; duplicates are
    /// summed, explicit zeros kept).
    ///
    /// ```
    /// use sparsec::{format::Format, tensor::{Coo, Tensor, ValueType}};
    /// let coo = Coo::new(vec![2, 3], vec![1, 2, 0, 0, 1, 2], vec![1.0, 2.0, 3.0]).unwrap();
    /// let csr = Tensor::from_coo(&coo, &Format::parse("csr", 2).unwrap(), ValueType::F64).unwrap();
    /// assert_eq!(csr.to_coo().values, vec![2.0, 4.0]); // (0,0) and the summed (1,2)
    /// ```
    pub fn from_coo(
        coo: &Coo,
        format: &Format,
        value_type: ValueType,
    ) -> Result<Tensor, TensorError> {
        Tensor::from_coo_owned(coo.clone(), format, value_type)
    }

    /// [`Tensor::from_coo`], consuming the coordinate list (no copy of it is made).
    pub fn from_coo_owned(
        coo: Coo,
        format: &Format,
        value_type: ValueType,
    ) -> Result<Tensor, TensorError> {
        Tensor::check_order(&coo, format)?;
        pack::pack(coo, format, value_type, false).map(|(tensor, _)| tensor)
    }

    /// [`Tensor::from_coo_owned`], also returning the value slot of each entry: entry `e`
    /// of `coo` (duplicates included) was summed into `values()[slots[e]]`. New values of
    /// the same coordinates can then be scattered in without packing again.
    ///
    /// ```
    /// use sparsec::{format::Format, tensor::{Coo, Tensor, ValueType}};
    /// let coo = Coo::new(vec![2, 3], vec![1, 2, 0, 0, 1, 2], vec![1.0, 2.0, 3.0]).unwrap();
    /// let csr = Format::parse("csr", 2).unwrap();
    /// let (_, slots) = Tensor::from_coo_tracked(coo, &csr, ValueType::F64).unwrap();
    /// assert_eq!(slots, vec![1, 0, 1]);
    /// ```
    pub fn from_coo_tracked(
        coo: Coo,
        format: &Format,
        value_type: ValueType,
    ) -> Result<(Tensor, Vec<usize>), TensorError> {
        Tensor::check_order(&coo, format)?;
        pack::pack(coo, format, value_type, true)
    }

    fn check_order(coo: &Coo, format: &Format) -> Result<(), TensorError> {
        if format.order() != coo.order() {
            return Err(TensorError::OrderMismatch {
                format: format.spelling(),
                format_order: format.order(),
                tensor_order: coo.order(),
            });
        }
        Ok(())
    }

    /// A tensor of `dims` in `format`, every level of which is dense over one mode, whose
    /// values are not written yet: for a kernel that writes every value before anything
    /// reads one (a dense output it zeroes itself, on the threads that then add into it).
    /// Debug builds fill the values with NaN, so that one left unwritten shows.
    pub(crate) fn dense_unwritten(
        dims: &[usize],
        format: &Format,
        value_type: ValueType,
    ) -> Result<Tensor, String> {
        Tensor::dense_storage(dims, format, value_type, false)
    }

    /// A dense tensor of `dims` (every level dense, in mode order) of zeros, its storage
    /// laid out directly, without the packing a coordinate list goes through (which costs
    /// microseconds, as much as a small kernel); [`TensorError::TooLarge`] when the values
    /// cannot be allocated.
    pub fn try_zeros(dims: &[usize], value_type: ValueType) -> Result<Tensor, TensorError> {
        Tensor::dense_storage(dims, &Format::dense(dims.len()), value_type, true)
            .map_err(TensorError::TooLarge)
    }

    /// [`Tensor::dense_unwritten`], or with its values zeroed.
    fn dense_storage(
        dims: &[usize],
        format: &Format,
        value_type: ValueType,
        zeroed: bool,
    ) -> Result<Tensor, String> {
        let levels = dense_levels(dims, format)?;
        let len = dims.iter().try_fold(1usize, |n, &d| n.checked_mul(d));
        let what = || "the output's values".to_string();
        fn unwritten<T: Copy>(
            len: usize,
            poison: T,
            what: &dyn Fn() -> String,
        ) -> Result<Vec<T>, String> {
            if cfg!(debug_assertions) {
                return crate::memory::filled(Some(len), poison, what);
            }
            let mut v = crate::memory::reserved(len, what)?;
            // SAFETY: the capacity holds `len` elements, and every bit pattern is a value
            // of `T` (a float); the kernel writes each before it is read.
            unsafe { v.set_len(len) };
            Ok(v)
        }
        let values = match (zeroed, len) {
            (true, len) => Values::try_zeros(value_type, len)?,
            (false, None) => return Err(format!("{} overflows the address space", what())),
            (false, Some(len)) => match value_type {
                ValueType::F64 => Values::F64(unwritten(len, f64::NAN, &what)?),
                ValueType::F32 => Values::F32(unwritten(len, f32::NAN, &what)?),
            },
        };
        Ok(Tensor::from_parts(
            dims.to_vec(),
            format.clone(),
            levels,
            values,
        ))
    }

    /// A dense tensor of `dims` (every level dense, in mode order) holding `values` in
    /// row-major order, which must be as many as the dimensions' product.
    pub fn from_dense_values(dims: &[usize], values: Values) -> Result<Tensor, TensorError> {
        let format = Format::dense(dims.len());
        let len = dims.iter().try_fold(1usize, |n, &d| n.checked_mul(d));
        if len != Some(values.len()) {
            return Err(TensorError::Malformed(format!(
                "{} values for a dense tensor of dimensions {dims:?}",
                values.len()
            )));
        }
        let levels = dense_levels(dims, &format).map_err(TensorError::Malformed)?;
        Ok(Tensor::from_parts(dims.to_vec(), format, levels, values))
    }

    /// A dense tensor of the given dimensions filled with zeros ([`Tensor::try_zeros`]).
    ///
    /// # Panics
    /// When its values cannot be allocated; sizes from input go through
    /// [`Tensor::try_zeros`].
    pub fn zeros(dims: &[usize], value_type: ValueType) -> Tensor {
        Tensor::try_zeros(dims, value_type).unwrap_or_else(|e| panic!("Tensor::zeros: {e}"))
    }

    /// Assemble a tensor from parts (used by kernels that produce storage directly).
    pub fn from_parts(
        dims: Vec<usize>,
        format: Format,
        levels: Vec<LevelStorage>,
        values: Values,
    ) -> Tensor {
        Tensor {
            dims,
            format,
            levels,
            values,
            fill: 0.0,
            generation: Generation::fresh(),
        }
    }

    /// Take the tensor apart without copying: dimensions, format, level storage and
    /// values (the inverse of [`Tensor::from_parts`]), so that the arrays can be handed to
    /// another owner, such as a NumPy array.
    pub fn into_parts(self) -> (Vec<usize>, Format, Vec<LevelStorage>, Values) {
        (self.dims, self.format, self.levels, self.values)
    }

    /// The width of its index arrays: [`IndexWidth::I64`] when any of them holds
    /// `int64_t` (hashed levels always do), else [`IndexWidth::I32`] (also when it has
    /// none).
    pub fn index_width(&self) -> IndexWidth {
        let wide = self
            .levels
            .iter()
            .flat_map(|l| &l.arrays)
            .any(|(_, a)| a.width() == IndexWidth::I64);
        if wide {
            IndexWidth::I64
        } else {
            IndexWidth::I32
        }
    }

    /// The same tensor with the index arrays of every narrowable level at `width`.
    /// Tensors are built and read with the narrowest width their indices fit
    /// ([`Tensor::with_narrowest_indices`]); this keeps a tensor at `int64_t`, or asks
    /// for `int32_t` and fails when an index does not fit.
    pub fn with_index_width(self, width: IndexWidth) -> Result<Tensor, TensorError> {
        if width == IndexWidth::I32 && !self.narrowable_arrays().all(|a| a.fits(width)) {
            return Err(TensorError::Unrepresentable {
                format: self.format.spelling(),
                reason: "an index does not fit in 32 bits".into(),
            });
        }
        Ok(self.with_fitting_width(width))
    }

    /// The narrowable levels' index arrays at `width`, which the caller knows they fit.
    pub(super) fn with_fitting_width(mut self, width: IndexWidth) -> Tensor {
        self.generation = Generation::fresh();
        for (spec, level) in self.format.levels().iter().zip(&mut self.levels) {
            if spec.format.narrowable() {
                for (_, array) in &mut level.arrays {
                    let taken = std::mem::replace(array, IndexArray::I64(Vec::new()));
                    *array = taken
                        .with_width(width)
                        .expect("the caller checked that it fits");
                }
            }
        }
        self
    }

    /// The same tensor with `int32_t` index arrays when every index of its narrowable
    /// levels fits, else as it is: what packing, reading and converting choose.
    /// Narrowing copies one array at a time; where memory for the largest copy is short,
    /// the tensor stays as it is, since narrowing only saves memory and bandwidth.
    pub fn with_narrowest_indices(self) -> Tensor {
        let fits = self.narrowable_arrays().all(|a| a.fits(IndexWidth::I32));
        let largest = self.narrowable_arrays().map(IndexArray::len).max();
        let room = || {
            Vec::<i32>::new()
                .try_reserve_exact(largest.unwrap_or(0))
                .is_ok()
        };
        if fits && room() {
            self.with_fitting_width(IndexWidth::I32)
        } else {
            self
        }
    }

    /// The index arrays of the levels that may be stored as `int32_t`.
    fn narrowable_arrays(&self) -> impl Iterator<Item = &IndexArray> {
        self.format
            .levels()
            .iter()
            .zip(&self.levels)
            .filter(|(spec, _)| spec.format.narrowable())
            .flat_map(|(_, level)| level.arrays.iter().map(|(_, a)| a))
    }

    /// Dimension sizes, one per mode.
    pub fn dims(&self) -> &[usize] {
        &self.dims
    }
    /// Number of modes.
    pub fn order(&self) -> usize {
        self.dims.len()
    }
    /// The storage format.
    pub fn format(&self) -> &Format {
        &self.format
    }
    /// Arrays and parameters of each level, outermost first.
    pub fn levels(&self) -> &[LevelStorage] {
        &self.levels
    }
    /// The value array.
    pub fn values(&self) -> &Values {
        &self.values
    }
    /// Mutable values (same structure, new numbers): the tensor's contents get a fresh
    /// [`Generation`].
    pub fn values_mut(&mut self) -> &mut Values {
        self.generation = Generation::fresh();
        &mut self.values
    }
    /// The name of the tensor's current contents.
    pub fn generation(&self) -> Generation {
        self.generation
    }
    /// The value type.
    pub fn value_type(&self) -> ValueType {
        self.values.value_type()
    }

    /// Every stored component, in storage order. Padding slots of non-compact formats
    /// (ELL, DIA, BCSR, dense) come out as stored zeros; slots outside the dimensions
    /// (partial BCSR blocks) are skipped.
    pub fn for_each_stored(&self, mut visit: impl FnMut(&[i64], f64)) {
        self.walk_stored(Reading::Native, &mut visit);
    }

    /// The stored components as a sorted coordinate list with duplicates summed.
    pub fn to_coo(&self) -> Coo {
        let mut coords = Vec::new();
        let mut values = Vec::new();
        self.for_each_stored(|c, v| {
            coords.extend_from_slice(c);
            values.push(v);
        });
        let mut coo = Coo {
            dims: self.dims.clone(),
            coords,
            values,
        };
        coo.sort_and_sum();
        coo
    }

    /// For each level of the plain `format`, the most coordinates one parent position
    /// would hold there if this tensor's components were stored in it (a fiber's length
    /// at the leaf, the count of distinct leading coordinates at the root); `None` for
    /// formats that are not plain or of another order.
    pub fn widest_fibers(&self, format: &Format) -> Option<Vec<usize>> {
        let order = format.mode_order()?;
        if order.len() != self.order() {
            return None;
        }
        let coo = self.to_coo();
        let sorted = coo.sorted_permutation(&order);
        let mut widest = vec![0usize; order.len()];
        for (k, width) in widest.iter_mut().enumerate() {
            // Entries in storage order: a new parent starts when a coordinate above level k
            // changes, a new child when one at or above it does.
            let mut children = 0usize;
            for (n, &e) in sorted.iter().enumerate() {
                let differs = |levels: &[usize]| {
                    n == 0
                        || levels
                            .iter()
                            .any(|&m| coo.coord(e)[m] != coo.coord(sorted[n - 1])[m])
                };
                if differs(&order[..k]) {
                    children = 0;
                }
                if differs(&order[..=k]) {
                    children += 1;
                }
                *width = (*width).max(children);
            }
        }
        Some(widest)
    }

    /// The same tensor in another format.
    pub fn convert(&self, format: &Format) -> Result<Tensor, TensorError> {
        self.convert_on(format, &CallingThread)
    }

    /// Record `fill` as the value of the components the storage does not hold, changing no
    /// value: for a result whose storage holds `fill` wherever no entry was written.
    pub(crate) fn set_fill(&mut self, fill: f64) {
        self.fill = fill;
    }

    /// The value of the components the storage does not hold: 0 unless set by
    /// [`Tensor::with_fill`], a file that records one, or a kernel over a semiring (its
    /// reduction's identity).
    pub fn fill(&self) -> f64 {
        self.fill
    }

    /// The same stored entries with `fill` as the value of every other component. Storage
    /// the format holds beyond the entries (dense levels, padding) holds `fill` too:
    /// positions of value 0 that no entry wrote are set to it.
    pub fn with_fill(self, fill: f64) -> Result<Tensor, TensorError> {
        if fill.to_bits() == self.fill.to_bits() {
            return Ok(self);
        }
        let (coo, format, value_type) = (self.to_coo(), self.format.clone(), self.value_type());
        Tensor::from_coo_filled(coo, &format, value_type, fill)
    }

    /// [`Tensor::from_coo_owned`] with `fill` as the value of every component that no
    /// entry gives, in the storage (dense levels, padding) and beyond it.
    pub fn from_coo_filled(
        coo: Coo,
        format: &Format,
        value_type: ValueType,
        fill: f64,
    ) -> Result<Tensor, TensorError> {
        if value_type == ValueType::F32 && fill.is_finite() && !(fill as f32).is_finite() {
            return Err(TensorError::Malformed(format!(
                "the fill value {fill} does not fit the tensor's values (float32)"
            )));
        }
        let (mut tensor, slots) = Tensor::from_coo_tracked(coo, format, value_type)?;
        if fill != 0.0 {
            let mut written = vec![false; tensor.values.len()];
            slots.iter().for_each(|&s| written[s] = true);
            for (p, _) in written.iter().enumerate().filter(|(_, w)| !**w) {
                tensor.values.set(p, fill);
            }
        }
        tensor.fill = fill;
        Ok(tensor)
    }

    /// [`Tensor::convert`], with the copy between dense mode orders shared among `team`
    /// when it is long enough to gain from threads.
    pub(crate) fn convert_on(
        &self,
        format: &Format,
        team: &dyn Team,
    ) -> Result<Tensor, TensorError> {
        let plain_dense = |f: &Format| f.is_plain() && f.is_all_dense();
        if plain_dense(&self.format) && plain_dense(format) && format.order() == self.order() {
            return self.transpose_dense(format, team);
        }
        if let Some(transposed) = self.transpose_compressed(format, team) {
            return Ok(transposed);
        }
        if self.fill != 0.0 {
            return Tensor::from_coo_filled(self.to_coo(), format, self.value_type(), self.fill);
        }
        if let Some(streamed) = stream::stream_converted(self, format)? {
            return Ok(streamed.with_narrowest_indices());
        }
        Tensor::from_coo_owned(self.to_coo(), format, self.value_type())
    }

    /// Number of stored values (including padding of non-compact formats).
    pub fn stored_values(&self) -> usize {
        self.values.len()
    }

    /// True when both tensors have the same shape and every component agrees within
    /// `tolerance` (relative to the larger magnitude, absolute below 1). Formats may differ;
    /// an absent component equals zero.
    pub fn approx_eq(&self, other: &Tensor, tolerance: f64) -> bool {
        self.max_difference(other).is_some_and(|d| d <= tolerance)
    }

    /// Largest scaled difference between components, `None` if the shapes differ.
    pub fn max_difference(&self, other: &Tensor) -> Option<f64> {
        if self.dims != other.dims {
            return None;
        }
        Some(self.to_coo().max_difference(&other.to_coo()))
    }
}

/// The difference between two components when it does not depend on a scale: `Some(0.0)`
/// when they are equal, both NaN included (a NaN input gives a NaN result on every
/// correct path, so matching NaNs are agreement), and `Some(inf)` when exactly one is NaN
/// or they are unequal and one is infinite (a NaN against a number, `+inf` against `-inf`
/// or a number). `None` for two different finite numbers, which the caller scales.
pub(crate) fn unscaled_difference(x: f64, y: f64) -> Option<f64> {
    if x == y || (x.is_nan() && y.is_nan()) {
        Some(0.0)
    } else if !x.is_finite() || !y.is_finite() {
        Some(f64::INFINITY)
    } else {
        None
    }
}

#[cfg(test)]
mod tests;
