//! What Shepherd needs from the operating system beyond POSIX, behind one seam.
//!
//! Supervising sheep needs a few facts and powers that POSIX leaves out: the table of processes
//! (who is whose parent, who is a zombie, who shares a terminal session, what environment a
//! process started with), a descriptor that becomes readable when a process that is not our
//! child exits (so "wait until it is gone" is an event with a deadline), a directory watch (so
//! a socket's appearance is an event), who is at the other end of a unix socket (a pidfd, so
//! a pid cannot change hands under a check), and two process attributes: adopting orphaned
//! descendants (a child subreaper) and dying with one's parent. Everything else in the
//! workspace asks for these here and never reads `/proc` or calls `prctl` itself.
//!
//! Linux is the platform today (`linux.rs`). A port is one more file with the same functions:
//! on macOS, for example, `kqueue` with `EVFILT_PROC`/`EVFILT_VNODE` for the descriptors,
//! `proc_listpids`/`proc_pidinfo` for the table; macOS has no subreaper or parent-death signal,
//! so there `set_child_subreaper` and the tie of [`tie_to_this_process`] report `Unsupported` and the supervisor
//! falls back to ending the sheep's process group.

#[cfg(target_os = "linux")]
mod linux;
mod tie;
#[cfg(target_os = "linux")]
use linux::die_with_parent;
#[cfg(target_os = "linux")]
pub use linux::{
    children, dir_watch, environ_var, exit_watch, peer_process, process_ids, same_pid_namespace,
    set_child_subreaper, socket_peer, stat,
};
pub use tie::{BeforeExec, NothingMore, tie_to_this_process};

#[cfg(not(target_os = "linux"))]
compile_error!(
    "Shepherd supports Linux today; a port implements the functions of shepherd-term's \
     platform module for its system (see platform/mod.rs)"
);

/// What the process table says about one process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessStat {
    /// It has exited and waits for its parent to collect its status.
    pub zombie: bool,
    /// Its parent (0 for none).
    pub parent: u32,
    /// The terminal session it belongs to (its session leader's pid).
    pub session: u32,
}

/// What became of the process that connected to a socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeerProcess {
    /// It runs, with this pid in this pid namespace.
    Here(u32),
    /// It has exited (its socket may have been handed to another process).
    Gone,
    /// It runs in a pid namespace this one cannot see.
    Elsewhere,
    /// Nothing could be read about it.
    Unknown,
}
