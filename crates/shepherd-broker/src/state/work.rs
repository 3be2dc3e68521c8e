//! The runs and merges under way: who follows each, which have a driver, and what is live
//! about each merge (its view as shown, what cancels it, its running check, its lane).
//!
//! One of the broker's services (see `broker`), under its own lock: none of it is herd state
//! (a run and a merge themselves are), so it is rebuilt, not replayed, after a restart.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::state::session::Session;

/// What follows and drives the runs and merges under way.
#[derive(Default)]
pub(crate) struct Work {
    /// Connections following each run.
    pub(crate) run_followers: HashMap<String, Vec<Arc<Session>>>,
    /// Runs whose driver is running.
    pub(crate) run_drivers: HashSet<String>,
    /// The merges this broker drives or was asked about, by id: what is live about each
    /// (see `land`; the merge itself is herd state).
    pub(crate) merges: HashMap<String, MergeEntry>,
    /// The merges landing into each target, in turn: the first lands, the others wait (see
    /// `land::lanes`).
    pub(crate) merge_lanes: HashMap<String, VecDeque<String>>,
}

impl Work {
    /// Adds `session` to the run's followers (once).
    pub(crate) fn follow_run(&mut self, session: &Arc<Session>, run_id: &str) {
        let followers = self.run_followers.entry(run_id.to_owned()).or_default();
        if !followers.iter().any(|f| Arc::ptr_eq(f, session)) {
            followers.push(session.clone());
        }
    }
}

/// What is live about one merge: its view as shown (the step in progress, the merge it waits
/// for), the connections following it, what cancels it, and its running check.
pub(crate) struct MergeEntry {
    pub(crate) view: shepherd_core::land::MergeView,
    pub(crate) followers: Vec<Arc<Session>>,
    pub(crate) cancel: CancellationToken,
    /// The process group of its running check (0: none).
    pub(crate) check: u32,
    /// Whether a driver runs it.
    pub(crate) driving: bool,
}
