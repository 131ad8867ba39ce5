//! Shared helpers for differential kernel tests: random tensors and comparison of a
//! compiled kernel against the independent reference evaluator.
#![allow(dead_code)]

mod gpu_sweep;
mod shared_data;
#[allow(unused_imports)]
pub use gpu_sweep::{
    gpu_schedule_sweep, sparse_output_sweep, SweptSchedule, DOT_SCHEDULE, GPU_ROW_REDUCTIONS,
    GPU_SCHEDULES, PAPER_GPU_SCHEDULES,
};
// Not every test binary reads the shared data.
#[allow(unused_imports)]
pub use shared_data::shared_data;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use sparsec::format::Format;
use sparsec::jit::Toolchain;
use sparsec::kernel::{Kernel, MAX_TRIAL_RUNS};
use sparsec::notation::cin::Statement;
use sparsec::notation::{self, TensorDecl};
use sparsec::reference;
use sparsec::schedule::Schedule;
use sparsec::tensor::{Coo, Tensor, ValueType};

/// A random tensor: each point present with probability `density` (values in [-2, 2],
/// about one in eight of them an explicit zero), plus a few duplicates, unsorted.
pub fn random_coo(rng: &mut StdRng, dims: &[usize], density: f64) -> Coo {
    let total: usize = dims.iter().product();
    let mut coords = Vec::new();
    let mut values = Vec::new();
    let push = |point: usize, coords: &mut Vec<i64>, values: &mut Vec<f64>, rng: &mut StdRng| {
        let mut rest = point;
        let mut c = vec![0i64; dims.len()];
        for m in (0..dims.len()).rev() {
            c[m] = (rest % dims[m]) as i64;
            rest /= dims[m];
        }
        coords.extend(c);
        values.push(if rng.gen_bool(0.125) {
            0.0
        } else {
            rng.gen_range(-2.0..2.0)
        });
    };
    if total > 0 {
        if density >= 1.0 {
            for p in 0..total {
                push(p, &mut coords, &mut values, rng);
            }
        } else {
            let n = ((total as f64) * density).round() as usize;
            for _ in 0..n {
                let p = rng.gen_range(0..total);
                push(p, &mut coords, &mut values, rng);
            }
        }
    }
    // Shuffle to make the input unsorted.
    let n = values.len();
    let order = dims.len();
    for e in (1..n).rev() {
        let f = rng.gen_range(0..=e);
        values.swap(e, f);
        for m in 0..order {
            coords.swap(e * order + m, f * order + m);
        }
    }
    Coo::new(dims.to_vec(), coords, values).unwrap()
}

pub fn rng(seed: u64) -> StdRng {
    StdRng::seed_from_u64(seed)
}

/// Compile `expr` with the given formats (`(name, format string)`; unnamed tensors are
/// dense), run it on `inputs` and compare with the reference. Returns the kernel output.
pub fn check(expr: &str, formats: &[(&str, &str)], inputs: &[(&str, Coo)]) -> Tensor {
    check_with(expr, formats, inputs, &[])
}

pub fn check_with(
    expr: &str,
    formats: &[(&str, &str)],
    inputs: &[(&str, Coo)],
    sizes: &[(&str, usize)],
) -> Tensor {
    let (stmt, tensors) = statement(expr, formats, inputs, sizes);
    let kernel = Kernel::from_statement(stmt.clone(), ValueType::F64, &Default::default())
        .unwrap_or_else(|e| panic!("{expr} with {formats:?}: {e}"));
    compare_with_reference(
        &kernel,
        &stmt,
        &tensors,
        &format!("{expr} with {formats:?}"),
    )
}

