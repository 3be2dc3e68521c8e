//! Read-only views the broker returns: a sheep's status with its task, the herd, an inbox.

use serde::{Deserialize, Serialize};

use super::model::{Event, InboxItem, Phase, Sheep};
use super::{Herd, Tx};
use crate::ids::{AgentId, MessageId, Participant, TaskId};
use crate::task::TaskState;

/// A sheep as `status` and `herd` show it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SheepStatus {
    /// Its id.
    pub agent_id: AgentId,
    /// Its agent definition.
    pub agent: String,
    /// Its label.
    pub label: crate::label::Label,
    /// `<agent>: <label>` or `<agent>`.
    pub display_name: String,
    /// Its backend.
    pub backend: String,
    /// `starting`, `idle`, `working`, `done`, `blocked`, `failed`, `exited`, `closing` or
    /// `closed`.
    pub state: String,
    /// Its working directory.
    pub cwd: String,
    /// When it was spawned (ms).
    pub created_at: i64,
    /// Its open task, or its last one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskView>,
    /// Why it failed or exited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The sheep program's pid, while it is known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// Its git worktree (`path`, `branch`), when it runs isolated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktree: Option<serde_json::Value>,
    /// How many times it was resumed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resumes: Option<u32>,
}

/// A task as a sheep's status shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskView {
    /// The task.
    pub id: TaskId,
    /// Its state.
    pub state: TaskState,
    /// How long it has waited for a reply (ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting_ms: Option<i64>,
    /// The unanswered question.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_request: Option<MessageId>,
    /// Who should answer it (display name, or `shepherd`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting_on: Option<String>,
    /// Set once the stale-wait reminder went out for this episode.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stale: bool,
    /// Its limits, when it has any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<crate::budget::Budget>,
    /// What its sheep used of them so far.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<crate::budget::Usage>,
    /// The stall watchdog, when it is on for this task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stall: Option<StallView>,
}

/// The stall watchdog of a task as `status` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StallView {
    /// How long a silence may last (ms).
    pub after_ms: i64,
    /// How long its sheep has been silent (ms).
    pub quiet_ms: i64,
    /// Whether the one nudge went out.
    pub nudged: bool,
}

impl Herd {
    /// The status of one sheep at `now`.
    pub fn status_of(&self, sheep: &Sheep, now: i64) -> SheepStatus {
        let task = sheep
            .active_task
            .as_ref()
            .and_then(|id| self.tasks.get(id))
            .map(|task| {
                let request = task
                    .pending_request
                    .as_ref()
                    .and_then(|id| self.requests.get(id));
                TaskView {
                    id: task.id.clone(),
                    state: task.state,
                    waiting_ms: task.waiting_since.map(|since| now - since),
                    pending_request: task.pending_request.clone(),
                    waiting_on: request.map(|r| match &r.target {
                        Participant::Parent => "shepherd".to_owned(),
                        Participant::Sheep(id) => self
                            .sheep
                            .get(id)
                            .map_or_else(|| id.to_string(), Sheep::display_name),
                    }),
                    stale: task.stale_notified,
                    budget: task.budget,
                    usage: task.budget.map(|_| task.usage),
                    stall: task.stall.map(|stall| StallView {
                        after_ms: stall.after_ms,
                        quiet_ms: now - stall.active_at.max(stall.nudged_at.unwrap_or(0)),
                        nudged: stall.nudged_at.is_some(),
                    }),
                }
            });
        SheepStatus {
            agent_id: sheep.id.clone(),
            agent: sheep.agent.clone(),
            label: sheep.label.clone(),
            display_name: sheep.display_name(),
            backend: sheep.backend.clone(),
            state: process_state(sheep).to_owned(),
            cwd: sheep.cwd.clone(),
            created_at: sheep.created_at,
            task,
            // A closed sheep did not fail: closing is its own outcome.
            error: sheep
                .exit
                .as_ref()
                .filter(|_| sheep.phase != Phase::Closed && sheep.phase != Phase::Closing)
                .map(super::ExitInfo::describe),
            pid: sheep
                .launch
                .get("pid")
                .and_then(serde_json::Value::as_u64)
                .and_then(|p| u32::try_from(p).ok()),
            worktree: sheep.worktree.get("path").map(|path| {
                serde_json::json!({
                    "path": path,
                    "branch": sheep.worktree.get("branch"),
                })
            }),
            resumes: (sheep.resumes > 0).then_some(sheep.resumes),
        }
    }

    /// Every sheep's status, in spawn order; closed sheep only when `include_closed`.
    pub fn herd_view(&self, now: i64, include_closed: bool) -> Vec<SheepStatus> {
        self.sheep
            .values()
            .filter(|s| include_closed || s.phase != Phase::Closed)
            .map(|s| self.status_of(s, now))
            .collect()
    }

    /// A participant's unacknowledged items, oldest first.
    pub fn pending_items(&self, who: &Participant) -> Vec<InboxItem> {
        self.inboxes
            .get(who)
            .map(|inbox| inbox.items.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Whether any sheep still holds processes or a pane.
    pub fn has_live_sheep(&self) -> bool {
        self.sheep
            .values()
            .any(|s| matches!(s.phase, Phase::Starting | Phase::Ready | Phase::Closing))
    }

    /// Whether a run is still going (between its tasks it may hold no sheep at all).
    pub fn has_open_runs(&self) -> bool {
        self.runs.values().any(|run| !run.is_finished())
    }
}

fn process_state(sheep: &Sheep) -> &'static str {
    match sheep.phase {
        Phase::Starting => "starting",
        Phase::Exited => "exited",
        Phase::Failed => "failed",
        Phase::Closing => "closing",
        Phase::Closed => "closed",
        // A settled task is what the state says, even while the sheep is still writing its
        // last words: the parent was just told the task ended.
        Phase::Ready => match (sheep.activity, &sheep.active_task, sheep.last_outcome) {
            (_, None, Some(TaskState::Completed)) => "done",
            (_, None, Some(TaskState::Blocked)) => "blocked",
            (_, None, Some(_)) => "failed",
            (super::Activity::Working, _, _) => "working",
            (_, Some(_), _) | (_, None, None) => "idle",
        },
    }
}

/// Acknowledges a participant's items up to and including `seq`.
pub fn ack(tx: &mut Tx<'_>, who: &Participant, seq: u64) {
    let has = tx
        .herd()
        .inboxes
        .get(who)
        .is_some_and(|inbox| inbox.items.front().is_some_and(|i| i.seq <= seq));
    if has {
        tx.emit(Event::Acked {
            who: who.clone(),
            seq,
        });
        if let Participant::Sheep(id) = who {
            super::controls::touch(tx, id);
        }
    }
}
