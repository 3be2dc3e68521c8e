//! The controls a parent puts on its herd: how many sheep may run at once (`maxSheep`), task
//! budgets, the opt-in stall watchdog, and reopening a closed sheep on its own session.
//!
//! Each is a rule on the pure herd like every other: a command checks, emits events and
//! applies them, so a journal replay rebuilds the same state. Budgets settle a task `blocked`
//! the moment a reported turn reaches a limit. The stall watchdog is off unless a task was
//! delegated with it: a task never settles just because its sheep went quiet, except under the
//! watchdog the user turned on, which nudges a silent sheep once and, after a second silent
//! period, settles its task `blocked`. Only tasks under the watchdog record activity, so a herd
//! without it journals nothing more than before.

use crate::error_code::ErrorCode;

use super::error::HerdError;
use super::model::{Activity, Event, NoteLink, Notice, NoticeKind, Payload, Phase, StallWatch};
use super::steps::{settle, touch};
use super::{Herd, Tx};
use crate::budget::{Reached, Usage};
use crate::ids::{AgentId, Participant, TaskId};
use crate::task::TaskState;

impl Herd {
    /// How many sheep run now (starting, ready or closing: their processes may be alive).
    pub fn running_sheep(&self) -> usize {
        self.sheep
            .values()
            .filter(|s| matches!(s.phase, Phase::Starting | Phase::Ready | Phase::Closing))
            .count()
    }

    /// Refuses one more sheep when the herd already runs `max_sheep`.
    pub fn check_sheep_room(&self, max_sheep: Option<u32>) -> Result<(), HerdError> {
        let Some(max) = max_sheep else {
            return Ok(());
        };
        let running = self.running_sheep();
        if running >= max as usize {
            return Err(HerdError::new(
                ErrorCode::MaxSheep,
                format!(
                    "this herd already runs {running} sheep and maxSheep is {max}; close one \
                     (shepherd close <id>) or raise maxSheep (shepherd settings set maxSheep <n>, 0 for no limit)"
                ),
            ));
        }
        Ok(())
    }

    /// The last note a sheep's tasks wrote, if any.
    pub fn last_note_of(&self, agent_id: &AgentId) -> Option<&NoteLink> {
        self.tasks
            .values()
            .rev()
            .filter(|t| &t.agent_id == agent_id)
            .find_map(|t| t.note.as_ref())
    }

    /// The earliest instant the stall watchdog acts on an open task.
    pub(super) fn next_stall(&self) -> Option<i64> {
        self.tasks
            .values()
            .filter(|t| t.state == TaskState::Running && t.limit.is_none())
            .filter_map(|t| t.stall.map(|s| s.due_at()))
            .min()
    }
}

/// What a resume needs to reopen a closed sheep.
#[derive(Debug, Clone)]
pub struct Reopen {
    /// The sheep.
    pub agent_id: AgentId,
    /// The backend it will run on.
    pub backend: crate::backend::BackendKind,
    /// sha256 (hex) of its new capability token.
    pub token_digest: String,
    /// sha256 (hex) of its new supervisor's credential.
    pub supervisor_digest: Option<String>,
    /// The client request id of the resume.
    pub request_id: Option<String>,
    /// The most sheep the herd may run at once.
    pub max_sheep: Option<u32>,
}

