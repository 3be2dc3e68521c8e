//! The original extension's lock protocol, with stale-holder recovery.
//!
//! The original (pi-shepherd) locks a fieldnotes directory by creating its lock file
//! exclusively (`open(path, "wx")`), writing its pid into it, and unlinking it to release; a
//! writer that finds the file retries every 10 ms for up to 30 s. Shepherd takes the same lock
//! the same way whenever it writes where the original may write, so the two exclude each
//! other — but unlike the original it never waits for a holder that is gone: a lock file whose
//! holder no longer runs is *stale* and is removed at once. A lock file is stale when
//!
//! - the pid in it names no process, or a zombie, or a process that started after the lock
//!   file was written (the pid was reused); or
//! - it holds no pid (a writer died between creating and writing it, or an earlier Shepherd left
//!   the empty file it used with `flock`) and is older than [`EMPTY_GRACE`] — unless an earlier
//!   Shepherd still holds an OS lock on it, which counts as held.
//!
//! Stale files are removed only if they are still the file that was judged, so a lock created
//! meanwhile by someone else is never removed. This lock only excludes the original; Shepherd
//! writers first take an OS advisory lock on a file of another name (see `lock`), so among
//! themselves they never spin on this one.
//!
//! A Shepherd writer that holds such an advisory lock takes this one with
//! [`lock_exclusive_linked`]: it makes the lock file a hard link to its own (already existing)
//! lock file instead of creating a new file. `link` fails when the name exists, exactly as an
//! exclusive create does, so the original is excluded the same way, but no inode is allocated
//! and freed per lock (on a filesystem without a journal, every freed inode makes the next
//! allocations slower for a while). A link left behind by a Shepherd that died is recognised at
//! once: it is the very file whose advisory lock the next writer now holds.

use std::fs::TryLockError;
use std::io::{self, Read, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use fs_err::os::unix::fs::OpenOptionsExt;
use fs_err::{File, OpenOptions};
use rustix::io::Errno;

use crate::LockError;

/// How often a held lock is tried again: the original's own retry interval.
pub const RETRY_INTERVAL: Duration = Duration::from_millis(10);
/// How old a lock file without a pid must be before it counts as stale. The original writes its
/// pid right after creating the file, so an empty file older than this was abandoned.
pub const EMPTY_GRACE: Duration = Duration::from_secs(2);

/// A held exclusive-create lock; dropping it removes the lock file (if it is still ours).
#[derive(Debug)]
pub struct ExclusiveLock {
    path: PathBuf,
    ino: u64,
    dev: u64,
}

impl ExclusiveLock {
    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for ExclusiveLock {
    fn drop(&mut self) {
        if let Ok(meta) = fs_err::symlink_metadata(&self.path)
            && meta.ino() == self.ino
            && meta.dev() == self.dev
        {
            let _gone = fs_err::remove_file(&self.path);
        }
    }
}

/// Who holds an existing lock file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Holder {
    /// Someone who may still be using it.
    Live,
    /// No one: the file (this inode) may be removed.
    Stale { ino: u64, dev: u64 },
    /// The file disappeared while it was looked at.
    Gone,
}

/// Takes the lock at `path` (its directory must exist), waiting at most `timeout` for a live
/// holder. Stale lock files are removed on the way.
pub fn lock_exclusive(path: &Path, timeout: Duration) -> Result<ExclusiveLock, LockError> {
    let started = Instant::now();
    loop {
        if let Some(lock) = try_lock_exclusive(path)? {
            return Ok(lock);
        }
        let Some(left) = timeout.checked_sub(started.elapsed()) else {
            return Err(LockError::Timeout {
                path: path.to_owned(),
                waited: timeout,
            });
        };
        // The original's protocol has no wake-up: its holders only unlink the file, so a
        // waiter looks again at the original's own interval.
        std::thread::sleep(RETRY_INTERVAL.min(left));
    }
}

/// Takes the lock at `path` if no live holder has it; removes a stale lock file first.
pub fn try_lock_exclusive(path: &Path) -> Result<Option<ExclusiveLock>, LockError> {
    let io = |source| LockError::Io {
        path: path.to_owned(),
        source,
    };
    // A handful of rounds covers a stale file removed, or a holder that let go meanwhile.
    for _ in 0..8 {
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o644)
            .open(path)
        {
            Ok(mut file) => {
                let meta = file.metadata().map_err(io)?;
                let lock = ExclusiveLock {
                    path: path.to_owned(),
                    ino: meta.ino(),
                    dev: meta.dev(),
                };
                file.write_all(format!("{}\n", std::process::id()).as_bytes())
                    .map_err(io)?;
                return Ok(Some(lock));
            }
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {}
            Err(err) => return Err(io(err)),
        }
        match holder(path).map_err(io)? {
            Holder::Live => return Ok(None),
            Holder::Gone => {}
            Holder::Stale { ino, dev } => remove_if_same(path, ino, dev).map_err(io)?,
        }
    }
    Ok(None)
}

