//! The kernel cache: reuse, recovery from corrupted entries, concurrency, and a clear
//! error for a missing or failing compiler.

mod common;

use common::slow_compiler;
use sparsec::jit::{self, JitError, Toolchain};

fn toolchain(dir: &std::path::Path) -> Toolchain {
    Toolchain {
        cache_dir: dir.to_path_buf(),
        ..Toolchain::default()
    }
}

fn source(tag: u32) -> String {
    format!("int sparsec_probe(void) {{ return {tag}; }}\n")
}

fn probe(lib: &jit::Library) -> i32 {
    let f: unsafe extern "C" fn() -> i32 = unsafe { lib.symbol("sparsec_probe").unwrap() };
    unsafe { f() }
}

#[test]
fn second_load_reuses_the_cache_across_toolchains_and_processes() {
    let dir = tempfile::tempdir().unwrap();
    let tc = toolchain(dir.path());
    let src = source(11);
    let first = jit::load(&src, &tc).unwrap();
    assert!(first.compiled);
    assert_eq!(probe(&first.library), 11);
    // Same process: the loaded library is shared, not recompiled.
    let again = jit::load(&src, &tc).unwrap();
    assert!(!again.compiled);
    assert!(std::sync::Arc::ptr_eq(&first.library, &again.library));
    let mut entries: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    entries.sort_by_key(|name| name.rsplit('.').next().map(str::to_owned));
    let kinds: Vec<&str> = entries
        .iter()
        .map(|n| n.rsplit('.').next().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["id", "so", "sum"],
        "the compiler's identity, one library and one checksum: {entries:?}"
    );
}

#[test]
fn corrupted_or_truncated_entries_are_rebuilt() {
    let dir = tempfile::tempdir().unwrap();
    let tc = toolchain(dir.path());
    let src = source(12);
    let key = jit::cache_key(&src, &tc).unwrap();
    // Plant a truncated library with a stale checksum, as a crash mid-write would.
    std::fs::write(dir.path().join(format!("{key}.so")), b"\x7fELF truncated").unwrap();
    std::fs::write(dir.path().join(format!("{key}.sum")), "0000").unwrap();
    let loaded = jit::load(&src, &tc).unwrap();
    assert!(loaded.compiled);
    assert_eq!(probe(&loaded.library), 12);
}

#[test]
fn concurrent_threads_compile_the_same_kernel_safely() {
    let dir = tempfile::tempdir().unwrap();
    let tc = toolchain(dir.path());
    let src = source(13);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|_| s.spawn(|| probe(&jit::load(&src, &tc).unwrap().library)))
            .collect();
        for h in handles {
            assert_eq!(h.join().unwrap(), 13);
        }
    });
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.contains(".tmp") || n.ends_with(".c"))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
}

#[test]
fn missing_compiler_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let tc = Toolchain {
        compiler: "/nonexistent/cc-for-sparsec".into(),
        ..toolchain(dir.path())
    };
    let err = jit::load(&source(14), &tc).err().unwrap();
    assert!(matches!(err, JitError::MissingCompiler { .. }));
    assert!(
        err.to_string().contains("/nonexistent/cc-for-sparsec"),
        "{err}"
    );
}

#[test]
fn compiler_errors_carry_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let err = jit::load("int broken( {", &toolchain(dir.path()))
        .err()
        .unwrap();
    assert!(matches!(err, JitError::CompileFailed { .. }));
    assert!(err.to_string().contains("error"), "{err}");
}

#[test]
fn a_compilation_past_the_limit_is_stopped_with_its_children() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let tc = Toolchain {
        compiler: slow_compiler(dir.path(), 0, 1.5),
        compile_limit: Some(std::time::Duration::from_millis(200)),
        ..toolchain(&cache)
    };
    let started = std::time::Instant::now();
    let err = jit::load(&source(21), &tc).err().unwrap();
    assert!(
        matches!(err, JitError::CompileTimedOut { limit, .. } if limit.as_millis() == 200),
        "{err}"
    );
    assert!(err.to_string().contains("took longer than"), "{err}");
    assert!(
        started.elapsed().as_secs_f64() < 1.2,
        "{:?}",
        started.elapsed()
    );
    // The compiler's own child (here `sleep`, for gcc its passes) was stopped too: it never
    // went on to finish.
    std::thread::sleep(std::time::Duration::from_millis(2000));
    assert!(!dir.path().join("finished").exists());
    // Nothing half-written is left in the cache: only the compiler's identity record.
    let left: Vec<String> = std::fs::read_dir(&cache)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| !name.ends_with(".id"))
        .collect();
    assert!(left.is_empty(), "{left:?}");

    // Under a limit it does not reach, the same compiler builds the kernel.
    let patient = Toolchain {
        compile_limit: Some(std::time::Duration::from_secs(60)),
        ..tc
    };
    let loaded = jit::load(&source(21), &patient).unwrap();
    assert_eq!(probe(&loaded.library), 21);
    assert!(dir.path().join("finished").exists());
}

#[test]
fn compiler_errors_under_a_limit_carry_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let tc = Toolchain {
        compile_limit: Some(std::time::Duration::from_secs(60)),
        ..toolchain(dir.path())
    };
    let err = jit::load("int broken( {", &tc).err().unwrap();
    assert!(matches!(err, JitError::CompileFailed { .. }));
    assert!(err.to_string().contains("error"), "{err}");
}
