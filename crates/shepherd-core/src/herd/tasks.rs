//! Task lifecycle commands: delegate, start, attach a note, settle, finalise. A task's life is
//! kept apart from its sheep's (`lifecycle`), which it only reads: a sheep must be ready to
//! take one, and closing a sheep settles its tasks through these commands.

use crate::error_code::ErrorCode;

use super::Tx;
use super::error::HerdError;
use super::model::{Event, NoteLink, Payload, Phase, Task};
use crate::envelope::{self, Delivery, Envelope, Kind, SCHEMA_VERSION};
use crate::ids::{MessageId, Participant, TaskId};
use crate::task::TaskState;

/// A task the parent hands to a sheep.
#[derive(Debug, Clone)]
pub struct DelegateInput {
    /// A freshly minted task id.
    pub task_id: TaskId,
    /// The target as the caller wrote it.
    pub target: String,
    /// The task text.
    pub description: String,
    /// How long the task may take (ms).
    pub timeout_ms: i64,
    /// Settle when the sheep's run settles (one turn) instead of on `shepherd_done`.
    pub turn: bool,
    /// The client request id of the delegation, when the caller gave one.
    pub request_id: Option<String>,
    /// Where its note goes when it is handed over.
    pub handover: Option<super::Handover>,
    /// Limits given with the delegation (over the sheep's own, key by key).
    pub budget: Option<crate::budget::Budget>,
    /// The stall watchdog's period for this task (ms), when it is on.
    pub stall_after_ms: Option<i64>,
}

/// Accepts a task for a sheep: validates the target and the text and creates the task in
/// state `created`. The broker then reserves its note and calls [`start_task`].
pub fn delegate(tx: &mut Tx<'_>, input: DelegateInput) -> Result<TaskId, HerdError> {
    envelope::check_task(&input.description)
        .map_err(|err| HerdError::new(err.code(), err.to_string()))?;
    let sheep = tx.herd().sheep_by_text(&input.target)?;
    match sheep.phase {
        Phase::Ready => {}
        Phase::Starting => {
            return Err(HerdError::new(
                ErrorCode::AgentNotReady,
                format!(
                    "{} ({}) is still starting; delegate once spawn has returned.",
                    sheep.display_name(),
                    sheep.id
                ),
            ));
        }
        Phase::Exited | Phase::Failed => {
            return Err(HerdError::closed(
                &sheep.display_name(),
                sheep.id.as_str(),
                "has exited",
            ));
        }
        Phase::Closing | Phase::Closed => {
            return Err(HerdError::closed(
                &sheep.display_name(),
                sheep.id.as_str(),
                "is closed",
            ));
        }
    }
    if let Some(active) = &sheep.active_task {
        return Err(HerdError::new(
            ErrorCode::ActiveTask,
            format!(
                "{} ({}) already has an open task {active}; wait for it to settle (shepherd watch) \
                 or close the sheep before delegating again.",
                sheep.display_name(),
                sheep.id
            ),
        ));
    }
    if input.timeout_ms <= 0 {
        return Err(HerdError::new(
            ErrorCode::InvalidTimeout,
            "Delegated task timeout must be a positive number of minutes.",
        ));
    }
    tx.herd()
        .check_inbox_room(&Participant::Sheep(sheep.id.clone()))?;
    let budget = match (sheep.budget, input.budget) {
        (Some(own), Some(given)) => Some(own.overlay(given)),
        (own, given) => given.or(own),
    }
    .filter(|b| !b.is_empty());
    if let Some(budget) = &budget {
        budget
            .check()
            .map_err(|err| HerdError::new(ErrorCode::InvalidBudget, err.to_string()))?;
    }
    if let Some(after) = input.stall_after_ms
        && after <= 0
    {
        return Err(HerdError::new(
            ErrorCode::InvalidStall,
            format!("stall watchdog period must be a positive number of minutes, got {after} ms"),
        ));
    }
    let stall = input.stall_after_ms.map(|after_ms| super::StallWatch {
        after_ms,
        active_at: tx.now(),
        nudged_at: None,
    });
    let continues = sheep.continues.clone();
    let task = Task {
        id: input.task_id.clone(),
        agent_id: sheep.id.clone(),
        description: input.description,
        state: TaskState::Created,
        created_at: tx.now(),
        started_at: None,
        deadline_at: tx.now().saturating_add(input.timeout_ms),
        waiting_since: None,
        pending_request: None,
        stale_notified: false,
        note: None,
        result: None,
        finalized: false,
        nudges: 0,
        escalated: false,
        session_cursor: None,
        turn: input.turn,
        output: None,
        request_id: input.request_id,
        handover: input.handover,
        budget,
        usage: crate::budget::Usage::default(),
        stall,
        continues,
        limit: None,
        limit_episodes: Vec::new(),
        limit_replies: 0,
        transient_waits: 0,
        limited_since: None,
        fell_back_from: None,
    };
    tx.emit(Event::TaskCreated {
        task: Box::new(task),
    });
    Ok(input.task_id)
}

