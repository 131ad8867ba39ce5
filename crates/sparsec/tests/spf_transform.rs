//! SPF transformations and the isl-backed set library: transformed programs (interchange,
//! shift and fusion with peeled iterations, skew) give the untransformed program's result
//! and the plain loop's, illegal transformations are refused with the dependence they
//! break, and set operations with uninterpreted functions decide what their facts imply.

mod common;
use common::{compile_spf, spf_error};

use sparsec::format::Format;
use sparsec::ir::OutputMode;
use sparsec::spf::presburger::{Facts, UfFact};
use sparsec::spf::set::Affine;
use sparsec::spf::{self, SpfKernel};
use sparsec::tensor::{Coo, Tensor, ValueType};

const TRIANGLE: &str = include_str!("../../../examples/spf/triangle_interchange.spf");
const JACOBI: &str = include_str!("../../../examples/spf/jacobi_1d.spf");
const LOWER: &str = include_str!("../../../examples/spf/lower_solve.spf");

/// A dense tensor holding `values` in row-major order.
fn dense(dims: Vec<usize>, values: Vec<f64>) -> Tensor {
    let mut coords = Vec::new();
    for p in 0..values.len() {
        let mut rest = p;
        let mut point = vec![0i64; dims.len()];
        for (d, &size) in dims.iter().enumerate().rev() {
            point[d] = (rest % size) as i64;
            rest /= size;
        }
        coords.extend(point);
    }
    let order = dims.len();
    let coo = Coo::new(dims, coords, values).unwrap();
    Tensor::from_coo(&coo, &Format::dense(order), ValueType::F64).unwrap()
}

fn values(t: &Tensor) -> Vec<f64> {
    (0..t.values().len()).map(|p| t.values().get(p)).collect()
}

