//! What the cost model reads of an input: its nonzero coordinates as the active sites of
//! a sparse convolutional net (with the net's gather tables, computed once per input), the
//! global sizes, and a dense downsampled image for the ablation.
//!
//! The sites are the nonzero coordinates themselves when there are at most [`MAX_SITES`]
//! of them. A larger input is first coarsened by the fewest halvings of every coordinate
//! that bring it under that bound, and each coarse site carries how many nonzeros it
//! holds. WACO runs its net on the raw coordinates of matrices up to ten million nonzeros
//! on a 24 GB GPU; on this project's two CPU cores the bound keeps a training epoch to
//! seconds, and an input that is not coarsened is read exactly as WACO reads it.

use std::collections::HashMap;

/// Active sites of the first layer, at most.
pub const MAX_SITES: usize = 1 << 15;

/// Convolution layers: one submanifold layer at the input's resolution, then strided
/// layers, each halving the grid (WACO's 14).
pub const LAYERS: usize = 14;

/// Input channels of a site: presence, and the share of its cell's capacity it holds.
pub const IN_CHANNELS: usize = 2;

/// Side of the dense image of the dense-CNN ablation.
pub const IMAGE_SIDE: usize = 256;

/// The most modes an input may have (coordinates are packed 32 bits a mode).
pub const MAX_ORDER: usize = 4;

/// One convolution layer's sites and where each kernel tap reads.
#[derive(Clone, Debug)]
pub struct Layer {
    /// Active output sites.
    pub sites: usize,
    /// `sites × 3^order` rows of the previous layer's features (the layer input's), one
    /// per kernel tap; a missing neighbour reads row `previous`, which holds zeros.
    pub gather: Vec<u32>,
    /// Sites of the previous layer (the index of its zero row).
    pub previous: usize,
}

/// An input's nonzero pattern prepared for the sparse net.
#[derive(Clone, Debug)]
pub struct Pattern {
    /// Number of modes.
    pub order: usize,
    /// Halvings applied to every coordinate before the first layer (0: raw coordinates).
    pub shift: u32,
    /// `sites × IN_CHANNELS` features of the first layer's input.
    pub input: Vec<f32>,
    /// Sites of the first layer's input.
    pub input_sites: usize,
    /// The [`LAYERS`] layers, first to last.
    pub layers: Vec<Layer>,
}

/// Why an input cannot be read by the model.
#[derive(Debug, thiserror::Error)]
pub enum PatternError {
    /// Too many modes.
    #[error("the cost model reads tensors of at most {MAX_ORDER} modes, not {0}")]
    Order(usize),
}

fn pack(coord: &[i64]) -> u128 {
    coord
        .iter()
        .enumerate()
        .fold(0u128, |key, (m, &c)| key | ((c as u32 as u128) << (32 * m)))
}

/// Every vector of `{-1, 0, 1}^order`, the taps of a 3-wide kernel, the centre included.
fn taps(order: usize) -> Vec<Vec<i64>> {
    (0..3usize.pow(order as u32))
        .map(|mut t| {
            (0..order)
                .map(|_| {
                    let d = (t % 3) as i64 - 1;
                    t /= 3;
                    d
                })
                .collect()
        })
        .collect()
}

/// Distinct coordinates (flattened, `order` each, in increasing packed order) with how many
/// of `coords` fall on each after `shift` halvings.
fn distinct(coords: &[i64], order: usize, shift: u32) -> (Vec<i64>, Vec<u32>) {
    let mut keys: Vec<(u128, usize)> = coords
        .chunks_exact(order)
        .enumerate()
        .map(|(e, c)| {
            let shifted: Vec<i64> = c.iter().map(|&x| x >> shift).collect();
            (pack(&shifted), e)
        })
        .collect();
    keys.sort_unstable_by_key(|&(k, _)| k);
    let mut sites = Vec::new();
    let mut counts: Vec<u32> = Vec::new();
    let mut last = None;
    for (key, e) in keys {
        if last == Some(key) {
            *counts.last_mut().expect("a site") += 1;
        } else {
            last = Some(key);
            sites.extend(
                coords[e * order..(e + 1) * order]
                    .iter()
                    .map(|&x| x >> shift),
            );
            counts.push(1);
        }
    }
    (sites, counts)
}

fn count_distinct(coords: &[i64], order: usize, shift: u32) -> usize {
    let mut keys: Vec<u128> = coords
        .chunks_exact(order)
        .map(|c| {
            let shifted: Vec<i64> = c.iter().map(|&x| x >> shift).collect();
            pack(&shifted)
        })
        .collect();
    keys.sort_unstable();
    keys.dedup();
    keys.len()
}

