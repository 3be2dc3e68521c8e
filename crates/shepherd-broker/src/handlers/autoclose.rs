//! Auto-close: with both `keepOpen` and `stayOpen` off, a sheep whose task settled is closed
//! ten seconds later, unless it has taken new work meanwhile. The wait lets a parent that is
//! about to follow up do so; a failed close is reported to the parent, never silently dropped.
//! Sheep that were never given a task are left alone.

use std::sync::Arc;
use std::time::Duration;

use shepherd_core::herd::{Notice, NoticeKind, Payload, Phase};
use shepherd_core::ids::{Participant, TaskId};
use shepherd_core::protocol::CloseParams;

use crate::state::broker::Broker;
use crate::state::broker::BrokerConfig;

/// How long a settled sheep is left before it is closed.
pub(crate) const AUTO_CLOSE_AFTER: Duration = Duration::from_secs(10);

/// Closes the sheep of `task_id` after the delay, when the settings ask for it then as now.
pub(crate) fn schedule(broker: &Arc<Broker>, task_id: TaskId) {
    if !wanted(&broker.config) {
        return;
    }
    let broker = broker.clone();
    let due = broker.store.now() + crate::state::broker::duration_ms(AUTO_CLOSE_AFTER);
    tokio::spawn(async move {
        tokio::select! {
            () = broker.store.clock.sleep_until(due) => {}
            () = broker.shutdown.cancelled() => return,
        }
        if !wanted(&broker.config) {
            return;
        }
        let target = broker.store.read(|herd| {
            let task = herd.tasks.get(&task_id)?;
            let sheep = herd.sheep.get(&task.agent_id)?;
            let latest = herd.tasks.values().rev().find(|t| t.agent_id == sheep.id)?;
            let idle =
                sheep.phase == Phase::Ready && sheep.active_task.is_none() && latest.id == task_id;
            idle.then(|| (sheep.id.clone(), sheep.display_name()))
        });
        let Some((id, display)) = target else { return };
        let closing = crate::handlers::close::close(
            &broker,
            CloseParams {
                id: id.to_string(),
                keep_pane: false,
            },
        )
        .await;
        let (notice, text) = match closing {
            Ok(_) => (
                NoticeKind::AutoClosed,
                format!("Shepherd closed {display} ({id}) after its task settled."),
            ),
            Err(err) => (
                NoticeKind::AutoCloseFailed,
                format!(
                    "Shepherd could not auto-close {display} ({id}): {}",
                    err.message
                ),
            ),
        };
        broker.store.commit(|tx| {
            let notice = Notice {
                notice,
                text,
                agent_id: Some(id.clone()),
                task_id: Some(task_id.clone()),
            };
            tx.enqueue(Participant::Parent, Payload::Notice(notice));
        });
    });
}

fn wanted(config: &BrokerConfig) -> bool {
    let settings = config.settings();
    !settings.keep_open && !settings.stay_open
}
