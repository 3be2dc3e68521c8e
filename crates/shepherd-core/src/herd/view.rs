//! Read-only views the broker returns: a sheep's status with its task, the herd, an inbox.
//!
//! A task's telemetry is read here as the open note metadata it is (see
//! [`crate::protocol::ReportParams`]'s `telemetry`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::lines::{first_line, last_line};
use super::model::{Event, InboxItem, Payload, Phase, Sheep};
use super::{Herd, Tx};
use crate::ids::{AgentId, MessageId, Participant, TaskId};
use crate::task::TaskState;

/// A sheep as `status` and `herd` show it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
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
    pub backend: crate::backend::BackendKind,
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
    /// What runs it: `command`, `pi` or another coding agent's harness.
    #[serde(default)]
    pub runtime: crate::harness::Runtime,
    /// The model it runs: the one its last run reported, else the one it was started with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// When its current state began (ms): spawned, became ready, started or settled its task,
    /// began or stopped working, ended, began closing; for a waiting task, since it waits.
    #[serde(default)]
    pub since: i64,
    /// Its pane (tmux `%N`, Herdr `w1:p3`), on a visible backend.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pane: Option<String>,
    /// The window or tab holding its pane.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<String>,
    /// What its runs cost so far, summed over its tasks, where its runtime reports it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// The last line it printed, as far as the broker knows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_line: Option<String>,
    /// Its git worktree (`path`, `branch`, and `host` when on a host), when it runs isolated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktree: Option<crate::worktree::WorktreePlace>,
    /// How many times it was resumed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resumes: Option<u32>,
    /// The host it runs on (absent: this machine).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// The sandbox it runs in (absent: not confined).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<crate::sandbox::Sandbox>,
    /// The resource limits it runs with (absent: started before limits existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<crate::resources::Limits>,
    /// How its supervisor applies them, and which it could not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits_by: Option<crate::resources::Enforcement>,
    /// While its host cannot be reached: since when (ms). Its state is then what it was when
    /// the link went down, not what it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_down_since: Option<i64>,
    /// The latest messages sent to it with their receipts, newest first (`status` of one
    /// sheep only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub messages: Vec<super::MessageReceipt>,
}

/// Tokens and cost, as a sheep's runs reported them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// Input tokens (with cache reads and writes).
    pub tokens_in: u64,
    /// Output tokens.
    pub tokens_out: u64,
    /// Tokens of the open task's turns so far (input, output and cache together, as each turn
    /// reports them); once the task settles, its run's record splits them into the two above.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub tokens: u64,
    /// Cost in the provider's currency units (USD for the usual providers).
    pub cost: f64,
}

#[allow(clippy::trivially_copy_pass_by_ref)]
fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Usage {
    /// Adds one run's telemetry (`tokensIn`, `tokensOut`, `tokensCacheRead`,
    /// `tokensCacheWrite`, `cost`); returns false when it carries none of them.
    pub fn add_telemetry(&mut self, telemetry: &serde_json::Value) -> bool {
        let count = |key: &str| telemetry.get(key).and_then(serde_json::Value::as_u64);
        let input = ["tokensIn", "tokensCacheRead", "tokensCacheWrite"]
            .iter()
            .filter_map(|key| count(key))
            .sum::<u64>();
        let output = count("tokensOut");
        let cost = telemetry.get("cost").and_then(serde_json::Value::as_f64);
        if count("tokensIn").is_none() && output.is_none() && cost.is_none() {
            return false;
        }
        self.tokens_in += input;
        self.tokens_out += output.unwrap_or(0);
        self.cost += cost.unwrap_or(0.0);
        true
    }
}

/// A task as a sheep's status shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
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
    /// The task text's first line.
    #[serde(default)]
    pub title: String,
    /// When it was accepted (ms).
    #[serde(default)]
    pub created_at: i64,
    /// When it was handed to the sheep (ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<i64>,
    /// The unanswered question's first line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub question: Option<String>,
    /// Its note (absolute), when fieldnotes are on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Its limits, when it has any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<crate::budget::Budget>,
    /// What its sheep used of them so far.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<crate::budget::Usage>,
    /// The stall watchdog, when it is on for this task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stall: Option<StallView>,
    /// The provider limit it waits out, while it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_limit: Option<super::limits::LimitView>,
}

/// The stall watchdog of a task as `status` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StallView {
    /// How long a silence may last (ms).
    pub after_ms: i64,
    /// How long its sheep has been silent (ms).
    pub quiet_ms: i64,
    /// Whether the one nudge went out.
    pub nudged: bool,
}

/// A settled task, as the herd lists it under its sheep.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SettledTask {
    /// The task.
    pub task_id: TaskId,
    /// Its sheep.
    pub agent_id: AgentId,
    /// The sheep's display name.
    pub display_name: String,
    /// The task text's first line.
    pub title: String,
    /// How it settled.
    pub status: TaskState,
    /// Its return code.
    pub return_code: i32,
    /// The first line of its summary, or of what went wrong.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
    /// When it was handed over (else accepted) (ms).
    pub started_at: i64,
    /// When it settled (ms).
    pub completed_at: i64,
    /// Its note (absolute), when fieldnotes are on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The branch its isolated worktree left to land (once its sheep was closed or its run
    /// ended), which `merge.preview` and `merge.submit` take by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// Where a merge landed that branch, verified: `<target> at <short commit>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub landed: Option<String>,
}

/// The fieldnotes session the herd's latest note went to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionLink {
    /// The session's name.
    pub name: String,
    /// Its directory relative to the project root.
    pub relative: String,
}

