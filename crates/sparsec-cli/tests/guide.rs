//! The user's guide (`docs/guide`, and the chapters it includes from `docs/`): every
//! `$ sparsec ...` command in its `console` blocks runs, in the directory `CHAPTER.in/`
//! beside its chapter (which links the shared data it
//! reads), and prints what the page shows (`...` stands for lines, `[..]` for part of one:
//! times, thread counts, values of generated inputs).

#[test]
fn the_guides_commands_print_what_the_guide_shows() {
    let cache = std::env::temp_dir().join("sparsec-guide-test-cache");
    let cases = trycmd::TestCases::new();
    cases
        .register_bin(
            "sparsec",
            std::path::Path::new(env!("CARGO_BIN_EXE_sparsec")),
        )
        .env("NO_COLOR", "1")
        .env("SPARSEC_CACHE_DIR", cache.display().to_string())
        .case("../../docs/guide/src/*.md")
        // Chapters kept beside the code they document, which the book includes. The MPI
        // chapter's commands run under mpirun, in `distributed.rs` (feature `mpi`).
        .case("../../docs/spf.md")
        .case("../../docs/affine.md")
        .case("../../docs/semirings.md");
    // Chapters whose commands need an optional part run in the builds that have it (CI
    // runs this test again with every feature). A later entry for a path replaces the
    // glob's.
    if !cfg!(feature = "opencl") {
        cases.skip("../../docs/guide/src/gpu.md");
    }
    if !cfg!(feature = "learned") {
        cases.skip("../../docs/guide/src/learned-model.md");
    }
}
