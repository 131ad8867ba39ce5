//! The autotuner: every point of the space lowers, compiles and computes the reference's
//! result; a point's schedule text reproduces it; the cache round-trips; a search returns
//! a measured choice.

mod common;

use std::time::Duration;

use rand::SeedableRng;
use sparsec::jit::Toolchain;
use sparsec::kernel::Backend;
use sparsec::tensor::{Coo, Tensor};
use sparsec::tune::{
    self, cache, Draw, MeasureError, MeasureOptions, Measurer, Patience, Strategy,
};

use common::{random_coo, rng, statement};

/// A kernel of the issue: expression, formats, and the shape of each input (its COO is
/// drawn by the test).
struct Kernel {
    expr: &'static str,
    formats: &'static [(&'static str, &'static str)],
    inputs: &'static [(&'static str, Shape)],
}

/// How an input of a test kernel is shaped.
#[derive(Clone, Copy)]
enum Shape {
    /// A sparse input of these dimensions and density.
    Sparse(&'static [usize], f64),
    /// A dense operand.
    Dense(&'static [usize]),
}

const KERNELS: &[Kernel] = &[
    Kernel {
        expr: "y(i) = A(i,j) * x(j)",
        formats: &[("A", "csr")],
        inputs: &[
            ("A", Shape::Sparse(&[13, 9], 0.2)),
            ("x", Shape::Dense(&[9])),
        ],
    },
    Kernel {
        expr: "C(i,j) = A(i,k) * B(k,j)",
        formats: &[("A", "csr")],
        inputs: &[
            ("A", Shape::Sparse(&[11, 8], 0.2)),
            ("B", Shape::Dense(&[8, 4])),
        ],
    },
    Kernel {
        expr: "D(i,j) = A(i,j) * B(i,k) * C(k,j)",
        formats: &[("A", "csr"), ("D", "csr")],
        inputs: &[
            ("A", Shape::Sparse(&[9, 10], 0.25)),
            ("B", Shape::Dense(&[9, 4])),
            ("C", Shape::Dense(&[4, 10])),
        ],
    },
    Kernel {
        expr: "D(i,j) = A(i,k,l) * B(k,j) * C(l,j)",
        formats: &[("A", "sss")],
        inputs: &[
            ("A", Shape::Sparse(&[6, 5, 7], 0.1)),
            ("B", Shape::Dense(&[5, 3])),
            ("C", Shape::Dense(&[7, 3])),
        ],
    },
    Kernel {
        expr: "C(i,j) = A(i,k) * B(k,j)",
        formats: &[("A", "csr"), ("B", "csr"), ("C", "csr")],
        inputs: &[
            ("A", Shape::Sparse(&[10, 8], 0.2)),
            ("B", Shape::Sparse(&[8, 9], 0.2)),
        ],
    },
    Kernel {
        expr: "C(i,j) = A(i,j) + B(i,j)",
        formats: &[("A", "csr"), ("B", "csr"), ("C", "csr")],
        inputs: &[
            ("A", Shape::Sparse(&[12, 7], 0.2)),
            ("B", Shape::Sparse(&[12, 7], 0.3)),
        ],
    },
    Kernel {
        expr: "y(i,j) = A(i,j,k) * x(k)",
        formats: &[("A", "sss")],
        inputs: &[
            ("A", Shape::Sparse(&[5, 6, 8], 0.15)),
            ("x", Shape::Dense(&[8])),
        ],
    },
];

/// Variants of every sparse input: as drawn, empty, 1 x 1 (every dimension 1) and skewed
/// (the first slice full, the rest as drawn).
#[derive(Clone, Copy, Debug)]
enum Variant {
    Random,
    Empty,
    Unit,
    Skewed,
}

fn inputs_of(kernel: &Kernel, variant: Variant, seed: u64) -> Vec<(&'static str, Coo)> {
    let mut r = rng(seed);
    kernel
        .inputs
        .iter()
        .map(|&(name, shape)| {
            let coo = match (shape, variant) {
                (Shape::Dense(dims), Variant::Unit) | (Shape::Sparse(dims, _), Variant::Unit) => {
                    random_coo(&mut r, &vec![1; dims.len()], 1.0)
                }
                (Shape::Dense(dims), _) => random_coo(&mut r, dims, 1.0),
                (Shape::Sparse(dims, _), Variant::Empty) => Coo::empty(dims.to_vec()),
                (Shape::Sparse(dims, density), Variant::Random) => {
                    random_coo(&mut r, dims, density)
                }
                (Shape::Sparse(dims, density), Variant::Skewed) => {
                    let mut coo = random_coo(&mut r, dims, density);
                    let slice: usize = dims[1..].iter().product();
                    for p in 0..slice {
                        let mut rest = p;
                        let mut c = vec![0i64; dims.len()];
                        for m in (1..dims.len()).rev() {
                            c[m] = (rest % dims[m]) as i64;
                            rest /= dims[m];
                        }
                        coo.coords.extend(c);
                        coo.values.push(1.0 + p as f64);
                    }
                    coo
                }
            };
            (name, coo)
        })
        .collect()
}

fn quick(backend: Backend) -> MeasureOptions {
    MeasureOptions {
        repeats: 1,
        min_timed: Duration::ZERO,
        cap: Duration::from_millis(50),
        backend,
        ..MeasureOptions::default()
    }
}

/// Every sampled point of every kernel compiles and computes the reference's result (the
/// measurer checks it), on random, empty, 1 x 1 and skewed inputs; most through the JIT,
/// a few through the C compiler (threads, OpenMP schedules); and rebuilding a point from
/// its formats, schedule text and threads gives the same loops.
#[test]
fn every_sampled_point_computes_the_reference_result() {
    let variants = [
        Variant::Random,
        Variant::Empty,
        Variant::Unit,
        Variant::Skewed,
    ];
    for (n, kernel) in KERNELS.iter().enumerate() {
        let mut splits = 0;
        let mut reformatted = 0;
        let mut reordered = 0;
        let mut total = 0;
        let mut fit = 0;
        for (v, &variant) in variants.iter().enumerate() {
            let seed = (n * 10 + v) as u64;
            let inputs = inputs_of(kernel, variant, seed);
            let (stmt, tensors) = statement(kernel.expr, kernel.formats, &inputs, &[]);
            let space = tune::space_of(&stmt, &tensors, 4);
            let default = space.default_point().expect("the default point");
            let jit = Measurer::new(&space, tensors.clone(), quick(Backend::Jit)).unwrap();
            let c = Measurer::new(&space, tensors.clone(), quick(Backend::C)).unwrap();
            let mut draws = rand::rngs::StdRng::seed_from_u64(seed);
            let what = format!("{} on {variant:?} inputs", kernel.expr);
            for k in 0..12 {
                let draw = if k % 4 == 3 {
                    Draw::FormatsOnly
                } else {
                    Draw::Everything
                };
                let candidate = space
                    .sample(&mut draws, draw)
                    .unwrap_or_else(|| panic!("{what}: no point found"));
                let point = &candidate.point;
                let measurer = if k < 2 { &c } else { &jit };
                match measurer.measure(&space, &candidate, Patience::default()) {
                    Ok(_) => fit += 1,
                    // The formats cannot hold these inputs (a singleton level under a
                    // parent with several entries): not a point for them.
                    Err(MeasureError::Unfit(_)) => {}
                    Err(e) => panic!("{what}: {}: {e}", point.key()),
                }
                let again = space
                    .candidate(point.formats.clone(), &point.schedule, point.threads)
                    .unwrap_or_else(|_| panic!("{what}: {} does not rebuild", point.key()));
                assert_eq!(again.point, *point, "{what}");
                total += 1;
                splits += usize::from(point.splits.iter().any(|&s| s > 1));
                reformatted += usize::from(point.formats != default.point.formats);
                reordered += usize::from(point.order != default.point.order);
            }
        }
        // The space is not degenerate: formats change, and schedules split and reorder.
        eprintln!(
            "{}: {total} points, {fit} fit, {reformatted} reformatted, {splits} split, \
             {reordered} reordered",
            kernel.expr
        );
        assert!(
            fit > total / 2,
            "{}: most points cannot hold the inputs",
            kernel.expr
        );
        assert!(
            reformatted > total / 3,
            "{}: formats rarely change",
            kernel.expr
        );
        assert!(splits > 0, "{}: no point splits", kernel.expr);
    }
}

/// On an OpenCL device (PoCL in CI), every sampled GPU point of every kernel computes the
/// reference's result on random, empty, 1 x 1 and skewed inputs, rebuilds from its text,
/// and the mappings drawn include warps and position splits.
#[cfg(feature = "opencl")]
#[test]
fn every_sampled_gpu_point_computes_the_reference_result() {
    let variants = [
        Variant::Random,
        Variant::Empty,
        Variant::Unit,
        Variant::Skewed,
    ];
    let (mut warps, mut positions, mut fit, mut total) = (0, 0, 0, 0);
    for (n, kernel) in KERNELS.iter().enumerate() {
        for (v, &variant) in variants.iter().enumerate() {
            let seed = (n * 10 + v) as u64;
            let inputs = inputs_of(kernel, variant, seed);
            let (stmt, tensors) = statement(kernel.expr, kernel.formats, &inputs, &[]);
            let space = tune::space_of(&stmt, &tensors, 4).on_gpu(Backend::OpenCl);
            let measurer = Measurer::new(&space, tensors, quick(Backend::OpenCl)).unwrap();
            let mut draws = rand::rngs::StdRng::seed_from_u64(seed);
            let what = format!("{} on {variant:?} inputs", kernel.expr);
            for _ in 0..4 {
                let Some(candidate) = space.sample(&mut draws, Draw::Everything) else {
                    continue;
                };
                let point = &candidate.point;
                assert_eq!(point.threads, 1, "{what}");
                match measurer.measure(&space, &candidate, Patience::default()) {
                    Ok(_) => fit += 1,
                    Err(MeasureError::Unfit(_)) => {}
                    Err(e) => panic!("{what}: {}: {e}", point.key()),
                }
                let again = space
                    .candidate(point.formats.clone(), &point.schedule, 1)
                    .unwrap_or_else(|_| panic!("{what}: {} does not rebuild", point.key()));
                assert_eq!(again.point, *point, "{what}");
                total += 1;
                warps += usize::from(point.schedule.contains("GPUWarp"));
                positions += usize::from(point.schedule.contains("pos(gpu_f"));
            }
        }
    }
    eprintln!("{total} GPU points, {fit} fit, {warps} with warps, {positions} position splits");
    assert!(fit > total / 2, "most GPU points cannot hold the inputs");
    assert!(
        warps > 0 && positions > 0,
        "the GPU mappings are not all drawn"
    );
}

/// The cache stores and loads a choice; the fingerprint follows the structure of the
/// inputs, not their values, and the thread count.
#[test]
fn cache_round_trip_and_fingerprint() {
    let kernel = &KERNELS[0];
    let inputs = inputs_of(kernel, Variant::Random, 1);
    let (stmt, tensors) = statement(kernel.expr, kernel.formats, &inputs, &[]);
    let key = cache::fingerprint(&stmt, &tensors, 2);
    assert_eq!(key, cache::fingerprint(&stmt, &tensors, 2));
    assert_ne!(key, cache::fingerprint(&stmt, &tensors, 1));

    // New values, same structure: same fingerprint.
    let mut revalued = tensors.clone();
    for p in 0..revalued[0].values().len() {
        let x = revalued[0].values().get(p);
        revalued[0].values_mut().set(p, x * 2.0 + 1.0);
    }
    assert_eq!(key, cache::fingerprint(&stmt, &revalued, 2));

    // One more nonzero: another fingerprint.
    let mut coo = inputs[0].1.clone();
    let full = Tensor::from_coo(&coo, &tensors[0].format().clone(), Default::default()).unwrap();
    let missing = (0..13 * 9)
        .map(|p| [(p / 9) as i64, (p % 9) as i64])
        .find(|c| {
            let mut found = false;
            full.for_each_stored(|s, _| found |= s == c);
            !found
        })
        .expect("a free position");
    coo.coords.extend(missing);
    coo.values.push(1.0);
    let mut grown = tensors.clone();
    grown[0] = Tensor::from_coo(&coo, tensors[0].format(), Default::default()).unwrap();
    assert_ne!(key, cache::fingerprint(&stmt, &grown, 2));

    let dir = tempfile::tempdir().unwrap();
    let order_of = |name: &str| {
        stmt.tensors
            .iter()
            .find(|t| t.name == name)
            .map(|t| t.dims.len())
    };
    assert_eq!(cache::load(dir.path(), &key, order_of).unwrap(), None);
    let choice = tune::Choice {
        formats: vec![(
            "A".to_string(),
            sparsec::format::Format::parse("sd:1,0", 2).unwrap(),
        )],
        schedule: "split(i,i0,i1,4),parallelize(i0,CPUThread,NoRaces,dynamic,8)".to_string(),
        threads: 2,
        speedup: 1.5,
    };
    cache::store(dir.path(), &key, &choice).unwrap();
    assert_eq!(
        cache::load(dir.path(), &key, order_of).unwrap(),
        Some(choice.clone())
    );

    // A damaged entry is an error naming the file and line, not a panic or a silent miss.
    std::fs::write(
        dir.path().join(format!("{key}.txt")),
        "sparsec-tune 1\nthreads x\n",
    )
    .unwrap();
    let err = cache::load(dir.path(), &key, order_of)
        .unwrap_err()
        .to_string();
    assert!(err.contains(":2:"), "{err}");

    // Choices steer the code generated: an entry that is a link is no entry, and a
    // directory others may write is refused, naming it (THREAT_MODEL.md).
    use std::os::unix::fs::PermissionsExt;
    let planted = dir.path().join("planted.txt");
    std::fs::rename(dir.path().join(format!("{key}.txt")), &planted).unwrap();
    std::os::unix::fs::symlink(&planted, dir.path().join(format!("{key}.txt"))).unwrap();
    assert_eq!(cache::load(dir.path(), &key, order_of).unwrap(), None);
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let err = cache::load(dir.path(), &key, order_of)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("tuning cache") && err.contains("mode 777"),
        "{err}"
    );
    assert!(cache::store(dir.path(), &key, &choice).is_err());
}

/// The space of the first kernel (SpMV) on random inputs drawn with `seed`, for up to
/// `threads` threads, and those inputs.
fn random_spmv(seed: u64, threads: usize) -> (tune::Space, Vec<Tensor>) {
    let kernel = &KERNELS[0];
    let inputs = inputs_of(kernel, Variant::Random, seed);
    let (stmt, tensors) = statement(kernel.expr, kernel.formats, &inputs, &[]);
    (tune::space_of(&stmt, &tensors, threads), tensors)
}

/// A random search of `space`, drawn with `seed`, within `budget` (no candidate limit).
fn random_search(
    space: &tune::Space,
    measurer: &Measurer,
    budget: Duration,
    seed: u64,
) -> tune::Tuned {
    let limits = tune::Limits {
        budget,
        candidates: None,
    };
    tune::search::search(space, measurer, Strategy::Random, limits, seed, |_| {}).unwrap()
}

/// A measurer of `space` with `options`, and its measurement of the default point: the
/// budget tests size their budgets by it.
fn measurer_and_default(
    space: &tune::Space,
    tensors: Vec<Tensor>,
    options: MeasureOptions,
) -> (Measurer, tune::Measurement) {
    let measurer = Measurer::new(space, tensors, options).unwrap();
    let default = space.default_point().unwrap();
    let once = measurer
        .measure(space, &default, Patience::default())
        .unwrap();
    (measurer, once)
}

/// A fast kernel is timed for `min_timed`, not for its few `repeats`: the median of many
/// runs is what moves little from one measurement to the next; and `cap` still ends the
/// timing first.
#[test]
fn fast_kernels_are_timed_for_a_minimum_time() {
    let (space, tensors) = random_spmv(3, 1);
    let default = space.default_point().unwrap();
    let runs_with = |min_timed: Duration, cap: Duration| {
        let options = MeasureOptions {
            repeats: 3,
            min_timed,
            cap,
            ..quick(Backend::Jit)
        };
        let measurer = Measurer::new(&space, tensors.clone(), options).unwrap();
        let m = measurer
            .measure(&space, &default, Patience::default())
            .unwrap();
        assert!(
            m.runtime < Duration::from_millis(1),
            "not a fast kernel: {m:?}"
        );
        m.runs
    };
    assert_eq!(runs_with(Duration::ZERO, Duration::from_secs(1)), 3);
    // A run of this kernel takes microseconds: 20 ms of them are many more than three.
    assert!(runs_with(Duration::from_millis(20), Duration::from_secs(1)) > 20);
    // The cap ends the timing even when the minimum is not reached.
    let started = std::time::Instant::now();
    let capped = runs_with(Duration::from_secs(60), Duration::from_millis(5));
    assert!(capped > 3, "{capped} runs in 5 ms");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "the cap did not end the timing"
    );
}

