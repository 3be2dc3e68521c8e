//! Requests a parent makes and what they answer: spawn, delegate, message, watch and wait,
//! status, close, prune and read.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::envelope::Delivery;
use crate::herd::{SessionLink, SettledTask, SheepStatus, TaskReport};
use crate::ids::{AgentId, MessageId, TaskId, WatcherId};
pub use crate::spawn::{CallerContext, SpawnParams};
use crate::task::TaskState;

/// `resume` parameters: reopen a closed or exited sheep on its own session.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResumeParams {
    /// The sheep's agent id.
    pub id: String,
    /// `auto`, `headless`, `tmux` or `herdr` (default: where it ran before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<crate::settings::Backend>,
    /// Where the caller runs, so a visible sheep finds its terminal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caller: Option<CallerContext>,
}

/// `spawn` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SpawnResult {
    /// The new sheep's id.
    pub agent_id: AgentId,
    /// Its agent definition.
    pub agent: String,
    /// Its label.
    pub label: String,
    /// `<agent>: <label>` or `<agent>`.
    pub display_name: String,
    /// The backend it runs on.
    pub backend: crate::backend::BackendKind,
    /// The fieldnotes session its notes go to, relative to the project: the named one, else the
    /// parent's own; null when fieldnotes are off, or while that session has no note yet (its
    /// first note makes its directory).
    pub fieldnote: Option<String>,
    /// Its git worktree (`path`, `branch`, and `host` when on a host), when it runs isolated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktree: Option<crate::worktree::WorktreePlace>,
    /// The host it runs on (absent: this machine).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// How many times it has been resumed (absent for a new sheep).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resumes: Option<u32>,
}

/// `delegate` parameters.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DelegateParams {
    /// The sheep's agent id.
    pub target: String,
    /// The task text.
    pub task: String,
    /// Minutes (fractions allowed); default from settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<f64>,
    /// Put the note in this named session (created or continued) instead of the parent's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_name: Option<String>,
    /// A one-turn task (the deprecated prompt path): it settles completed with the sheep's final
    /// text when its run settles, instead of on `shepherd_done`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub turn: bool,
    /// Limits on the task (over the agent definition's own, key by key).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<crate::budget::Budget>,
    /// The stall watchdog for this task, in minutes; 0 turns it off (default: the
    /// `stallWatchdog` setting).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stall: Option<f64>,
}

/// `delegate` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DelegateResult {
    /// The new task's id.
    pub task_id: TaskId,
    /// Its sheep.
    pub agent_id: AgentId,
    /// `running`.
    pub state: TaskState,
    /// The note (absolute).
    pub note: Option<String>,
    /// The note relative to the project root.
    pub note_relative: Option<String>,
    /// The session directory (absolute).
    pub session: Option<String>,
    /// The session directory relative to the project root.
    pub session_relative: Option<String>,
    /// The session's name.
    pub session_name: Option<String>,
    /// Whether the session existed before.
    pub resumed: bool,
}

/// `message` and `tell` parameters.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MessageParams {
    /// `shepherd`/`parent` or an agent id.
    pub target: String,
    /// The text.
    pub message: String,
    /// The task it concerns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// A conversation thread.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<String>,
    /// The message it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply_to: Option<String>,
    /// Whether the sender waits for an answer.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub expects_reply: bool,
    /// `followUp` (default) or `steer`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery: Option<Delivery>,
}

/// `message` and `tell` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MessageResult {
    /// Always true: the message is queued.
    pub accepted: bool,
    /// Its id (answer it with `replyTo`).
    pub message_id: MessageId,
    /// Who receives it.
    pub target_id: String,
    /// How it will be delivered.
    pub delivery: Delivery,
    /// The task it was attributed to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<TaskId>,
    /// The tracked request it opened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<MessageId>,
    /// The task's state after delivery.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_task_state: Option<TaskState>,
    /// Why it is delivered otherwise than asked: a `steer` to a sheep that cannot be steered
    /// mid-turn goes as a follow-up (`delivery` says which).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery_changed: Option<String>,
}

/// A list of ids: one string or an array (JSON-encoded arrays in a string are accepted too).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum IdList {
    /// One id.
    One(String),
    /// Several ids.
    Many(Vec<String>),
}

impl IdList {
    /// The ids, decoding a string that holds a JSON array.
    pub fn into_vec(self) -> Vec<String> {
        match self {
            Self::Many(ids) => ids,
            Self::One(text) => {
                let trimmed = text.trim();
                if trimmed.starts_with('[')
                    && let Ok(ids) = serde_json::from_str::<Vec<String>>(trimmed)
                {
                    return ids;
                }
                vec![trimmed.to_owned()]
            }
        }
    }
}