/// Bind `expr` to tensors of the given formats and pack the inputs.
pub fn statement(
    expr: &str,
    formats: &[(&str, &str)],
    inputs: &[(&str, Coo)],
    sizes: &[(&str, usize)],
) -> (Statement, Vec<Tensor>) {
    let assignment = notation::parse(expr).unwrap();
    let format_of = |name: &str, order: usize| {
        formats
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, f)| Format::parse(f, order).unwrap())
    };
    let mut decls = vec![TensorDecl {
        name: assignment.lhs.tensor.clone(),
        dims: None,
        format: format_of(&assignment.lhs.tensor, assignment.lhs.indices.len()),
        fill: 0.0,
    }];
    for (name, coo) in inputs {
        decls.push(TensorDecl {
            name: name.to_string(),
            dims: Some(coo.dims.clone()),
            format: format_of(name, coo.order()),
            fill: 0.0,
        });
    }
    let sizes: Vec<(String, usize)> = sizes.iter().map(|(n, s)| (n.to_string(), *s)).collect();
    let stmt =
        notation::bind(&assignment, &decls, &sizes).unwrap_or_else(|e| panic!("{expr}: {e}"));
    let tensors: Vec<Tensor> = stmt.tensors[1..]
        .iter()
        .map(|t| {
            let coo = &inputs.iter().find(|(n, _)| *n == t.name).unwrap().1;
            Tensor::from_coo(coo, &t.format, ValueType::F64).unwrap()
        })
        .collect();
    (stmt, tensors)
}

/// Run `kernel` on `tensors` and compare with the reference evaluator.
pub fn compare_with_reference(
    kernel: &Kernel,
    stmt: &Statement,
    tensors: &[Tensor],
    what: &str,
) -> Tensor {
    let refs: Vec<&Tensor> = tensors.iter().collect();
    let got = kernel.run(&refs).unwrap_or_else(|e| panic!("{what}: {e}"));
    let expected = reference::evaluate(stmt, &refs, None);
    // An output whose unstored components are not 0 (`cos(A)` into CSR) is compared
    // component by component.
    let written_out = |t: &Tensor| t.convert(&Format::dense(t.dims().len())).unwrap();
    let diff = if got.fill() != 0.0 || expected.fill() != 0.0 {
        written_out(&got).max_difference(&written_out(&expected))
    } else {
        got.max_difference(&expected)
    }
    .expect("same shape");
    assert_eq!(got.fill().to_bits(), stmt.output_fill().to_bits(), "{what}");
    assert!(
        diff <= 1e-9,
        "{what}: kernel differs from reference by {diff}\nloops {:?}\n{}",
        kernel.loop_order(),
        kernel.kernel_source()
    );
    assert_eq!(got.format(), &stmt.tensors[0].format);
    got
}

/// Compile `expr` with `schedule`, run it with 1 and 2 threads on every input set and
/// compare each result with the reference.
pub fn check_schedule(
    expr: &str,
    formats: &[(&str, &str)],
    input_sets: &[Vec<(&str, Coo)>],
    sizes: &[(&str, usize)],
    schedule: &str,
) {
    let (stmt, _) = statement(expr, formats, &input_sets[0], sizes);
    let parsed = Schedule::parse(schedule).unwrap_or_else(|e| panic!("{schedule}: {e}"));
    let mut kernel = Kernel::scheduled(stmt, &parsed, ValueType::F64, &split_toolchain())
        .unwrap_or_else(|e| panic!("{expr} with {schedule}: {e}"));
    for inputs in input_sets {
        let (stmt, tensors) = statement(expr, formats, inputs, sizes);
        for threads in [1, 2] {
            kernel.set_threads(threads);
            let what = format!("{expr} with {formats:?}, `{schedule}`, {threads} threads");
            compare_with_reference(&kernel, &stmt, &tensors, &what);
        }
    }
}

