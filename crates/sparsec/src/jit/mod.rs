//! Compile, cache and load generated C.
//!
//! Compiled kernels live in a content-addressed cache: the key is a BLAKE3 hash of the
//! source, the compiler's identity (its `--version` output) and the flags. Entries are
//! written to a temporary file and renamed into place, so concurrent processes never see a
//! partial library; each entry carries a checksum file, and an entry whose bytes do not
//! match (truncated, corrupted) is rebuilt. Libraries are opened with `RTLD_NODELETE` and
//! kept for the life of the process, because unloading a library whose OpenMP threads are
//! still parked in libgomp crashes. A source that includes `<immintrin.h>` is compiled with
//! that header precompiled (`jit/headers.rs` says how).

mod headers;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use headers::Precompiled;

/// Why a kernel could not be compiled or loaded.
#[derive(Debug, thiserror::Error)]
pub enum JitError {
    /// The C compiler could not be started.
    #[error("cannot run the C compiler `{compiler}`: {reason} (install gcc, or set SPARSEC_CC to a C compiler)")]
    MissingCompiler { compiler: String, reason: String },
    /// The C compiler rejected the generated code.
    #[error(
        "the C compiler `{compiler}` failed on the generated kernel ({source_path}):\n{stderr}"
    )]
    CompileFailed {
        compiler: String,
        source_path: String,
        stderr: String,
    },
    /// The C compiler ran longer than the toolchain's [`Toolchain::compile_limit`] and was
    /// stopped.
    #[error("the C compiler `{compiler}` took longer than {limit:?} on the generated kernel and was stopped")]
    CompileTimedOut { compiler: String, limit: Duration },
    /// The kernel cache could not be written.
    #[error("kernel cache at {path}: {reason}")]
    Cache { path: String, reason: String },
    /// The compiled library could not be loaded.
    #[error("cannot load compiled kernel {path}: {reason}")]
    Load { path: String, reason: String },
    /// The kernel cache's directory may be written by someone else: nothing is loaded
    /// from it or written to it.
    #[error("kernel cache: {0} (SPARSEC_CACHE_DIR sets the cache directory)")]
    Untrusted(#[from] crate::trust::Untrusted),
}

/// Compiler and flags used for kernels.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Toolchain {
    /// The compiler command (the first word of `SPARSEC_CC`, default `gcc`).
    pub compiler: String,
    /// Flags (`-O3 -march=native -fPIC -shared -fopenmp` by default, then any further words
    /// of `SPARSEC_CC`).
    pub flags: Vec<String>,
    /// Cache directory (`SPARSEC_CACHE_DIR`, default `$XDG_CACHE_HOME/sparsec` or
    /// `~/.cache/sparsec`, else a directory private to this user in the temporary
    /// directory, [`crate::trust::temporary_dir`]). It must be this user's and writable by
    /// nobody else ([`crate::trust`]), or nothing is loaded from it.
    pub cache_dir: PathBuf,
    /// The longest one compilation may take (`None`, the default: no limit). A compiler
    /// still running then is stopped, with every process it started, and loading fails
    /// with [`JitError::CompileTimedOut`]: a tuner with a time budget sets it to what is
    /// left of the budget. Not part of the cache key.
    pub compile_limit: Option<Duration>,
}

impl Default for Toolchain {
    fn default() -> Toolchain {
        // `SPARSEC_CC` may carry flags (`gcc -O0`): they follow sparsec's, so they win.
        let cc = std::env::var("SPARSEC_CC").unwrap_or_default();
        let mut words = cc.split_whitespace().map(String::from);
        let compiler = words.next().unwrap_or_else(|| "gcc".into());
        let mut flags = [
            "-O3",
            "-march=native",
            "-fPIC",
            "-shared",
            "-fopenmp",
            "-std=gnu99",
            "-lm",
        ]
        .map(String::from)
        .to_vec();
        flags.extend(words);
        // An empty variable means unset (not the working directory).
        let set = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
        let cache_dir = set("SPARSEC_CACHE_DIR")
            .map(PathBuf::from)
            .or_else(|| set("XDG_CACHE_HOME").map(|d| PathBuf::from(d).join("sparsec")))
            .or_else(|| set("HOME").map(|d| PathBuf::from(d).join(".cache/sparsec")))
            .unwrap_or_else(crate::trust::temporary_dir);
        Toolchain {
            compiler,
            flags,
            cache_dir,
            compile_limit: None,
        }
    }
}

/// A loaded kernel library; never unloaded.
pub struct Library {
    lib: libloading::Library,
    /// Where it was loaded from.
    pub path: PathBuf,
}

