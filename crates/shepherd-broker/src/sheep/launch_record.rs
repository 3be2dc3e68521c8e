//! Where a sheep runs, as the herd journals it: its launch record (supervisor and program pids,
//! log, pane). The spawn that starts a sheep writes it and its supervisor adds to it; closing,
//! reading, focusing and re-adopting the sheep read it. It lives apart from `spawn` so that
//! those readers do not depend on how a sheep is started.

use crate::state::store::Store;

use shepherd_core::ids::AgentId;
use shepherd_term::LaunchRecord;

/// Merges backend facts into the sheep's launch record and journals it. The record is read and
/// written inside one commit: the spawn (which learns the pane) and the supervisor (which
/// reports the pids) merge at the same moment, and neither may lose what the other added.
pub(crate) fn merge_launch(store: &Store, id: &AgentId, update: &LaunchRecord) {
    store.commit(|tx| {
        let mut record = tx
            .herd()
            .sheep
            .get(id)
            .and_then(|s| s.launch.clone())
            .unwrap_or_default();
        macro_rules! take {
            ($($field:ident),*) => { $( if update.$field.is_some() { record.$field.clone_from(&update.$field); } )* };
        }
        take!(supervisor_pid, pid, log, pane, window, server, limits);
        shepherd_core::herd::launched(tx, id, record);
    });
}

/// The sheep's launch record as journaled.
pub(crate) fn current_launch(store: &Store, id: &AgentId) -> LaunchRecord {
    store.read(|herd| {
        herd.sheep
            .get(id)
            .and_then(|s| s.launch.clone())
            .unwrap_or_default()
    })
}