/// Reopens a closed sheep: it starts again under its own id and display name, with a fresh
/// capability, and its next task continues its last note.
pub fn reopen(tx: &mut Tx<'_>, input: Reopen) -> Result<(), HerdError> {
    let herd = tx.herd();
    let sheep = herd
        .sheep
        .get(&input.agent_id)
        .ok_or_else(|| HerdError::unknown_agent_id(input.agent_id.as_str()))?;
    if sheep.phase != Phase::Closed {
        return Err(HerdError::new(
            ErrorCode::AgentRunning,
            format!(
                "{} ({}) is still running; only a closed or exited sheep can be resumed",
                sheep.display_name(),
                sheep.id
            ),
        ));
    }
    let others = herd
        .sheep
        .values()
        .filter(|s| s.id != sheep.id && s.holds_resources())
        .map(super::Sheep::display_name)
        .collect::<Vec<_>>();
    crate::label::ensure_unique_display_name(
        &sheep.agent,
        &sheep.label,
        others.iter().map(String::as_str),
    )
    .map_err(|err| HerdError::new(err.code(), err.to_string()))?;
    herd.check_sheep_room(input.max_sheep)?;
    let continues = herd.last_note_of(&sheep.id).cloned();
    tx.emit(Event::SheepReopened {
        agent_id: input.agent_id,
        backend: input.backend,
        token_digest: input.token_digest,
        supervisor_digest: input.supervisor_digest,
        request_id: input.request_id,
        continues,
        at: Some(tx.now()),
    });
    Ok(())
}

/// Records what became of an isolated sheep's worktree.
pub fn worktree_released(
    tx: &mut Tx<'_>,
    agent_id: &AgentId,
    report: crate::worktree::WorktreeReport,
) {
    if tx.herd().sheep.contains_key(agent_id) {
        tx.emit(Event::WorktreeReleased {
            agent_id: agent_id.clone(),
            report: Box::new(report),
        });
    }
}

/// Adds one reported turn to the sender's open task, when it has a budget. When that reaches
/// the budget, the task settles `blocked` naming the limit, and the limit is returned so the
/// sheep is stopped. Every report counts as activity for the stall watchdog.
pub fn usage(tx: &mut Tx<'_>, sender: &AgentId, turn: Usage) -> Option<Reached> {
    // A model response: a key letting its sheep go after a reset lets the next one go.
    super::limits::progressed(tx, sender);
    let task_id = tx.herd().sheep.get(sender)?.active_task.clone()?;
    touch(tx, sender);
    let task = tx.herd().tasks.get(&task_id)?;
    // Only a budget reads the count (a note's telemetry comes from the sheep's own record), so
    // a task without one journals nothing per turn.
    if task.state.is_terminal() || task.budget.is_none() {
        return None;
    }
    tx.emit(Event::TaskUsage {
        task_id: task_id.clone(),
        usage: turn,
    });
    let task = tx.herd().tasks.get(&task_id)?;
    let reached = task.budget.and_then(|budget| budget.reached(&task.usage))?;
    let display = tx
        .herd()
        .sheep
        .get(sender)
        .map(super::Sheep::display_name)
        .unwrap_or_default();
    let error = format!("{display} was stopped: {reached}.");
    settle(tx, &task_id, TaskState::Blocked, None, None, Some(error));
    Some(reached)
}

/// The stall watchdog's turn in [`super::tick`]: nudges each silent sheep once, and settles
/// `blocked` the tasks whose sheep stayed silent after the nudge. A task waiting for a reply is
/// not silent: its reply deadline covers it.
pub(super) fn tick_stalls(tx: &mut Tx<'_>) {
    let now = tx.now();
    let due: Vec<(TaskId, StallWatch)> = tx
        .herd()
        .tasks
        .values()
        .filter(|t| t.state == TaskState::Running && t.limit.is_none())
        .filter_map(|t| t.stall.map(|s| (t.id.clone(), s)))
        .filter(|(_, s)| s.due_at() <= now)
        .collect();
    for (task_id, stall) in due {
        let herd = tx.herd();
        let task = &herd.tasks[&task_id];
        let agent_id = task.agent_id.clone();
        let display = herd
            .sheep
            .get(&agent_id)
            .map(super::Sheep::display_name)
            .unwrap_or_default();
        let minutes = minutes(stall.after_ms);
        if stall.nudged_at.is_none() {
            tx.emit(Event::StallNudged {
                task_id: task_id.clone(),
                at: now,
            });
            nudge(tx, &agent_id, &task_id, &minutes);
            let text = format!(
                "[Shepherd stall watchdog] {display} ({agent_id}) has shown no activity on task \
                 {task_id} for {minutes}; it was nudged, and the task settles blocked if it stays \
                 silent for another {minutes}."
            );
            tx.enqueue(
                Participant::Parent,
                Payload::Notice(Notice {
                    notice: NoticeKind::StallNudged,
                    text,
                    agent_id: Some(agent_id),
                    task_id: Some(task_id),
                }),
            );
        } else {
            let error = format!(
                "Stall watchdog: {display} showed no activity for {minutes}, was nudged, and stayed \
                 silent for another {minutes} (stallWatchdog = {minutes})."
            );
            settle(tx, &task_id, TaskState::Blocked, None, None, Some(error));
        }
    }
}

