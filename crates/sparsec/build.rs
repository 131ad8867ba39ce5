//! Compiles the C runtime that generated kernels print (`src/codegen/runtime.c`) and the
//! C helpers of level formats (`src/format/levels/*.c`) into the library as well, so Rust code calls and tests the very same functions
//! (`sparsec::codegen::runtime`).

fn main() {
    // The runtime, and the helpers level formats supply for their level functions.
    const SOURCES: [&str; 2] = ["src/codegen/runtime.c", "src/format/levels/hashed.c"];
    for source in SOURCES {
        println!("cargo:rerun-if-changed={source}");
    }
    cc::Build::new()
        .files(SOURCES)
        .std("c99")
        .compile("sparsec_runtime");
}