/// Takes the lock at `path` as a hard link to `held`'s file, whose advisory lock the caller
/// holds (so no other Shepherd writer is using this lock), waiting at most `timeout` for a live
/// holder (the original). Falls back to an exclusive create where hard links are refused.
pub fn lock_exclusive_linked(
    path: &Path,
    held: &crate::FileLock,
    timeout: Duration,
) -> Result<ExclusiveLock, LockError> {
    let io = |source| LockError::Io {
        path: path.to_owned(),
        source,
    };
    let ours = held.metadata().map_err(io)?;
    let started = Instant::now();
    loop {
        if let Some(lock) = try_link(path, held.path(), ours.ino(), ours.dev())? {
            return Ok(lock);
        }
        let Some(left) = timeout.checked_sub(started.elapsed()) else {
            return Err(LockError::Timeout {
                path: path.to_owned(),
                waited: timeout,
            });
        };
        std::thread::sleep(RETRY_INTERVAL.min(left));
    }
}

fn try_link(
    path: &Path,
    ours: &Path,
    ino: u64,
    dev: u64,
) -> Result<Option<ExclusiveLock>, LockError> {
    let io = |source| LockError::Io {
        path: path.to_owned(),
        source,
    };
    for _ in 0..8 {
        // `link(2)` itself: the fallback below reads its error code.
        match rustix::fs::link(ours, path) {
            Ok(()) => {
                return Ok(Some(ExclusiveLock {
                    path: path.to_owned(),
                    ino,
                    dev,
                }));
            }
            Err(Errno::EXIST) => {}
            Err(Errno::PERM | Errno::OPNOTSUPP | Errno::MLINK) => return try_lock_exclusive(path),
            Err(err) => return Err(io(err.into())),
        }
        let found = match fs_err::symlink_metadata(path) {
            Ok(found) => found,
            Err(err) if err.kind() == io::ErrorKind::NotFound => continue,
            Err(err) => return Err(io(err)),
        };
        if found.ino() == ino && found.dev() == dev {
            // Our own lock file under the original's name: its advisory lock is ours now, so
            // the Shepherd that linked it is gone.
            remove_if_same(path, ino, dev).map_err(io)?;
            continue;
        }
        match holder(path).map_err(io)? {
            Holder::Live => return Ok(None),
            Holder::Gone => {}
            Holder::Stale { ino, dev } => remove_if_same(path, ino, dev).map_err(io)?,
        }
    }
    Ok(None)
}

/// Whether the lock file at `path` is held by someone who may still be using it.
pub fn is_held(path: &Path) -> io::Result<bool> {
    Ok(holder(path)? == Holder::Live)
}

