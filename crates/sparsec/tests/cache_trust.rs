//! The kernel cache loads only what this user built (`sparsec::trust`, THREAT_MODEL.md):
//! a library planted in the cache, with a checksum that matches it, never runs. Each case
//! plants a library whose constructor creates a marker file, and checks that the marker
//! never appears.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use sparsec::jit::{self, JitError, Toolchain};

/// A library whose constructor creates `marker` when it is loaded.
fn planted_library(dir: &Path, marker: &Path) -> PathBuf {
    let source = dir.join("planted.c");
    std::fs::write(
        &source,
        format!(
            "#include <fcntl.h>\n__attribute__((constructor)) static void planted(void) {{ \
             creat(\"{}\", 0600); }}\nint sparsec_probe(void) {{ return 666; }}\n",
            marker.display()
        ),
    )
    .unwrap();
    let library = dir.join("planted.so");
    let status = Command::new("gcc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&library)
        .arg(&source)
        .status()
        .unwrap();
    assert!(status.success());
    library
}

/// A kernel source unique to `case` (the process keeps what it loaded by source).
fn source(case: &str) -> String {
    format!("/* {case} */\nint sparsec_probe(void) {{ return 42; }}\n")
}

struct Case {
    _root: tempfile::TempDir,
    toolchain: Toolchain,
    source: String,
    planted: PathBuf,
    marker: PathBuf,
}

impl Case {
    fn new(name: &str) -> Case {
        let root = tempfile::tempdir().unwrap();
        let marker = root.path().join("planted-ran");
        let planted = planted_library(root.path(), &marker);
        let toolchain = Toolchain {
            cache_dir: root.path().join("cache"),
            ..Toolchain::default()
        };
        Case {
            _root: root,
            toolchain,
            source: source(name),
            planted,
            marker,
        }
    }

    /// The entry's library and checksum paths.
    fn entry(&self) -> (PathBuf, PathBuf) {
        let key = jit::cache_key(&self.source, &self.toolchain).unwrap();
        let dir = &self.toolchain.cache_dir;
        (
            dir.join(format!("{key}.so")),
            dir.join(format!("{key}.sum")),
        )
    }

    /// The planted library's checksum written as the entry's.
    fn plant_checksum(&self) {
        let bytes = std::fs::read(&self.planted).unwrap();
        std::fs::write(self.entry().1, blake3::hash(&bytes).to_hex().as_str()).unwrap();
    }

    fn probe(&self) -> Result<(i32, bool), JitError> {
        let loaded = jit::load(&self.source, &self.toolchain)?;
        // SAFETY: the probe's signature.
        let probe: extern "C" fn() -> i32 = unsafe { loaded.library.symbol("sparsec_probe")? };
        Ok((probe(), loaded.compiled))
    }

    fn assert_planted_never_ran(&self) {
        assert!(!self.marker.exists(), "the planted library ran");
    }
}

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path)
        .unwrap()
        .permissions()
        .mode()
        & 0o777
}

#[test]
fn the_cache_and_its_entries_are_created_private() {
    let case = Case::new("private");
    assert_eq!(case.probe().unwrap(), (42, true));
    assert_eq!(mode(&case.toolchain.cache_dir), 0o700);
    let (library, checksum) = case.entry();
    assert_eq!(mode(&library), 0o700);
    assert_eq!(mode(&checksum), 0o600);
}

#[test]
fn a_cache_others_may_write_is_refused_and_nothing_in_it_runs() {
    let case = Case::new("group-writable");
    std::fs::create_dir(&case.toolchain.cache_dir).unwrap();
    std::fs::copy(&case.planted, case.entry().0).unwrap();
    case.plant_checksum();
    std::fs::set_permissions(
        &case.toolchain.cache_dir,
        std::fs::Permissions::from_mode(0o775),
    )
    .unwrap();
    let err = case.probe().unwrap_err().to_string();
    assert!(
        err.contains(&case.toolchain.cache_dir.display().to_string())
            && err.contains("mode 775")
            && err.contains("chmod go-w"),
        "{err}"
    );
    case.assert_planted_never_ran();
}

#[test]
fn a_symlinked_entry_is_not_followed_but_rebuilt() {
    let case = Case::new("symlink");
    std::fs::create_dir(&case.toolchain.cache_dir).unwrap();
    std::os::unix::fs::symlink(&case.planted, case.entry().0).unwrap();
    case.plant_checksum();
    assert_eq!(case.probe().unwrap(), (42, true));
    case.assert_planted_never_ran();
    // The rebuilt entry replaced the link.
    assert!(std::fs::symlink_metadata(case.entry().0)
        .unwrap()
        .file_type()
        .is_file());
}

#[test]
fn an_entry_others_may_write_is_rebuilt() {
    let case = Case::new("writable-entry");
    std::fs::create_dir(&case.toolchain.cache_dir).unwrap();
    let (library, _) = case.entry();
    std::fs::copy(&case.planted, &library).unwrap();
    std::fs::set_permissions(&library, std::fs::Permissions::from_mode(0o666)).unwrap();
    case.plant_checksum();
    assert_eq!(case.probe().unwrap(), (42, true));
    case.assert_planted_never_ran();
    assert_eq!(mode(&library), 0o700);
}

/// A cache directory another user owns, holding a planted library with a matching
/// checksum: refused. Making one needs `chown`, which root may do (CI runs as root);
/// another user's run checks the same rule on the ownership it reads.
#[test]
fn a_cache_another_user_owns_is_refused_and_nothing_in_it_runs() {
    let case = Case::new("other-owner");
    std::fs::create_dir(&case.toolchain.cache_dir).unwrap();
    std::fs::copy(&case.planted, case.entry().0).unwrap();
    case.plant_checksum();
    if sparsec::trust::current_user() == 0 {
        let nobody = 65534;
        std::os::unix::fs::chown(&case.toolchain.cache_dir, Some(nobody), Some(nobody)).unwrap();
        let err = case.probe().unwrap_err().to_string();
        assert!(err.contains("owned by user 65534"), "{err}");
    } else {
        let err = sparsec::trust::judge(0o1234, 0o700, sparsec::trust::current_user());
        assert!(err.unwrap_err().contains("owned by user"));
    }
    case.assert_planted_never_ran();
}
