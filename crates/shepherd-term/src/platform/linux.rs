//! The Linux side of the platform seam: `/proc`, pidfds, inotify, `prctl` and the peer of a
//! unix socket (`SO_PEERPIDFD`).

use std::os::fd::OwnedFd;
use std::path::Path;

use rustix::process::{Pid, PidfdFlags, Signal};

use super::{PeerProcess, ProcessStat};

/// Every process id in the table now.
pub fn process_ids() -> Vec<u32> {
    let Ok(entries) = fs_err::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .collect()
}

/// The children of process `pid`, from each of its threads' `children` list; `None` when the
/// kernel does not keep those lists (built without `CONFIG_PROC_CHILDREN`) or `pid` is gone.
pub fn children(pid: u32) -> Option<Vec<u32>> {
    let tasks = fs_err::read_dir(format!("/proc/{pid}/task")).ok()?;
    let mut found = Vec::new();
    for task in tasks.flatten() {
        let text = fs_err::read_to_string(task.path().join("children")).ok()?;
        found.extend(
            text.split_whitespace()
                .filter_map(|p| p.parse::<u32>().ok()),
        );
    }
    Some(found)
}

/// One process's state, parent and session; `None` once it is gone.
pub fn stat(pid: u32) -> Option<ProcessStat> {
    let text = fs_err::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may itself hold spaces or parentheses: the
    // fields that matter follow the last `)`: state, ppid, pgrp, session.
    let rest = &text[text.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let parent = fields.next()?.parse().ok()?;
    let _group = fields.next()?;
    let session = fields.next()?.parse().ok()?;
    Some(ProcessStat {
        zombie: state == 'Z',
        parent,
        session,
    })
}

/// The value of `name` in the environment process `pid` started with; `None` when it has none,
/// is gone, or is another user's.
pub fn environ_var(pid: u32, name: &str) -> Option<std::ffi::OsString> {
    use std::os::unix::ffi::OsStrExt as _;
    let environ = fs_err::read(format!("/proc/{pid}/environ")).ok()?;
    environ.split(|byte| *byte == 0).find_map(|entry| {
        let value = entry.strip_prefix(name.as_bytes())?.strip_prefix(b"=")?;
        Some(std::ffi::OsStr::from_bytes(value).to_owned())
    })
}

/// A descriptor that becomes readable when process `pid` exits (a pidfd). `Ok(None)` when the
/// process is already gone.
pub fn exit_watch(pid: u32) -> std::io::Result<Option<OwnedFd>> {
    let Some(target) = i32::try_from(pid).ok().and_then(Pid::from_raw) else {
        return Ok(None);
    };
    match rustix::process::pidfd_open(target, PidfdFlags::empty()) {
        Ok(fd) => Ok(Some(fd)),
        Err(rustix::io::Errno::SRCH) => Ok(None),
        Err(err) => Err(err.into()),
    }
}

/// A descriptor that becomes readable when an entry is created in (or moved into) `dir`.
pub fn dir_watch(dir: &Path) -> std::io::Result<OwnedFd> {
    use rustix::fs::inotify;
    let fd = inotify::init(inotify::CreateFlags::CLOEXEC | inotify::CreateFlags::NONBLOCK)?;
    inotify::add_watch(
        &fd,
        dir,
        inotify::WatchFlags::CREATE | inotify::WatchFlags::MOVED_TO,
    )?;
    Ok(fd)
}

/// Makes this process adopt its orphaned descendants (a child subreaper), or stop doing so.
pub fn set_child_subreaper(on: bool) -> std::io::Result<()> {
    let me = on.then(rustix::process::getpid);
    rustix::process::set_child_subreaper(me).map_err(Into::into)
}

/// Between fork and exec: have this (child) process killed when its parent dies, and refuse
/// to start when the parent — `parent` — is already gone. Makes only async-signal-safe system
/// calls (`prctl`, `getppid`) and allocates nothing.
pub(super) fn die_with_parent(parent: u32) -> std::io::Result<()> {
    rustix::process::set_parent_process_death_signal(Some(Signal::KILL))?;
    let now = rustix::process::getppid().map(|pid| pid.as_raw_nonzero().get().cast_unsigned());
    if now == Some(parent) {
        Ok(())
    } else {
        Err(std::io::Error::other("the parent is gone"))
    }
}

/// The process at the other end of a connected unix socket, as the kernel recorded it when it
/// connected: a pidfd of it (`SO_PEERPIDFD`, Linux 6.5), so a process that exits cannot hand
/// its pid to another; on older kernels, only the pid (`SO_PEERCRED`).
pub fn socket_peer(socket: &impl std::os::fd::AsFd) -> (Option<u32>, Option<OwnedFd>) {
    use nix::sys::socket::{getsockopt, sockopt};
    let pid = getsockopt(socket, sockopt::PeerCredentials)
        .ok()
        .and_then(|cred| u32::try_from(cred.pid()).ok())
        .filter(|pid| *pid > 0);
    let pidfd = getsockopt(socket, sockopt::PeerPidfd).ok();
    (pid, pidfd)
}

/// What a peer's pidfd says now: the process's pid in this pid namespace, or why there is
/// none. A process that exited reads as [`PeerProcess::Gone`] even when its pid has been
/// reused, which is what the pidfd is for.
pub fn peer_process(pid: Option<u32>, pidfd: Option<&OwnedFd>) -> PeerProcess {
    use std::os::fd::AsRawFd;
    let Some(pidfd) = pidfd else {
        // No pidfd (an older kernel): the pid, if its process is still there.
        return match pid {
            Some(pid) if stat(pid).is_some_and(|stat| !stat.zombie) => PeerProcess::Here(pid),
            Some(_) => PeerProcess::Gone,
            None => PeerProcess::Unknown,
        };
    };
    let fdinfo = format!("/proc/self/fdinfo/{}", pidfd.as_raw_fd());
    let Ok(info) = fs_err::read_to_string(fdinfo) else {
        return PeerProcess::Unknown;
    };
    let field = info
        .lines()
        .find_map(|line| line.strip_prefix("Pid:"))
        .and_then(|value| value.trim().parse::<i64>().ok());
    match field {
        // -1: it exited; 0: it lives in a pid namespace this one cannot see.
        Some(-1) => PeerProcess::Gone,
        Some(0) => PeerProcess::Elsewhere,
        Some(pid) => u32::try_from(pid).map_or(PeerProcess::Unknown, PeerProcess::Here),
        None => PeerProcess::Unknown,
    }
}

/// Whether process `pid` lives in this process's pid namespace; `None` when that cannot be
/// read (it is gone, or another user's).
pub fn same_pid_namespace(pid: u32) -> Option<bool> {
    let theirs = fs_err::read_link(format!("/proc/{pid}/ns/pid")).ok()?;
    let ours = fs_err::read_link("/proc/self/ns/pid").ok()?;
    Some(theirs == ours)
}
