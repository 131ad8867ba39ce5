//! What sparsec trusts on disk. The kernel cache holds native code that sparsec loads into
//! its own process, and the tuning cache and learned models steer the code it generates:
//! they are read only from directories, and files, that belong to the user running
//! sparsec and that nobody else may write, as ssh treats `~/.ssh` (`THREAT_MODEL.md` at
//! the repository's root lists each path and why).
//!
//! - [`private_dir`] creates a directory with mode 0700, or checks one that exists: owned
//!   by this user, not writable by group or others. A directory that fails is refused with
//!   the path, the reason and the fix ([`Untrusted`]), never used silently.
//! - [`open_private`] opens a file without following a symbolic link and checks the open
//!   file the same way; a file that fails is treated as absent, so that the caller rebuilds
//!   it (inside a directory only this user may write, the new file replaces it).
//! - [`write_private`] creates a file with mode 0600.
//! - [`temporary_dir`] is the cache of last resort, when neither `HOME` nor
//!   `XDG_CACHE_HOME` says where the user's cache is.

use std::fs::{DirBuilder, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// A path sparsec refuses to trust, and why.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "refusing to use {path}: {why}; make it yours and writable by you alone (`chown $(id -u) \
     {path}` and `chmod go-w {path}`), or point sparsec at a directory of your own"
)]
pub struct Untrusted {
    pub path: String,
    pub why: String,
}

/// The effective user id of this process.
pub fn current_user() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// Whether a path with this `owner` and `mode` may be trusted by `user`: owned by the
/// user, or by root (who may write anything anyway: installed files), and not writable by
/// group or others.
pub fn judge(owner: u32, mode: u32, user: u32) -> Result<(), String> {
    if owner != user && owner != 0 {
        return Err(format!(
            "it is owned by user {owner}, not by the user running sparsec ({user})"
        ));
    }
    if mode & 0o022 != 0 {
        return Err(format!(
            "its group or other users may write it (mode {:03o})",
            mode & 0o777
        ));
    }
    Ok(())
}

/// Create `dir` (and missing parents) with mode 0700, or check the directory that is
/// there: this user's, written by nobody else. A symbolic link to a directory is judged
/// by the directory it names.
pub fn private_dir(dir: &Path) -> Result<(), Untrusted> {
    let untrusted = |why: String| Untrusted {
        path: dir.display().to_string(),
        why,
    };
    if std::fs::symlink_metadata(dir).is_err() {
        DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| untrusted(format!("it cannot be created: {e}")))?;
    }
    let meta = std::fs::metadata(dir).map_err(|e| untrusted(e.to_string()))?;
    if !meta.is_dir() {
        return Err(untrusted("it is not a directory".into()));
    }
    judge(meta.uid(), meta.mode(), current_user()).map_err(untrusted)
}

/// `dir` checked as [`private_dir`] does when it exists; `Ok(false)` when it does not.
pub fn existing_private_dir(dir: &Path) -> Result<bool, Untrusted> {
    if std::fs::symlink_metadata(dir).is_err() {
        return Ok(false);
    }
    private_dir(dir).map(|()| true)
}

/// `path` opened for reading if it is a regular file (not a symbolic link) of this user's
/// that nobody else may write; `None` otherwise, absent included.
pub fn open_private(path: &Path) -> Option<File> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .ok()?;
    let meta = file.metadata().ok()?;
    (meta.is_file() && judge(meta.uid(), meta.mode(), current_user()).is_ok()).then_some(file)
}

/// Write `bytes` to a new file at `path` with mode 0600 (replacing a file of ours there;
/// a symbolic link there is not followed: the write fails).
pub fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)?;
    file.write_all(bytes)
}

/// The kernel cache when the environment names no cache directory: `sparsec-cache-UID` in
/// the system's temporary directory, private to this user. Another user can create that
/// name first (the temporary directory is shared); then this process uses a directory of
/// its own with an unpredictable name instead, and says so once.
pub fn temporary_dir() -> PathBuf {
    temporary_dir_in(&std::env::temp_dir())
}

/// [`temporary_dir`] in the temporary directory `base`.
fn temporary_dir_in(base: &Path) -> PathBuf {
    let shared = base.join(format!("sparsec-cache-{}", current_user()));
    match private_dir(&shared) {
        Ok(()) => shared,
        Err(refused) => {
            static OWN: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
            OWN.get_or_init(|| {
                let own = unpredictable_dir(base).unwrap_or_else(|| shared.clone());
                eprintln!(
                    "sparsec: warning: {refused}; kernels are cached for this process only, \
                     in {} (set SPARSEC_CACHE_DIR to keep them)",
                    own.display()
                );
                own
            })
            .clone()
        }
    }
}

/// A new directory with mode 0700 and a random name in `base`.
fn unpredictable_dir(base: &Path) -> Option<PathBuf> {
    let template = base.join("sparsec-cache-XXXXXX");
    let mut bytes = template.into_os_string().into_encoded_bytes();
    bytes.push(0);
    // SAFETY: `bytes` is a NUL-terminated template that mkdtemp rewrites in place.
    let made = unsafe { libc::mkdtemp(bytes.as_mut_ptr().cast()) };
    if made.is_null() {
        return None;
    }
    bytes.pop();
    // SAFETY: mkdtemp replaced only the Xs, with ASCII characters.
    let path = unsafe { std::ffi::OsString::from_encoded_bytes_unchecked(bytes) };
    Some(PathBuf::from(path))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn only_the_users_own_paths_that_nobody_else_writes_are_trusted() {
        assert_eq!(judge(1000, 0o700, 1000), Ok(()));
        assert_eq!(judge(1000, 0o755, 1000), Ok(()));
        assert!(judge(1000, 0o775, 1000).unwrap_err().contains("group"));
        assert!(judge(1000, 0o757, 1000).unwrap_err().contains("mode 757"));
        assert_eq!(judge(0, 0o755, 1000), Ok(()));
        assert!(judge(0, 0o777, 1000).is_err());
        assert!(judge(1001, 0o700, 1000)
            .unwrap_err()
            .contains("owned by user 1001"));
    }

    #[test]
    fn directories_are_created_private_and_checked() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("a/b");
        private_dir(&dir).unwrap();
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        let refused = private_dir(&dir).unwrap_err();
        assert!(refused.to_string().contains("mode 777"), "{refused}");
        assert!(refused.to_string().contains("chmod go-w"), "{refused}");
        assert_eq!(existing_private_dir(&root.path().join("none")), Ok(false));
    }

    /// The cache of last resort is this user's private directory; when another user took
    /// its name first (made here with `chown`, as root may), a fresh private directory with
    /// a random name instead.
    #[test]
    fn the_temporary_cache_is_private_even_when_its_name_is_taken() {
        let base = tempfile::tempdir().unwrap();
        let dir = temporary_dir_in(base.path());
        assert_eq!(
            dir,
            base.path()
                .join(format!("sparsec-cache-{}", current_user()))
        );
        assert_eq!(existing_private_dir(&dir), Ok(true));
        if current_user() == 0 {
            std::os::unix::fs::chown(&dir, Some(65534), Some(65534)).unwrap();
            let own = temporary_dir_in(base.path());
            assert_ne!(own, dir);
            assert!(own.starts_with(base.path()), "{}", own.display());
            assert_eq!(existing_private_dir(&own), Ok(true));
        } else {
            assert!(judge(65534, 0o700, current_user()).is_err());
        }
    }

    #[test]
    fn files_are_written_private_and_links_are_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        write_private(&file, b"x").unwrap();
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert!(open_private(&file).is_some());
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert!(open_private(&link).is_none());
        assert!(write_private(&link, b"y").is_err());
        assert_eq!(std::fs::read(&file).unwrap(), b"x");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o666)).unwrap();
        assert!(open_private(&file).is_none());
    }
}