/// A kernel that measures the versions of its sums (SpMV's rows) has chosen one before its
/// timed runs: three timed runs are three runs of the chosen version, not trials of the
/// others (which take up to a few hundred runs). The JIT's, without versions, runs none.
#[test]
fn timed_runs_follow_the_kernels_choice_of_sums() {
    let (space, tensors) = random_spmv(5, 1);
    let default = space.default_point().unwrap();
    for backend in [Backend::C, Backend::Jit] {
        let options = MeasureOptions {
            repeats: 3,
            min_timed: Duration::ZERO,
            ..quick(backend)
        };
        let measurer = Measurer::new(&space, tensors.clone(), options).unwrap();
        let m = measurer
            .measure(&space, &default, Patience::default())
            .unwrap();
        assert_eq!(m.runs, 3, "{backend:?}: {m:?}");
        // The JIT's code has no versions of the sums: it measures and chooses none.
        let chose = backend == Backend::C;
        assert_eq!(m.sums.is_some(), chose, "{backend:?}: {m:?}");
    }
}

/// Both searches return a measured choice at least as fast as the default they measured,
/// count their candidates, and every candidate they measured was correct.
#[test]
fn searches_return_measured_choices() {
    let (space, tensors) = random_spmv(3, 2);
    let measurer = Measurer::new(&space, tensors, quick(Backend::Jit)).unwrap();
    for strategy in [Strategy::Random, Strategy::FormatOnly] {
        let mut calls = 0;
        let tuned = tune::search::search(
            &space,
            &measurer,
            strategy,
            tune::Limits {
                budget: Duration::from_millis(300),
                candidates: None,
            },
            7,
            |_| calls += 1,
        )
        .unwrap();
        assert!(tuned.failures.is_empty(), "{:?}", tuned.failures);
        assert_eq!(calls + 1, tuned.measured);
        // Every point it proposed after the default was measured, in its order.
        assert_eq!(tuned.tried.len() + 1, tuned.measured);
        assert!(tuned.tried.iter().all(|p| p.key() != tuned.default.key()));
        assert!(tuned.measured > 1, "{}: nothing measured", strategy.name());
        assert!(tuned.best_measurement.runtime <= tuned.default_measurement.runtime);
        assert!(tuned.speedup() >= 1.0);
        // The choice and the speedup come from five confirmation rounds of one run each
        // (`quick` measures one run), not from the search's single measurements.
        assert_eq!(tuned.default_measurement.runs, 5);
        assert_eq!(tuned.best_measurement.runs, 5);
        if strategy == Strategy::FormatOnly {
            assert_eq!(tuned.best.schedule, "");
        }
    }
}

