//! Targets behind the `Target` and `Artifact` traits: a target written outside the crate
//! (a toy that prints the IR as its listing, declares fewer capabilities than the CPU
//! targets, and runs through the Cranelift target's code) compiles and runs kernels through
//! the traits alone, alone or as either tier; functions that need what a target cannot do
//! are refused naming it; the JIT, whose code has no versions of the gathered sums,
//! measures none.

mod common;
use common::*;

use std::sync::Arc;

use sparsec::codegen::c::CTarget;
use sparsec::codegen::clif::CraneliftTarget;
use sparsec::ir::{
    ArrayRef, BinOp, Expr, Function, OperandId, OutputMode, ParallelUnit, Stmt, Store,
};
use sparsec::jit::Toolchain;
use sparsec::kernel::{lower_with_default_parallelism, Backend, Kernel};
use sparsec::lower::{self, Lowered};
use sparsec::notation::cin::Statement;
use sparsec::schedule::Concrete;
use sparsec::target::{Artifact, Call, Capabilities, Listing, Pass, Target, Targets};
use sparsec::tensor::{Coo, Tensor, ValueType};
use sparsec::Error;

/// Prints the function's IR; its code is the Cranelift target's, wrapped.
#[derive(Debug)]
struct Toy {
    capabilities: Capabilities,
    passes: &'static [Pass],
}

/// Serial CPU code (SIMD loops run as plain loops) that emits entries and allocates
/// scratch, without atomics or helpers.
const TOY: Capabilities = Capabilities {
    units: &[ParallelUnit::CpuVector],
    threads: false,
    emitting: true,
    atomics: false,
    scratch: true,
    helpers: false,
    tunable: None,
    checks_assumptions: true,
};

const LISTING_HEADER: &str = "toy IR listing\n";

impl Target for Toy {
    fn name(&self) -> &'static str {
        "toy"
    }

    fn capabilities(&self) -> Capabilities {
        self.capabilities
    }

    fn passes(&self) -> &'static [Pass] {
        self.passes
    }

    fn listing(&self, function: &Function) -> Result<Option<Listing>, Error> {
        Ok(Some(Listing {
            text: format!("{LISTING_HEADER}{function}"),
            body_offset: LISTING_HEADER.len(),
        }))
    }

    fn compile(&self, function: &Function) -> Result<Arc<dyn Artifact>, Error> {
        let mut function = function.clone();
        if !self.capabilities.checks_assumptions {
            // Code that checks nothing, as a device's kernels: every assumption holds in
            // it (and reads what it read, so that the arguments keep their slots).
            for (condition, _) in &mut function.assumptions {
                *condition = Expr::bin(BinOp::Or, condition.clone(), Expr::Bool(true));
            }
        }
        let code = CraneliftTarget.compile(&function)?;
        Ok(Arc::new(ToyCode(code, self.capabilities)))
    }
}

struct ToyCode(Arc<dyn Artifact>, Capabilities);

impl Artifact for ToyCode {
    fn target(&self) -> &'static str {
        "toy"
    }

    fn was_compiled(&self) -> bool {
        true
    }

    fn capabilities(&self) -> Capabilities {
        self.1
    }

    unsafe fn call(&self, call: Call<'_>) -> Result<i32, Error> {
        // SAFETY: the caller keeps the ABI's contract, which the wrapped code has too.
        unsafe { self.0.call(call) }
    }
}

fn toy() -> Arc<dyn Target> {
    Arc::new(Toy {
        capabilities: TOY,
        passes: &[],
    })
}

/// `expr` over random inputs, lowered with no parallel loop.
fn serial(expr: &str, formats: &[(&str, &str)], dims: &[(&str, &[usize])]) -> Fixture {
    let mut r = rng(5);
    let inputs: Vec<(&str, Coo)> = dims
        .iter()
        .map(|(name, d)| (*name, random_coo(&mut r, d, 0.3)))
        .collect();
    let (statement, tensors) = statement(expr, formats, &inputs, &[]);
    let lowered = lower::lower(&Concrete::new(&statement).unwrap()).unwrap();
    Fixture {
        statement,
        tensors,
        lowered,
    }
}

struct Fixture {
    statement: Statement,
    tensors: Vec<Tensor>,
    lowered: Lowered,
}

impl Fixture {
    /// The kernel of the serial lowering, compiled by `targets`.
    fn kernel(&self, targets: Targets) -> Result<Kernel, Error> {
        self.kernel_of(self.lowered.clone(), targets)
    }

    fn kernel_of(&self, lowered: Lowered, targets: Targets) -> Result<Kernel, Error> {
        Kernel::from_lowered_on(
            self.statement.clone(),
            lowered,
            ValueType::F64,
            &Toolchain::default(),
            targets,
        )
    }

    /// The statement lowered with the default schedule (its rows on threads).
    fn parallel(&self) -> Lowered {
        lower_with_default_parallelism(&Concrete::new(&self.statement).unwrap()).unwrap()
    }