/// The layer whose sites are `sites` (flattened coordinates) reading `previous` sites
/// through the taps centred at `scale * site`.
fn layer(sites: &[i64], previous: &[i64], order: usize, scale: i64, taps: &[Vec<i64>]) -> Layer {
    let index: HashMap<u128, u32> = previous
        .chunks_exact(order)
        .enumerate()
        .map(|(k, c)| (pack(c), k as u32))
        .collect();
    let missing = (previous.len() / order) as u32;
    let mut gather = Vec::with_capacity(sites.len() / order * taps.len());
    let mut at = vec![0i64; order];
    for site in sites.chunks_exact(order) {
        for tap in taps {
            for m in 0..order {
                at[m] = site[m] * scale + tap[m];
            }
            let row = if at.iter().any(|&c| c < 0) {
                missing
            } else {
                index.get(&pack(&at)).copied().unwrap_or(missing)
            };
            gather.push(row);
        }
    }
    Layer {
        sites: sites.len() / order,
        gather,
        previous: missing as usize,
    }
}

impl Pattern {
    /// The pattern of the entries at `coords` (flattened, `dims.len()` per entry).
    pub fn new(dims: &[usize], coords: &[i64]) -> Result<Pattern, PatternError> {
        let order = dims.len();
        if order == 0 || order > MAX_ORDER {
            return Err(PatternError::Order(order));
        }
        let largest = dims.iter().copied().max().unwrap_or(1).max(1);
        let shift = coarsening(coords, order, largest);
        let (mut sites, counts) = distinct(coords, order, shift);
        // A cell of `shift` halvings holds up to 2^(order * shift) nonzeros.
        let capacity_log = (order as f32 * shift as f32).max(1.0);
        let input: Vec<f32> = counts
            .iter()
            .flat_map(|&c| {
                [
                    1.0,
                    if shift == 0 {
                        0.0
                    } else {
                        (c as f32).log2() / capacity_log
                    },
                ]
            })
            .collect();
        let input_sites = counts.len();
        let taps = taps(order);
        let mut layers = Vec::with_capacity(LAYERS);
        layers.push(layer(&sites, &sites, order, 1, &taps));
        for _ in 1..LAYERS {
            let mut coarse: Vec<i64> = sites.iter().map(|&c| c >> 1).collect();
            let mut keyed: Vec<(u128, usize)> = coarse
                .chunks_exact(order)
                .enumerate()
                .map(|(k, c)| (pack(c), k))
                .collect();
            keyed.sort_unstable_by_key(|&(k, _)| k);
            keyed.dedup_by_key(|&mut (k, _)| k);
            coarse = keyed
                .iter()
                .flat_map(|&(_, k)| coarse[k * order..(k + 1) * order].to_vec())
                .collect();
            layers.push(layer(&coarse, &sites, order, 2, &taps));
            sites = coarse;
        }
        Ok(Pattern {
            order,
            shift,
            input,
            input_sites,
            layers,
        })
    }
}

/// The fewest halvings after which at most [`MAX_SITES`] distinct cells hold entries, or
/// after which the largest dimension is one cell. Each count sorts every coordinate, so
/// the halvings are found by bisection (the count never grows with more halvings).
fn coarsening(coords: &[i64], order: usize, largest: usize) -> u32 {
    let fits = |shift: u32| count_distinct(coords, order, shift) <= MAX_SITES;
    if fits(0) {
        return 0;
    }
    let mut whole = 0u32;
    while (largest >> whole) > 1 {
        whole += 1;
    }
    // The answer lies in (low, high]: `low` does not fit, `high` fits or is `whole`.
    let (mut low, mut high) = (0u32, whole);
    while high - low > 1 {
        let mid = low + (high - low) / 2;
        if fits(mid) {
            high = mid;
        } else {
            low = mid;
        }
    }
    high
}

/// The global sizes the model standardizes and reads: log2 of each dimension (padded to
/// [`MAX_ORDER`] with zeros) and of the number of nonzeros, and the log2 density.
pub fn globals(dims: &[usize], nonzeros: usize) -> Vec<f32> {
    let mut out: Vec<f32> = (0..MAX_ORDER)
        .map(|m| dims.get(m).map_or(0.0, |&d| (d as f32 + 1.0).log2()))
        .collect();
    out.push((nonzeros as f32 + 1.0).log2());
    let cells: f64 = dims.iter().map(|&d| (d.max(1)) as f64).product();
    out.push(((nonzeros.max(1)) as f64 / cells).log2() as f32);
    out
}

/// Number of [`globals`].
pub const GLOBALS: usize = MAX_ORDER + 2;