/// A compilation that would run past the budget is stopped when the budget ends, so that
/// one slow candidate cannot hold a search far beyond it; a measurer given a compile limit
/// reports such a candidate as having timed out.
#[test]
fn a_slow_compilation_is_stopped_at_the_budget() {
    let (space, tensors) = random_spmv(5, 1);
    let dir = tempfile::tempdir().unwrap();
    // The default compiles at gcc's speed; every other candidate would take a minute.
    let options = MeasureOptions {
        toolchain: Toolchain {
            compiler: common::slow_compiler(dir.path(), 1, 60.0),
            cache_dir: dir.path().join("cache"),
            ..Toolchain::default()
        },
        ..quick(Backend::C)
    };
    // The default compiled before the search: the first compile into a new cache also
    // precompiles the intrinsics header, which on a loaded machine can take the whole
    // budget, leaving no time for a candidate to be stopped.
    let (measurer, _) = measurer_and_default(&space, tensors, options);
    let tuned = random_search(&space, &measurer, Duration::from_secs(2), 3);
    assert!(tuned.failures.is_empty(), "{:?}", tuned.failures);
    assert!(tuned.timed_out >= 1, "no candidate was stopped");
    assert!(
        tuned.tuning_time < Duration::from_secs(20),
        "a 2 s search took {:?}",
        tuned.tuning_time
    );

    // Not the default, whose kernel is in the cache.
    let mut draws = rng(5);
    let candidate = std::iter::from_fn(|| space.sample(&mut draws, Draw::Everything))
        .find(|c| c.point != tuned.default)
        .expect("a point other than the default");
    let patience = Patience {
        run: None,
        compile: Some(Duration::from_millis(100)),
    };
    assert!(matches!(
        measurer.measure(&space, &candidate, patience),
        Err(MeasureError::CompileTimedOut(limit)) if limit == Duration::from_millis(100)
    ));
}