    /// The kernel of the default schedule, compiled by `backend`'s targets.
    fn default_kernel(&self, backend: Backend) -> Kernel {
        self.kernel_of(self.parallel(), backend.targets(&Toolchain::default()))
            .unwrap()
    }
}

const SPMV: &str = "y(i) = A(i,j) * x(j)";

fn spmv() -> Fixture {
    serial(SPMV, &[("A", "csr")], &[("A", &[30, 20]), ("x", &[20])])
}

#[test]
fn a_target_from_outside_the_crate_runs_kernels() {
    let spmv = spmv();
    let kernel = spmv.kernel(Targets::one(toy())).unwrap();
    assert_eq!(kernel.running_target(), "toy");
    assert_eq!(kernel.targets().main().name(), "toy");
    assert!(kernel.source().starts_with(LISTING_HEADER));
    assert!(
        kernel.kernel_source().contains("for i in 0..i_size {"),
        "{}",
        kernel.source()
    );
    assert_eq!(kernel.threads_used(), 1);
    compare_with_reference(&kernel, &spmv.statement, &spmv.tensors, "toy SpMV");

    // Sparse outputs: rows placed in two phases.
    let spgemm = serial(
        "C(i,j) = A(i,k) * B(k,j)",
        &[("A", "csr"), ("B", "csr"), ("C", "csr")],
        &[("A", &[12, 9]), ("B", &[9, 14])],
    );
    let kernel = spgemm.kernel(Targets::one(toy())).unwrap();
    compare_with_reference(&kernel, &spgemm.statement, &spgemm.tensors, "toy SpGEMM");
    let coo = serial(
        "C(i,j) = A(i,j) * B(i,j)",
        &[("A", "csr"), ("B", "csr"), ("C", "coo")],
        &[("A", &[12, 9]), ("B", &[12, 9])],
    );
    let kernel = coo.kernel(Targets::one(toy())).unwrap();
    assert!(matches!(kernel.output_mode(), OutputMode::Emit { .. }));
    compare_with_reference(&kernel, &coo.statement, &coo.tensors, "toy, emitted");
}

#[test]
fn targets_refuse_what_they_cannot_do_naming_it() {
    // The default schedule runs SpMV's rows on threads, which the toy does not run.
    let spmv = spmv();
    let refused = spmv
        .kernel_of(spmv.parallel(), Targets::one(toy()))
        .err()
        .expect("a loop on threads is refused")
        .to_string();
    assert!(
        refused.contains("toy backend") && refused.contains("CPUThread"),
        "{refused}"
    );
    assert!(refused.contains("runs CPUVector"), "{refused}");

    let silent: Arc<dyn Target> = Arc::new(Toy {
        capabilities: Capabilities {
            emitting: false,
            ..TOY
        },
        passes: &[],
    });
    // A COO output: entries emitted, then sorted and packed.
    let spgemm = serial(
        "C(i,j) = A(i,k) * B(k,j)",
        &[("A", "csr"), ("B", "csr"), ("C", "coo")],
        &[("A", &[4, 4]), ("B", &[4, 4])],
    );
    let refused = spgemm
        .kernel(Targets::one(silent))
        .err()
        .expect("emitting is refused")
        .to_string();
    assert!(refused.contains("emits output entries"), "{refused}");

    // A hashed level located at the other operand's coordinates calls its lookup helper.
    let hashed = serial(
        "y(i) = A(i,j) * B(i,j)",
        &[("A", "csr"), ("B", "dh")],
        &[("A", &[6, 5]), ("B", &[6, 5])],
    );
    let refused = hashed
        .kernel(Targets::one(toy()))
        .err()
        .expect("helper calls are refused")
        .to_string();
    assert!(refused.contains("level helper"), "{refused}");
}

/// Either tier may be any target: the toy's code runs until the C compiler's replaces it.
#[test]
fn tiers_of_any_targets() {
    let spmv = spmv();
    let cache = tempfile::tempdir().unwrap();
    let toolchain = Toolchain {
        cache_dir: cache.path().to_path_buf(),
        ..Toolchain::default()
    };
    let c: Arc<dyn Target> = Arc::new(CTarget::new(toolchain));
    let kernel = spmv.kernel(Targets::tiered(toy(), c.clone())).unwrap();
    compare_with_reference(&kernel, &spmv.statement, &spmv.tensors, "toy tier");
    kernel.finish_compiling().unwrap();
    assert_eq!(kernel.running_target(), "C");
    compare_with_reference(&kernel, &spmv.statement, &spmv.tensors, "C tier");
    // The C listing, the main target's, is the kernel's source.
    assert!(kernel.source().contains("sparsec_kernel"));

    // The quick target refusing, the kernel waits for the main one.
    let kernel = spmv
        .kernel_of(spmv.parallel(), Targets::tiered(toy(), c))
        .unwrap();
    assert_eq!(kernel.running_target(), "C");
    compare_with_reference(
        &kernel,
        &spmv.statement,
        &spmv.tensors,
        "C, the toy refusing",
    );
}