/// What [`load`] returns: the library, and whether this call had to compile it.
pub struct Loaded {
    /// The library, shared by every load of the same source in this process.
    pub library: Arc<Library>,
    /// True when this call ran the compiler (false: found in this process or on disk).
    pub compiled: bool,
}

impl Library {
    /// Look up an exported function.
    ///
    /// # Safety
    /// `T` must match the C signature of `name`.
    pub unsafe fn symbol<T: Copy>(&self, name: &str) -> Result<T, JitError> {
        let sym: libloading::Symbol<T> =
            self.lib.get(name.as_bytes()).map_err(|e| JitError::Load {
                path: self.path.display().to_string(),
                reason: e.to_string(),
            })?;
        Ok(*sym)
    }
}

fn loaded() -> &'static Mutex<HashMap<String, Arc<Library>>> {
    static LOADED: OnceLock<Mutex<HashMap<String, Arc<Library>>>> = OnceLock::new();
    LOADED.get_or_init(Default::default)
}

fn compiler_identity(compiler: &str) -> Result<String, JitError> {
    static IDENTITIES: OnceLock<Mutex<HashMap<String, String>>> = OnceLock::new();
    let map = IDENTITIES.get_or_init(Default::default);
    if let Some(id) = map.lock().expect("identity cache").get(compiler) {
        return Ok(id.clone());
    }
    let output = spawn_when_free(
        Command::new(compiler)
            .arg("--version")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null()),
    )
    .and_then(Child::wait_with_output)
    .map_err(|e| missing_compiler(compiler, e))?;
    if !output.status.success() {
        return Err(JitError::MissingCompiler {
            compiler: compiler.into(),
            reason: format!("`{compiler} --version` exited with {}", output.status),
        });
    }
    let id = String::from_utf8_lossy(&output.stdout).into_owned();
    map.lock()
        .expect("identity cache")
        .insert(compiler.into(), id.clone());
    Ok(id)
}

/// The compiler's identity (`--version`), remembered in the cache directory so that kernels
/// cached with it still load when the compiler cannot run (uninstalled, off `PATH`).
fn toolchain_identity(toolchain: &Toolchain) -> Result<String, JitError> {
    let hash = blake3::hash(toolchain.compiler.as_bytes()).to_hex();
    let record = toolchain
        .cache_dir
        .join(format!("compiler-{}.id", &hash[..16]));
    match compiler_identity(&toolchain.compiler) {
        Ok(id) => {
            if read_private(&record).as_deref() != Some(id.as_str()) {
                // Best effort: without the record, only a missing compiler is refused.
                let tmp = record.with_extension(format!("id.{}", unique_suffix()));
                let written = crate::trust::private_dir(&toolchain.cache_dir)
                    .map_err(std::io::Error::other)
                    .and_then(|()| crate::trust::write_private(&tmp, id.as_bytes()))
                    .and_then(|()| std::fs::rename(&tmp, &record));
                if written.is_err() {
                    let _ = std::fs::remove_file(&tmp);
                }
            }
            Ok(id)
        }
        Err(missing) => read_private(&record).ok_or(missing),
    }
}

/// The text of a cache file that passes [`crate::trust::open_private`]'s checks.
fn read_private(path: &Path) -> Option<String> {
    let mut text = String::new();
    std::io::Read::read_to_string(&mut crate::trust::open_private(path)?, &mut text).ok()?;
    Some(text)
}

/// Sources above this size are compiled at `-O2` instead of sparsec's default `-O3`.
/// A statement whose merge lattices have many cases generates a very long function, on
/// which gcc's `-O3` loop passes take minutes (a 200 KB kernel: over 60 s at `-O3`, 4 s at
/// `-O2`) for no measurable gain in code whose time goes to branches.
const LARGE_SOURCE_BYTES: usize = 64 * 1024;

/// Sources above this size are compiled at `-O0`: a union of five sparse operands over
/// four nested loops prints 850 KB of cases, which gcc takes 90 s to compile at `-O1` and
/// 7 s at `-O0`.
const HUGE_SOURCE_BYTES: usize = 256 * 1024;

/// The flags `source` is compiled with: the toolchain's, with sparsec's default `-O3`
/// lowered to `-O2` for a large source and `-O0` for a huge one (flags the user added come
/// later and still win).
fn flags_for<'t>(source: &str, toolchain: &'t Toolchain) -> Vec<&'t str> {
    let mut flags: Vec<&str> = toolchain.flags.iter().map(String::as_str).collect();
    if let Some(first) = flags.first_mut().filter(|f| **f == "-O3") {
        if source.len() > HUGE_SOURCE_BYTES {
            *first = "-O0";
        } else if source.len() > LARGE_SOURCE_BYTES {
            *first = "-O2";
        }
    }
    flags
}