/// The error text of compiling `expr` with `schedule` (which must fail).
pub fn schedule_error(
    expr: &str,
    formats: &[(&str, &str)],
    inputs: &[(&str, Coo)],
    schedule: &str,
) -> String {
    let (stmt, _) = statement(expr, formats, inputs, &[]);
    let parsed = match Schedule::parse(schedule) {
        Ok(p) => p,
        Err(e) => return e.to_string(),
    };
    match Kernel::scheduled(stmt, &parsed, ValueType::F64, &Toolchain::default()) {
        Ok(k) => panic!("`{schedule}` was accepted:\n{}", k.kernel_source()),
        Err(e) => e.to_string(),
    }
}

/// Run `kernel` on `tensors` again and again, each run against the reference, until it has
/// measured every version of its gathered sums and chosen one (`Kernel::sum_version`,
/// `ir::gather::SumVersion`): the first run's version is the run-time tests' choice, the
/// next ones each version in turn, then the chosen one. A kernel with such versions must
/// choose (unless it is a two-phase kernel, whose phases keep the tests' choice, or its
/// target's code has no versions); one without never does.
#[allow(dead_code)]
pub fn compare_every_sum_version(
    kernel: &Kernel,
    stmt: &Statement,
    tensors: &[Tensor],
    what: &str,
) {
    let refs: Vec<&Tensor> = tensors.iter().collect();
    let expected = reference::evaluate(stmt, &refs, None);
    // The JIT's code runs every version as the same loops: it measures none.
    let versioned = kernel.kernel_source().contains("sum_version")
        && !matches!(kernel.output_mode(), sparsec::ir::OutputMode::Rows { .. })
        && kernel.targets().main().capabilities().tunable.is_some();
    let mut runs = 0;
    loop {
        let got = kernel.run(&refs).unwrap_or_else(|e| panic!("{what}: {e}"));
        let diff = got.max_difference(&expected).expect("same shape");
        assert!(
            diff <= 1e-9,
            "{what}, run {runs}: kernel differs from reference by {diff}\n{}",
            kernel.kernel_source()
        );
        runs += 1;
        if !kernel.measuring_versions() || runs == MAX_TRIAL_RUNS {
            break;
        }
    }
    assert!(
        !kernel.measuring_versions(),
        "{what}: still measuring after {runs} runs"
    );
    assert_eq!(
        kernel.sum_version().is_some(),
        versioned,
        "{what}: chose {:?} after {runs} runs",
        kernel.sum_version()
    );
}

/// The default toolchain, but with kernels that split every balanced parallel loop between
/// the threads however little work it has (`SPARSEC_GRAIN=1`; by default a loop's team
/// follows how it ran before, and small loops run on one thread), so that small inputs
/// exercise the threads' blocks.
pub fn split_toolchain() -> Toolchain {
    let mut toolchain = Toolchain::default();
    toolchain.flags.push("-DSPARSEC_GRAIN=1".into());
    toolchain
}

/// [`split_toolchain`], with kernels whose threads also claim blocks of a balanced loop
/// as they finish however little work it has (`SPARSEC_CLAIMED_WORK=1`; by default only
/// loops of milliseconds do), so that small inputs exercise the claimed blocks.
pub fn claiming_toolchain() -> Toolchain {
    let mut toolchain = split_toolchain();
    toolchain.flags.push("-DSPARSEC_CLAIMED_WORK=1".into());
    toolchain
}

/// Compile an SPF program, or fail the test with its diagnostic.
pub fn compile_spf(name: &str, text: &str) -> sparsec::spf::SpfKernel {
    compile_spf_with(name, text, sparsec::kernel::Backend::C)
}

/// [`compile_spf`] with `backend`'s targets.
pub fn compile_spf_with(
    name: &str,
    text: &str,
    backend: sparsec::kernel::Backend,
) -> sparsec::spf::SpfKernel {
    compile_spf_on(name, text, backend, &Toolchain::default())
}