/// The JIT's code runs every version of the gathered sums as the same loops: its kernels
/// run no trials, where the C compiler's measure the versions.
#[test]
fn the_jit_pays_no_trials_for_versions_it_does_not_have() {
    let spmv = spmv();
    let refs: Vec<&Tensor> = spmv.tensors.iter().collect();
    let kernel = |backend: Backend| spmv.default_kernel(backend);
    let c = kernel(Backend::C);
    assert!(c.kernel_source().contains("sum_version"), "{}", c.source());
    c.run(&refs).unwrap();
    assert!(c.measuring_versions());
    assert!(c.run_version_trials(&refs, None, None).unwrap() > 0);
    assert!(c.sum_version().is_some());

    let jit = kernel(Backend::Jit);
    jit.run(&refs).unwrap();
    assert!(!jit.measuring_versions());
    assert_eq!(jit.run_version_trials(&refs, None, None).unwrap(), 0);
    assert_eq!(jit.sum_version(), None);
    compare_with_reference(&jit, &spmv.statement, &spmv.tensors, "JIT SpMV");
}

/// A pass that stores into an operand the function does not have.
fn store_out_of_the_function(function: &mut Function) {
    function.body.push(Stmt::Store(Store {
        array: ArrayRef::Values(OperandId(99)),
        index: Expr::Int(0),
        value: Expr::Float(1.0),
        accumulate: false,
    }));
}

/// A target's passes run before both tiers compile; the C target's (gathered-sum versions,
/// prefetch hints) are its own, so the JIT alone compiles the function as lowering left
/// it, and in debug builds a pass that breaks the IR is named.
#[test]
fn targets_own_their_passes() {
    let spmv = spmv();
    let kernel = |backend: Backend| spmv.default_kernel(backend);
    let c = kernel(Backend::C);
    assert!(c.kernel_source().contains("sum_version"), "{}", c.source());
    // Back to the JIT: its function is lowering's, not the C target's.
    let jit = c.with_backend(Backend::Jit).unwrap();
    assert!(
        !jit.kernel_source().contains("sum_version"),
        "{}",
        jit.source()
    );
    compare_with_reference(&jit, &spmv.statement, &spmv.tensors, "JIT, no passes");
    // Tiered, the JIT's code runs the C target's function: one argument layout.
    let tiered = kernel(Backend::Tiered);
    assert!(tiered.kernel_source().contains("sum_version"));
    compare_with_reference(&tiered, &spmv.statement, &spmv.tensors, "tiered");

    let breaking: Arc<dyn Target> = Arc::new(Toy {
        capabilities: TOY,
        passes: &[Pass {
            name: "store out of the function",
            run: store_out_of_the_function,
        }],
    });
    // Release builds skip the IR check after each pass (and the broken IR would index
    // past the function's operands).
    if cfg!(debug_assertions) {
        let refused = spmv.kernel(Targets::one(breaking));
        let refused = refused.err().expect("invalid IR is refused").to_string();
        assert!(
            refused.contains("toy backend") && refused.contains("store out of the function"),
            "{refused}"
        );
    }
}

/// A target whose code does not check the function's assumptions (a device's kernels)
/// has them checked on the host, from the call's scalars, before its code runs: the
/// message is the one the C target's code returns.
#[test]
fn assumptions_are_checked_on_the_host_for_targets_whose_code_does_not() {
    let unchecked: Arc<dyn Target> = Arc::new(Toy {
        capabilities: Capabilities {
            checks_assumptions: false,
            ..TOY
        },
        passes: &[],
    });
    for rows in [30, 31] {
        let fixture = serial(SPMV, &[("A", "csr")], &[("A", &[rows, 20]), ("x", &[20])]);
        let schedule = sparsec::schedule::Schedule::parse("bound(i,ib,MaxExact,30)").unwrap();
        let concrete = schedule
            .apply(&Concrete::new(&fixture.statement).unwrap())
            .unwrap();
        let lowered = lower::lower(&concrete).unwrap();
        assert_eq!(lowered.function.assumptions.len(), 1);
        let on_host = fixture
            .kernel_of(lowered.clone(), Targets::one(unchecked.clone()))
            .unwrap();
        let in_code = fixture
            .kernel_of(lowered, Backend::C.targets(&Toolchain::default()))
            .unwrap();
        let inputs: Vec<&Tensor> = fixture.tensors.iter().collect();
        match rows {
            30 => {
                compare_with_reference(&on_host, &fixture.statement, &fixture.tensors, "toy");
                in_code.run(&inputs).unwrap();
            }
            _ => {
                let host = on_host.run(&inputs).unwrap_err().to_string();
                let code = in_code.run(&inputs).unwrap_err().to_string();
                assert!(host.contains("exactly 30 iterations"), "{host}");
                assert_eq!(host, code);
            }
        }
    }
}