/// How many settled tasks the herd view lists, newest first.
pub const SETTLED_LISTED: usize = 50;

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
                    title: first_line(&task.description),
                    created_at: task.created_at,
                    started_at: task.started_at,
                    question: request.map(|r| first_line(&r.question)),
                    note: task.note.as_ref().map(|n| n.note.clone()),
                    budget: task.budget,
                    usage: task.budget.map(|_| task.usage),
                    stall: task.stall.map(|stall| StallView {
                        after_ms: stall.after_ms,
                        quiet_ms: now - stall.active_at.max(stall.nudged_at.unwrap_or(0)),
                        nudged: stall.nudged_at.is_some(),
                    }),
                    rate_limit: self.limit_view(&task.id),
                }
            });
        let launch = sheep.launch.clone().unwrap_or_default();
        let runs = self.runs_of(sheep);
        let since = task
            .as_ref()
            .filter(|t| t.state == TaskState::Waiting)
            .and_then(|t| t.waiting_ms.map(|waited| now - waited))
            .or(sheep.since)
            .unwrap_or(sheep.created_at);
        SheepStatus {
            agent_id: sheep.id.clone(),
            agent: sheep.agent.clone(),
            label: sheep.label.clone(),
            display_name: sheep.display_name(),
            backend: sheep.backend,
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
            pid: launch.pid,
            runtime: sheep.runtime,
            model: runs.model.or_else(|| sheep.model.clone()),
            since,
            pane: launch.pane,
            window: launch.window,
            usage: runs.usage,
            last_line: sheep
                .exit
                .as_ref()
                .and_then(|exit| last_line(&exit.tail))
                .or(runs.last_words),
            worktree: sheep
                .worktree
                .as_ref()
                .map(crate::worktree::SheepWorktree::place),
            host: sheep.host().map(str::to_owned),
            sandbox: sheep
                .recipe
                .as_ref()
                .and_then(|recipe| recipe.sandbox)
                .filter(|sandbox| sandbox.is_on()),
            limits: sheep.recipe.as_ref().and_then(|recipe| recipe.limits),
            limits_by: launch.limits.clone(),
            link_down_since: None,
            resumes: (sheep.resumes > 0).then_some(sheep.resumes),
            messages: Vec::new(),
        }
    }

    /// What a sheep's settled runs tell: usage summed over its tasks, the model and the last
    /// line of the latest that reported them.
    fn runs_of(&self, sheep: &Sheep) -> Runs {
        let mut runs = Runs::default();
        let mut usage = Usage::default();
        let mut any = false;
        for task in self.tasks.values().filter(|t| t.agent_id == sheep.id) {
            let Some(output) = &task.output else { continue };
            any |= usage.add_telemetry(&output.telemetry);
            if let Some(model) = output.telemetry.get("model").and_then(|m| m.as_str()) {
                runs.model = Some(model.to_owned());
            }
            if let Some(line) = last_line(&output.text) {
                runs.last_words = Some(line);
            }
        }
        runs.usage = any.then_some(usage);
        runs
    }

    /// Settled tasks, newest first, at most [`SETTLED_LISTED`].
    pub fn settled_view(&self) -> Vec<SettledTask> {
        let mut settled: Vec<SettledTask> = self
            .tasks
            .values()
            .filter_map(|task| {
                let result = task.result.as_ref()?;
                let outcome = result
                    .summary
                    .as_deref()
                    .or(result.error.as_deref())
                    .map(first_line)
                    .filter(|line| !line.is_empty());
                let branch = self.branch_of(task);
                Some(SettledTask {
                    task_id: task.id.clone(),
                    agent_id: task.agent_id.clone(),
                    display_name: self
                        .sheep
                        .get(&task.agent_id)
                        .map_or_else(|| task.agent_id.to_string(), Sheep::display_name),
                    title: first_line(&task.description),
                    status: result.status,
                    return_code: result.return_code,
                    outcome,
                    started_at: task.started_at.unwrap_or(task.created_at),
                    completed_at: result.completed_at,
                    note: task.note.as_ref().map(|n| n.note.clone()),
                    branch: branch.clone(),
                    landed: branch.and_then(|branch| self.landing_of(&branch)),
                })
            })
            .collect();
        // Stable: tasks settled in the same millisecond keep their creation order, reversed.
        settled.reverse();
        settled.sort_by_key(|t| std::cmp::Reverse(t.completed_at));
        settled.truncate(SETTLED_LISTED);
        settled
    }

    /// The fieldnotes session the latest task with a note went to.
    pub fn latest_session(&self) -> Option<SessionLink> {
        self.tasks.values().rev().find_map(|task| {
            task.note.as_ref().map(|note| SessionLink {
                name: note.session_name.clone(),
                relative: note.session_relative.clone(),
            })
        })
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
        // A sheep held for a provider limit is handed nothing that could start a turn.
        if let Participant::Sheep(id) = who
            && self.turn_held(id)
        {
            return Vec::new();
        }
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

/// What a sheep's settled runs reported.
#[derive(Default)]
struct Runs {
    usage: Option<Usage>,
    model: Option<String>,
    last_words: Option<String>,
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
    let Some(inbox) = tx.herd().inboxes.get(who) else {
        return;
    };
    let has = inbox.items.front().is_some_and(|i| i.seq <= seq);
    // Taking Shepherd's own reminders (a stall check, a resume) is not the sheep's activity:
    // a silent sheep's supervisor acknowledging the stall check must not restart its clock.
    let more_than_reminders = inbox
        .items
        .iter()
        .take_while(|i| i.seq <= seq)
        .any(|i| !matches!(&i.payload, Payload::Envelope { envelope } if envelope.kind == crate::envelope::Kind::Reminder));
    if has {
        let at = Some(tx.now());
        tx.emit(Event::Acked {
            who: who.clone(),
            seq,
            at,
        });
        if let (Participant::Sheep(id), true) = (who, more_than_reminders) {
            super::steps::touch(tx, id);
        }
    }
}
