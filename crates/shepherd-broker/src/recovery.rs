//! What a restarted broker does with the herd it replayed.
//!
//! Sheep whose processes outlived the previous broker are waited for: their supervisors
//! reconnect on their own and report that the program still runs, which re-adopts them. A sheep
//! whose supervisor is gone, or does not reconnect within the adoption grace, is ended and
//! recorded as exited (its open task fails). Tasks that were accepted but not yet handed over
//! are handed over now (their notes found again or reserved), before anything else can settle
//! them, so no note is left running; settled tasks whose notes were not yet finalised are
//! finalised now. Deadlines need no re-arming: the timer reads them from the herd.

use std::sync::Arc;

use shepherd_core::herd::{ExitInfo, Phase};
use shepherd_core::ids::AgentId;
use shepherd_core::task::TaskState;
use shepherd_term::Presence;

use crate::broker::Broker;

/// Runs once, right after replay (in the background: clients may connect meanwhile).
pub(crate) fn recover(broker: &Arc<Broker>) {
    let broker = broker.clone();
    tokio::spawn(async move { recover_herd(&broker).await });
}

async fn recover_herd(broker: &Arc<Broker>) {
    let unstarted: Vec<_> = broker.read(|herd| {
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
        if let Err(err) = crate::handover::hand_over(broker, &task_id).await {
            tracing::warn!("could not hand over {task_id} after the restart: {err}");
        }
    }
    // A limit that lasts was met before the restart, maybe with its fallback cut short.
    crate::fallback::consider_all(broker);
    let (unfinalized, running) = broker.read(|herd| {
        let unfinalized: Vec<_> = herd
            .tasks
            .values()
            .filter(|t| t.result.is_some() && !t.finalized)
            .map(|t| t.id.clone())
            .collect();
        let running: Vec<_> = herd
            .sheep
            .values()
            .filter(|s| crate::supervisor_link::may_be_running(&s.phase))
            .map(|s| (s.id.clone(), s.phase.clone(), s.backend))
            .collect();
        (unfinalized, running)
    });
    let pos = broker.journal.position();
    for task_id in unfinalized {
        crate::notes::finalize(broker, task_id, pos);
    }
    crate::run::resume(broker);
    for (id, phase, backend) in running {
        let record = crate::launch_record::current_launch(broker, &id);
        let backend = crate::remote_sheep::backend_of(broker, &id, backend).ok();
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
            settle_gone(broker, &id, &phase, exit);
        } else {
            await_adoption(broker, id, phase);
        }
    }
}

fn settle_gone(broker: &Arc<Broker>, id: &AgentId, phase: &Phase, exit: ExitInfo) {
    broker.commit(|tx| shepherd_core::herd::exited(tx, id, exit));
    if *phase == Phase::Closing {
        broker.commit(|tx| shepherd_core::herd::closed(tx, id));
    }
}

/// Gives a surviving sheep's supervisor the adoption grace to reconnect; then ends the sheep.
/// A sheep that was being closed is closed again once its supervisor is back (or not). A
/// remote sheep gets as long as its host may stay unreachable.
pub(crate) fn await_adoption(broker: &Arc<Broker>, id: AgentId, phase: Phase) {
    if crate::remote_sheep::host_of(broker, &id).is_some() {
        await_remote(broker, id, phase);
        return;
    }
    let reason = "ended: its supervisor did not reconnect after the broker restarted".to_owned();
    await_reconnect(broker, id, phase, broker.config.adoption_grace, reason);
}

/// Gives a remote sheep's supervisor `remoteLinkTimeoutMinutes` to come back through its link.
pub(crate) fn await_remote(broker: &Arc<Broker>, id: AgentId, phase: Phase) {
    let grace = broker.settings().remote_link_timeout();
    let host = crate::remote_sheep::host_of(broker, &id).unwrap_or_default();
    let reason = format!(
        "ended: host {host} was unreachable for {} (remoteLinkTimeoutMinutes)",
        shown_duration(grace)
    );
    await_reconnect(broker, id, phase, grace, reason);
}

fn shown_duration(grace: std::time::Duration) -> String {
    let minutes = grace.as_secs_f64() / 60.0;
    if (minutes - minutes.round()).abs() < 1e-9 {
        format!("{} min", minutes.round())
    } else {
        format!("{:.0} s", grace.as_secs_f64())
    }
}

fn await_reconnect(
    broker: &Arc<Broker>,
    id: AgentId,
    phase: Phase,
    grace: std::time::Duration,
    reason: String,
) {
    let broker = broker.clone();
    tokio::spawn(async move {
        let mut generation = broker.generation.subscribe();
        let deadline = tokio::time::Instant::now() + grace;
        while !crate::supervisor_link::is_attached(&broker, &id) {
            tokio::select! {
                () = tokio::time::sleep_until(deadline) => break,
                changed = generation.changed() => if changed.is_err() { return },
                () = broker.shutdown.cancelled() => return,
            }
        }
        let attached = crate::supervisor_link::is_attached(&broker, &id);
        if attached && phase != Phase::Closing {
            tracing::info!("re-adopted {id}");
            return;
        }
        let ended = crate::close::end_sheep(&broker, &id, false).await;
        if let Err(err) = &ended {
            tracing::warn!("could not confirm that {id} ended: {err}");
        }
        if phase == Phase::Closing {
            broker.commit(|tx| shepherd_core::herd::closed(tx, &id));
        } else {
            let exit = ExitInfo {
                reason: Some(reason),
                ..ExitInfo::default()
            };
            broker.commit(|tx| shepherd_core::herd::exited(tx, &id, exit));
        }
    });
}

/// Called when a supervisor reports in; adoption waits notice it through the generation.
pub(crate) fn adopted(broker: &Arc<Broker>, id: &AgentId) {
    tracing::debug!("supervisor of {id} reported in");
    broker.generation.send_modify(|g| *g += 1);
}
