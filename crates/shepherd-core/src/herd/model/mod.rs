//! The records a herd is made of, and the events that change them.
//!
//! Nothing here changes a herd: the commands beside this module do, through [`super::Tx`]. So
//! every record an event carries and every record two commands share lives here, below all of
//! them, and the commands import it from here rather than from each other. This file holds the
//! sheep, the tasks (with the limit episodes they went through, in `limit`, and the sheep they
//! fell back from) and the watchers; `mail` what participants send each other; `run` and
//! `merge` a run and a merge as the herd keeps them; `event` the [`Event`]s.
//!
//! Two payloads stay open JSON: a stored reply's `result` (the answer of whichever method it
//! was, kept verbatim so a resent request gets the same bytes back) and a task output's
//! `telemetry` (note metadata, an open map in the fieldnotes format). Everything else — runs,
//! recipes, worktrees — is typed ([`crate::run`], [`crate::worktree`]).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ids::{AgentId, MessageId, TaskId, WatcherId};
use crate::task::TaskState;

mod event;
mod limit;
mod mail;
mod merge;
mod run;

pub use event::Event;
pub use limit::{LimitEpisode, TaskLimit};
pub use mail::*;
pub use merge::{Advance, Landed, Merge, MergeCandidate, MergePlan, landed_key};
pub use run::Run;

/// Where a sheep's process is in its life.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "phase")]
pub enum Phase {
    /// Launched; its program is not yet confirmed running.
    Starting,
    /// Its program runs.
    Ready,
    /// Its program ended on its own (or its terminal went away).
    Exited,
    /// A close is in progress.
    Closing,
    /// Closed by the parent; its processes are gone.
    Closed,
    /// It never became ready.
    Failed,
}

/// What a running sheep reported it is doing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Activity {
    /// Between turns.
    #[default]
    Idle,
    /// In a turn.
    Working,
}

/// How a sheep's process ended.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExitInfo {
    /// The exit code, when it exited normally.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<i32>,
    /// The signal that ended it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    /// A one-line explanation (e.g. "its pane was closed").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The last lines of its output.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tail: String,
}

impl ExitInfo {
    /// The return code of a task whose sheep ended this way before settling it: the exit
    /// status when it is non-zero, 128 + n when killed by signal n, else 1 (it exited 0, or
    /// how it ended is unknown).
    pub fn return_code(&self) -> i32 {
        match (self.code, self.signal) {
            (Some(code), _) if code != 0 => code,
            (None, Some(signal)) => 128 + signal,
            _ => 1,
        }
    }

    /// `status 3`, `signal 9` or the reason.
    pub fn describe(&self) -> String {
        match (self.code, self.signal, &self.reason) {
            (_, _, Some(reason)) => reason.clone(),
            (Some(code), _, None) => format!("exited with status {code}"),
            (None, Some(signal), None) => format!("was killed by signal {signal}"),
            (None, None, None) => "ended".to_owned(),
        }
    }
}

/// One sheep of the herd.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Sheep {
    /// Its opaque id.
    pub id: AgentId,
    /// The agent definition it was spawned from.
    pub agent: String,
    /// Its label; empty when it has none.
    pub label: crate::label::Label,
    /// What it is for, when Shepherd made it for a task (a resolver, a fixer, a fallback): its
    /// display name says so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<crate::label::Role>,
    /// Where it runs.
    pub backend: crate::backend::BackendKind,
    /// What runs it: `command`, `pi` or another coding agent's harness.
    pub runtime: crate::harness::Runtime,
    /// The model it was started with, when its runtime takes one (`provider/id`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Its working directory.
    pub cwd: String,
    /// sha256 (hex) of its capability token; the token itself is never stored.
    pub token_digest: String,
    /// sha256 (hex) of its supervisor's own credential (never given to the sheep).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supervisor_digest: Option<String>,
    /// When it was spawned (ms).
    pub created_at: i64,
    /// Process phase.
    #[serde(flatten)]
    pub phase: Phase,
    /// Reported activity.
    pub activity: Activity,
    /// Since when it has been working (ms), while it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub working_since: Option<i64>,
    /// When its phase or activity last changed, or its task started or settled (ms); absent
    /// for records from journals written before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<i64>,
    /// Its open task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_task: Option<TaskId>,
    /// How its last task settled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_outcome: Option<TaskState>,
    /// How its process ended, or why it failed to start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit: Option<ExitInfo>,
    /// Backend facts needed to find it again (pids, pane id, log file); `None` until placed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launch: Option<crate::backend::LaunchRecord>,
    /// The client request id of the spawn that created it (or of the resume that last reopened
    /// it), so a resent request finds it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// The budget its agent definition sets for each of its tasks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<crate::budget::Budget>,
    /// How it was started (its spawn's parameters, without the caller's terminal), so a resume
    /// can start it again the same way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recipe: Option<crate::spawn::SpawnParams>,
    /// The git worktree it runs in when isolated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktree: Option<crate::worktree::SheepWorktree>,
    /// How many times it was resumed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub resumes: u32,
    /// The note its next task continues (its last note before it was resumed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub continues: Option<NoteLink>,
    /// The provider account its model requests are charged to, when its runtime has one: the
    /// sheep that share it wait out a limit together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_key: Option<crate::limit::ProviderKey>,
    /// Its provider as shown to people, with the account when it was given one (`anthropic`,
    /// `anthropic, account WORK_KEY`): named in every mode, holding keys or not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// The most turns the sheep on its provider key may run at once (`maxConcurrentTurns` as it
    /// was at its spawn).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_cap: Option<u32>,
    /// It was handed a turn under a turn cap that has not begun yet.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub turn_granted: bool,
}

