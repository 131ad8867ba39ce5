//! The intrinsics header, precompiled once per compiler and flags.
//!
//! `<immintrin.h>` declares every x86 intrinsic, and gcc 12 takes about 0.45 s to read it:
//! more than the rest of compiling most kernels, and a third of a cold SpMV compile (whose
//! vector loops print it). The rest of a kernel's system headers take milliseconds. So a
//! source that includes it is compiled with `-include <cache>/headers-KEY/intrinsics.h`,
//! beside which sits that header precompiled (`intrinsics.h.gch`). gcc then reads the
//! precompiled state instead, the source's own `#include <immintrin.h>` finds the header's
//! guard defined, and the machine code is the same. A compiler that does not precompile
//! headers, or finds the precompiled one unusable (other flags, another build), reads the
//! text: slower, never different. The first kernel that wants the header in a cache does
//! not wait for it: it is compiled reading the text while a second compiler precompiles
//! the header beside it (on another core), and its compile returns when both are done.
//!
//! Like the kernel cache, the precompiled header is written to a temporary file and renamed
//! into place, with a checksum beside it written last; one that fails its checksum is built
//! again. The key is a BLAKE3 hash of the included line, the compiler's identity and the
//! flags, since gcc accepts a precompiled header only under the options it was built with.
//! A failed build is remembered for the life of the process only (a compiler that cannot
//! precompile, or a target without the header), and compiling then goes on without it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use super::{entry_is_valid, install, spawn_stoppable, stop, unique_suffix, wait_until, Toolchain};

/// The line whose header is precompiled.
const INTRINSICS: &str = "#include <immintrin.h>";

/// Whether `source` includes the intrinsics header (on some branch of its preprocessor
/// conditions), and so is worth compiling with it precompiled.
pub(super) fn wanted(source: &str) -> bool {
    source.lines().any(|line| line.trim() == INTRINSICS)
}

/// What a compile with some flags finds of the precompiled header.
pub(super) enum Precompiled {
    /// Built and checked: the header to pass to `-include`, its precompiled form beside it.
    Ready(PathBuf),
    /// Not built yet, and now being built by a compiler started for it: finish it with
    /// [`Build::finish`].
    Building(Build),
    /// Not to be had in this process for now: its build failed, or another thread is
    /// building it.
    Absent,
}

/// Each header this process has looked for (by its directory): `Some` once it is ready,
/// `None` while a thread builds it or after that build failed.
fn known() -> &'static Mutex<HashMap<PathBuf, Option<PathBuf>>> {
    static KNOWN: OnceLock<Mutex<HashMap<PathBuf, Option<PathBuf>>>> = OnceLock::new();
    KNOWN.get_or_init(Default::default)
}

/// The precompiled header for compiling with `flags` under `toolchain`: ready in the cache,
/// or its build started now.
pub(super) fn precompiled(toolchain: &Toolchain, identity: &str, flags: &[&str]) -> Precompiled {
    let flags: Vec<&str> = flags.iter().copied().filter(|f| !links(f)).collect();
    let mut hasher = blake3::Hasher::new();
    hasher.update(INTRINSICS.as_bytes());
    hasher.update(b"\0");
    hasher.update(identity.as_bytes());
    for flag in &flags {
        hasher.update(b"\0");
        hasher.update(flag.as_bytes());
    }
    let dir = toolchain
        .cache_dir
        .join(format!("headers-{}", &hasher.finalize().to_hex()[..16]));
    let mut known = known().lock().expect("precompiled headers");
    if let Some(header) = known.get(&dir) {
        return header
            .clone()
            .map_or(Precompiled::Absent, Precompiled::Ready);
    }
    let paths = Paths::in_dir(&dir);
    if paths.is_valid() {
        known.insert(dir, Some(paths.header.clone()));
        return Precompiled::Ready(paths.header);
    }
    known.insert(dir, None);
    match Build::start(paths, toolchain, &flags) {
        Some(build) => Precompiled::Building(build),
        None => Precompiled::Absent,
    }
}

/// Whether `flag` only concerns linking, which does not happen when a header is
/// precompiled (gcc would warn that it is unused).
fn links(flag: &str) -> bool {
    flag == "-shared" || ["-l", "-L", "-Wl,"].iter().any(|p| flag.starts_with(p))
}

