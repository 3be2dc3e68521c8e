//! Cross-process locks with a deadline, on OS advisory locks (`flock`).
//!
//! The original extension locked with `O_EXCL` lock files, so a holder that crashed wedged
//! every later writer until a 30 s timeout. An advisory lock belongs to an open file: when its
//! holder dies, however it dies, the kernel releases it and the next waiter proceeds at once.
//! Lock files stay on disk; they are harmless and never reused for data.
//!
//! `flock` has no timeout, so a contended lock is waited for on a helper thread that hands the
//! locked file back over a channel; the caller gives up at its deadline. A helper that wins the
//! lock after its caller gave up finds the channel closed and drops the file, which releases
//! the lock again. The uncontended case takes the lock directly, without a thread.

use std::fs::TryLockError;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use fs_err::{File, OpenOptions};

use crate::error::StoreError;

/// A held lock; dropping it releases the lock.
#[derive(Debug)]
pub(crate) struct FileLock {
    _file: File,
}

/// Takes the exclusive lock on `path` (created if missing), waiting at most `timeout`.
pub(crate) fn acquire(path: &Path, timeout: Duration) -> Result<FileLock, StoreError> {
    let started = Instant::now();
    loop {
        let file = open(path)?;
        let file = match file.try_lock() {
            Ok(()) => file,
            Err(TryLockError::WouldBlock) => wait(path, started, timeout)?,
            Err(TryLockError::Error(err)) => return Err(err.into()),
        };
        // Someone removed the lock file while we waited: our lock is on an orphan inode that
        // the next process will not see, so take the lock again on the file that is there now.
        if file.metadata()?.nlink() > 0 {
            return Ok(FileLock { _file: file });
        }
    }
}

/// Tries to lock the already open lock `file` without blocking: the held lock, or the file
/// back (to try again later without closing it, which would wake inotify watchers).
pub(crate) fn try_lock_file(file: File) -> Result<Result<FileLock, File>, StoreError> {
    match file.try_lock() {
        Ok(()) if file.metadata()?.nlink() > 0 => Ok(Ok(FileLock { _file: file })),
        // Locked an orphaned inode (the lock file was removed): start over on the new file.
        Ok(()) => Ok(Err(open(file.path())?)),
        Err(TryLockError::WouldBlock) => Ok(Err(file)),
        Err(TryLockError::Error(err)) => Err(err.into()),
    }
}

/// Opens (creating if needed) a lock file.
pub(crate) fn open(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
}

fn wait(path: &Path, started: Instant, timeout: Duration) -> Result<File, StoreError> {
    let timed_out = || StoreError::LockTimeout {
        path: path.to_owned(),
        waited: timeout,
    };
    let remaining = timeout
        .checked_sub(started.elapsed())
        .ok_or_else(timed_out)?;
    let (sender, receiver) = mpsc::sync_channel(1);
    let owned: PathBuf = path.to_owned();
    thread::Builder::new()
        .name("shepherd-lock-wait".to_owned())
        .spawn(move || {
            let locked = open(&owned).and_then(|file| file.lock().map(|()| file));
            if let Err(unwanted) = sender.send(locked) {
                // The caller gave up; dropping the file releases the lock we just took.
                drop(unwanted);
            }
        })?;
    match receiver.recv_timeout(remaining) {
        Ok(locked) => Ok(locked?),
        Err(mpsc::RecvTimeoutError::Timeout) => Err(timed_out()),
        Err(mpsc::RecvTimeoutError::Disconnected) => Err(std::io::Error::other(format!(
            "the thread waiting for the lock `{}` stopped",
            path.display()
        ))
        .into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_lock_times_out_and_is_released_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".lock");
        let held = acquire(&path, Duration::from_secs(1)).unwrap();
        let err = acquire(&path, Duration::from_millis(50)).unwrap_err();
        assert!(matches!(err, StoreError::LockTimeout { .. }), "{err}");
        drop(held);
        acquire(&path, Duration::from_secs(5)).unwrap();
    }

    #[test]
    fn a_waiter_gets_the_lock_when_the_holder_lets_go() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".lock");
        let held = acquire(&path, Duration::from_secs(1)).unwrap();
        let (ready, waiting) = mpsc::channel();
        let waiter = {
            let path = path.clone();
            thread::spawn(move || {
                ready.send(()).unwrap();
                acquire(&path, Duration::from_secs(30)).map(drop)
            })
        };
        waiting.recv().unwrap();
        drop(held);
        waiter.join().unwrap().unwrap();
    }
}
