//! Cross-process locks with a deadline, on OS advisory locks (`flock`).
//!
//! An advisory lock belongs to an open file: when its holder dies, however it dies, the kernel
//! releases it and the next waiter proceeds at once (lock files made with `O_EXCL` instead wedge
//! every later writer when their holder crashes, unless recovered as `excl` does). Lock files
//! stay on disk; they are harmless.
//!
//! `flock` has no timeout, so a contended lock is waited for on a helper thread that hands the
//! locked file back over a channel; the caller gives up at its deadline. A helper that wins the
//! lock after its caller gave up finds the channel closed and drops the file, releasing it.

use std::fs::TryLockError;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use fs_err::{File, OpenOptions};

/// A held lock; dropping it releases the lock.
#[derive(Debug)]
pub struct FileLock {
    _file: File,
}

impl FileLock {
    /// The locked file's path.
    pub fn path(&self) -> &Path {
        self._file.path()
    }

    /// The locked file's metadata (its inode, for one).
    pub fn metadata(&self) -> std::io::Result<std::fs::Metadata> {
        self._file.metadata()
    }
}

/// Why a lock could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Someone else held it for the whole wait.
    #[error("timed out after {waited:?} waiting for the lock `{}`", path.display())]
    Timeout {
        /// The lock file.
        path: PathBuf,
        /// How long we waited.
        waited: Duration,
    },
    /// The lock file could not be opened or locked.
    #[error("cannot lock `{}`: {source}", path.display())]
    Io {
        /// The lock file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

/// Takes the exclusive lock on `path` (created if missing), waiting at most `timeout`.
pub fn lock(path: &Path, timeout: Duration) -> Result<FileLock, LockError> {
    let io = |source| LockError::Io {
        path: path.to_owned(),
        source,
    };
    let started = Instant::now();
    loop {
        let file = open(path).map_err(io)?;
        let file = match file.try_lock() {
            Ok(()) => file,
            Err(TryLockError::WouldBlock) => wait(path, started, timeout)?,
            Err(TryLockError::Error(err)) => return Err(io(err)),
        };
        // The lock file was removed while we waited: our lock is on an orphan inode the next
        // process will not see, so take the lock again on the file that is there now.
        if file.metadata().map_err(io)?.nlink() > 0 {
            return Ok(FileLock { _file: file });
        }
    }
}

/// Tries to lock the already open lock `file` without blocking: the held lock, or the file
/// back (to try again later without closing it, which would wake inotify watchers of it).
pub fn try_lock_file(file: File) -> Result<Result<FileLock, File>, LockError> {
    let io = |source| LockError::Io {
        path: file.path().to_owned(),
        source,
    };
    match file.try_lock() {
        Ok(()) if file.metadata().map_err(io)?.nlink() > 0 => Ok(Ok(FileLock { _file: file })),
        // Locked an orphaned inode (the lock file was removed): start over on the new file.
        Ok(()) => Ok(Err(open(file.path()).map_err(io)?)),
        Err(TryLockError::WouldBlock) => Ok(Err(file)),
        Err(TryLockError::Error(err)) => Err(io(err)),
    }
}

/// Takes the lock on `path` only if no one holds it.
pub fn try_lock(path: &Path) -> Result<Option<FileLock>, LockError> {
    let io = |source| LockError::Io {
        path: path.to_owned(),
        source,
    };
    let file = open(path).map_err(io)?;
    match file.try_lock() {
        Ok(()) if file.metadata().map_err(io)?.nlink() > 0 => Ok(Some(FileLock { _file: file })),
        Ok(()) | Err(TryLockError::WouldBlock) => Ok(None),
        Err(TryLockError::Error(err)) => Err(io(err)),
    }
}

/// Opens (creating if needed) a lock file.
pub fn open(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
}

fn wait(path: &Path, started: Instant, timeout: Duration) -> Result<File, LockError> {
    let timed_out = || LockError::Timeout {
        path: path.to_owned(),
        waited: timeout,
    };
    let remaining = timeout
        .checked_sub(started.elapsed())
        .ok_or_else(timed_out)?;
    let (sender, receiver) = mpsc::sync_channel(1);
    let owned = path.to_owned();
    std::thread::Builder::new()
        .name("shepherd-lock-wait".to_owned())
        .spawn(move || {
            let locked = open(&owned).and_then(|file| file.lock().map(|()| file));
            // A caller that gave up has closed the channel; dropping the file releases the lock.
            let _caller_gone = sender.send(locked);
        })
        .map_err(|source| LockError::Io {
            path: path.to_owned(),
            source,
        })?;
    match receiver.recv_timeout(remaining) {
        Ok(locked) => locked.map_err(|source| LockError::Io {
            path: path.to_owned(),
            source,
        }),
        Err(mpsc::RecvTimeoutError::Timeout) => Err(timed_out()),
        Err(mpsc::RecvTimeoutError::Disconnected) => Err(LockError::Io {
            path: path.to_owned(),
            source: std::io::Error::other("the thread waiting for the lock stopped"),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_lock_times_out_and_is_released_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".lock");
        let held = lock(&path, Duration::from_secs(1)).unwrap();
        assert!(try_lock(&path).unwrap().is_none());
        let err = lock(&path, Duration::from_millis(50)).unwrap_err();
        assert!(matches!(err, LockError::Timeout { .. }), "{err}");
        drop(held);
        lock(&path, Duration::from_secs(5)).unwrap();
    }

    #[test]
    fn a_waiter_gets_the_lock_when_the_holder_lets_go() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".lock");
        let held = lock(&path, Duration::from_secs(1)).unwrap();
        let (ready, waiting) = mpsc::channel();
        let waiter = {
            let path = path.clone();
            std::thread::spawn(move || {
                ready.send(()).unwrap();
                lock(&path, Duration::from_secs(30)).map(drop)
            })
        };
        waiting.recv().unwrap();
        drop(held);
        waiter.join().unwrap().unwrap();
    }
}