/// The confirmation rounds come out of the budget: a budget that leaves time to measure
/// candidates but not to measure the default again five times measures no other
/// candidate (before, the search measured candidates until the budget was spent, then
/// confirmed them past it).
#[test]
fn the_budget_keeps_room_for_the_confirmation_rounds() {
    let (space, tensors) = random_spmv(5, 1);
    // Many runs, so that measuring takes far longer than loading the kernel (compiled by
    // the first measurement, then found in the cache).
    let options = MeasureOptions {
        repeats: 20_000,
        cap: Duration::from_secs(30),
        ..quick(Backend::C)
    };
    let (measurer, once) = measurer_and_default(&space, tensors, options);
    // Twice one measurement: room for the search's own first measurement of the default
    // and more, but less than the five rounds that confirm it.
    let again = once.conversion + once.runtime * (once.runs as u32 + 1);
    let tuned = random_search(&space, &measurer, again * 2, 5);
    assert_eq!(tuned.measured, 1, "one measurement {again:?}");
    assert_eq!(tuned.best, tuned.default);
}

/// Checking a result against the reference comes out of the budget too: with a large
/// dense output and a nearly empty matrix, the check takes far longer than the runs, and
/// a search that reserved only the runs for its confirmation rounds measured candidates
/// until the budget was spent, then overran it confirming them.
#[test]
fn the_budget_counts_the_checks_of_the_confirmation_rounds() {
    let rows = 200_000;
    let a = Coo::new(vec![rows, 50], vec![3, 7, 90_000, 20], vec![1.0, 2.0]).unwrap();
    let b = sparsec::generate::dense(&[50, 8], 1).unwrap();
    let (stmt, tensors) = statement(
        "C(i,j) = A(i,k) * B(k,j)",
        &[("A", "csr")],
        &[("A", a), ("B", b)],
        &[],
    );
    let space = tune::space_of(&stmt, &tensors, 1);
    let options = MeasureOptions {
        repeats: 3,
        ..quick(Backend::C)
    };
    let (measurer, once) = measurer_and_default(&space, tensors, options);
    let runs = once.conversion + once.runtime * (once.runs as u32 + 1);
    assert!(
        once.check > runs * 3,
        "check {:?}, runs {runs:?}",
        once.check
    );
    // Room for the search's own first measurement of the default, not for five more.
    let tuned = random_search(&space, &measurer, (once.check + runs) * 2, 5);
    assert_eq!(tuned.measured, 1, "check {:?}, runs {runs:?}", once.check);
}