/// Cache key of a source under a toolchain.
pub fn cache_key(source: &str, toolchain: &Toolchain) -> Result<String, JitError> {
    let mut hasher = blake3::Hasher::new();
    hasher.update(source.as_bytes());
    hasher.update(b"\0");
    hasher.update(toolchain_identity(toolchain)?.as_bytes());
    for f in &toolchain.flags {
        hasher.update(b"\0");
        hasher.update(f.as_bytes());
    }
    Ok(hasher.finalize().to_hex()[..32].to_string())
}

/// Load `source` if it needs no compiling: already loaded in this process, or a valid
/// entry of the disk cache. `None` when it would have to be compiled.
pub fn load_cached(source: &str, toolchain: &Toolchain) -> Result<Option<Loaded>, JitError> {
    let key = cache_key(source, toolchain)?;
    Ok(find(&key, toolchain)?.map(|library| Loaded {
        library,
        compiled: false,
    }))
}

/// Compile (or find in the cache) and load `source`.
pub fn load(source: &str, toolchain: &Toolchain) -> Result<Loaded, JitError> {
    let key = cache_key(source, toolchain)?;
    if let Some(library) = find(&key, toolchain)? {
        return Ok(Loaded {
            library,
            compiled: false,
        });
    }
    // Not cached, or an entry that fails its checks or does not load: (re)build it.
    let dir = &toolchain.cache_dir;
    crate::trust::private_dir(dir)?;
    let (so, sum) = entry_paths(&key, toolchain);
    compile(source, toolchain, dir, &key, &so, &sum)?;
    // Just built into a directory only this user may write: loaded without checking it
    // again (another thread may be putting its own build of the same source in place,
    // between its library and its checksum).
    let library = register(key, open(&so)?, so);
    Ok(Loaded {
        library,
        compiled: true,
    })
}

/// The library and checksum files of cache entry `key`.
fn entry_paths(key: &str, toolchain: &Toolchain) -> (PathBuf, PathBuf) {
    let dir = &toolchain.cache_dir;
    (
        dir.join(format!("{key}.so")),
        dir.join(format!("{key}.sum")),
    )
}

/// Entry `key` without compiling: from this process's table, or from the disk cache when
/// the cache directory is trusted, and the entry passes its checks and loads (then added
/// to the table). An untrusted directory is an error; an entry that fails is `None`, to be
/// rebuilt.
fn find(key: &str, toolchain: &Toolchain) -> Result<Option<Arc<Library>>, JitError> {
    if let Some(lib) = loaded().lock().expect("library table").get(key) {
        return Ok(Some(lib.clone()));
    }
    if !crate::trust::existing_private_dir(&toolchain.cache_dir)? {
        return Ok(None);
    }
    let (so, sum) = entry_paths(key, toolchain);
    if !entry_is_valid(&so, &sum) {
        return Ok(None);
    }
    Ok(open(&so).ok().map(|lib| register(key.to_string(), lib, so)))
}

/// Keep a loaded library in the process's table under `key`.
fn register(key: String, lib: libloading::Library, path: PathBuf) -> Arc<Library> {
    let library = Arc::new(Library { lib, path });
    loaded()
        .lock()
        .expect("library table")
        .insert(key, library.clone());
    library
}

/// Whether the cache file `entry` and its checksum file `sum` are regular files of this
/// user's that nobody else may write (not symbolic links: [`crate::trust`]) and the
/// checksum is the blake3 of the entry's bytes.
fn entry_is_valid(entry: &Path, sum: &Path) -> bool {
    use std::io::Read;
    let read = |path: &Path| -> Option<Vec<u8>> {
        let mut bytes = Vec::new();
        crate::trust::open_private(path)?
            .read_to_end(&mut bytes)
            .ok()?;
        Some(bytes)
    };
    match (read(entry), read(sum)) {
        (Some(bytes), Some(expected)) => {
            blake3::hash(&bytes).to_hex().as_bytes() == expected.trim_ascii()
        }
        _ => false,
    }
}

fn unique_suffix() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!(
        "{}.{}.{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed),
        nanos
    )
}

