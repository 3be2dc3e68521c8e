//! What a restarted broker does with the herd it replayed.
//!
//! Sheep whose processes outlived the previous broker are waited for: their supervisors
//! reconnect on their own and report that the program still runs, which re-adopts them. A sheep
//! whose supervisor is gone, or does not reconnect within the adoption grace, is ended and
//! recorded as exited (its open task fails). Tasks that were accepted but not yet handed over
//! are handed over now (their notes found again or reserved), before anything else can settle
//! them, so no note is left running; settled tasks whose notes were not yet finalised are
//! finalised now. Deadlines need no re-arming: the timer reads them from the herd.
//!
//! The wait for a surviving sheep's supervisor is `handlers::adoption`'s, which the supervisor's
//! own requests share; this module, above runs and merges, also resumes the unfinished runs
//! and merges.

use std::sync::Arc;

use shepherd_core::herd::{ExitInfo, Phase};
use shepherd_core::ids::AgentId;
use shepherd_core::task::TaskState;
use shepherd_term::Presence;

use crate::state::broker::Broker;
use crate::state::store::Store;

/// Runs once, right after replay (in the background: clients may connect meanwhile).
pub(crate) fn recover(broker: &Arc<Broker>) {
    let broker = broker.clone();
    tokio::spawn(async move { recover_herd(&broker).await });
}

async fn recover_herd(broker: &Arc<Broker>) {
    let unstarted: Vec<_> = broker.store.read(|herd| {
        herd.tasks
            .values()
            .filter(|t| {
                let orphan_note = t.state.is_terminal()
                    && t.note.is_none()
                    && t.started_at.is_none()
                    && t.handover.as_ref().is_some_and(|h| h.fieldnotes);
                t.state == TaskState::Created || orphan_note
            })
            .map(|t| t.id.clone())
            .collect()
    });
    for task_id in unstarted {
        if let Err(err) = crate::handlers::handover::hand_over(broker, &task_id).await {
            tracing::warn!("could not hand over {task_id} after the restart: {err}");
        }
    }
    // A limit that lasts was met before the restart, maybe with its fallback cut short.
    crate::handlers::fallback::consider_all(broker);
    let (unfinalized, running) = broker.store.read(|herd| {
        let unfinalized: Vec<_> = herd
            .tasks
            .values()
            .filter(|t| t.result.is_some() && !t.finalized)
            .map(|t| t.id.clone())
            .collect();
        let running: Vec<_> = herd
            .sheep
            .values()
            .filter(|s| crate::sheep::supervisor_link::may_be_running(&s.phase))
            .map(|s| (s.id.clone(), s.phase.clone(), s.backend))
            .collect();
        (unfinalized, running)
    });
    let pos = broker.store.journal.position();
    for task_id in unfinalized {
        crate::sheep::notes::finalize(broker, task_id, pos);
    }
    // The broker before may have died owing a session its shepherd.md (a reservation puts it
    // off for a moment): each session the herd's notes are in is caught up if it lags.
    let sessions: std::collections::BTreeSet<String> = broker.store.read(|herd| {
        herd.tasks
            .values()
            .filter_map(|task| task.note.as_ref().map(|note| note.session.clone()))
            .collect()
    });
    let fieldnotes = broker.fieldnotes();
    for session in sessions {
        fieldnotes.catch_up_later(&session);
    }
    crate::run::resume(broker);
    crate::land::resume(broker);
    for (id, phase, backend) in running {
        let record = crate::sheep::launch_record::current_launch(&broker.store, &id);
        let backend = crate::sheep::remote_sheep::backend_of(broker, &id, backend).ok();
        // A launch the previous broker never recorded (it died while the backend placed the
        // sheep) may still have a supervisor on its way: only its reconnection can tell.
        let recorded =
            record.supervisor_pid.is_some() || record.pid.is_some() || record.pane.is_some();
        let presence = match &backend {
            Some(backend) if recorded => backend.presence(&record),
            _ => Presence::Unknown,
        };
        if presence == Presence::Gone {
            let tail = backend
                .and_then(|b| {
                    b.read(&record, shepherd_term::ReadSource::RecentUnwrapped, 20)
                        .ok()
                })
                .unwrap_or_default();
            let exit = ExitInfo {
                reason: Some("ended while the broker was down".into()),
                tail,
                ..ExitInfo::default()
            };
            settle_gone(&broker.store, &id, &phase, exit);
        } else {
            crate::handlers::adoption::await_adoption(broker, id, phase);
        }
    }
}

fn settle_gone(store: &Store, id: &AgentId, phase: &Phase, exit: ExitInfo) {
    store.commit(|tx| shepherd_core::herd::exited(tx, id, exit));
    if *phase == Phase::Closing {
        store.commit(|tx| shepherd_core::herd::closed(tx, id));
    }
}
