//! Compiles the C runtime that generated kernels print (`src/codegen/runtime.c`) into the
//! library as well, so Rust code calls and tests the very same functions
//! (`sparsec::codegen::runtime`).

fn main() {
    const RUNTIME: &str = "src/codegen/runtime.c";
    println!("cargo:rerun-if-changed={RUNTIME}");
    cc::Build::new()
        .file(RUNTIME)
        .std("c99")
        .compile("sparsec_runtime");
}