/// The files of one precompiled header.
struct Paths {
    dir: PathBuf,
    header: PathBuf,
    /// Where gcc looks for the precompiled form of `header`.
    precompiled: PathBuf,
    checksum: PathBuf,
}

impl Paths {
    fn in_dir(dir: &Path) -> Paths {
        let header = dir.join("intrinsics.h");
        Paths {
            dir: dir.to_path_buf(),
            precompiled: dir.join("intrinsics.h.gch"),
            checksum: dir.join("intrinsics.h.gch.sum"),
            header,
        }
    }

    /// Whether the header, its precompiled form and the checksum are in place, in a
    /// directory and files only this user may write ([`crate::trust`]): gcc reads both.
    fn is_valid(&self) -> bool {
        crate::trust::existing_private_dir(&self.dir) == Ok(true)
            && crate::trust::open_private(&self.header).is_some()
            && entry_is_valid(&self.precompiled, &self.checksum)
    }
}

/// A compiler precompiling the header into a temporary file. Dropped unfinished (the
/// kernel's compile failed), it is stopped and its file removed.
pub(super) struct Build {
    compiler: Child,
    compiler_name: String,
    paths: Paths,
    /// The compiler's output, renamed into place once checked.
    output: PathBuf,
    finished: bool,
}

impl Build {
    /// Write the header and start precompiling it; `None` if the cache cannot be written
    /// or the compiler cannot be started.
    fn start(paths: Paths, toolchain: &Toolchain, flags: &[&str]) -> Option<Build> {
        let suffix = unique_suffix();
        let temporary = |path: &Path| {
            let mut name = path.as_os_str().to_owned();
            name.push(format!(".{suffix}.tmp"));
            PathBuf::from(name)
        };
        crate::trust::private_dir(&paths.dir).ok()?;
        let header = temporary(&paths.header);
        let written = crate::trust::write_private(&header, format!("{INTRINSICS}\n").as_bytes())
            .and_then(|()| std::fs::rename(&header, &paths.header));
        if written.is_err() {
            let _ = std::fs::remove_file(&header);
            return None;
        }
        let output = temporary(&paths.precompiled);
        let mut command = Command::new(&toolchain.compiler);
        command
            .args(flags)
            .args(["-x", "c-header"])
            .arg(&paths.header)
            .arg("-o")
            .arg(&output)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let compiler = spawn_stoppable(command, &toolchain.compiler).ok()?;
        Some(Build {
            compiler,
            compiler_name: toolchain.compiler.clone(),
            paths,
            output,
            finished: false,
        })
    }

    /// Wait for the compiler, stopping it once `limit` has passed since `started`; put
    /// the precompiled header in place if it succeeded, and tell this process's later
    /// compiles.
    pub(super) fn finish(mut self, started: Instant, limit: Option<Duration>) {
        self.finished = true;
        let status = match limit {
            None => self.compiler.wait().ok(),
            Some(limit) => wait_until(&mut self.compiler, &self.compiler_name, started, limit).ok(),
        };
        let placed = status.is_some_and(|s| s.success())
            && install(&self.output, &self.paths.precompiled, &self.paths.checksum).is_ok();
        let _ = std::fs::remove_file(&self.output);
        if placed {
            known()
                .lock()
                .expect("precompiled headers")
                .insert(self.paths.dir.clone(), Some(self.paths.header.clone()));
        }
    }
}

impl Drop for Build {
    fn drop(&mut self) {
        if !self.finished {
            stop(&mut self.compiler);
            let _ = std::fs::remove_file(&self.output);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{flags_for, kernel_command, toolchain_identity};
    use super::*;

    const SOURCE: &str = "#if defined(__x86_64__)\n#include <immintrin.h>\n#endif\n\
                          int sparsec_probe(void) { return 7; }\n";

    fn toolchain(dir: &Path) -> Toolchain {
        Toolchain {
            cache_dir: dir.to_path_buf(),
            ..Toolchain::default()
        }
    }

    /// The one directory of precompiled headers in `dir`.
    fn headers_dir(dir: &Path) -> PathBuf {
        let found: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with("headers-")
            })
            .collect();
        assert_eq!(found.len(), 1, "one header directory in {dir:?}: {found:?}");
        found[0].clone()
    }

    #[test]
    fn only_sources_that_include_the_intrinsics_want_them() {
        assert!(wanted(SOURCE));
        assert!(!wanted("#include <stdint.h>\nint f(void) { return 0; }\n"));
        assert!(!wanted("/* #include <immintrin.h> is not needed */\n"));
    }

