//! Durable watchers: the parent names tasks and hears about each exactly once, when it has
//! settled and its note is final, in the order it named them; tasks that settle in the same
//! change arrive together in one notification.

use super::error::HerdError;
use super::model::{Event, Payload, TaskReport, Watcher};
use super::{Herd, Tx};
use crate::error_code::ErrorCode;
use crate::ids::{Participant, TaskId, WatcherId};

/// What a watch registration returns at once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchOutcome {
    /// The watcher, when some tasks are still pending.
    pub watcher_id: Option<WatcherId>,
    /// The tasks, in the caller's order.
    pub task_ids: Vec<TaskId>,
    /// Reports for tasks already settled.
    pub completed: Vec<TaskReport>,
    /// Tasks still pending.
    pub pending: Vec<TaskId>,
}

impl Herd {
    /// Resolves a caller's list of task ids: each must be a task of this herd, with no
    /// duplicates, and the list must not be empty.
    pub fn resolve_task_ids(&self, ids: &[String]) -> Result<Vec<TaskId>, HerdError> {
        if ids.is_empty() {
            return Err(HerdError::new(
                ErrorCode::InvalidHandle,
                "Pass at least one task id to watch.",
            ));
        }
        let mut out: Vec<TaskId> = Vec::with_capacity(ids.len());
        for text in ids {
            let id = self
                .tasks
                .get_key_value(&TaskId::parse(text).ok_or_else(|| unknown_watch_target(text))?)
                .map(|(id, _)| id.clone())
                .ok_or_else(|| unknown_watch_target(text))?;
            if out.contains(&id) {
                return Err(HerdError::new(
                    ErrorCode::InvalidHandle,
                    format!("A watcher cannot contain duplicate task ids (`{id}` appears twice)."),
                ));
            }
            out.push(id);
        }
        Ok(out)
    }

    /// The public report of a task.
    pub fn task_report(&self, task_id: &TaskId) -> Option<TaskReport> {
        let task = self.tasks.get(task_id)?;
        let sheep = self.sheep.get(&task.agent_id);
        let result = task.result.as_ref();
        Some(TaskReport {
            task_id: task.id.clone(),
            agent_id: task.agent_id.clone(),
            agent: sheep.map(|s| s.agent.clone()).unwrap_or_default(),
            label: sheep.map(|s| s.label.clone()).unwrap_or_default(),
            display_name: sheep.map(super::Sheep::display_name).unwrap_or_default(),
            status: task.state,
            return_code: result.map(|r| r.return_code),
            ok: task.state == crate::task::TaskState::Completed,
            summary: result.and_then(|r| r.summary.clone()),
            // A sheep's final words, when its run has settled, say more than its done summary.
            text: task
                .output
                .as_ref()
                .map(|o| o.text.clone())
                .filter(|t| !t.trim().is_empty())
                .or_else(|| result.and_then(|r| r.text.clone())),
            error: result.and_then(|r| r.error.clone()),
            note: task.note.as_ref().map(|n| n.note.clone()),
            note_relative: task.note.as_ref().map(|n| n.note_relative.clone()),
            completed_at: result.map(|r| r.completed_at),
            telemetry: task
                .output
                .as_ref()
                .map(|o| o.telemetry.clone())
                .filter(|t| !t.is_null()),
        })
    }
}

fn unknown_watch_target(text: &str) -> HerdError {
    HerdError::new(
        ErrorCode::UnknownTask,
        format!(
            "Unknown watcher target \"{text}\". Pass a task id from delegate; agent ids and pane \
             ids are not valid watcher targets."
        ),
    )
}

/// Registers a durable watcher. Tasks already reportable come back at once and are never
/// delivered again; the rest arrive later as one `completion` item per settling change.
pub fn watch(
    tx: &mut Tx<'_>,
    watcher_id: WatcherId,
    ids: &[String],
) -> Result<WatchOutcome, HerdError> {
    let task_ids = tx.herd().resolve_task_ids(ids)?;
    let (done, pending): (Vec<_>, Vec<_>) = task_ids
        .iter()
        .cloned()
        .partition(|id| tx.herd().tasks[id].is_reportable());
    let completed = done
        .iter()
        .filter_map(|id| tx.herd().task_report(id))
        .collect();
    let registered = !pending.is_empty();
    if registered {
        tx.emit(Event::WatcherAdded {
            watcher: Watcher {
                id: watcher_id.clone(),
                task_ids: task_ids.clone(),
                delivered: done,
            },
        });
    }
    Ok(WatchOutcome {
        watcher_id: registered.then_some(watcher_id),
        task_ids,
        completed,
        pending,
    })
}

/// Delivers, per watcher, the tasks that became reportable during this change.
pub(super) fn flush(tx: &mut Tx<'_>) {
    if tx.newly_reportable.is_empty() {
        return;
    }
    let fresh = std::mem::take(&mut tx.newly_reportable);
    let batches: Vec<(WatcherId, Vec<TaskId>)> = tx
        .herd()
        .watchers
        .values()
        .filter_map(|watcher| {
            let ids: Vec<TaskId> = watcher
                .task_ids
                .iter()
                .filter(|id| fresh.contains(id) && !watcher.delivered.contains(id))
                .cloned()
                .collect();
            (!ids.is_empty()).then(|| (watcher.id.clone(), ids))
        })
        .collect();
    for (watcher_id, task_ids) in batches {
        let completions = task_ids
            .iter()
            .filter_map(|id| tx.herd().task_report(id))
            .collect();
        tx.emit(Event::WatcherDelivered {
            watcher_id: watcher_id.clone(),
            task_ids,
        });
        tx.enqueue(
            Participant::Parent,
            Payload::Completion {
                watcher_id,
                completions,
            },
        );
    }
}
