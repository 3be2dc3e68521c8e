//! The sheep's limits as resource limits of its processes (`setrlimit`), where no cgroup holds
//! them, and `RLIMIT_FSIZE` for every sheep.
//!
//! An rlimit is per process, or per user, never per tree, so each stands in for a tree limit
//! as well as it can. `RLIMIT_NPROC` counts every process and thread of the user (root is not
//! held by it at all). Inside bubblewrap's user namespace (Linux 5.14 and later count it per
//! namespace) a limit set before bubblewrap still holds the user's total at the outer level,
//! so the one rule for a confined and an unconfined sheep is: the user's tasks when the sheep
//! starts, plus its `pids`. Memory is `RLIMIT_DATA` (a process's writable private memory), not
//! `RLIMIT_AS`: node, Bun and Go reserve address space far beyond what they use, which
//! `RLIMIT_AS` counts and `RLIMIT_DATA` does not. Each limit is set soft and hard, so the sheep
//! cannot raise it again.
//!
//! When an rlimit stops something, the kernel only makes a call fail; what the sheep printed
//! then is how its stop is told ([`stopped_by`]).

use rustix::process::{Resource as Rlimit, Rlimit as Value};
use shepherd_core::resources::Resource;

/// One resource limit the sheep starts under: which, and the value (soft and hard).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Set {
    which: Rlimit,
    value: u64,
}

impl Set {
    /// `RLIMIT_NPROC` at the user's tasks now plus `pids`.
    pub(super) fn processes(pids: u32) -> Self {
        Self::at(Rlimit::Nproc, user_tasks().saturating_add(u64::from(pids)))
    }

    /// `RLIMIT_DATA` at `bytes`.
    pub(super) fn memory(bytes: u64) -> Self {
        Self::at(Rlimit::Data, bytes)
    }

    /// `RLIMIT_FSIZE` at `bytes`.
    pub(super) fn file_size(bytes: u64) -> Self {
        Self::at(Rlimit::Fsize, bytes)
    }

    /// Never above the hard limit this process already has (only root may raise it).
    fn at(which: Rlimit, value: u64) -> Self {
        let hard = rustix::process::getrlimit(which)
            .maximum
            .unwrap_or(u64::MAX);
        Self {
            which,
            value: value.min(hard),
        }
    }

    /// Sets it on the calling process. Async-signal-safe: one system call, no allocation, so
    /// it may run between fork and exec.
    pub(super) fn apply(self) -> std::io::Result<()> {
        rustix::process::setrlimit(
            self.which,
            Value {
                current: Some(self.value),
                maximum: Some(self.value),
            },
        )
        .map_err(std::io::Error::from)
    }
}

/// Every task (process or thread) whose real user is this process's: what `RLIMIT_NPROC`
/// counts.
fn user_tasks() -> u64 {
    let me = rustix::process::getuid().as_raw().to_string();
    let Ok(entries) = fs_err::read_dir("/proc") else {
        return 0;
    };
    entries
        .flatten()
        .filter(|entry| entry.file_name().to_string_lossy().parse::<u32>().is_ok())
        .filter_map(|entry| fs_err::read_to_string(entry.path().join("status")).ok())
        .filter(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("Uid:"))
                .and_then(|ids| ids.split_whitespace().next())
                == Some(me.as_str())
        })
        .map(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("Threads:"))
                .and_then(|n| n.trim().parse::<u64>().ok())
                .unwrap_or(1)
        })
        .sum()
}

/// The resource whose rlimit stopped a sheep that ended badly, as the end of its output tells:
/// a file too large (`SIGXFSZ`) or a full private directory, an allocation refused, a fork
/// refused. `limited` is what rlimits (or a tmpfs size) bound.
pub(super) fn stopped_by(
    signal: Option<i32>,
    tail: &str,
    limited: &[Resource],
) -> Option<Resource> {
    let tail = tail.to_lowercase();
    let said = |phrases: &[&str]| phrases.iter().any(|p| tail.contains(p));
    let checks = [
        (
            Resource::Disk,
            signal == Some(libc_sigxfsz()) || said(&["file too large", "no space left on device"]),
        ),
        (
            Resource::Memory,
            said(&[
                "cannot allocate memory",
                "memoryerror",
                "out of memory",
                "allocation failed",
            ]),
        ),
        (
            Resource::Pids,
            said(&["resource temporarily unavailable"]) && said(&["fork", "thread", "errno 11"]),
        ),
    ];
    checks
        .into_iter()
        .find(|(resource, seen)| *seen && limited.contains(resource))
        .map(|(resource, _)| resource)
}

/// `SIGXFSZ`: a write past `RLIMIT_FSIZE`.
fn libc_sigxfsz() -> i32 {
    rustix::process::Signal::XFSZ.as_raw()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stop_is_told_from_the_signal_or_what_the_sheep_printed_for_a_limit_it_had() {
        let all = Resource::ALL;
        assert_eq!(
            stopped_by(Some(libc_sigxfsz()), "", &all),
            Some(Resource::Disk)
        );
        assert_eq!(
            stopped_by(
                None,
                "dd: error writing '/tmp/x': No space left on device",
                &all
            ),
            Some(Resource::Disk)
        );
        assert_eq!(
            stopped_by(None, "Traceback …\nMemoryError", &all),
            Some(Resource::Memory)
        );
        assert_eq!(
            stopped_by(
                None,
                "bash: fork: retry: Resource temporarily unavailable",
                &all
            ),
            Some(Resource::Pids)
        );
        assert_eq!(stopped_by(None, "MemoryError", &[Resource::Pids]), None);
        assert_eq!(stopped_by(Some(9), "all fine", &all), None);
    }

    #[test]
    fn the_processes_limit_counts_from_the_users_tasks_now() {
        let set = Set::processes(10);
        assert_eq!(set.which, Rlimit::Nproc);
        // This test's own threads are among the user's tasks.
        assert!(set.value > 10, "{set:?}");
    }
}