fn nudge(tx: &mut Tx<'_>, agent_id: &AgentId, task_id: &TaskId, minutes: &str) {
    let to = Participant::Sheep(agent_id.clone());
    // A reminder is never worth refusing anything for; a full inbox goes without it.
    if tx.herd().check_inbox_room(&to).is_err() {
        return;
    }
    let content = format!(
        "[Shepherd stall check] Task {task_id} has shown no activity for {minutes}. If you are \
         still working on it, carry on. If it is done, call shepherd_done with status completed; \
         if you cannot go on, call it with status blocked and say why. Without any activity \
         within {minutes}, the task settles blocked."
    );
    tx.remind(to, task_id, content);
}

/// `1 min`, `90 s`, `2.5 min`.
fn minutes(ms: i64) -> String {
    if ms % 60_000 == 0 {
        format!("{} min", ms / 60_000)
    } else if ms < 60_000 {
        format!("{} s", ms / 1000)
    } else {
        format!("{} min", ms as f64 / 60_000.0)
    }
}

/// Applies the events of this module.
pub(super) fn apply(herd: &mut Herd, event: &Event) {
    match event {
        Event::SheepReopened {
            agent_id,
            backend,
            token_digest,
            supervisor_digest,
            request_id,
            continues,
            at,
        } => {
            if let Some(sheep) = herd.sheep.get_mut(agent_id)
                && sheep.phase == Phase::Closed
            {
                sheep.phase = Phase::Starting;
                sheep.activity = Activity::Idle;
                sheep.working_since = None;
                sheep.active_task = None;
                sheep.exit = None;
                sheep.launch = None;
                sheep.backend.clone_from(backend);
                sheep.token_digest.clone_from(token_digest);
                sheep.supervisor_digest.clone_from(supervisor_digest);
                sheep.request_id.clone_from(request_id);
                sheep.continues.clone_from(continues);
                sheep.resumes += 1;
                if at.is_some() {
                    sheep.since = *at;
                }
                // A resumed isolated sheep gets its worktree back; what its release said is past.
                if let Some(record) = sheep.worktree.as_mut() {
                    record.released = None;
                }
                herd.inboxes.insert(
                    Participant::Sheep(agent_id.clone()),
                    super::Inbox::default(),
                );
            }
        }
        Event::WorktreeReleased { agent_id, report } => {
            if let Some(record) = herd
                .sheep
                .get_mut(agent_id)
                .and_then(|s| s.worktree.as_mut())
            {
                record.released = Some((**report).clone());
            }
        }
        Event::TaskUsage { task_id, usage } => {
            if let Some(task) = herd.tasks.get_mut(task_id) {
                task.usage.add(usage);
            }
        }
        Event::TaskActive { task_id, at } => {
            if let Some(stall) = herd.tasks.get_mut(task_id).and_then(|t| t.stall.as_mut()) {
                stall.active_at = stall.active_at.max(*at);
            }
        }
        Event::StallNudged { task_id, at } => {
            if let Some(stall) = herd.tasks.get_mut(task_id).and_then(|t| t.stall.as_mut()) {
                stall.nudged_at.get_or_insert(*at);
            }
        }
        _ => {}
    }
}