/// `watch` parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WatchParams {
    /// Task ids.
    pub id: IdList,
}

/// `watch` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WatchResult {
    /// The watcher (absent when everything had already settled).
    pub watcher_id: Option<WatcherId>,
    /// The tasks, in the caller's order.
    pub task_ids: Vec<TaskId>,
    /// Tasks already settled.
    pub completed: Vec<TaskReport>,
    /// Tasks still open.
    pub pending: Vec<TaskId>,
}

/// `wait` parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WaitParams {
    /// Task ids.
    pub id: IdList,
    /// How long to wait (ms); 0 answers at once.
    #[serde(default)]
    pub timeout_ms: u64,
    /// Also wait (briefly, within the timeout) for a pi sheep's final words after its task
    /// settled, so the reports carry them.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub wait_output: bool,
}

/// `close` parameters.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CloseParams {
    /// The agent id.
    pub id: String,
    /// End the sheep but leave its pane open for inspection (visible backends).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub keep_pane: bool,
}

/// `wait` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WaitResult {
    /// Settled tasks, in the caller's order.
    pub settled: Vec<TaskReport>,
    /// Tasks still open when the wait ended.
    pub pending: Vec<TaskId>,
}

/// Parameters naming one sheep.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct IdParams {
    /// The agent id.
    pub id: String,
}

/// `status` parameters.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct StatusParams {
    /// One agent id, or a message id (`shepherd-message-…`) for that message's receipt;
    /// absent means every sheep.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

/// `herd` result, and the data of every pushed `herd` event.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HerdResult {
    /// Every sheep that is not closed, in spawn order.
    pub sheep: Vec<SheepStatus>,
    /// The broker's clock when the view was taken (ms), so a client can tell how old each
    /// state is without asking again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub now: Option<i64>,
    /// Settled tasks, newest first (at most [`crate::herd::SETTLED_LISTED`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub settled: Vec<SettledTask>,
    /// The fieldnotes session the herd's latest note went to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<SessionLink>,
    /// The runs under way and the latest that ended (at most
    /// [`super::run::ENDED_RUNS_LISTED`] of those), oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runs: Vec<super::run::RunLine>,
}

/// `close` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CloseResult {
    /// The sheep.
    pub agent_id: AgentId,
    /// Its display name.
    pub display_name: String,
    /// The task the close cancelled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancelled: Option<TaskReport>,
    /// What became of an isolated sheep's worktree: removed, or kept with its patch (files,
    /// diffstat, commits) to integrate or discard.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktree: Option<crate::worktree::WorktreeReport>,
}

/// `prune` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PruneResult {
    /// Records dropped.
    pub pruned: usize,
    /// Records kept.
    pub remaining: usize,
}

/// `read` parameters.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ReadParams {
    /// An agent id, a display name or a pane id.
    pub target: String,
    /// How many lines (default 40).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lines: Option<u32>,
    /// `visible`, `recent`, `recent-unwrapped` or `detection`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<crate::backend::ReadSource>,
}

/// `read` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ReadResult {
    /// The target as resolved.
    pub target: String,
    /// The source read.
    pub source: crate::backend::ReadSource,
    /// Lines asked for.
    pub lines: u32,
    /// The text.
    pub text: String,
}

/// `focus` parameters.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FocusParams {
    /// An agent id.
    pub id: String,
    /// Where the caller runs, so its own terminal client is the one switched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caller: Option<CallerContext>,
}

/// `focus` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FocusResult {
    /// The sheep.
    pub agent_id: AgentId,
    /// Its display name.
    pub display_name: String,
    /// Its backend.
    pub backend: crate::backend::BackendKind,
    /// The pane brought to the front.
    pub pane: String,
}

/// What `resolve` looks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ResolveKind {
    /// A sheep: id, id prefix, display name or unique label.
    Sheep,
    /// A task: id or id prefix.
    Task,
}

/// `resolve` parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResolveParams {
    /// Sheep or task.
    pub kind: ResolveKind,
    /// What the person typed.
    pub text: String,
}

/// `resolve` result: the full id, or none when nothing in the herd is called that (the caller
/// then sends the text as it is, for the request's own error). Several matches are an
/// `ambiguous_id` error listing them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResolveResult {
    /// The full id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

/// `status` result: one sheep when the request named one, else the whole herd.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum StatusResult {
    /// The sheep asked for.
    One(Box<SheepStatus>),
    /// Every sheep that is not closed.
    All(HerdResult),
    /// The receipt of the message asked for.
    Message(Box<crate::herd::MessageReceipt>),
}
