//! The store's locks: OS advisory locks with a deadline (`shepherd_fs`), reported as store
//! errors. A holder that dies releases its lock at once; lock files stay on disk, harmless.

use std::path::Path;
use std::time::Duration;

use fs_err::File;
pub(crate) use shepherd_fs::FileLock;

use crate::error::StoreError;

fn store_error(err: shepherd_fs::LockError) -> StoreError {
    match err {
        shepherd_fs::LockError::Timeout { path, waited } => {
            StoreError::LockTimeout { path, waited }
        }
        shepherd_fs::LockError::Io { source, .. } => StoreError::Io(source),
    }
}

/// Takes the exclusive lock on `path` (created if missing), waiting at most `timeout`.
pub(crate) fn acquire(path: &Path, timeout: Duration) -> Result<FileLock, StoreError> {
    shepherd_fs::lock(path, timeout).map_err(store_error)
}

/// Tries to lock the already open lock `file` without blocking: the held lock, or the file back.
pub(crate) fn try_lock_file(file: File) -> Result<Result<FileLock, File>, StoreError> {
    shepherd_fs::try_lock_file(file).map_err(store_error)
}

/// Opens (creating if needed) a lock file.
pub(crate) fn open(path: &Path) -> std::io::Result<File> {
    shepherd_fs::open_lock_file(path)
}