fn holder(path: &Path) -> io::Result<Holder> {
    let mut file = match File::open(path) {
        Ok(file) => file,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(Holder::Gone),
        Err(err) => return Err(err),
    };
    let meta = file.metadata()?;
    let stale = Holder::Stale {
        ino: meta.ino(),
        dev: meta.dev(),
    };
    // An earlier Shepherd locked this very file with `flock` and left it in place.
    match file.try_lock_shared() {
        Ok(()) => file.unlock()?,
        Err(TryLockError::WouldBlock) => return Ok(Holder::Live),
        Err(TryLockError::Error(err)) => return Err(err),
    }
    let mut text = String::new();
    // Not UTF-8 is as good as no pid.
    let _text = file.read_to_string(&mut text);
    let written = meta.modified().unwrap_or(UNIX_EPOCH);
    let Some(pid) = text.trim().parse::<i32>().ok().filter(|pid| *pid > 0) else {
        let age = SystemTime::now()
            .duration_since(written)
            .unwrap_or_default();
        return Ok(if age >= EMPTY_GRACE {
            stale
        } else {
            Holder::Live
        });
    };
    Ok(if process_held_since(pid, written) {
        Holder::Live
    } else {
        stale
    })
}

/// Whether process `pid` exists, is not a zombie, and already ran when `written`.
fn process_held_since(pid: i32, written: SystemTime) -> bool {
    let Some(id) = rustix::process::Pid::from_raw(pid) else {
        return false;
    };
    if let Err(Errno::SRCH) = rustix::process::test_kill_process(id) {
        return false;
    }
    let Some((state, started)) = process_facts(pid) else {
        // No /proc to ask: the process exists, so believe it.
        return true;
    };
    if matches!(state, 'Z' | 'X' | 'x') {
        return false;
    }
    // Start times are known to a clock tick; allow a second for that and for clock skew
    // between the kernel's boot time and file times.
    started.is_none_or(|started| started <= written + Duration::from_secs(1))
}

/// A process's state letter and (when known) when it started, from `/proc`.
fn process_facts(pid: i32) -> Option<(char, Option<SystemTime>)> {
    let stat = fs_err::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses: fields start after the last `)`.
    let rest = stat.get(stat.rfind(')')? + 2..)?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let state = fields.first()?.chars().next()?;
    let ticks: u64 = fields.get(19).and_then(|t| t.parse().ok())?;
    let started = boot_time().map(|boot| {
        let per_second = rustix::param::clock_ticks_per_second().max(1);
        boot + Duration::from_millis(ticks.saturating_mul(1000) / per_second)
    });
    Some((state, started))
}

