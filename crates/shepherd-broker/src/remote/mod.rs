//! Sheep on other machines, over OpenSSH.
//!
//! A host is one the user defined in their settings (`shepherd_core::hosts`). The broker keeps
//! one `HostLink` per host it has sheep on: a multiplexed SSH connection that forwards
//! the broker's *remote* socket to a private path on the host. That socket is not the broker's
//! main one: it accepts only sheep and supervisors of remote sheep, with their own
//! credentials, never a parent or an observer (a connection through it comes from the local
//! `ssh` process, so no process-ancestry check could tell who is really on the other end).
//!
//! A remote sheep is an ordinary sheep whose backend is a `RemoteBackend`: the host's
//! own tmux, Herdr or headless backend, driven by the host's `shepherd` ([`host`] is that side,
//! `host_branch` its isolated sheep's worktrees).
//! Its notes stay on this machine: the host gets a copy of the session to read and of the
//! sheep's note to write, and what the sheep writes comes back into the parent's note.
//!
//! This module is the machinery — links, the wire, the host's side — and the state the broker
//! keeps for it (`Remotes`); it does not know the broker. What reads the herd and the
//! settings (making a host's link, a sheep's backend, keeping its notes in step) is
//! `remote_sheep`, above the broker.

pub(crate) mod backend;
pub mod host;
mod host_branch;
mod host_files;
pub(crate) mod link;
pub mod ops;
mod session;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use link::HostLink;
pub use link::probe;

/// The links of one broker, by host name.
#[derive(Default)]
pub(crate) struct Remotes {
    pub(crate) links: Mutex<HashMap<String, Arc<HostLink>>>,
    /// Open notes of remote sheep's tasks, kept in step with their hosts' copies.
    pub(crate) notes: Mutex<HashMap<shepherd_core::ids::TaskId, RemoteNote>>,
    /// Wakes the notes' sync loop when a note is opened: with none open it sleeps on this
    /// alone, so a herd without remote notes costs no wake-ups.
    pub(crate) notes_opened: tokio::sync::Notify,
}

/// One open remote note.
#[derive(Debug, Clone)]
pub(crate) struct RemoteNote {
    pub(crate) host: String,
    pub(crate) local: PathBuf,
    pub(crate) remote: PathBuf,
    /// Files still to copy to the host (all at once, with the first read).
    pub(crate) pending: Vec<ops::FileContent>,
    /// The copy's modification time when last read.
    pub(crate) since: Option<i128>,
}