/// The agent part of a display name: the agent, or for a sheep Shepherd made in `role`, the
/// agent with its role (and a fallback's harness, and the account of its spawn's `recipe`).
pub fn shown_agent(
    agent: &str,
    role: Option<crate::label::Role>,
    runtime: crate::harness::Runtime,
    recipe: Option<&crate::spawn::SpawnParams>,
) -> String {
    let harness = runtime
        .harness()
        .map_or("command", |harness| harness.as_str());
    let account = recipe
        .and_then(|recipe| recipe.credential.as_ref())
        .map(|credential| credential.var.as_str());
    crate::label::agent_part(agent, role, harness, account)
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl Sheep {
    /// The host it runs on, when not this machine (its spawn's `host`, kept in its recipe).
    pub fn host(&self) -> Option<&str> {
        self.recipe.as_ref()?.host.as_deref()
    }

    /// `<agent>: <label>`, or exactly `<agent>` when unlabelled; a sheep Shepherd made carries
    /// its role in the agent part (`worker (fallback, codex): fix-login`,
    /// `claude-resolver (resolver): fix-login`).
    pub fn display_name(&self) -> String {
        crate::label::display_name(&self.shown_agent(), &self.label)
    }

    /// The agent part of its display name.
    pub fn shown_agent(&self) -> String {
        shown_agent(&self.agent, self.role, self.runtime, self.recipe.as_ref())
    }

    /// Whether the sheep can still take work or messages.
    pub fn is_live(&self) -> bool {
        matches!(self.phase, Phase::Starting | Phase::Ready)
    }

    /// Whether the sheep still counts against label uniqueness and the idle timer.
    pub fn holds_resources(&self) -> bool {
        matches!(
            self.phase,
            Phase::Starting | Phase::Ready | Phase::Closing | Phase::Exited
        )
    }
}

/// Where a task's note lives, absolute and relative to the project root.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NoteLink {
    /// The session's directory name (`0001-…`).
    pub session: String,
    /// The session's name.
    pub session_name: String,
    /// Absolute session directory.
    pub session_path: String,
    /// Session directory relative to the project root.
    pub session_relative: String,
    /// Absolute note path.
    pub note: String,
    /// Note path relative to the project root.
    pub note_relative: String,
    /// Whether the session existed before this task.
    pub resumed: bool,
}

/// How a task settled.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskResult {
    /// The terminal state.
    pub status: TaskState,
    /// Its return code.
    pub return_code: i32,
    /// The sheep's done summary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// The task's result text (the summary, or the sheep's final output).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// What went wrong, for tasks that did not complete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// When it settled (ms).
    pub completed_at: i64,
}

/// One delegated task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    /// Its opaque id.
    pub id: TaskId,
    /// The sheep doing it.
    pub agent_id: AgentId,
    /// The task text as the parent gave it.
    pub description: String,
    /// Where it is.
    pub state: TaskState,
    /// When it was accepted (ms).
    pub created_at: i64,
    /// When it was handed to the sheep (ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<i64>,
    /// When it times out (ms).
    pub deadline_at: i64,
    /// Since when it has been waiting for a reply (ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting_since: Option<i64>,
    /// The tracked request it waits on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_request: Option<MessageId>,
    /// Whether this waiting episode's stale reminder went out.
    #[serde(default)]
    pub stale_notified: bool,
    /// Its note, when fieldnotes are on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<NoteLink>,
    /// How it settled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<TaskResult>,
    /// Whether its note has been finalised (always true once settled without a note).
    #[serde(default)]
    pub finalized: bool,
    /// Forgotten-done reminders sent to its sheep.
    #[serde(default)]
    pub nudges: u32,
    /// Whether the parent was told the sheep stalled.
    #[serde(default)]
    pub escalated: bool,
    /// Where the sheep's session file stood when the task started (bytes), so telemetry
    /// counts only this task's turns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_cursor: Option<u64>,
    /// A one-turn task: it settles when the sheep's run settles, not on `shepherd_done`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub turn: bool,
    /// The sheep's final words and run telemetry, once its run settled after the task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<TaskOutput>,
    /// The client request id of the delegation that created it, so a resent delegate finds it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// How its note is reserved when it is handed over, kept so that a broker restarted
    /// between accepting the task and handing it over can finish the job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handover: Option<Handover>,
    /// Its limits, when it has any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<crate::budget::Budget>,
    /// What its sheep reported using for it so far.
    #[serde(default, skip_serializing_if = "crate::budget::Usage::is_zero")]
    pub usage: crate::budget::Usage,
    /// The stall watchdog, when it is on for this task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stall: Option<StallWatch>,
    /// The note of its sheep's task before a resume, which this task continues.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub continues: Option<NoteLink>,
    /// The provider limit it waits out, while it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<TaskLimit>,
    /// The limit episodes it went through, for its note.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub limit_episodes: Vec<LimitEpisode>,
    /// Limit replies in its open episode.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub limit_replies: u32,
    /// Server errors it waited out.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub transient_waits: u32,
    /// Since when it has been refused without a model response in between (ms): its wait
    /// counts from here against `fallbackAfterMinutes`, across the probes that were refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limited_since: Option<i64>,
    /// The sheep that had it first, when it fell back from that sheep's limited provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fell_back_from: Option<FellBack>,
}