fn boot_time() -> Option<SystemTime> {
    let stat = fs_err::read_to_string("/proc/stat").ok()?;
    let seconds: u64 = stat
        .lines()
        .find_map(|line| line.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()?;
    Some(UNIX_EPOCH + Duration::from_secs(seconds))
}

/// Removes the file at `path` if it is still the inode that was judged stale.
fn remove_if_same(path: &Path, ino: u64, dev: u64) -> io::Result<()> {
    match fs_err::symlink_metadata(path) {
        Ok(meta) if meta.ino() == ino && meta.dev() == dev => {}
        Ok(_) => return Ok(()),
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(err) => return Err(err),
    }
    match fs_err::remove_file(path) {
        Ok(()) => Ok(()),
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(err) => Err(err),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set_mtime(path: &Path, ago: Duration) {
        let when = SystemTime::now() - ago;
        let since = when.duration_since(UNIX_EPOCH).unwrap();
        let stamp = rustix::fs::Timespec {
            tv_sec: since.as_secs() as i64,
            tv_nsec: i64::from(since.subsec_nanos()),
        };
        let times = rustix::fs::Timestamps {
            last_access: stamp,
            last_modification: stamp,
        };
        rustix::fs::utimensat(rustix::fs::CWD, path, &times, rustix::fs::AtFlags::empty()).unwrap();
    }

    #[test]
    fn the_lock_is_exclusive_and_removed_on_release() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".session.lock");
        let held = try_lock_exclusive(&path).unwrap().expect("free");
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            format!("{}\n", std::process::id()),
            "the holder's pid, as the original writes it"
        );
        assert!(try_lock_exclusive(&path).unwrap().is_none(), "held by us");
        let err = lock_exclusive(&path, Duration::from_millis(30)).unwrap_err();
        assert!(matches!(err, LockError::Timeout { .. }), "{err}");
        drop(held);
        assert!(
            !path.exists(),
            "released by unlinking, as the original does"
        );
        drop(try_lock_exclusive(&path).unwrap().expect("free again"));
    }

    #[test]
    fn a_dead_holders_lock_is_taken_over_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".sessions.lock");
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        std::fs::write(&path, format!("{dead}\n")).unwrap();
        let lock = try_lock_exclusive(&path)
            .unwrap()
            .expect("stale lock taken over");
        assert_eq!(
            std::fs::read_to_string(lock.path()).unwrap().trim(),
            std::process::id().to_string()
        );
    }

    #[test]
    fn a_reused_pid_does_not_keep_a_lock() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".session.lock");
        // Our own process is alive but started long after this lock file was written.
        std::fs::write(&path, format!("{}\n", std::process::id())).unwrap();
        assert!(is_held(&path).unwrap(), "a fresh lock of a live process");
        set_mtime(&path, Duration::from_secs(10 * 365 * 24 * 3600));
        assert!(
            !is_held(&path).unwrap(),
            "written before its pid's process began"
        );
        drop(try_lock_exclusive(&path).unwrap().expect("taken over"));
    }

    #[test]
    fn an_empty_lock_file_is_held_briefly_then_stale() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".session.lock");
        std::fs::write(&path, "").unwrap();
        assert!(
            is_held(&path).unwrap(),
            "a writer may be about to write its pid"
        );
        set_mtime(&path, EMPTY_GRACE + Duration::from_secs(1));
        assert!(!is_held(&path).unwrap());
        drop(try_lock_exclusive(&path).unwrap().expect("taken over"));
    }

    #[test]
    fn a_linked_lock_excludes_like_an_exclusive_create_and_a_dead_shepherds_link_is_taken_over() {
        let dir = tempfile::tempdir().unwrap();
        let ours = dir.path().join(".session.flock");
        let path = dir.path().join(".session.lock");
        let held = crate::lock(&ours, Duration::from_secs(5)).unwrap();
        let lock = lock_exclusive_linked(&path, &held, Duration::from_secs(5)).unwrap();
        let err = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .unwrap_err();
        assert_eq!(
            err.kind(),
            io::ErrorKind::AlreadyExists,
            "the original waits"
        );
        drop(lock);
        assert!(!path.exists());
        assert!(ours.exists(), "our own lock file stays");
        // A Shepherd that died holding it left the link: the next holder of the advisory lock
        // takes it over at once.
        std::fs::hard_link(&ours, &path).unwrap();
        drop(held);
        let held = crate::lock(&ours, Duration::from_secs(5)).unwrap();
        drop(lock_exclusive_linked(&path, &held, Duration::from_millis(100)).unwrap());
        // The original's own lock, held by a live process, is waited for.
        std::fs::write(&path, format!("{}\n", std::process::id())).unwrap();
        let err = lock_exclusive_linked(&path, &held, Duration::from_millis(30)).unwrap_err();
        assert!(matches!(err, LockError::Timeout { .. }), "{err}");
    }

    #[test]
    fn an_empty_file_still_locked_by_an_earlier_shepherd_is_held() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".session.lock");
        std::fs::write(&path, "").unwrap();
        set_mtime(&path, Duration::from_secs(3600));
        let old = File::open(&path).unwrap();
        old.lock().unwrap();
        assert!(try_lock_exclusive(&path).unwrap().is_none());
        drop(old);
        drop(
            try_lock_exclusive(&path)
                .unwrap()
                .expect("free once it lets go"),
        );
    }
}
