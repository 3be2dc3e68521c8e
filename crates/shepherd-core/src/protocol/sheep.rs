//! Requests from inside a herd — a sheep's inbox, acknowledgements, `done` and run reports, a
//! supervisor's start and exit reports — and the broker's own status.
//!
//! One payload stays open JSON: a run report's `telemetry`, which is note metadata (model,
//! turns, tool calls, tokens, cost, run time, and keys a harness adds such as its session and
//! transcript) — an open frontmatter map in the fieldnotes format, merged into the note as it is.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::herd::InboxItem;
use crate::ids::TaskId;
use crate::task::{DoneStatus, TaskState};

/// `inbox` parameters.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InboxParams {
    /// How long to wait for the first item (ms); 0 answers at once.
    #[serde(default)]
    pub wait_ms: u64,
}

/// `inbox` result, and the data of an `inbox` push.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct InboxResult {
    /// Unacknowledged items, oldest first.
    pub items: Vec<InboxItem>,
}

/// `ack` parameters.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AckParams {
    /// Acknowledge every item up to and including this sequence number.
    pub seq: u64,
}

/// `herd.mates` result: what a sheep may see of its herd.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HerdMatesResult {
    /// The sheep that asked.
    pub agent_id: crate::ids::AgentId,
    /// Every sheep of the herd that is not closed, itself included, in spawn order.
    pub mates: Vec<crate::herd::HerdMate>,
}

/// `done` parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DoneParams {
    /// Completed, blocked or failed.
    pub status: DoneStatus,
    /// What was done, or why not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// The task (optional: inferred from the sheep's open task).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
}

/// `done` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DoneResult {
    /// Always true when no error is returned.
    pub accepted: bool,
    /// The task settled.
    pub task_id: TaskId,
    /// Its state now.
    pub status: TaskState,
    /// Whether the task had already settled (the stored result stands).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub duplicate: bool,
    /// The task id the sheep named, when it named another one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supplied_task_id: Option<String>,
}

/// What a sheep's `report` tells the broker.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[cfg_attr(feature = "clap", value(rename_all = "snake_case"))]
#[serde(rename_all = "snake_case")]
pub enum ReportEvent {
    /// The sheep is up and may be handed work.
    #[default]
    Ready,
    /// A run began.
    AgentStart,
    /// The run's first model response showed (told as it shows, not when the turn ends).
    Answered,
    /// One model response finished, with what it used.
    Turn,
    /// The agent rode out a provider limit with its own retries.
    RiddenOut,
    /// The run ended.
    RunSettled,
}

/// `report` parameters.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReportParams {
    /// What happened.
    pub event: ReportEvent,
    /// For `turn`: what the turn used (its tool calls, tokens and cost; `turns` counts 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<crate::budget::Usage>,
    /// For `run_settled`: pi's stop reason. For `turn`: `error` when the turn's response was a
    /// provider's refusal (no model response, so no sign the provider takes requests again).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    /// For `run_settled` ending on a limit: the wait the agent's own last retry announced (ms),
    /// taken as the limit's reset when its error names none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_ms: Option<u64>,
    /// For `ridden_out`: a limit the agent rode out with its own retries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ridden_out: Option<crate::herd::limits::RiddenOut>,
    /// For `run_settled`: the error that ended the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// For `run_settled`: the run's final assistant text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// The sheep's session file, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_file: Option<String>,
    /// For `run_settled` of an agent other than pi: what the task's turns cost, as note
    /// metadata (model, turns, tool calls, tokens, cost, run time, the agent's session and
    /// transcript).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub telemetry: Option<serde_json::Value>,
}

/// `supervisor.started` parameters.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SupervisorStarted {
    /// The sheep program's pid (also its process group).
    pub pid: u32,
    /// The supervisor's own pid.
    pub supervisor_pid: u32,
    /// How the sheep's resource limits are applied, and which could not be.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<crate::resources::Enforcement>,
}

/// `supervisor.exited` parameters.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SupervisorExited {
    /// Exit code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<i32>,
    /// Terminating signal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    /// Why, when the program could not even start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The end of its output.
    #[serde(default)]
    pub tail: String,
    /// The resource whose limit stopped it, when one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_by: Option<crate::resources::Resource>,
}

/// `broker.status` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BrokerStatus {
    /// The broker's id.
    pub broker_id: String,
    /// The parent identity it serves.
    pub parent_identity: String,
    /// The canonical project root.
    pub project_root: String,
    /// Its pid.
    pub pid: u32,
    /// Its socket.
    pub socket: String,
    /// Its journal.
    pub journal: String,
    /// When it started (ms).
    pub started_at: i64,
    /// Connected clients.
    pub clients: usize,
    /// Sheep still holding processes.
    pub live_sheep: usize,
    /// Open tasks.
    pub open_tasks: usize,
    /// The parents connected now (the asking connection left out): who drives the herd.
    #[serde(default)]
    pub parents: Vec<ParentConnection>,
    /// `shepherd notes` changes made through this broker (`notes.write`) since it started.
    #[serde(default)]
    pub notes_written: u64,
    /// The links to hosts it keeps (one SSH master connection each), by host name.
    #[serde(default)]
    pub links: Vec<HostLinkStatus>,
}

/// One host link a broker keeps, as `shepherd hosts` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HostLinkStatus {
    /// The host's name.
    pub host: String,
    /// Whether its SSH master connection is up and the host's `shepherd` answered.
    pub up: bool,
    /// Since when it has been down (ms), when it was up before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub down_since: Option<i64>,
    /// Why the last attempt to connect failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One parent connection of a broker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ParentConnection {
    /// The client's own name (`cli`, `pi`, `mcp`, `dash`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
    /// The connecting process, as the kernel reports it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// The program it speaks for (an MCP host), when it said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver: Option<super::Driver>,
}

/// The answer of requests that only acknowledge (`ack`, `subscribe`, `report`,
/// `supervisor.started`, `supervisor.exited`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct OkResult {
    /// Always true.
    pub ok: bool,
    /// For `report` of a `turn`: the budget limit the task has reached, when it has; the sheep
    /// must stop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<String>,
}

impl OkResult {
    /// The plain acknowledgement.
    pub const ACK: Self = Self {
        ok: true,
        stop: None,
    };
}

/// `broker.stop` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct StopResult {
    /// Always true: the broker is going down.
    pub stopping: bool,
    /// Sheep closed on the way.
    pub closed: usize,
    /// Why each sheep that could not be closed was not.
    pub failed: Vec<String>,
}

/// The data of a `terminate` push (broker → supervisor).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TerminateData {
    /// How long the program has after SIGTERM before SIGKILL (ms).
    pub grace_ms: u64,
}