/// What the sheep that first had a task left when the task fell back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FellBack {
    /// The first sheep.
    pub agent_id: AgentId,
    /// Its display name.
    pub display_name: String,
    /// Its note, finalised when the second note is reserved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<NoteLink>,
    /// The limit episodes it went through, the last one the limit it fell back on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub episodes: Vec<LimitEpisode>,
    /// The provider that was limited.
    pub provider: String,
    /// Until when it was limited (ms).
    pub until: i64,
    /// When the task fell back (ms).
    pub at: i64,
}

/// The stall watchdog of one task: its sheep is nudged once after `after_ms` without activity,
/// and the task settles blocked after another `after_ms` without activity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StallWatch {
    /// How long a silence may last (ms).
    pub after_ms: i64,
    /// When its sheep last showed activity (ms); the task's start counts.
    pub active_at: i64,
    /// When the one nudge went out (ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nudged_at: Option<i64>,
}

impl StallWatch {
    /// When the watchdog acts next: the nudge, or, once nudged, the settlement.
    pub fn due_at(&self) -> i64 {
        let quiet_since = match self.nudged_at {
            Some(nudged) => nudged.max(self.active_at),
            None => self.active_at,
        };
        quiet_since.saturating_add(self.after_ms)
    }
}

/// What handing a task over needs besides the task itself: where its note goes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Handover {
    /// Whether the task gets a note at all.
    pub fieldnotes: bool,
    /// A named session for the note, instead of the parent's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_name: Option<String>,
    /// The session directory (`NNNN-slug`) to reserve the note in, instead of the parent's
    /// (the session of the work a merge's resolver or fixer handles).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_dir: Option<String>,
    /// A note reserved ahead by a run, to start instead of reserving a new one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planned_note: Option<String>,
    /// The flow group the note belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// `single`, `parallel` or `chain`.
    pub mode: crate::fieldnotes::status::Mode,
    /// A pi sheep's session file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_file: Option<String>,
    /// Where that session file stood when the task was accepted (bytes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_cursor: Option<u64>,
}

/// What a sheep left when its run settled: its last assistant text and what the run cost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskOutput {
    /// The final assistant text.
    pub text: String,
    /// Model, turns, tool calls, tokens, cost, duration (as measured from the session file).
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub telemetry: Value,
}

impl Task {
    /// Settled, with its note (if any) finalised: safe to report to watchers.
    pub fn is_reportable(&self) -> bool {
        self.result.is_some() && self.finalized
    }
}

/// A durable watcher: which tasks the parent wants to hear about, and which it has heard about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Watcher {
    /// Its id.
    pub id: WatcherId,
    /// The tasks, in the caller's order.
    pub task_ids: Vec<TaskId>,
    /// Those already reported.
    pub delivered: Vec<TaskId>,
}

/// The public view of a task's outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskReport {
    /// The task.
    pub task_id: TaskId,
    /// Its sheep.
    pub agent_id: AgentId,
    /// The sheep's agent definition.
    pub agent: String,
    /// The sheep's label.
    pub label: crate::label::Label,
    /// `<agent>: <label>` or `<agent>`.
    pub display_name: String,
    /// The task's state (terminal for settled tasks).
    pub status: TaskState,
    /// The return code, once settled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub return_code: Option<i32>,
    /// Whether it completed.
    pub ok: bool,
    /// The done summary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// The result text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// The error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The absolute note path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The note path relative to the project root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note_relative: Option<String>,
    /// When it settled (ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_at: Option<i64>,
    /// Model, turns, tool calls, tokens and cost, once the sheep's run reported them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub telemetry: Option<Value>,
}
