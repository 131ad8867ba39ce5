//! The kernel cache: reuse, recovery from corrupted entries, concurrency, and a clear
//! error for a missing or failing compiler.

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
