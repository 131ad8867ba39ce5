//! Compiles the C runtime that generated kernels print (`src/codegen/runtime.c`) and the
//! C helpers of level formats (`src/format/levels/*.c`) into the library as well, so Rust code calls and tests the very same functions
//! (`sparsec::codegen::runtime`); and links isl, the integer set library of the SPF front
//! end (`src/polyhedral/isl/`).

use std::path::Path;

fn main() {
    // The runtime, and the helpers level formats supply for their level functions.
    const SOURCES: [&str; 2] = ["src/codegen/runtime.c", "src/format/levels/hashed.c"];
    for source in SOURCES {
        println!("cargo:rerun-if-changed={source}");
    }
    cc::Build::new()
        .files(SOURCES)
        .std("gnu99")
        .compile("sparsec_runtime");
    link_isl();
}

/// Link isl: Debian's `libisl-dev` provides `libisl.so`; without it, the versioned
/// library that gcc itself depends on (`libisl.so.23`, present wherever gcc is) is linked
/// by its full name. `ISL_LIB_DIR` names another directory to look in first.
fn link_isl() {
    println!("cargo:rerun-if-env-changed=ISL_LIB_DIR");
    let mut dirs: Vec<String> = std::env::var("ISL_LIB_DIR").into_iter().collect();
    dirs.extend(
        [
            "/usr/lib/x86_64-linux-gnu",
            "/usr/lib/aarch64-linux-gnu",
            "/usr/lib64",
            "/usr/lib",
            "/usr/local/lib",
        ]
        .map(String::from),
    );
    for dir in &dirs {
        if Path::new(dir).join("libisl.so").exists() {
            println!("cargo:rustc-link-search=native={dir}");
            println!("cargo:rustc-link-lib=dylib=isl");
            return;
        }
    }
    for dir in &dirs {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        let mut versioned: Vec<String> = entries
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| {
                n.strip_prefix("libisl.so.")
                    .is_some_and(|v| v.chars().all(|c| c.is_ascii_digit()))
            })
            .collect();
        versioned.sort();
        if let Some(name) = versioned.pop() {
            println!("cargo:rustc-link-search=native={dir}");
            println!("cargo:rustc-link-lib=dylib:+verbatim={name}");
            return;
        }
    }
    panic!(
        "isl (the integer set library) was not found: install it (Debian: apt-get install \
         libisl-dev) or set ISL_LIB_DIR to the directory holding libisl.so"
    );
}
