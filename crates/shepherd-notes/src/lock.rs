//! The store's locks, which Shepherd and the original extension both respect.
//!
//! Every lock is two: first Shepherd's own OS advisory lock on a file that stays on disk
//! (`.sessions.flock`, `.session.flock`), which orders Shepherd writers among themselves, dies
//! with its holder and is what queued writers watch (see `wait`); then, while holding it, the
//! original's lock file beside it (`.sessions.lock`, `.session.lock`), made exclusively as a
//! hard link to our own and removed on release, which the original waits on exactly as on its
//! own exclusive-create lock files. A lock file the original or a
//! Shepherd left behind when it died is recognised as stale and taken over (see
//! `shepherd_fs::lock_exclusive`), so no crash wedges anyone. Both are released on drop, the
//! original's first, so a Shepherd writer woken by the release of the first never finds the
//! second still there.

use std::path::Path;
use std::time::{Duration, Instant};

use fs_err::File;
use shepherd_core::fieldnotes::{
    ROOT_FLOCK_FILE, ROOT_LOCK_FILE, SESSION_FLOCK_FILE, SESSION_LOCK_FILE,
};
pub(crate) use shepherd_fs::FileLock;
use shepherd_fs::{ExclusiveLock, LockError};

use crate::error::StoreError;

/// Which directory's lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope {
    /// The sessions directory: resolving and creating sessions.
    Root,
    /// One session directory: every read-modify-write of it.
    Session,
}

impl Scope {
    fn files(self) -> (&'static str, &'static str) {
        match self {
            Self::Root => (ROOT_FLOCK_FILE, ROOT_LOCK_FILE),
            Self::Session => (SESSION_FLOCK_FILE, SESSION_LOCK_FILE),
        }
    }

    /// Shepherd's own lock file in `dir`.
    pub(crate) fn flock_path(self, dir: &Path) -> std::path::PathBuf {
        dir.join(self.files().0)
    }
}

/// Both locks of one directory, held. The original's is released first.
#[derive(Debug)]
pub(crate) struct Held {
    _original: ExclusiveLock,
    _ours: FileLock,
}

fn store_error(err: LockError) -> StoreError {
    match err {
        LockError::Timeout { path, waited } => StoreError::LockTimeout { path, waited },
        LockError::Io { source, .. } => StoreError::Io(source),
    }
}

/// Takes both locks of `dir`, waiting at most `timeout` in all.
pub(crate) fn acquire(dir: &Path, scope: Scope, timeout: Duration) -> Result<Held, StoreError> {
    let started = Instant::now();
    let ours = shepherd_fs::lock(&scope.flock_path(dir), timeout).map_err(store_error)?;
    complete(dir, scope, ours, started + timeout)
}

/// With Shepherd's own lock of `dir` held, takes the original's too, waiting until `deadline`
/// for an original writer to let go.
pub(crate) fn complete(
    dir: &Path,
    scope: Scope,
    ours: FileLock,
    deadline: Instant,
) -> Result<Held, StoreError> {
    let path = dir.join(scope.files().1);
    let left = deadline.saturating_duration_since(Instant::now());
    let original = shepherd_fs::lock_exclusive_linked(&path, &ours, left).map_err(store_error)?;
    Ok(Held {
        _original: original,
        _ours: ours,
    })
}

/// Tries to lock the already open lock `file` without blocking: the held lock, or the file back.
pub(crate) fn try_lock_file(file: File) -> Result<Result<FileLock, File>, StoreError> {
    shepherd_fs::try_lock_file(file).map_err(store_error)
}

/// Opens (creating if needed) Shepherd's own lock file of `dir`.
pub(crate) fn open(dir: &Path, scope: Scope) -> std::io::Result<File> {
    shepherd_fs::open_lock_file(&scope.flock_path(dir))
}
