//! Augmenting real inputs for data collection, as WACO does: resizing a tensor (scaling
//! every coordinate, so the pattern keeps its shape at another size) and densifying random
//! blocks around stored entries (so that blocked formats have something to find).

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::tensor::Coo;

/// `coo` with every mode's size multiplied by `factor` (at least 1 after rounding) and each
/// coordinate scaled the same way; entries that land on one coordinate are summed later by
/// packing, as duplicates are. A factor above 1 spreads the entries out, below 1 merges them.
pub fn resize(coo: &Coo, factor: f64) -> Coo {
    let factor = if factor.is_finite() && factor > 0.0 {
        factor
    } else {
        1.0
    };
    let dims: Vec<usize> = coo
        .dims
        .iter()
        .map(|&d| (((d as f64) * factor).round() as usize).max(1))
        .collect();
    let coords = coo
        .coords
        .iter()
        .enumerate()
        .map(|(k, &c)| {
            let m = k % coo.dims.len().max(1);
            (((c as f64) * factor) as i64).clamp(0, dims[m] as i64 - 1)
        })
        .collect();
    Coo {
        dims,
        coords,
        values: coo.values.clone(),
    }
}

/// `coo` plus `blocks` dense blocks of side `side` (in every mode), each placed at a random
/// stored entry's block (coordinates rounded down to multiples of `side`), filled with
/// random values. An empty tensor stays empty.
pub fn densify_blocks(coo: &Coo, blocks: usize, side: usize, seed: u64) -> Coo {
    let mut out = coo.clone();
    let order = coo.dims.len();
    if coo.is_empty() || order == 0 || side == 0 {
        return out;
    }
    let mut rng = StdRng::seed_from_u64(seed);
    let cells = side.pow(order as u32);
    for _ in 0..blocks {
        let e = rng.gen_range(0..coo.len());
        let corner: Vec<i64> = coo.coord(e).iter().map(|&c| c - c % side as i64).collect();
        for cell in 0..cells {
            let mut rest = cell;
            let mut point = Vec::with_capacity(order);
            for (&start, &dim) in corner.iter().zip(&coo.dims) {
                let c = start + (rest % side) as i64;
                rest /= side;
                if c >= dim as i64 {
                    break;
                }
                point.push(c);
            }
            if point.len() == order {
                out.coords.extend(point);
                out.values.push(rng.gen_range(-1.0..1.0));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matrix() -> Coo {
        Coo::new(vec![4, 6], vec![0, 0, 1, 5, 3, 2], vec![1.0, 2.0, 3.0]).unwrap()
    }

    #[test]
    fn resize_scales_dimensions_and_coordinates() {
        let big = resize(&matrix(), 2.0);
        assert_eq!(big.dims, [8, 12]);
        assert_eq!(big.coords, [0, 0, 2, 10, 6, 4]);
        big.validate().unwrap();
        let small = resize(&matrix(), 0.25);
        assert_eq!(small.dims, [1, 2]);
        small.validate().unwrap();
        assert!(small.coords.iter().all(|&c| c < 2));
    }

    #[test]
    fn densified_blocks_are_inside_and_around_entries() {
        let m = matrix();
        let d = densify_blocks(&m, 3, 2, 7);
        d.validate().unwrap();
        assert!(d.len() > m.len());
        // Every added entry shares its 2 x 2 block with an original entry.
        for e in m.len()..d.len() {
            let c = d.coord(e);
            assert!((0..m.len()).any(|o| {
                let k = m.coord(o);
                k[0] / 2 == c[0] / 2 && k[1] / 2 == c[1] / 2
            }));
        }
        assert_eq!(densify_blocks(&Coo::empty(vec![3, 3]), 3, 2, 1).len(), 0);
    }
}