/// The program without its `transform` lines.
fn untransformed(text: &str) -> String {
    text.lines()
        .filter(|l| !l.starts_with("transform"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn interchanged_triangle_copy_is_the_strict_lower_triangle() {
    let k = compile_spf("triangle_interchange.spf", TRIANGLE);
    // The outer loop is now the column, bounded by isl's projection: j < N - 1.
    assert!(
        k.source()
            .contains("for (int64_t j = 0; j < N_size - 1; j++)"),
        "{}",
        k.source()
    );
    for n in [0usize, 1, 2, 7] {
        let b: Vec<f64> = (0..n * n).map(|p| 1.0 + p as f64).collect();
        let a = k.run(&[("b", &dense(vec![n, n], b.clone()))]).unwrap();
        let want: Vec<f64> = (0..n * n)
            .map(|p| {
                if p % n.max(1) < p / n.max(1) {
                    b[p]
                } else {
                    0.0
                }
            })
            .collect();
        assert_eq!(values(&a), want, "n = {n}");
    }
}

fn jacobi_reference(b0: &[f64], sweeps: usize) -> Vec<f64> {
    let p = b0.len();
    let mut b = b0.to_vec();
    let mut a = vec![0.0; p];
    for _ in 0..sweeps {
        for x in 1..p.saturating_sub(1) {
            a[x] = (b[x - 1] + b[x] + b[x + 1]) / 3.0;
        }
        for x in 1..p.saturating_sub(1) {
            b[x] = (a[x - 1] + a[x] + a[x + 1]) / 3.0;
        }
    }
    b
}

#[test]
fn jacobi_shift_and_fusion_peels_and_matches_the_unfused_sweeps() {
    let mut fused = compile_spf("jacobi_1d.spf", JACOBI);
    let mut plain = compile_spf("jacobi_1d.spf untransformed", &untransformed(JACOBI));
    // The golden structure: in each sweep, one peeled S0 iteration, the fused loop, one
    // peeled S1 iteration; so three loops in all (the copy, the sweeps, the fused loop).
    let src = fused.source();
    assert_eq!(src.matches("for (int64_t").count(), 3, "{src}");
    let sweep = &src[src.find("for (int64_t t").unwrap()..];
    let fused_loop = sweep.find("for (int64_t x").unwrap();
    assert!(
        sweep[..fused_loop].contains("A["),
        "S0 is peeled first: {sweep}"
    );
    assert!(
        sweep[fused_loop..].contains("B_vals[x_4]"),
        "S1 last: {sweep}"
    );
    for p in [0usize, 1, 2, 3, 4, 10, 57] {
        for sweeps in [0usize, 1, 3] {
            let b0: Vec<f64> = (0..p).map(|x| ((x * 7) % 11) as f64 - 3.0).collect();
            let input = dense(vec![p], b0.clone());
            let want = jacobi_reference(&b0, sweeps);
            for k in [&mut fused, &mut plain] {
                k.set_param("T", sweeps as i64).unwrap();
                let got = values(&k.run(&[("B0", &input)]).unwrap());
                assert_eq!(got.len(), want.len());
                for (g, w) in got.iter().zip(&want) {
                    assert!(
                        (g - w).abs() <= 1e-12 * w.abs().max(1.0),
                        "P={p} T={sweeps}"
                    );
                }
            }
        }
    }
    let e = plain.run(&[]).unwrap_err().to_string();
    assert!(e.contains("input `B0` is missing"), "{e}");
    let mut unset = compile_spf("jacobi_1d.spf", JACOBI);
    let e = unset
        .run(&[("B0", &dense(vec![3], vec![1.0; 3]))])
        .unwrap_err();
    assert!(e.to_string().contains("parameter `T` has no value"), "{e}");
    assert!(unset.set_param("T", -1).is_err());
    assert!(
        unset.set_param("P", 3).is_err(),
        "P is bound by B0, not a param"
    );
}

#[test]
fn fusion_without_the_shift_is_refused_with_the_broken_dependence() {
    let text = JACOBI.replace("transform S0 {[c, t, a, x, b] -> [c, t, 0, x - 1, 0]};", "");
    let (message, at) = spf_error(&text);
    assert!(
        message.contains("illegal") && message.contains("S1's read of `A`"),
        "{message}"
    );
    // The order named is the transformed one: the read now comes first.
    assert!(
        message.contains("runs S1's read of `A` before S0's write")
            && message.contains("a flow dependence"),
        "{message}"
    );
    assert!(
        !message.contains("index arrays"),
        "no UF: the answer is exact"
    );
    assert!(at.starts_with("transform S1"), "{at}");
}

/// A 2-D recurrence whose schedule is skewed into wavefronts `s = i + j`.
const SKEWED: &str = "input b[N, M] : dense;
output a[N, M];
stmt init
  domain {[i, j] : 0 <= i < N && 0 <= j < M}
  schedule {[i, j] -> [0, i, j]}
  body a(i, j) = b(i, j);
stmt sweep
  domain {[i, j] : 1 <= i < N && 1 <= j < M}
  schedule {[i, j] -> [1, i, j]}
  body a(i, j) += 0.5 * a(i - 1, j) + 0.25 * a(i, j - 1);
transform sweep {[c, i, j] -> [c, i + j, i]};
";

#[test]
fn a_skewed_recurrence_matches_the_original_order() {
    let skewed = compile_spf("skewed", SKEWED);
    let plain = compile_spf("plain", &untransformed(SKEWED));
    for (n, m) in [(0usize, 0usize), (1, 1), (1, 5), (4, 1), (6, 9)] {
        let b: Vec<f64> = (0..n * m).map(|p| (p % 5) as f64 + 1.0).collect();
        let mut want = b.clone();
        for i in 1..n {
            for j in 1..m {
                want[i * m + j] += 0.5 * want[(i - 1) * m + j] + 0.25 * want[i * m + j - 1];
            }
        }
        let input = dense(vec![n, m], b);
        assert_eq!(values(&skewed.run(&[("b", &input)]).unwrap()), want);
        assert_eq!(values(&plain.run(&[("b", &input)]).unwrap()), want);
    }
    // Running the wavefronts backwards breaks both reads.
    let (message, _) = spf_error(&SKEWED.replace("[c, i + j, i]", "[c, -i - j, i]"));
    assert!(message.contains("sweep's read of `a`"), "{message}");
}

#[test]
fn dependences_through_index_arrays_are_checked_conservatively() {
    // Rows of forward substitution run backwards: the read x(col(k)) of an earlier row
    // would come first. Refused, saying the answer goes through index arrays.
    let reversed = format!("{LOWER}transform {{[i, a, k, j] -> [-i, a, k, j]}};\n");
    let (message, at) = spf_error(&reversed);
    assert!(
        message.contains("illegal") && message.contains("index arrays"),
        "{message}"
    );
    assert!(at.starts_with("transform"), "{at}");
    // A shift of every statement keeps every dependence.
    let shifted = format!("{LOWER}transform {{[i, a, k, j] -> [i + 3, a, k, j]}};\n");
    let k = compile_spf("shifted", &shifted);
    let l = Coo::new(
        vec![3, 3],
        vec![0, 0, 1, 0, 1, 1, 2, 1, 2, 2],
        vec![2.0, 1.0, 4.0, 3.0, 5.0],
    )
    .unwrap();
    let l = Tensor::from_coo(&l, &Format::parse("csr", 2).unwrap(), ValueType::F64).unwrap();
    let x = k.run(&[("L", &l), ("b", &dense(vec![3], vec![2.0, 6.0, 13.0]))]);
    // x0 = 1, x1 = (6 - 1) / 4, x2 = (13 - 3 x1) / 5.
    let x1 = 5.0 / 4.0;
    assert_eq!(values(&x.unwrap()), vec![1.0, x1, (13.0 - 3.0 * x1) / 5.0]);
    // A transform naming no declared statement, or of the wrong arity, is an error.
    let (message, at) = spf_error(&format!("{LOWER}transform nope {{[a] -> [a]}};\n"));
    assert!(message.contains("no statement `nope`"), "{message}");
    assert_eq!(at, "nope");
    let (message, _) = spf_error(&format!("{LOWER}transform {{[a] -> [a]}};\n"));
    assert!(message.contains("takes 1 inputs, not 4"), "{message}");
}

fn monotone(name: &str) -> UfFact {
    UfFact {
        name: name.into(),
        monotone: true,
        lower: Some(Affine::constant(0)),
    }
}

#[test]
fn set_operations_with_uninterpreted_functions() {
    let set = |t: &str| spf::parse_set(t).unwrap();
    // Monotonicity: rowptr cannot decrease between rows.
    let s = set("{[i, i2] : 0 <= i < i2 < N && rowptr(i2) < rowptr(i)}");
    assert!(
        !s.is_empty(&Facts::default()).unwrap(),
        "without facts: unknown"
    );
    assert!(s.is_empty(&Facts(vec![monotone("rowptr")])).unwrap());
    // Functional consistency: equal arguments, equal values.
    let s = set("{[k, k2] : k = k2 && col(k) < col(k2)}");
    assert!(s.is_empty(&Facts::default()).unwrap());
    assert!(!set("{[k, k2] : k < k2 && col(k) < col(k2)}")
        .is_empty(&Facts::default())
        .unwrap());
    // Exact over the integers, not the rationals.
    assert!(set("{[i] : 2 * i = 1}")
        .is_empty(&Facts::default())
        .unwrap());
    // Projection: Fourier-Motzkin with UF terms as opaque values.
    let csr = set("{[i, k] : 0 <= i < N && rowptr(i) <= k < rowptr(i + 1)}");
    let rows = csr.project_out(1).unwrap();
    assert_eq!(
        rows.to_string(),
        "{[i] : i >= 0 && -i + N - 1 >= 0 && -rowptr(i) + rowptr(i + 1) - 1 >= 0}"
    );
    let e = csr.project_out(0).unwrap_err();
    assert!(e.contains("argument of an uninterpreted function"), "{e}");
    // Union: two adjacent boxes coalesce into one.
    let u = set("{[i] : 0 <= i < 5}")
        .union(&set("{[i] : 5 <= i < 9}"))
        .unwrap();
    assert_eq!(u.to_string(), "{[i] : i >= 0 && -i + 8 >= 0}");
    let disjoint = set("{[i] : 0 <= i < 3}")
        .union(&set("{[i] : 7 <= i < 9}"))
        .unwrap();
    assert_eq!(disjoint.parts.len(), 2, "{disjoint}");
    // Redundant constraints go.
    let r = set("{[i] : 0 <= i && 3 <= i && i < N}").reduced().unwrap();
    assert_eq!(r.to_string(), "{[i] : i - 3 >= 0 && -i + N - 1 >= 0}");
    // Apply a skew and compose it with its inverse.
    let skew = spf::parse_map("{[i, j] -> [i + j, j]}").unwrap();
    let tri = set("{[i, j] : 0 <= i < N && 0 <= j <= i}");
    let image = tri.apply(&skew).unwrap();
    assert_eq!(
        image.to_string(),
        "{[o0, o1] : o0 - o1 >= 0 && -o0 + o1 + N - 1 >= 0 && o1 >= 0 && o0 - 2*o1 >= 0}"
    );
    let inverse = skew.inverse().unwrap();
    let identity = inverse.compose(&skew).unwrap();
    assert_eq!(identity.to_string(), "{[i, j] -> [i, j]}");
    assert!(spf::parse_map("{[i, j] -> [2*i + j, j]}")
        .unwrap()
        .inverse()
        .is_none());
}

const MTTKRP: &str = include_str!("../../../examples/spf/mttkrp_coo.spf");
const TTM: &str = include_str!("../../../examples/spf/ttm_coo.spf");

/// MTTKRP and TTM over `b`'s entries, by plain loops (duplicates add up).
fn mttkrp_and_ttm(b: &Coo, c: &[f64], d: &[f64], u: &[f64], rank: usize) -> (Vec<f64>, Vec<f64>) {
    let (ni, nj) = (b.dims[0], b.dims[1]);
    let mut a = vec![0.0; ni * rank];
    let mut y = vec![0.0; ni * nj * rank];
    for (p, v) in b.values.iter().enumerate() {
        let at = &b.coords[3 * p..3 * p + 3];
        let (i, j, k) = (at[0] as usize, at[1] as usize, at[2] as usize);
        for r in 0..rank {
            a[i * rank + r] += v * c[j * rank + r] * d[k * rank + r];
            y[(i * nj + j) * rank + r] += v * u[k * rank + r];
        }
    }
    (a, y)
}

fn check_coo_kernels(what: &str, b: &Coo, mttkrp: &SpfKernel, ttm: &SpfKernel) {
    let rank = 5;
    let factor = |n: usize, seed: usize| -> Vec<f64> {
        (0..n * rank)
            .map(|p| ((p * 7 + seed) % 13) as f64 * 0.25 - 1.0)
            .collect()
    };
    let (c, d, u) = (
        factor(b.dims[1], 1),
        factor(b.dims[2], 2),
        factor(b.dims[2], 3),
    );
    let (want_a, want_y) = mttkrp_and_ttm(b, &c, &d, &u, rank);
    let tensor = Tensor::from_coo(b, &Format::parse("coo", 3).unwrap(), ValueType::F64).unwrap();
    let a = mttkrp
        .run(&[
            ("B", &tensor),
            ("C", &dense(vec![b.dims[1], rank], c)),
            ("D", &dense(vec![b.dims[2], rank], d)),
        ])
        .unwrap();
    let y = ttm
        .run(&[("B", &tensor), ("U", &dense(vec![b.dims[2], rank], u))])
        .unwrap();
    for (name, got, want) in [("MTTKRP", values(&a), want_a), ("TTM", values(&y), want_y)] {
        assert_eq!(got.len(), want.len(), "{what}: {name}");
        for (g, w) in got.iter().zip(&want) {
            assert!(
                (g - w).abs() <= 1e-9 * w.abs().max(1.0),
                "{what}: {name} {g} vs {w}"
            );
        }
    }
}

/// `text` with its outer loop declared `parallel;`.
fn in_parallel(text: &str) -> String {
    text.replacen("stmt S0", "parallel;\nstmt S0", 1)
}

#[test]
fn mttkrp_and_ttm_on_coo_match_plain_loops() {
    for (mttkrp, ttm) in [
        (MTTKRP.to_string(), TTM.to_string()),
        (in_parallel(MTTKRP), in_parallel(TTM)),
    ] {
        let mttkrp = compile_spf("mttkrp_coo.spf", &mttkrp);
        let ttm = compile_spf("ttm_coo.spf", &ttm);
        check_coo_programs(&mttkrp, &ttm);
    }
}

/// In parallel, entries of one row (or fiber) in different iterations add into one
/// element of the output: the check admits it because every such write is a `+=` that
/// nothing reads, and the additions are atomic.
#[test]
fn entries_colliding_in_a_parallel_loop_add_atomically() {
    let kernel = compile_spf("mttkrp_coo.spf", &in_parallel(MTTKRP));
    let source = kernel.source();
    assert!(source.contains("#pragma omp atomic"), "{source}");
    // A read of the updated space in the loop is still refused.
    let text = in_parallel(MTTKRP).replace(
        "body A(i, r) += Bv(n) * C(j, r) * D(k, r);",
        "body A(i, r) += Bv(n) * C(j, r) * D(k, r) * A(i, r);",
    );
    let (message, _) = spf_error(&text);
    assert!(message.contains("cannot run in parallel"), "{message}");
}

fn check_coo_programs(mttkrp: &SpfKernel, ttm: &SpfKernel) {
    let mut rng = common::rng(31);
    // Empty, 1x1x1, then random (duplicates, explicit zeros, unsorted).
    for (dims, density) in [
        ([0, 0, 0], 0.5),
        ([1, 1, 1], 1.0),
        ([3, 1, 4], 0.0),
        ([6, 5, 4], 0.3),
        ([20, 9, 13], 0.05),
    ] {
        let b = common::random_coo(&mut rng, &dims, density);
        check_coo_kernels(&format!("random {dims:?}"), &b, mttkrp, ttm);
    }
    // Real FROSTT tensors of order 3 (the data must be there: missing data fails).
    let dir = common::shared_data("tensors");
    let mut checked = 0;
    for name in [
        "london_transport.tns",
        "fao_trade.tns",
        "pierreauger_coauthor.tns",
    ] {
        let b = sparsec::io::read_tns(dir.join(name), None).unwrap();
        if b.dims.len() == 3 && b.dims.iter().product::<usize>() <= 50_000_000 {
            check_coo_kernels(name, &b, mttkrp, ttm);
            checked += 1;
        }
    }
    assert_eq!(
        checked, 3,
        "every named tensor is of order 3 and small enough"
    );
}

const ILU0: &str = include_str!("../../../examples/spf/ilu0.spf");

/// ILU(0) of a CSR matrix with sorted rows and a stored diagonal, by the textbook IKJ
/// loop with a map from column to position in row `i`: the factor values by position.
fn ilu0_reference(pos: &[usize], col: &[usize], vals: &[f64]) -> Vec<f64> {
    let n = pos.len() - 1;
    let mut lu = vals.to_vec();
    let diag: Vec<usize> = (0..n)
        .map(|i| {
            (pos[i]..pos[i + 1])
                .find(|&p| col[p] == i)
                .expect("diagonal")
        })
        .collect();
    let mut at = vec![usize::MAX; n];
    for i in 0..n {
        for p in pos[i]..pos[i + 1] {
            at[col[p]] = p;
        }
        for kk in pos[i]..pos[i + 1] {
            let k = col[kk];
            if k >= i {
                break;
            }
            lu[kk] /= lu[diag[k]];
            for m in diag[k] + 1..pos[k + 1] {
                if at[col[m]] != usize::MAX {
                    lu[at[col[m]]] -= lu[kk] * lu[m];
                }
            }
        }
        for p in pos[i]..pos[i + 1] {
            at[col[p]] = usize::MAX;
        }
    }
    lu
}

fn check_ilu0(what: &str, coo: &Coo, kernel: &SpfKernel) {
    let a = Tensor::from_coo(coo, &Format::parse("csr", 2).unwrap(), ValueType::F64).unwrap();
    let level = &a.levels()[1];
    let read = |kind| {
        let arr = level.array(kind).unwrap();
        (0..arr.len())
            .map(|p| arr.get(p) as usize)
            .collect::<Vec<usize>>()
    };
    let (pos, col) = (
        read(sparsec::ir::ArrayKind::Pos),
        read(sparsec::ir::ArrayKind::Idx),
    );
    let want = ilu0_reference(&pos, &col, &values(&a));
    let lu = kernel.run(&[("A", &a)]).unwrap();
    assert_eq!(
        lu.format(),
        a.format(),
        "{what}: the output is in A's format"
    );
    assert_eq!(
        lu.to_coo().coords,
        a.to_coo().coords,
        "{what}: and A's pattern"
    );
    let got = values(&lu);
    for (p, (g, w)) in got.iter().zip(&want).enumerate() {
        assert!(
            (g - w).abs() <= 1e-9 * w.abs().max(1.0),
            "{what}: entry {p}: {g} vs {w}"
        );
    }
}

#[test]
fn ilu0_matches_the_textbook_factorization() {
    let kernel = compile_spf("ilu0.spf", ILU0);
    let mut rng = common::rng(41);
    for (n, density) in [
        (0, 0.5),
        (1, 1.0),
        (2, 1.0),
        (8, 0.4),
        (60, 0.08),
        (200, 0.02),
    ] {
        let coo =
            sparsec::generate::dominant(&common::random_coo(&mut rng, &[n, n], density)).unwrap();
        check_ilu0(&format!("random {n}x{n}"), &coo, &kernel);
    }
    // Real matrices, made diagonally dominant so that no pivot is zero.
    let dir = common::shared_data("matrices");
    for name in ["494_bus.mtx", "dwt_992.mtx", "cage10.mtx", "karate.mtx"] {
        let path = dir.join(name);
        let coo = sparsec::io::read_matrix_market(&path)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
            .coo;
        check_ilu0(name, &sparsec::generate::dominant(&coo).unwrap(), &kernel);
    }
    let (message, _) = spf_error(&ILU0.replace("pattern(A)", "pattern(B)"));
    assert!(message.contains("`B` is not an input"), "{message}");
}

const COO_TO_CSR: &str = include_str!("../../../examples/spf/coo_to_csr.spf");
const COO_TO_CSF: &str = include_str!("../../../examples/spf/coo_to_csf.spf");
const TRANSPOSE: &str = include_str!("../../../examples/spf/csr_transpose.spf");

/// The summed entries of `coo` with coordinates permuted by `perm`, sorted: what a
/// conversion must store (a map, independent of sparsec's packing).
fn summed(coo: &Coo, perm: &[usize]) -> Vec<(Vec<i64>, f64)> {
    let order = coo.dims.len();
    let mut map = std::collections::BTreeMap::new();
    for (p, v) in coo.values.iter().enumerate() {
        let at = &coo.coords[p * order..(p + 1) * order];
        let key: Vec<i64> = perm.iter().map(|&d| at[d]).collect();
        *map.entry(key).or_insert(0.0) += v;
    }
    map.into_iter().collect()
}

fn stored(t: &Tensor) -> Vec<(Vec<i64>, f64)> {
    let mut out = Vec::new();
    t.for_each_stored(|at, v| out.push((at.to_vec(), v)));
    out
}

fn check_conversion(
    what: &str,
    kernel: &SpfKernel,
    input: &str,
    coo: &Coo,
    to: &str,
    perm: &[usize],
) {
    let order = coo.dims.len();
    let from = if input == "A" && perm.len() == 2 && perm[0] == 1 {
        "csr"
    } else {
        "coo"
    };
    let tensor =
        Tensor::from_coo(coo, &Format::parse(from, order).unwrap(), ValueType::F64).unwrap();
    let out = kernel.run(&[(input, &tensor)]).unwrap();
    assert_eq!(out.format(), &Format::parse(to, order).unwrap(), "{what}");
    let dims: Vec<usize> = perm.iter().map(|&d| coo.dims[d]).collect();
    assert_eq!(out.dims(), dims.as_slice(), "{what}");
    let (got, want) = (stored(&out), summed(coo, perm));
    assert_eq!(got.len(), want.len(), "{what}: entries");
    for ((gc, gv), (wc, wv)) in got.iter().zip(&want) {
        assert_eq!(gc, wc, "{what}");
        assert!(
            (gv - wv).abs() <= 1e-12 * wv.abs().max(1.0),
            "{what}: {gv} vs {wv}"
        );
    }
}

#[test]
fn conversions_from_relations_store_every_entry_once() {
    let to_csr = compile_spf("coo_to_csr.spf", COO_TO_CSR);
    let to_csf = compile_spf("coo_to_csf.spf", COO_TO_CSF);
    let transpose = compile_spf("csr_transpose.spf", TRANSPOSE);
    // Into CSR the kernel counts and places each row's entries itself; into CSF (whose
    // upper levels are compressed) it emits them for the runtime to pack.
    let mode = |k: &SpfKernel| k.lowered().function.output;
    assert!(matches!(mode(&to_csr), OutputMode::Rows { .. }));
    assert!(matches!(mode(&transpose), OutputMode::Rows { .. }));
    assert!(matches!(mode(&to_csf), OutputMode::Emit { order: 3 }));
    assert!(
        to_csr.source().contains("if (phase == 0)"),
        "{}",
        to_csr.source()
    );
    // Entries visited backwards fill each row in decreasing order: the runtime sorts them.
    let backwards = compile_spf(
        "backwards",
        &format!("{COO_TO_CSR}transform {{[n, i, j] -> [-n, i, j]}};\n"),
    );
    let mut rng = common::rng(53);
    for dims in [[0, 0], [1, 1], [0, 5], [7, 3], [40, 60]] {
        let coo = common::random_coo(&mut rng, &dims, 0.3);
        let what = format!("{dims:?} backwards");
        check_conversion(&what, &backwards, "A", &coo, "csr", &[0, 1]);
        check_conversion(
            &format!("{dims:?} to CSR"),
            &to_csr,
            "A",
            &coo,
            "csr",
            &[0, 1],
        );
        check_conversion(
            &format!("{dims:?} transposed"),
            &transpose,
            "A",
            &coo,
            "csr",
            &[1, 0],
        );
    }
    for dims in [[0, 0, 0], [1, 1, 1], [5, 4, 6], [12, 3, 9]] {
        let coo = common::random_coo(&mut rng, &dims, 0.2);
        check_conversion(
            &format!("{dims:?} to CSF"),
            &to_csf,
            "T",
            &coo,
            "csf",
            &[0, 1, 2],
        );
    }
    let dir = common::shared_data("matrices");
    for name in ["cage10.mtx", "west0479.mtx"] {
        let coo = sparsec::io::read_matrix_market(dir.join(name)).unwrap().coo;
        check_conversion(name, &to_csr, "A", &coo, "csr", &[0, 1]);
        check_conversion(name, &transpose, "A", &coo, "csr", &[1, 0]);
    }
    let b =
        sparsec::io::read_tns(common::shared_data("tensors").join("fao_trade.tns"), None).unwrap();
    check_conversion("fao_trade.tns", &to_csf, "T", &b, "csf", &[0, 1, 2]);
    // A sparse output is only added to, and never read.
    let (message, at) = spf_error(&COO_TO_CSR.replace("B(i, j) += Av(n)", "B(i, j) = Av(n)"));
    assert!(message.contains("assembled from the entries"), "{message}");
    assert_eq!(at, "B(i, j)");
    let (message, _) = spf_error(&COO_TO_CSR.replace("+= Av(n)", "+= B(i, j)"));
    assert!(message.contains("cannot be read"), "{message}");
}

const TILED_TRANSPOSE: &str = include_str!("../../../examples/spf/tiled_transpose.spf");
const SPMV_SPLIT: &str = include_str!("../../../examples/spf/spmv_split.spf");

#[test]
fn tiled_transpose_visits_every_element_once() {
    let k = compile_spf("tiled_transpose.spf", TILED_TRANSPOSE);
    let code = k.source();
    // Tile loops outside, their bounds divided; element loops clipped to the tile (isl
    // knows that `8 * ti` is not negative).
    let ti = code.find("for (int64_t ti = 0;").expect("a tile loop");
    let tj = code.find("for (int64_t tj = 0;").expect("a tile loop");
    let i = code.find("for (int64_t i = 8 * ti;").expect("{code}");
    assert!(ti < tj && tj < i, "{code}");
    for (n, m) in [
        (0usize, 0usize),
        (0, 3),
        (1, 1),
        (7, 3),
        (8, 8),
        (17, 9),
        (9, 25),
    ] {
        let a: Vec<f64> = (0..n * m).map(|p| 1.0 + p as f64).collect();
        let b = k.run(&[("A", &dense(vec![n, m], a.clone()))]).unwrap();
        assert_eq!(b.dims(), &[m, n]);
        let want: Vec<f64> = (0..m * n)
            .map(|p| a[(p % n.max(1)) * m + p / n.max(1)])
            .collect();
        assert_eq!(values(&b), want, "{n} x {m}");
    }
}

/// Random matrices of `shapes` (explicit zeros, duplicates and unsorted entries
/// included) and the shared west0479.
fn random_and_real_matrices(seed: u64, shapes: &[[usize; 2]], density: f64) -> Vec<Coo> {
    let mut rng = common::rng(seed);
    let mut cases: Vec<Coo> = shapes
        .iter()
        .map(|dims| common::random_coo(&mut rng, dims, density))
        .collect();
    let dir = common::shared_data("matrices");
    cases.push(
        sparsec::io::read_matrix_market(dir.join("west0479.mtx"))
            .unwrap()
            .coo,
    );
    cases
}

#[test]
fn split_rows_give_the_plain_product() {
    let split = compile_spf("spmv_split.spf", SPMV_SPLIT);
    assert!(split.source().contains("16 * io"), "{}", split.source());
    let shapes = [[0, 0], [1, 1], [15, 4], [16, 16], [33, 20], [100, 7]];
    for coo in random_and_real_matrices(71, &shapes, 0.3) {
        let (n, m) = (coo.dims[0], coo.dims[1]);
        let x: Vec<f64> = (0..m).map(|j| 1.0 + (j % 7) as f64 * 0.25).collect();
        let want = common::spmv(&coo, &x);
        let a = Tensor::from_coo(&coo, &Format::parse("csr", 2).unwrap(), ValueType::F64).unwrap();
        let y = split.run(&[("A", &a), ("x", &dense(vec![m], x))]).unwrap();
        common::assert_close(&format!("{n} x {m}"), &values(&y), &want);
    }
}

/// A 2-D recurrence with dependences (1, 0) and (0, 1), tiled 4 x 3 with the tile loops
/// outside: legal, since every dependence points forward in both dimensions.
const TILED_RECURRENCE: &str = "input b[N, M] : dense;
output a[N, M];
stmt init
  domain {[i, j] : 0 <= i < N && 0 <= j < M}
  schedule {[i, j] -> [0, i, j]}
  body a(i, j) = b(i, j);
stmt sweep
  domain {[i, j] : 1 <= i < N && 1 <= j < M}
  schedule {[i, j] -> [1, i, j]}
  body a(i, j) += 0.5 * a(i - 1, j) + 0.25 * a(i, j - 1);
transform {[c, i, j] -> [c, ti, tj, i, j] : 4*ti <= i < 4*ti + 4 && 3*tj <= j < 3*tj + 3};
";

#[test]
fn tiling_is_checked_against_the_dependences() {
    let tiled = compile_spf("tiled", TILED_RECURRENCE);
    let plain = compile_spf("plain", &untransformed(TILED_RECURRENCE));
    for (n, m) in [(0usize, 0usize), (1, 1), (5, 1), (4, 3), (9, 10), (13, 7)] {
        let b: Vec<f64> = (0..n * m).map(|p| (p % 5) as f64 + 1.0).collect();
        let mut want = b.clone();
        for i in 1..n {
            for j in 1..m {
                want[i * m + j] += 0.5 * want[(i - 1) * m + j] + 0.25 * want[i * m + j - 1];
            }
        }
        let input = dense(vec![n, m], b);
        assert_eq!(values(&tiled.run(&[("b", &input)]).unwrap()), want);
        assert_eq!(values(&plain.run(&[("b", &input)]).unwrap()), want);
    }
    // With a dependence (1, -1) a later tile of the same row of tiles writes what an
    // earlier one reads: the tiles cannot run in this order.
    let backward = TILED_RECURRENCE.replace("a(i, j - 1)", "a(i - 1, j + 1)");
    let backward = backward.replace("1 <= j < M", "0 <= j < M - 1");
    compile_spf("backward, untiled", &untransformed(&backward));
    let (message, at) = spf_error(&backward);
    assert!(
        message.contains("illegal") && message.contains("sweep's read of `a`"),
        "{message}"
    );
    assert!(!message.contains("index arrays"), "exact: {message}");
    assert!(at.starts_with("transform"), "{at}");
    // Strip-mining alone (one loop split, order kept) is legal for it.
    let split = backward.replace(
        "[c, ti, tj, i, j] : 4*ti <= i < 4*ti + 4 && 3*tj <= j < 3*tj + 3",
        "[c, ti, i, j] : 4*ti <= i < 4*ti + 4",
    );
    compile_spf("backward, split", &split);
}

#[test]
fn output_variables_must_be_tiles_of_the_inputs() {
    let program = |map: &str| {
        TILED_RECURRENCE.replace(
            "{[c, i, j] -> [c, ti, tj, i, j] : 4*ti <= i < 4*ti + 4 && 3*tj <= j < 3*tj + 3}",
            map,
        )
    };
    for (map, expect) in [
        (
            "{[c, i, j] -> [c, ti, i, j] : ti >= 0}",
            "must be defined by a pair",
        ),
        (
            "{[c, i, j] -> [c, ti, i, j] : 4*ti <= i < 4*ti + 3}",
            "must be defined by a pair",
        ),
        (
            "{[c, i, j] -> [c, ti, i, j] : 4*ti <= i + ti < 4*ti + 4}",
            "must be defined by a pair",
        ),
        (
            "{[c, i, j] -> [c, ti, i, j] : 4*ti <= tj < 4*ti + 4}",
            "neither a tuple variable",
        ),
        (
            "{[c, i, j] -> [c, ti, i, j] : 4*ti <= i < 4*ti + 4 && i >= 2}",
            "may constrain only",
        ),
        (
            "{[c, i, j] -> [c, i, j + 1] : i >= 2}",
            "may constrain only",
        ),
        // Two tile loops over one variable: not invertible.
        (
            "{[c, i, j] -> [c, ti, tk, j] : 4*ti <= i < 4*ti + 4 && 2*tk <= i < 2*tk + 2}",
            "invertible",
        ),
    ] {
        let (message, _) = spf_error(&program(map));
        assert!(message.contains(expect), "{map}: {message}");
    }
    // Tiling one of two statements leaves the schedules of different depths.
    let one = TILED_RECURRENCE.replace("transform {", "transform sweep {");
    let (message, at) = spf_error(&one);
    assert!(
        message.contains("different numbers of outputs"),
        "{message}"
    );
    assert!(at.starts_with("transform sweep"), "{at}");
}

#[test]
fn maps_with_output_variables_compose_and_apply() {
    let tile = spf::parse_map("{[i, j] -> [ti, i, j] : 4*ti <= i < 4*ti + 4}").unwrap();
    assert_eq!(tile.fresh, ["ti"]);
    assert_eq!(
        tile.to_string(),
        "{[i, j] -> [ti, i, j] : i - 4*ti >= 0 && -i + 4*ti + 3 >= 0}"
    );
    let tiles = tile.strip_mined().unwrap();
    assert_eq!(tiles, [(Affine::term(sparsec::spf::set::Term::Var(0)), 4)]);
    // Interchange first, then tile the new outer variable.
    let swap = spf::parse_map("{[i, j] -> [j, i]}").unwrap();
    let both = tile.compose(&swap).unwrap();
    assert_eq!(
        both.to_string(),
        "{[i, j] -> [ti, j, i] : j - 4*ti >= 0 && -j + 4*ti + 3 >= 0}"
    );
    // The image of a triangle holds every tile index exactly where some point lies.
    let tri = spf::parse_set("{[i, j] : 0 <= i < 10 && 0 <= j <= i}").unwrap();
    let image = tri.apply(&tile).unwrap();
    let facts = Facts(Vec::new());
    let with = |c: &str| {
        let extra = spf::parse_set(&format!("{{[o0, o1, o2] : {c}}}")).unwrap();
        image.intersect(&extra).unwrap().is_empty(&facts).unwrap()
    };
    assert!(!with("o0 = 2 && o1 = 9 && o2 = 9"));
    assert!(with("o0 = 3"), "no i >= 12");
    assert!(with("o0 = 1 && o1 = 3"), "3 is in tile 0");
    assert!(with("o2 > o1"));
}

#[test]
fn transitive_closures_of_affine_maps() {
    let facts = Facts(Vec::new());
    // One step forward, inside [0, N): the closure reaches every later point up to N.
    let step = spf::parse_map("{[i] -> [i + 1] : 0 <= i < N}").unwrap();
    let (closure, exact) = step.transitive_closure().unwrap();
    assert!(exact, "{closure}");
    let holds = |c: &str| {
        let extra = spf::parse_set(&format!("{{[a, b] : {c}}}")).unwrap();
        !closure
            .parts
            .iter()
            .all(|p| p.intersect(&extra).unwrap().is_empty(&facts).unwrap())
    };
    assert!(holds("N = 10 && a = 0 && b = 10"));
    assert!(holds("N = 10 && a = 3 && b = 4"));
    assert!(!holds("N = 10 && a = 0 && b = 11"), "past N");
    assert!(!holds("a = 4 && b <= 4"), "never backwards or in place");
    // Two dimensions, a step in each.
    let grid = spf::parse_map("{[i, j] -> [i + 1, j + 1] : 0 <= i < N && 0 <= j < M}").unwrap();
    let (closure, exact) = grid.transitive_closure().unwrap();
    assert!(exact);
    let extra = spf::parse_set("{[a, b, c, d] : c - a != d - b}");
    assert!(extra.is_err(), "sets have no `!=`");
    let off_diagonal = spf::parse_set("{[a, b, c, d] : c - a >= d - b + 1}").unwrap();
    assert!(closure.parts.iter().all(|p| p
        .intersect(&off_diagonal)
        .unwrap()
        .is_empty(&facts)
        .unwrap()));
    // Steps of 2 reach points of one parity: a stride, which sparsec's sets do not hold.
    let stride = spf::parse_map("{[i] -> [i + 2] : 0 <= i < N}").unwrap();
    let message = stride.transitive_closure().unwrap_err();
    assert!(message.contains("existentially quantified"), "{message}");
    // Index arrays and arity changes are refused.
    for map in ["{[i] -> [col(i)]}", "{[i] -> [i, 0]}"] {
        let message = spf::parse_map(map)
            .unwrap()
            .transitive_closure()
            .unwrap_err();
        assert!(message.contains("not computed"), "{map}: {message}");
    }
}

#[test]
fn parallel_outer_loops_are_decided_by_dependences() {
    // Blocks of 16 rows in parallel: the tile's constraints keep blocks apart.
    let blocks = SPMV_SPLIT.replace("data Av = A.vals;", "data Av = A.vals;\nparallel;");
    let mut k = compile_spf("blocks", &blocks);
    assert!(k.source().contains("#pragma omp"), "{}", k.source());
    let coo = sparsec::io::read_matrix_market(common::shared_data("matrices").join("bcsstk13.mtx"))
        .unwrap()
        .coo;
    let m = coo.dims[1];
    let x: Vec<f64> = (0..m).map(|j| 0.5 + (j % 11) as f64).collect();
    let want = common::spmv(&coo, &x);
    let a = Tensor::from_coo(&coo, &Format::parse("csr", 2).unwrap(), ValueType::F64).unwrap();
    for threads in [1, 2, 3] {
        k.set_threads(threads);
        let y = k
            .run(&[("A", &a), ("x", &dense(vec![m], x.clone()))])
            .unwrap();
        common::assert_close(&format!("{threads} threads"), &values(&y), &want);
    }
    // The transposed product adds into y(col(k)) from every row: the rows run at once,
    // adding atomically.
    let transposed = blocks
        .replace("input A[N, M] : csr;", "input A[M, N] : csr;")
        .replace("y(i) += Av(k) * x(j)", "y(j) += Av(k) * x(i)");
    let mut k = compile_spf("transposed", &transposed);
    assert!(k.source().contains("#pragma omp atomic"), "{}", k.source());
    let n = coo.dims[0];
    let xt: Vec<f64> = (0..n).map(|i| 1.5 - (i % 7) as f64).collect();
    let mut want = vec![0.0; m];
    for (e, v) in coo.values.iter().enumerate() {
        want[coo.coords[2 * e + 1] as usize] += v * xt[coo.coords[2 * e] as usize];
    }
    for threads in [1, 2, 3] {
        k.set_threads(threads);
        let y = k
            .run(&[("A", &a), ("x", &dense(vec![n], xt.clone()))])
            .unwrap();
        common::assert_close(
            &format!("transposed, {threads} threads"),
            &values(&y),
            &want,
        );
    }
    // Assigning (not adding) into y(col(k)) from every row: refused, through the index
    // array.
    let assigned = transposed.replace("y(j) += Av(k) * x(i)", "y(j) = Av(k) * x(i)");
    let (message, at) = spf_error(&assigned);
    assert!(
        message.contains("cannot run in parallel") && message.contains("index arrays"),
        "{message}"
    );
    assert_eq!(at, "y(j)");
    // A scratch element shared by every row is a race, found exactly (no index array).
    let shared = "input b[N] : dense;
output x[N];
temp t[1];
parallel;
stmt keep
  domain {[i] : 0 <= i < N}
  schedule {[i] -> [i, 0]}
  body t(0) = b(i);
stmt use
  domain {[i] : 0 <= i < N}
  schedule {[i] -> [i, 1]}
  body x(i) = 2 * t(0);
";
    compile_spf("serial", &shared.replace("parallel;\n", ""));
    let (message, _) = spf_error(shared);
    assert!(message.contains("cannot run in parallel"), "{message}");
    assert!(!message.contains("index arrays"), "exact: {message}");
}

/// Two statements fused at the row loop with different row ranges, each with its own
/// inner loop over the row's entries: isl separates the rows where only one runs.
const FUSED_DIFFERENT_BOUNDS: &str = "input A[N, M] : csr;
output y[N];
uf rowptr = A.pos(2);
data Av = A.vals;
stmt S0
  domain {[i, k] : 0 <= i < N - 2 && rowptr(i) <= k < rowptr(i+1)}
  schedule {[i, k] -> [i, 0, k]}
  body y(i) += Av(k);
stmt S1
  domain {[i, k] : 3 <= i < N && rowptr(i) <= k < rowptr(i+1)}
  schedule {[i, k] -> [i, 1, k]}
  body y(i) += 10 * Av(k);
";

/// Rows whose first entry's position equals the row number: isl derives the slot's
/// value (`rowptr(i) = k = i`), so the instance itself checks the index array.
const PINNED_SLOT: &str = "input A[N, M] : csr;
output y[N];
uf rowptr = A.pos(2);
stmt S0
  domain {[i, k] : 0 <= i < N && k = i && rowptr(i) <= k && k <= rowptr(i)}
  schedule {[i, k] -> [i, k]}
  body y(i) = 1;
";

#[test]
fn fused_loops_with_different_bounds_and_inner_loops_run_each_instance_once() {
    let fused = compile_spf("fused.spf", FUSED_DIFFERENT_BOUNDS);
    let pinned = compile_spf("pinned.spf", PINNED_SLOT);
    let shapes = [[0, 0], [1, 1], [3, 2], [6, 5], [40, 9]];
    for coo in random_and_real_matrices(72, &shapes, 0.4) {
        let n = coo.dims[0];
        let a = Tensor::from_coo(&coo, &Format::parse("csr", 2).unwrap(), ValueType::F64).unwrap();
        // The reference reads the same CSR arrays through plain loops.
        let leaf = &a.levels()[1];
        let pos = leaf.array(sparsec::ir::ArrayKind::Pos).unwrap().to_i64();
        let vals = values(&a);
        let mut want = vec![0.0; n];
        for (i, w) in want.iter_mut().enumerate() {
            for v in &vals[pos[i] as usize..pos[i + 1] as usize] {
                if i + 2 < n {
                    *w += v;
                }
                if i >= 3 {
                    *w += 10.0 * v;
                }
            }
        }
        let y = fused.run(&[("A", &a)]).unwrap();
        common::assert_close(&format!("fused, {n} rows"), &values(&y), &want);
        let ones: Vec<f64> = (0..n)
            .map(|i| if pos[i] == i as i64 { 1.0 } else { 0.0 })
            .collect();
        let y = pinned.run(&[("A", &a)]).unwrap();
        assert_eq!(values(&y), ones, "pinned, {n} rows");
    }
    assert!(
        pinned.source().contains("== i"),
        "the instance checks rowptr(i) = i: {}",
        pinned.source()
    );
}