/// Hands a created task to its sheep: records its note and queues the task envelope, whose
/// content is the task text followed by the fieldnotes context block.
pub fn start_task(
    tx: &mut Tx<'_>,
    task_id: &TaskId,
    note: Option<NoteLink>,
    message_id: MessageId,
    content: String,
) -> Result<(), HerdError> {
    let task = tx
        .herd()
        .tasks
        .get(task_id)
        .ok_or_else(|| HerdError::unknown_task(task_id.as_str()))?;
    if task.state != TaskState::Created {
        return Err(HerdError::new(
            ErrorCode::InvalidTransition,
            format!(
                "Task {task_id} is {}; only a created task can start.",
                task.state.as_str()
            ),
        ));
    }
    let agent_id = task.agent_id.clone();
    let at = Some(tx.now());
    let note_path = note.as_ref().map(|link| link.note.clone());
    tx.emit(Event::TaskStarted {
        task_id: task_id.clone(),
        note,
        at,
    });
    let envelope = Envelope {
        schema_version: SCHEMA_VERSION,
        message_id: message_id.clone(),
        kind: Kind::Task,
        sender_id: Participant::Parent,
        target_id: Participant::Sheep(agent_id.clone()),
        task_id: Some(task_id.clone()),
        thread_id: None,
        reply_to: None,
        expects_reply: false,
        deadline_at: None,
        delivery: Delivery::FollowUp,
        content: Some(content),
        status: None,
        origin_sender_id: None,
        note: note_path,
        created_at: tx.now(),
    };
    tx.emit(Event::MessageRecorded {
        message_id,
        record: super::MessageRecord {
            sender: Participant::Parent,
            target: Participant::Sheep(agent_id.clone()),
            task_id: Some(task_id.clone()),
            receipt: None,
        },
    });
    tx.enqueue(Participant::Sheep(agent_id), Payload::Envelope { envelope });
    Ok(())
}

/// Fixes whether the herd writes fieldnotes, the first time it matters; returns the value in
/// force.
pub fn fix_fieldnotes(tx: &mut Tx<'_>, setting: bool) -> bool {
    if let Some(on) = tx.herd().fieldnotes {
        return on;
    }
    tx.emit(Event::FieldnotesFixed { on: setting });
    setting
}

/// Gives a task that settled before it was handed over the note reserved for it, so the note
/// is finalised with the task instead of being left running.
pub fn attach_note(tx: &mut Tx<'_>, task_id: &TaskId, note: NoteLink) {
    if tx
        .herd()
        .tasks
        .get(task_id)
        .is_some_and(|t| t.note.is_none() && t.state.is_terminal())
    {
        tx.emit(Event::NoteAttached {
            task_id: task_id.clone(),
            note,
        });
    }
}

/// Withdraws a task that was accepted but never handed over (its note could not be reserved),
/// so a delegation that failed before reaching its sheep leaves nothing behind.
pub fn withdraw(tx: &mut Tx<'_>, task_id: &TaskId) {
    if tx
        .herd()
        .tasks
        .get(task_id)
        .is_some_and(|t| t.state == TaskState::Created)
    {
        tx.emit(Event::TaskWithdrawn {
            task_id: task_id.clone(),
        });
    }
}

/// Records that a settled task's note is final, which lets watchers hear about it.
pub fn finalized(tx: &mut Tx<'_>, task_id: &TaskId) {
    if tx
        .herd()
        .tasks
        .get(task_id)
        .is_some_and(|t| t.result.is_some() && !t.finalized)
    {
        tx.emit(Event::TaskFinalized {
            task_id: task_id.clone(),
        });
    }
}

/// Records where the sheep's session file stood when a task started.
pub fn cursor(tx: &mut Tx<'_>, task_id: &TaskId, cursor: u64) {
    if tx.herd().tasks.contains_key(task_id) {
        tx.emit(Event::TaskCursor {
            task_id: task_id.clone(),
            cursor,
        });
    }
}

/// Records a sheep's final words for a task (the first ones win).
pub fn output(tx: &mut Tx<'_>, task_id: &TaskId, output: super::TaskOutput) {
    if tx
        .herd()
        .tasks
        .get(task_id)
        .is_some_and(|t| t.output.is_none())
    {
        tx.emit(Event::TaskOutput {
            task_id: task_id.clone(),
            output,
        });
    }
}