/// The reference evaluation that checks the candidates counts in the budget: a budget it
/// takes up measures only the default (before, the search had the whole budget after it).
#[test]
fn the_budget_counts_the_reference_evaluation() {
    let mut r = rng(17);
    // Many entries for the reference to list, a kernel that runs them in microseconds.
    let a = random_coo(&mut r, &[600, 600], 0.5);
    let x = random_coo(&mut r, &[600], 1.0);
    let (stmt, tensors) = statement(
        "y(i) = A(i,j) * x(j)",
        &[("A", "csr")],
        &[("A", a), ("x", x)],
        &[],
    );
    let space = tune::space_of(&stmt, &tensors, 1);
    let (measurer, once) = measurer_and_default(&space, tensors, quick(Backend::C));
    let again = once.conversion + once.check + once.runtime * (once.runs as u32 + 1);
    let reference = measurer.reference_time();
    assert!(
        reference > again * 20,
        "reference {reference:?}, one measurement {again:?}"
    );
    let tuned = random_search(&space, &measurer, reference, 5);
    assert_eq!(tuned.measured, 1, "reference {reference:?}");
    assert_eq!(tuned.best, tuned.default);
    assert!(tuned.tuning_time >= reference);
}

/// A measurement budget stops the search after that many candidates, however much time is
/// left, so that searches can be compared at one budget.
#[test]
fn a_candidate_budget_bounds_what_is_measured() {
    let (space, tensors) = random_spmv(5, 2);
    let measurer = Measurer::new(&space, tensors, quick(Backend::Jit)).unwrap();
    let limits = tune::Limits {
        budget: Duration::from_secs(600),
        candidates: Some(3),
    };
    let tuned =
        tune::search::search(&space, &measurer, Strategy::Random, limits, 11, |_| {}).unwrap();
    assert_eq!(tuned.measured, 4, "the default and three candidates");
}

