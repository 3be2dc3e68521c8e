//! Adoption: a sheep whose supervisor is not connected, though the sheep may still run, is
//! given a grace for its supervisor to come back (after a broker restart, or when a supervisor
//! connection drops while its process lives on, or a remote host's link is down). A supervisor
//! that reports in within the grace re-adopts its sheep; otherwise the sheep is ended and
//! recorded as exited, or closed if it was being closed.
//!
//! It sits with the handlers, below runs and start-up: the supervisor's requests
//! (`supervisor`) start and end these waits, and `serve::recovery` starts them for the sheep a
//! restarted broker replayed.

use std::sync::Arc;

use shepherd_core::herd::{ExitInfo, Phase};
use shepherd_core::ids::AgentId;

use crate::state::broker::Broker;
use crate::state::store::Store;

/// Gives a surviving sheep's supervisor the adoption grace to reconnect; then ends the sheep.
/// A sheep that was being closed is closed again once its supervisor is back (or not). A
/// remote sheep gets as long as its host may stay unreachable.
pub(crate) fn await_adoption(broker: &Arc<Broker>, id: AgentId, phase: Phase) {
    if crate::sheep::remote_sheep::host_of(&broker.store, &id).is_some() {
        await_remote(broker, id, phase);
        return;
    }
    let reason = "ended: its supervisor did not reconnect after the broker restarted".to_owned();
    await_reconnect(broker, id, phase, broker.config.adoption_grace, reason);
}

/// Gives a remote sheep's supervisor `remoteLinkTimeoutMinutes` to come back through its link.
pub(crate) fn await_remote(broker: &Arc<Broker>, id: AgentId, phase: Phase) {
    let grace = broker.config.settings().remote_link_timeout();
    let host = crate::sheep::remote_sheep::host_of(&broker.store, &id).unwrap_or_default();
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
        let mut generation = broker.store.generation.subscribe();
        let deadline = tokio::time::Instant::now() + grace;
        while !crate::sheep::supervisor_link::is_attached(&broker, &id) {
            tokio::select! {
                () = tokio::time::sleep_until(deadline) => break,
                changed = generation.changed() => if changed.is_err() { return },
                () = broker.shutdown.cancelled() => return,
            }
        }
        let attached = crate::sheep::supervisor_link::is_attached(&broker, &id);
        if attached && phase != Phase::Closing {
            tracing::info!("re-adopted {id}");
            return;
        }
        let ended = crate::handlers::close::end_sheep(&broker, &id, false).await;
        if let Err(err) = &ended {
            tracing::warn!("could not confirm that {id} ended: {err}");
        }
        if phase == Phase::Closing {
            broker
                .store
                .commit(|tx| shepherd_core::herd::closed(tx, &id));
        } else {
            let exit = ExitInfo {
                reason: Some(reason),
                ..ExitInfo::default()
            };
            broker
                .store
                .commit(|tx| shepherd_core::herd::exited(tx, &id, exit));
        }
    });
}

/// Called when a supervisor reports in; adoption waits notice it through the generation.
pub(crate) fn adopted(store: &Store, id: &AgentId) {
    tracing::debug!("supervisor of {id} reported in");
    store.generation.send_modify(|g| *g += 1);
}
