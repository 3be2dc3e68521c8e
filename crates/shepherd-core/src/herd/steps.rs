//! The steps several commands take, in one place below all of them: settling a task (and
//! closing the limit episode it was waiting out), and recording that a sheep or its task
//! showed activity for the stall watchdog.
//!
//! `tasks`, `controls`, `done`, `lifecycle`, `messaging`, `tick`, `view` and `limits` all take
//! these steps; kept in the module that first needed one, they made those modules import each
//! other in a circle. Here they depend only on the records ([`super::model`]) and the [`Tx`],
//! so the commands import one way: each from `steps` and the model, and the few that let a
//! provider key's sheep go again when one shows a model response from `limits`, which itself
//! imports no other command.

use super::Tx;
use super::model::{Event, TaskResult};
use crate::ids::{AgentId, TaskId};
use crate::task::TaskState;

/// Activity closer together than this is recorded once: the watchdog counts minutes.
pub const ACTIVITY_RESOLUTION_MS: i64 = 1000;

/// Settles a task unless it is already settled (the first settlement wins).
pub fn settle(
    tx: &mut Tx<'_>,
    task_id: &TaskId,
    status: TaskState,
    summary: Option<String>,
    text: Option<String>,
    error: Option<String>,
) {
    let Some(task) = tx.herd().tasks.get(task_id) else {
        return;
    };
    if task.state.is_terminal() || !status.is_terminal() {
        return;
    }
    settled_while_limited(tx, task_id, status);
    let result = TaskResult {
        status,
        return_code: status.return_code().unwrap_or(1),
        summary,
        text,
        error,
        completed_at: tx.now(),
    };
    tx.emit(Event::TaskSettled {
        task_id: task_id.clone(),
        result,
    });
}

/// Settles a task as failed (or another terminal state) with an explicit return code: a sheep
/// that died fails its task with its own exit status.
pub fn settle_with_code(
    tx: &mut Tx<'_>,
    task_id: &TaskId,
    status: TaskState,
    return_code: i32,
    error: Option<String>,
) {
    let Some(task) = tx.herd().tasks.get(task_id) else {
        return;
    };
    if task.state.is_terminal() || !status.is_terminal() {
        return;
    }
    settled_while_limited(tx, task_id, status);
    let result = TaskResult {
        status,
        return_code,
        summary: None,
        text: None,
        error,
        completed_at: tx.now(),
    };
    tx.emit(Event::TaskSettled {
        task_id: task_id.clone(),
        result,
    });
}

/// A task settled during its wait: the episode is closed with what ended it.
fn settled_while_limited(tx: &mut Tx<'_>, task_id: &TaskId, state: TaskState) {
    if tx
        .herd()
        .tasks
        .get(task_id)
        .is_some_and(|t| t.limit.is_some())
    {
        let at = tx.now();
        tx.emit(Event::LimitEnded {
            task_id: task_id.clone(),
            ended: state.as_str().to_owned(),
            at,
        });
    }
}

/// Records that `agent_id` showed activity, when its open task is under the stall watchdog.
pub fn touch(tx: &mut Tx<'_>, agent_id: &AgentId) {
    let task_id = tx
        .herd()
        .sheep
        .get(agent_id)
        .and_then(|s| s.active_task.clone());
    if let Some(task_id) = task_id {
        touch_task(tx, &task_id);
    }
}

/// Restarts a task's silence clock (its sheep was active, or its question was answered).
pub fn touch_task(tx: &mut Tx<'_>, task_id: &TaskId) {
    let now = tx.now();
    let due = tx.herd().tasks.get(task_id).is_some_and(|t| {
        !t.state.is_terminal()
            && t.stall
                .is_some_and(|s| now.saturating_sub(s.active_at) >= ACTIVITY_RESOLUTION_MS)
    });
    if due {
        tx.emit(Event::TaskActive {
            task_id: task_id.clone(),
            at: now,
        });
    }
}