/// No format the space draws stores far more than the input does. A sparse level under a
/// dense one has a segment start for each of the dense level's positions, however few the
/// entries: `sds:2,0,1` over this hypersparse 50,000^3 tensor would store 15 million
/// starts for 300 entries, and the tuner's checks once let it through because its last
/// level has only 300 positions.
#[test]
fn drawn_formats_store_about_what_the_input_stores() {
    let n = 50_000;
    let entries = 300;
    let coords = (0..entries)
        .flat_map(|e| [e * 7919 % n, e * 104_729 % n, e * 31 % n].map(|c| c as i64))
        .collect();
    let b = Coo::new(vec![n; 3], coords, vec![1.0; entries]).unwrap();
    let dense = |seed| sparsec::generate::dense(&[n, 2], seed).unwrap();
    let inputs = [("B", b), ("C", dense(1)), ("D", dense(2))];
    let (stmt, tensors) = statement(
        "A(i,j) = B(i,k,l) * C(k,j) * D(l,j)",
        &[("B", "sss")],
        &inputs,
        &[],
    );
    let space = tune::space_of(&stmt, &tensors, 1);
    let mut rng = rand::rngs::StdRng::seed_from_u64(5);
    let mut converted = 0;
    for _ in 0..400 {
        let point = space.sample(&mut rng, Draw::FormatsOnly).unwrap().point;
        let format = &point.formats[0];
        // A format that cannot hold the tensor (a singleton level under a parent with
        // several entries) refuses it; the size is what is checked here.
        let Ok(stored) = tensors[0].convert(format) else {
            continue;
        };
        converted += 1;
        let storage: usize = stored
            .levels()
            .iter()
            .flat_map(|level| level.arrays.iter().map(|(_, array)| array.len()))
            .sum::<usize>()
            + stored.values().len();
        assert!(
            storage <= 1 << 20,
            "{}: {storage} array entries for {entries} entries",
            format.spelling()
        );
    }
    assert!(converted > 100, "{converted} formats could hold the tensor");
    // The same bound holds for points that are not drawn (a cost model's, say).
    let parse = |f: &str| sparsec::format::Format::parse(f, 3).unwrap();
    assert!(!space.fits(&[parse("sds:2,0,1")]));
    assert!(space.fits(&[parse("sss:2,0,1")]));
}