    #[test]
    fn linker_flags_are_left_out_of_the_header_build() {
        let kept: Vec<&str> = ["-O3", "-shared", "-lm", "-L/opt", "-Wl,-z,now", "-fopenmp"]
            .into_iter()
            .filter(|f| !links(f))
            .collect();
        assert_eq!(kept, ["-O3", "-fopenmp"]);
    }

    /// The ready header for `toolchain`'s default flags.
    fn ready(tc: &Toolchain) -> PathBuf {
        let identity = toolchain_identity(tc).unwrap();
        match precompiled(tc, &identity, &flags_for(SOURCE, tc)) {
            Precompiled::Ready(header) => header,
            _ => panic!("the precompiled header is not ready"),
        }
    }

    /// The first kernel compiled into an empty cache reads the header's text while its
    /// precompiled form is built; the next one reads that: gcc's `-H` marks a precompiled
    /// header it used with `!`, and one it rejected with `x`.
    #[test]
    fn kernels_that_include_the_intrinsics_are_compiled_with_them_precompiled() {
        let dir = tempfile::tempdir().unwrap();
        let tc = toolchain(dir.path());
        let loaded = super::super::load(SOURCE, &tc).unwrap();
        assert!(loaded.compiled);
        let paths = Paths::in_dir(&headers_dir(dir.path()));
        assert!(
            paths.is_valid(),
            "the header and its checked precompiled form"
        );
        assert_eq!(ready(&tc), paths.header);

        let c_path = dir.path().join("probe.c");
        std::fs::write(&c_path, SOURCE).unwrap();
        let flags = flags_for(SOURCE, &tc);
        let out = dir.path().join("probe.so");
        let mut command = kernel_command(&tc, &flags, Some(&paths.header), &c_path, &out);
        let output = command.arg("-H").stderr(Stdio::piped()).output().unwrap();
        assert!(output.status.success());
        let used = format!("! {}", paths.precompiled.display());
        let trace = String::from_utf8_lossy(&output.stderr);
        assert!(
            trace.lines().any(|l| l == used),
            "gcc reads {:?}:\n{trace}",
            paths.precompiled
        );
    }

    #[test]
    fn a_corrupted_precompiled_header_is_built_again() {
        // A header built in one cache, then truncated (its checksum now stale) and moved
        // to a cache this process has not looked in, as a new process would find it.
        let built = tempfile::tempdir().unwrap();
        super::super::load(
            &SOURCE.replace("return 7", "return 8"),
            &toolchain(built.path()),
        )
        .unwrap();
        let dir = headers_dir(built.path());
        std::fs::write(Paths::in_dir(&dir).precompiled, b"gpch truncated").unwrap();
        let cache = tempfile::tempdir().unwrap();
        let moved = cache.path().join(dir.file_name().unwrap());
        std::fs::rename(&dir, &moved).unwrap();
        let paths = Paths::in_dir(&moved);
        assert!(!paths.is_valid());

        let tc = toolchain(cache.path());
        let identity = toolchain_identity(&tc).unwrap();
        match precompiled(&tc, &identity, &flags_for(SOURCE, &tc)) {
            Precompiled::Building(build) => build.finish(Instant::now(), None),
            _ => panic!("a corrupted header must be built again"),
        }
        assert!(paths.is_valid(), "rebuilt with a checksum that holds");
        assert_eq!(ready(&tc), paths.header);
    }

    #[test]
    fn a_build_past_the_limit_is_stopped_and_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let tc = toolchain(dir.path());
        let identity = toolchain_identity(&tc).unwrap();
        match precompiled(&tc, &identity, &flags_for(SOURCE, &tc)) {
            Precompiled::Building(build) => build.finish(Instant::now(), Some(Duration::ZERO)),
            _ => panic!("an empty cache has no header"),
        }
        let paths = Paths::in_dir(&headers_dir(dir.path()));
        assert!(!paths.precompiled.exists());
        let left: Vec<_> = std::fs::read_dir(&paths.dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left, ["intrinsics.h"], "only the header's text");
        // This process does not try again; the next kernel reads the text.
        assert!(matches!(
            precompiled(&tc, &identity, &flags_for(SOURCE, &tc)),
            Precompiled::Absent
        ));
    }
}