/// The dense-CNN ablation's input: an `IMAGE_SIDE²` image of the first two modes, each
/// pixel `ln(1 + nonzeros in it)` over the largest pixel's (an order-1 input is a row).
pub fn image(dims: &[usize], coords: &[i64]) -> Vec<f32> {
    let order = dims.len();
    let mut counts = vec![0u32; IMAGE_SIDE * IMAGE_SIDE];
    let bucket = |c: i64, d: usize| ((c as u128 * IMAGE_SIDE as u128) / d.max(1) as u128) as usize;
    for c in coords.chunks_exact(order.max(1)) {
        let r = bucket(c[0], dims[0]).min(IMAGE_SIDE - 1);
        let k = if order > 1 {
            bucket(c[1], dims[1]).min(IMAGE_SIDE - 1)
        } else {
            0
        };
        counts[r * IMAGE_SIDE + k] += 1;
    }
    let top = counts.iter().copied().max().unwrap_or(0) as f32;
    let scale = (1.0 + top).ln().max(1e-6);
    counts
        .iter()
        .map(|&c| (1.0 + c as f32).ln() / scale)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_coordinates_are_the_sites_and_taps_find_neighbours() {
        // A 2x2 block at (0,0) and a lone entry at (5,7).
        let coords = [0, 0, 0, 1, 1, 0, 1, 1, 5, 7];
        let p = Pattern::new(&[8, 8], &coords).unwrap();
        assert_eq!(p.shift, 0);
        assert_eq!(p.input_sites, 5);
        assert_eq!(p.layers.len(), LAYERS);
        let first = &p.layers[0];
        assert_eq!(first.sites, 5);
        // Site (0,0)'s taps: of its 9 neighbours, 3 others and itself exist.
        let found = first.gather[..9].iter().filter(|&&r| r != 5).count();
        assert_eq!(found, 4);
        // The lone entry sees only itself.
        let found = first.gather[4 * 9..].iter().filter(|&&r| r != 5).count();
        assert_eq!(found, 1);
        // Strided layers coarsen: (0..1, 0..1) -> (0,0); (5,7) -> (2,3); then (0,0), (1,1).
        assert_eq!(p.layers[1].sites, 2);
        assert_eq!(p.layers[2].sites, 2);
        assert_eq!(p.layers[LAYERS - 1].sites, 1);
        // Every gather row is a site of the previous layer or its zero row.
        for l in &p.layers {
            assert!(l.gather.iter().all(|&r| (r as usize) <= l.previous));
        }
    }

    #[test]
    fn large_inputs_are_coarsened_under_the_bound_and_count_their_cells() {
        let n = 300usize;
        let coords: Vec<i64> = (0..n * n)
            .flat_map(|e| [(e / n) as i64, (e % n) as i64])
            .collect();
        let p = Pattern::new(&[n, n], &coords).unwrap();
        assert!(p.input_sites <= MAX_SITES);
        assert_eq!(p.shift, 1);
        // A full cell of one halving holds 4 = 2^(2*1) nonzeros: its share is 1.
        assert_eq!(p.input[1], 1.0);
    }

    #[test]
    fn bisection_finds_the_fewest_halvings() {
        let linear = |coords: &[i64], largest: usize| {
            let mut shift = 0;
            while count_distinct(coords, 2, shift) > MAX_SITES && (largest >> shift) > 1 {
                shift += 1;
            }
            shift
        };
        let diagonal: Vec<i64> = (0..100_000i64).flat_map(|i| [i, i]).collect();
        let mut state = 12345u64;
        let mut next = |bound: u64| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 33) % bound) as i64
        };
        let spread: Vec<i64> = (0..400_000).map(|_| next(1_000_000)).collect();
        let strip: Vec<i64> = (0..80_000i64).flat_map(|e| [e % 2, e / 2]).collect();
        let cases = [
            (diagonal, 1usize << 20),
            (spread, 1_000_000),
            (strip, 40_000),
            (vec![0, 0, 1, 1], 2),
        ];
        for (coords, largest) in &cases {
            let found = coarsening(coords, 2, *largest);
            assert_eq!(found, linear(coords, *largest), "largest {largest}");
        }
        assert!(coarsening(&cases[0].0, 2, cases[0].1) >= 2);
    }

    #[test]
    fn empty_and_too_many_modes() {
        let p = Pattern::new(&[3, 3], &[]).unwrap();
        assert_eq!(p.input_sites, 0);
        assert!(p.layers.iter().all(|l| l.sites == 0));
        assert!(Pattern::new(&[2; 5], &[0; 5]).is_err());
        assert!(image(&[4, 4], &[]).iter().all(|&v| v == 0.0));
    }
}