/// [`compile_spf_with`] with C compiled by `toolchain`.
pub fn compile_spf_on(
    name: &str,
    text: &str,
    backend: sparsec::kernel::Backend,
    toolchain: &Toolchain,
) -> sparsec::spf::SpfKernel {
    let targets = backend.targets(toolchain);
    sparsec::spf::SpfKernel::compile_on(name, text, targets)
        .unwrap_or_else(|e| panic!("{name}: {:?}", miette::Report::new(e)))
}

/// The error an SPF program gives, with the text it points at.
pub fn spf_error(text: &str) -> (String, String) {
    match sparsec::spf::SpfKernel::compile("test.spf", text, &Toolchain::default()) {
        Err(sparsec::Error::Spf(e)) => {
            let (a, b) = e.span().expect("the error points at a span");
            (e.message.clone(), text[a..b].to_string())
        }
        Err(e) => panic!("expected a program error, got {e}"),
        Ok(_) => panic!("expected an error"),
    }
}

/// `A x` for a matrix's entries (duplicates add up), by a plain loop.
pub fn spmv(coo: &Coo, x: &[f64]) -> Vec<f64> {
    let mut y = vec![0.0; coo.dims[0]];
    for (e, v) in coo.values.iter().enumerate() {
        y[coo.coords[2 * e] as usize] += v * x[coo.coords[2 * e + 1] as usize];
    }
    y
}

/// `|A| |x|` for a matrix's entries: the magnitude of the terms of each entry of `A x`,
/// which bounds its rounding error however much the terms cancel.
#[allow(dead_code)]
pub fn spmv_magnitudes(coo: &Coo, x: &[f64]) -> Vec<f64> {
    let mut y = vec![0.0; coo.dims[0]];
    for (e, v) in coo.values.iter().enumerate() {
        y[coo.coords[2 * e] as usize] += (v * x[coo.coords[2 * e + 1] as usize]).abs();
    }
    y
}

/// Every entry of `got` within `1e-9 * (1 + magnitude)` of `want`'s, where `magnitudes`
/// holds the magnitude of each entry's terms: a sum whose terms cancel keeps their
/// rounding error, which another order of additions (or a fused multiply-add) changes.
#[allow(dead_code)]
pub fn assert_close_to_terms(what: &str, got: &[f64], want: &[f64], magnitudes: &[f64]) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, ((g, w), m)) in got.iter().zip(want).zip(magnitudes).enumerate() {
        assert!(
            (g - w).abs() <= 1e-9 * (1.0 + m),
            "{what}: entry {i} is {g}, expected {w} (terms of magnitude {m})"
        );
    }
}

/// Every entry of `got` within `1e-9 * (1 + |want|)` of `want`'s.
pub fn assert_close(what: &str, got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= 1e-9 * (1.0 + w.abs()),
            "{what}: entry {i} is {g}, expected {w}"
        );
    }
}

/// A C compiler (a script in `dir`) that answers `--version` at once and compiles its
/// first `fast` kernels at gcc's speed, the later ones only after `seconds`, waited for in
/// a process of its own that leaves `finished` in `dir` when done (as gcc runs its passes
/// in processes of their own). Precompiling a header (`-x c-header`, which the kernel
/// cache does beside a kernel's first compile) is neither slowed nor counted.
pub fn slow_compiler(dir: &std::path::Path, fast: usize, seconds: f64) -> String {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join("slow-cc");
    let (count, finished) = (dir.join("compilations"), dir.join("finished"));
    std::fs::write(
        &path,
        format!(
            "#!/bin/sh\ncase \"$1\" in --version) exec gcc --version;; esac\n\
             case \" $* \" in *\" c-header \"*) exec gcc \"$@\";; esac\n\
             n=$(cat '{count}' 2>/dev/null || echo 0)\necho $((n + 1)) > '{count}'\n\
             if [ \"$n\" -ge {fast} ]; then (sleep {seconds}; touch '{finished}') & wait $!; fi\n\
             exec gcc \"$@\"\n",
            count = count.display(),
            finished = finished.display(),
        ),
    )
    .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.display().to_string()
}
