//! What a pi sheep's run leaves behind.
//!
//! When a sheep's run settles after its task settled, its last assistant text and the run's
//! telemetry (read from its session file) complete the task's note, and are what `run` reports
//! as the task's result. How a pi sheep is started is `pi_launch`.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use shepherd_core::herd::TaskOutput;
use shepherd_core::ids::{AgentId, TaskId};

use crate::error::BrokerResult;
use crate::sheep::pi_launch::session_file;
use crate::sheep::telemetry::{Telemetry, session_size};
use crate::state::broker::Broker;
use crate::state::store::Store;

/// How long close and `run` wait for a pi sheep's run to settle after its task did.
pub(crate) const OUTPUT_GRACE: Duration = Duration::from_secs(10);

/// Where a pi sheep's session file stands now (`None` for other sheep): taken before a task is
/// handed over, so the task's telemetry counts only its own turns.
pub(crate) fn session_cursor(broker: &Broker, id: &AgentId) -> Option<u64> {
    let is_pi = broker
        .store
        .read(|herd| herd.sheep.get(id).is_some_and(|s| s.runtime.is_pi()));
    is_pi.then(|| session_size(&session_file(broker, id)))
}

/// Waits (up to `grace`) for a settled task's final words, when its sheep is a coding agent
/// whose run has not settled yet.
pub(crate) async fn await_output(store: &Store, task_id: &TaskId, grace: Duration) {
    let mut generation = store.generation.subscribe();
    let deadline = tokio::time::Instant::now() + grace;
    loop {
        generation.borrow_and_update();
        let waiting = store.read(|herd| {
            let Some(task) = herd.tasks.get(task_id) else {
                return false;
            };
            let sheep = herd.sheep.get(&task.agent_id);
            let running = sheep.is_some_and(|s| s.runtime.reports_runs() && s.is_live());
            task.result.is_some() && task.output.is_none() && running
        });
        if !waiting {
            return;
        }
        tokio::select! {
            changed = generation.changed() => if changed.is_err() { return },
            () = tokio::time::sleep_until(deadline) => return,
        }
    }
}

/// A sheep's run settled: its last words and telemetry go to the task they belong to (its open
/// task, or the one it just finished), and into that task's note.
pub(crate) async fn record_output(
    broker: &Arc<Broker>,
    id: &AgentId,
    text: Option<String>,
    reported: Option<Value>,
) -> BrokerResult<()> {
    // A run that ends while the task is still open is a turn without `shepherd_done` (the
    // herd nudges); only a run that settles after the task did carries its final words.
    let target = broker.store.read(|herd| {
        let sheep = herd.sheep.get(id)?;
        if sheep.active_task.is_some() {
            return None;
        }
        let task = herd.tasks.values().rev().find(|t| &t.agent_id == id)?;
        (task.result.is_some() && task.output.is_none()).then(|| {
            (
                task.id.clone(),
                task.session_cursor.unwrap_or(0),
                sheep.runtime.is_pi(),
            )
        })
    });
    let Some((task_id, cursor, is_pi)) = target else {
        return Ok(());
    };
    let read = if is_pi {
        let session = session_file(broker, id);
        tokio::task::spawn_blocking(move || Telemetry::from_session(&session, cursor).ok())
            .await
            .ok()
            .flatten()
    } else {
        None
    };
    // A pi sheep's final words are those of the task's own turns, read from its session: the
    // run may have gone on answering a message that arrived after the task settled.
    let text = read
        .as_ref()
        .and_then(|t| t.final_text().map(str::to_owned))
        .or(text)
        .unwrap_or_default();
    // Another agent's driver reads its agent's own output and reports the task's figures.
    let telemetry = read.map_or_else(|| reported.unwrap_or(Value::Null), |t| t.to_metadata());
    let output = TaskOutput { text, telemetry };
    let committed = broker
        .store
        .commit(|tx| shepherd_core::herd::output(tx, &task_id, output));
    broker.store.durable(committed.pos).await?;
    crate::sheep::notes::complete_output(broker, &task_id).await;
    Ok(())
}
