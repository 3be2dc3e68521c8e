//! How a queued writer waits: for its answer, or for the session lock to come free, whichever
//! happens first, without polling and without racing other waiters for the lock.
//!
//! A waiter that blocked on the lock itself would have to win the lock just to read an answer
//! that was ready long before; `flock` wakes every waiter at once and lets the quickest win,
//! so under sixteen writers an answered waiter could lose round after round. Instead (on Linux)
//! a waiter watches with inotify for two events: an answer file renamed into the queue, and
//! the lock file being closed — which is what releasing the lock, or its holder dying, does.
//! On each event it looks for its answer, then tries the lock without blocking (on the same
//! open file, so its attempts wake no one). Without inotify (not Linux, or no instance to
//! spare) it falls back to blocking on the lock.

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::StoreError;
use crate::lock::{self, FileLock};

/// A waiter's view of one session's lock and queue.
#[derive(Debug)]
pub(crate) struct Waiter {
    lock_path: PathBuf,
    lock_file: Option<fs_err::File>,
    /// The inotify instance, or `None` where there is none (not Linux, or the per-user limit
    /// on instances is reached): then waiting falls back to blocking on the lock.
    events: Option<OwnedFd>,
}

impl Waiter {
    /// Starts watching `answers_dir` for answers and `lock_path` (open as `lock_file`) for
    /// releases.
    pub(crate) fn new(lock_path: &Path, lock_file: fs_err::File, answers_dir: &Path) -> Self {
        let events = match watch(lock_path, answers_dir) {
            Ok(events) => events,
            Err(err) => {
                tracing::debug!(%err, "no inotify; waiting on the lock instead");
                None
            }
        };
        Self {
            lock_path: lock_path.to_owned(),
            lock_file: Some(lock_file),
            events,
        }
    }

    /// Takes the session lock if it is free, without blocking and without closing anything.
    pub(crate) fn try_lock(&mut self) -> Result<Option<FileLock>, StoreError> {
        let file = self
            .lock_file
            .take()
            .expect("the waiter still has its lock file");
        match lock::try_lock_file(file)? {
            Ok(held) => Ok(Some(held)),
            Err(file) => {
                self.lock_file = Some(file);
                Ok(None)
            }
        }
    }

    /// Blocks until something may have changed (an answer arrived or the lock was released) or
    /// `deadline` passes. Returns `false` at the deadline.
    pub(crate) fn wait(&mut self, deadline: Instant) -> Result<bool, StoreError> {
        let Some(left) = deadline.checked_duration_since(Instant::now()) else {
            return Ok(false);
        };
        match &self.events {
            Some(events) => wait_for_events(events, left),
            None => match shepherd_fs::lock(&self.lock_path, left) {
                Ok(held) => {
                    drop(held);
                    Ok(true)
                }
                Err(shepherd_fs::LockError::Timeout { .. }) => Ok(false),
                Err(shepherd_fs::LockError::Io { source, .. }) => Err(source.into()),
            },
        }
    }
}

#[cfg(target_os = "linux")]
fn watch(lock_path: &Path, answers_dir: &Path) -> rustix::io::Result<Option<OwnedFd>> {
    use rustix::fs::inotify::{self, CreateFlags, WatchFlags};
    let events = inotify::init(CreateFlags::CLOEXEC | CreateFlags::NONBLOCK)?;
    inotify::add_watch(&events, answers_dir, WatchFlags::MOVED_TO)?;
    let closes = WatchFlags::CLOSE_WRITE | WatchFlags::CLOSE_NOWRITE;
    inotify::add_watch(&events, lock_path, closes)?;
    Ok(Some(events))
}

#[cfg(not(target_os = "linux"))]
fn watch(_lock_path: &Path, _answers_dir: &Path) -> rustix::io::Result<Option<OwnedFd>> {
    Ok(None)
}

/// Waits for any inotify event, then reads and forgets them all: an event only means "look
/// again".
#[cfg(target_os = "linux")]
fn wait_for_events(events: &OwnedFd, left: Duration) -> Result<bool, StoreError> {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    use std::mem::MaybeUninit;
    let timeout = Timespec::try_from(left.max(Duration::from_millis(1)))
        .map_err(|_| std::io::Error::other("wait deadline out of range"))?;
    let mut fds = [PollFd::new(events, PollFlags::IN)];
    match poll(&mut fds, Some(&timeout)) {
        Ok(0) => return Ok(false),
        Ok(_) | Err(rustix::io::Errno::INTR) => {}
        Err(err) => return Err(std::io::Error::from(err).into()),
    }
    let mut buffer = [MaybeUninit::<u8>::uninit(); 4096];
    let mut reader = rustix::fs::inotify::Reader::new(events, &mut buffer);
    loop {
        match reader.next() {
            Ok(_) => {}
            Err(rustix::io::Errno::AGAIN | rustix::io::Errno::INTR) => return Ok(true),
            Err(err) => return Err(std::io::Error::from(err).into()),
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn wait_for_events(_events: &OwnedFd, _left: Duration) -> Result<bool, StoreError> {
    unreachable!("there are no inotify events to wait for off Linux")
}