fn compile(
    source: &str,
    toolchain: &Toolchain,
    dir: &Path,
    key: &str,
    so: &Path,
    sum: &Path,
) -> Result<(), JitError> {
    let cache_err = |path: &Path, e: std::io::Error| JitError::Cache {
        path: path.display().to_string(),
        reason: e.to_string(),
    };
    let flags = flags_for(source, toolchain);
    let started = Instant::now();
    let (header, building) = if headers::wanted(source) {
        match headers::precompiled(toolchain, &toolchain_identity(toolchain)?, &flags) {
            Precompiled::Ready(header) => (Some(header), None),
            // This compile reads the header's text, while the precompiled one is built
            // beside it for the compiles after it.
            Precompiled::Building(build) => (None, Some(build)),
            Precompiled::Absent => (None, None),
        }
    } else {
        (None, None)
    };
    let suffix = unique_suffix();
    let c_path = dir.join(format!("{key}.{suffix}.c"));
    let tmp_so = dir.join(format!("{key}.{suffix}.so.tmp"));
    let stderr_path = dir.join(format!("{key}.{suffix}.stderr"));
    crate::trust::write_private(&c_path, source.as_bytes()).map_err(|e| cache_err(&c_path, e))?;
    crate::trust::write_private(&stderr_path, b"").map_err(|e| cache_err(&stderr_path, e))?;
    let stderr_file = std::fs::OpenOptions::new()
        .write(true)
        .open(&stderr_path)
        .map_err(|e| cache_err(&stderr_path, e))?;
    let mut command = kernel_command(toolchain, &flags, header.as_deref(), &c_path, &tmp_so);
    // A file, not a pipe: a compiler that fills a pipe nobody reads while we wait would
    // block, and look like one that runs too long.
    command.stderr(stderr_file);
    let status = run_compiler(command, &toolchain.compiler, toolchain.compile_limit);
    if let Some(build) = building {
        build.finish(started, toolchain.compile_limit);
    }
    let stderr = std::fs::read(&stderr_path).unwrap_or_default();
    let _ = std::fs::remove_file(&stderr_path);
    let status = match status {
        Ok(status) => status,
        Err(e) => {
            let _ = std::fs::remove_file(&c_path);
            let _ = std::fs::remove_file(&tmp_so);
            return Err(e);
        }
    };
    if !status.success() {
        let _ = std::fs::remove_file(&tmp_so);
        return Err(JitError::CompileFailed {
            compiler: toolchain.compiler.clone(),
            source_path: c_path.display().to_string(),
            stderr: String::from_utf8_lossy(&stderr).into_owned(),
        });
    }
    let _ = std::fs::remove_file(&c_path);
    install(&tmp_so, so, sum).map_err(|(path, e)| cache_err(&path, e))
}

/// Put the finished file `built` in place as the cache entry `entry`, with its checksum at
/// `checksum` (written first beside `built`, and removed if it cannot be placed). The entry
/// first, its checksum last: a reader that sees the checksum sees the whole entry. An error
/// names the path it concerns.
fn install(built: &Path, entry: &Path, checksum: &Path) -> Result<(), (PathBuf, std::io::Error)> {
    use std::os::unix::fs::PermissionsExt;
    let bytes = std::fs::read(built).map_err(|e| (built.to_path_buf(), e))?;
    // The compiler created it with the process's umask: only this user may touch it.
    std::fs::set_permissions(built, std::fs::Permissions::from_mode(0o700))
        .map_err(|e| (built.to_path_buf(), e))?;
    let mut name = built.as_os_str().to_owned();
    name.push(".sum");
    let built_checksum = PathBuf::from(name);
    let placed =
        crate::trust::write_private(&built_checksum, blake3::hash(&bytes).to_hex().as_bytes())
            .map_err(|e| (built_checksum.clone(), e))
            .and_then(|()| std::fs::rename(built, entry).map_err(|e| (entry.to_path_buf(), e)))
            .and_then(|()| {
                std::fs::rename(&built_checksum, checksum).map_err(|e| (checksum.to_path_buf(), e))
            });
    if placed.is_err() {
        let _ = std::fs::remove_file(&built_checksum);
    }
    placed
}

/// The command that compiles the kernel source at `c_path` into the library `out` with
/// `flags`, reading `header` (precompiled) first when there is one.
fn kernel_command(
    toolchain: &Toolchain,
    flags: &[&str],
    header: Option<&Path>,
    c_path: &Path,
    out: &Path,
) -> Command {
    let mut command = Command::new(&toolchain.compiler);
    command.args(flags);
    if let Some(header) = header {
        command.arg("-include").arg(header);
    }
    command
        .arg("-o")
        .arg(out)
        .arg(c_path)
        .stdin(Stdio::null())
        .stdout(Stdio::null());
    command
}

