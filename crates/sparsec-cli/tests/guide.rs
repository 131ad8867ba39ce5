//! The user's guide (`docs/guide`): every `$ sparsec ...` command in its `console` blocks
//! runs, in the directory `CHAPTER.in/` beside its chapter (which links the shared data it
//! reads), and prints what the page shows (`...` stands for lines, `[..]` for part of one:
//! times, thread counts, values of generated inputs).

#[test]
fn the_guides_commands_print_what_the_guide_shows() {
    let cache = std::env::temp_dir().join("sparsec-guide-test-cache");
    trycmd::TestCases::new()
        .register_bin(
            "sparsec",
            std::path::Path::new(env!("CARGO_BIN_EXE_sparsec")),
        )
        .env("NO_COLOR", "1")
        .env("SPARSEC_CACHE_DIR", cache.display().to_string())
        .case("../../docs/guide/src/*.md");
}
