//! Index arrays of tensor storage: `int32_t` when every index fits, else `int64_t`.

use std::borrow::Cow;
use std::ffi::c_void;

use crate::ir::IndexWidth;

/// One index array of a level (positions, coordinates, offsets or flags) at its width.
/// Two arrays are equal when they hold the same indices, whatever their widths.
#[derive(Clone, Debug)]
pub enum IndexArray {
    /// `int32_t` indices.
    I32(Vec<i32>),
    /// `int64_t` indices.
    I64(Vec<i64>),
}

impl IndexArray {
    /// The element width.
    pub fn width(&self) -> IndexWidth {
        match self {
            IndexArray::I32(_) => IndexWidth::I32,
            IndexArray::I64(_) => IndexWidth::I64,
        }
    }
    /// Number of indices.
    pub fn len(&self) -> usize {
        match self {
            IndexArray::I32(a) => a.len(),
            IndexArray::I64(a) => a.len(),
        }
    }
    /// True when the array holds no index.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Index `i`, widened.
    pub fn get(&self, i: usize) -> i64 {
        match self {
            IndexArray::I32(a) => i64::from(a[i]),
            IndexArray::I64(a) => a[i],
        }
    }
    /// The indices as `int64_t`: borrowed when they are stored so, else widened (a copy).
    pub fn to_i64(&self) -> Cow<'_, [i64]> {
        match self {
            IndexArray::I32(a) => Cow::Owned(a.iter().map(|&x| i64::from(x)).collect()),
            IndexArray::I64(a) => Cow::Borrowed(a),
        }
    }
    /// Address of the first element, for a kernel's argument.
    pub fn as_ptr(&self) -> *const c_void {
        match self {
            IndexArray::I32(a) => a.as_ptr() as *const c_void,
            IndexArray::I64(a) => a.as_ptr() as *const c_void,
        }
    }
    /// True when every index can be stored at `width`.
    pub fn fits(&self, width: IndexWidth) -> bool {
        match (self, width) {
            (IndexArray::I64(a), IndexWidth::I32) => a.iter().all(|&x| i32::try_from(x).is_ok()),
            _ => true,
        }
    }
    /// The same indices at `width`; `None` when one does not fit (see [`IndexArray::fits`]).
    pub fn with_width(self, width: IndexWidth) -> Option<IndexArray> {
        match (self, width) {
            (IndexArray::I64(a), IndexWidth::I32) => {
                // Collecting into an `Option` would not know the length and grow by doubling.
                let mut narrow = Vec::with_capacity(a.len());
                for x in a {
                    narrow.push(i32::try_from(x).ok()?);
                }
                Some(IndexArray::I32(narrow))
            }
            (IndexArray::I32(a), IndexWidth::I64) => {
                Some(IndexArray::I64(a.into_iter().map(i64::from).collect()))
            }
            (same, _) => Some(same),
        }
    }
}

/// An empty `int64_t` array.
impl Default for IndexArray {
    fn default() -> IndexArray {
        IndexArray::I64(Vec::new())
    }
}

impl PartialEq for IndexArray {
    fn eq(&self, other: &IndexArray) -> bool {
        match (self, other) {
            (IndexArray::I32(a), IndexArray::I32(b)) => a == b,
            (IndexArray::I64(a), IndexArray::I64(b)) => a == b,
            _ => self.to_i64() == other.to_i64(),
        }
    }
}

impl From<Vec<i64>> for IndexArray {
    fn from(a: Vec<i64>) -> IndexArray {
        IndexArray::I64(a)
    }
}

impl From<Vec<i32>> for IndexArray {
    fn from(a: Vec<i32>) -> IndexArray {
        IndexArray::I32(a)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn narrows_only_what_fits_and_compares_by_value() {
        let small = IndexArray::from(vec![0i64, 5, -7]);
        let narrow = small.clone().with_width(IndexWidth::I32).unwrap();
        assert_eq!(narrow.width(), IndexWidth::I32);
        assert_eq!(narrow, small);
        assert_eq!(narrow.get(2), -7);
        assert_eq!(narrow.to_i64().as_ref(), &[0, 5, -7]);
        let big = IndexArray::from(vec![0i64, i64::from(i32::MAX) + 1]);
        assert!(!big.fits(IndexWidth::I32));
        assert!(big.with_width(IndexWidth::I32).is_none());
        let low = IndexArray::from(vec![i64::from(i32::MIN) - 1]);
        assert!(low.with_width(IndexWidth::I32).is_none());
        let wide = narrow.with_width(IndexWidth::I64).unwrap();
        assert_eq!(wide.width(), IndexWidth::I64);
        assert_ne!(wide, IndexArray::from(vec![0i64, 5]));
    }
}