/// Run the compiler `command` to its end, or until `limit`.
fn run_compiler(
    mut command: Command,
    compiler: &str,
    limit: Option<Duration>,
) -> Result<ExitStatus, JitError> {
    let Some(limit) = limit else {
        return spawn_when_free(&mut command)
            .and_then(|mut child| child.wait())
            .map_err(|e| missing_compiler(compiler, e));
    };
    let mut child = spawn_stoppable(command, compiler)?;
    wait_until(&mut child, compiler, Instant::now(), limit)
}

fn missing_compiler(compiler: &str, e: std::io::Error) -> JitError {
    JitError::MissingCompiler {
        compiler: compiler.into(),
        reason: e.to_string(),
    }
}

/// Start the compiler `command` in its own process group, so that stopping it also stops
/// the passes it started (gcc's `cc1` would otherwise finish the compilation orphaned).
fn spawn_stoppable(mut command: Command, compiler: &str) -> Result<Child, JitError> {
    use std::os::unix::process::CommandExt;
    spawn_when_free(command.process_group(0)).map_err(|e| missing_compiler(compiler, e))
}

/// Start `command`, trying again for up to a second while its program is busy
/// (`ETXTBSY`): a compiler script written a moment ago stays open for writing in every
/// process that another thread forks until that process starts its own program (seen in
/// the tests, whose threads write such scripts and start compilers side by side).
fn spawn_when_free(command: &mut Command) -> std::io::Result<Child> {
    let mut pause = Duration::from_millis(1);
    loop {
        match command.spawn() {
            Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) && pause < Duration::from_secs(1) => {
                std::thread::sleep(pause);
                pause *= 2;
            }
            spawned => return spawned,
        }
    }
}

/// Stop `child` (started by [`spawn_stoppable`]) with every process it started.
fn stop(child: &mut Child) {
    // SAFETY: signals the process group `spawn_stoppable` created, which holds only the
    // compiler and its children.
    unsafe { libc::kill(-(child.id() as libc::pid_t), libc::SIGKILL) };
    let _ = child.wait();
}

/// Wait for `child` (started by [`spawn_stoppable`]) to end, stopping it once `limit` has
/// passed since `started`.
fn wait_until(
    child: &mut Child,
    compiler: &str,
    started: Instant,
    limit: Duration,
) -> Result<ExitStatus, JitError> {
    let mut pause = Duration::from_micros(200);
    loop {
        if let Some(status) = child
            .try_wait()
            .map_err(|e| missing_compiler(compiler, e))?
        {
            return Ok(status);
        }
        if started.elapsed() > limit {
            stop(child);
            return Err(JitError::CompileTimedOut {
                compiler: compiler.into(),
                limit,
            });
        }
        std::thread::sleep(pause.min(limit.saturating_sub(started.elapsed())));
        pause = (pause * 2).min(Duration::from_millis(5));
    }
}

/// Load the library at `path`, a checked entry ([`checked_entry`]) of a directory only
/// this user may write, so that nobody can replace it between the check and the load.
/// (Not through `/proc/self/fd`: the loader would take a later library opened under a
/// reused descriptor number for one it already holds under that name.)
fn open(path: &Path) -> Result<libloading::Library, JitError> {
    use libloading::os::unix::{Library as UnixLibrary, RTLD_LOCAL, RTLD_NOW};
    const RTLD_NODELETE: std::os::raw::c_int = 0x1000;
    // SAFETY: the library is generated by us and checked against its checksum; its
    // initialisers are those of a plain C file.
    let lib = unsafe { UnixLibrary::open(Some(path), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE) };
    lib.map(libloading::Library::from)
        .map_err(|e| JitError::Load {
            path: path.display().to_string(),
            reason: e.to_string(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_sources_are_compiled_at_o2_huge_ones_at_o0_and_user_flags_still_win() {
        let toolchain = Toolchain {
            flags: ["-O3", "-fPIC", "-O0"].map(String::from).to_vec(),
            ..Default::default()
        };
        let small = "int f(void) { return 0; }";
        let large = "x".repeat(LARGE_SOURCE_BYTES + 1);
        let huge = "x".repeat(HUGE_SOURCE_BYTES + 1);
        assert_eq!(flags_for(small, &toolchain), ["-O3", "-fPIC", "-O0"]);
        assert_eq!(flags_for(&large, &toolchain), ["-O2", "-fPIC", "-O0"]);
        assert_eq!(flags_for(&huge, &toolchain), ["-O0", "-fPIC", "-O0"]);
    }
}
