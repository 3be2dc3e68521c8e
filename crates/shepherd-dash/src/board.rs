//! What the dashboard shows, worked out from the last pushed herd view and a clock: one row per
//! sheep, the settled tasks, the totals in the header. Pure: no terminal, no broker, no clock of
//! its own (`now` comes in), so every rule here is tested on plain values.

use shepherd_core::herd::limits::LimitView;
use shepherd_core::herd::{SettledTask, SheepStatus};
use shepherd_core::protocol::HerdResult;
use shepherd_core::task::TaskState;

/// A sheep's state as the dashboard tells it apart (and colours it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum State {
    /// Its task waits for an answer.
    Waiting,
    /// It settled its task blocked.
    Blocked,
    /// Its task failed, or it never started.
    Failed,
    /// Its process ended.
    Exited,
    /// Its host cannot be reached: what it does now is not known.
    LinkDown,
    /// Its task waits out a provider's rate or usage limit (or a server error).
    Limited,
    /// In a turn.
    Working,
    /// Launched, not yet running.
    Starting,
    /// Between turns, or without a task.
    Idle,
    /// It completed its task.
    Done,
    /// Being closed.
    Closing,
}

impl State {
    /// The state of `sheep`.
    pub(crate) fn of(sheep: &SheepStatus) -> Self {
        if sheep.link_down_since.is_some() {
            return Self::LinkDown;
        }
        if sheep
            .task
            .as_ref()
            .is_some_and(|t| t.state == TaskState::Waiting)
        {
            return Self::Waiting;
        }
        if sheep.task.as_ref().is_some_and(|t| t.rate_limit.is_some()) {
            return Self::Limited;
        }
        match sheep.state.as_str() {
            "starting" => Self::Starting,
            "working" => Self::Working,
            "done" => Self::Done,
            "blocked" => Self::Blocked,
            "failed" => Self::Failed,
            "exited" => Self::Exited,
            "closing" | "closed" => Self::Closing,
            _ => Self::Idle,
        }
    }

    /// Its word on screen.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Self::Waiting => "waiting",
            Self::Blocked => "blocked",
            Self::Failed => "failed",
            Self::Exited => "exited",
            Self::LinkDown => "link down",
            Self::Limited => "limited",
            Self::Working => "working",
            Self::Starting => "starting",
            Self::Idle => "idle",
            Self::Done => "done",
            Self::Closing => "closing",
        }
    }
}

/// One sheep's line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Row {
    /// Its agent id (never shown; actions name it).
    pub(crate) agent_id: String,
    /// `<agent>: <label>`.
    pub(crate) name: String,
    /// What runs it (`pi`, `command`; a harness name once sheep carry one).
    pub(crate) harness: String,
    /// Its model, when known.
    pub(crate) model: String,
    /// Its backend and where on it: `tmux %3`, `herdr w1:p2`, `headless`.
    pub(crate) place: String,
    /// Its backend alone.
    pub(crate) backend: shepherd_core::backend::BackendKind,
    pub(crate) state: State,
    /// How long it has been in that state.
    pub(crate) age: String,
    /// The open (or last) task's first line.
    pub(crate) task: String,
    /// How long the open task has run; empty without one.
    pub(crate) elapsed: String,
    /// Who it waits on, and the question.
    pub(crate) waits: String,
    /// Tokens and cost so far, when known.
    pub(crate) usage: String,
    /// The last line it printed.
    pub(crate) last: String,
    /// The open (or last) task's note.
    pub(crate) note: Option<String>,
    /// The question it waits on the shepherd for, so a message answers it.
    pub(crate) pending_request: Option<String>,
    /// Seconds in its state, for sorting.
    pub(crate) age_ms: i64,
}

/// A settled task's line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SettledRow {
    pub(crate) name: String,
    pub(crate) task: String,
    pub(crate) status: TaskState,
    /// `completed`, `blocked rc 2`, `failed rc 3`, …
    pub(crate) outcome: String,
    /// The summary or error's first line.
    pub(crate) detail: String,
    /// How long it ran.
    pub(crate) took: String,
    /// How long ago it settled.
    pub(crate) ago: String,
    pub(crate) note: Option<String>,
}

/// How rows are ordered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum Sort {
    /// As spawned.
    #[default]
    Spawned,
    /// What needs a person first: waiting, blocked, failed, exited, then the rest.
    State,
    /// By display name.
    Name,
    /// Longest in its state first.
    Age,
}

impl Sort {
    /// The next order, round the cycle.
    pub(crate) fn next(self) -> Self {
        match self {
            Self::Spawned => Self::State,
            Self::State => Self::Name,
            Self::Name => Self::Age,
            Self::Age => Self::Spawned,
        }
    }

    pub(crate) fn label(self) -> &'static str {
        match self {
            Self::Spawned => "spawn order",
            Self::State => "state",
            Self::Name => "name",
            Self::Age => "age",
        }
    }
}

/// The rows of `herd` at broker time `now`, filtered (case-insensitive substring of name,
/// state, task, harness or model) and sorted.
pub(crate) fn rows(herd: &HerdResult, now: i64, filter: &str, sort: Sort) -> Vec<Row> {
    let needle = filter.trim().to_lowercase();
    let mut rows: Vec<Row> = herd
        .sheep
        .iter()
        .map(|sheep| row(sheep, &herd.settled, now))
        .filter(|row| needle.is_empty() || matches(row, &needle))
        .collect();
    match sort {
        Sort::Spawned => {}
        Sort::State => rows.sort_by_key(|r| r.state),
        Sort::Name => rows.sort_by(|a, b| a.name.cmp(&b.name)),
        Sort::Age => rows.sort_by_key(|r| std::cmp::Reverse(r.age_ms)),
    }
    rows
}

fn matches(row: &Row, needle: &str) -> bool {
    [
        row.name.as_str(),
        row.state.label(),
        &row.task,
        &row.harness,
        &row.model,
    ]
    .iter()
    .any(|field| field.to_lowercase().contains(needle))
}

fn row(sheep: &SheepStatus, settled: &[SettledTask], now: i64) -> Row {
    let state = State::of(sheep);
    let task = sheep.task.as_ref();
    // Without an open task, the row names the last one it settled.
    let last_settled = settled.iter().find(|t| t.agent_id == sheep.agent_id);
    let open = task.filter(|t| !t.state.is_terminal());
    let waits = open
        .and_then(|t| {
            t.waiting_on
                .as_ref()
                .map(|who| match &t.question {
                    Some(question) if !question.is_empty() => format!("{who}: {question}"),
                    _ => who.clone(),
                })
                .or_else(|| t.rate_limit.as_ref().map(LimitView::describe))
        })
        .unwrap_or_default();
    let age_ms = (now - sheep.since).max(0);
    Row {
        agent_id: sheep.agent_id.to_string(),
        name: sheep.display_name.clone(),
        harness: harness(sheep).to_owned(),
        model: sheep.model.clone().unwrap_or_default(),
        place: place(sheep),
        backend: sheep.backend,
        state,
        age: duration(age_ms),
        task: task
            .map(|t| t.title.clone())
            .or_else(|| last_settled.map(|t| t.title.clone()))
            .unwrap_or_default(),
        elapsed: open
            .map(|t| duration(now - t.started_at.unwrap_or(t.created_at)))
            .unwrap_or_default(),
        waits,
        usage: sheep.usage.as_ref().map(usage).unwrap_or_default(),
        last: sheep
            .last_line
            .clone()
            .or_else(|| sheep.error.clone())
            .unwrap_or_default(),
        note: task
            .and_then(|t| t.note.clone())
            .or_else(|| last_settled.and_then(|t| t.note.clone())),
        pending_request: open
            .filter(|t| t.waiting_on.as_deref() == Some("shepherd"))
            .and_then(|t| t.pending_request.as_ref())
            .map(ToString::to_string),
        age_ms,
    }
}

/// The harness column: what runs the sheep (`command`, `pi`, `claude-code`, `codex`, …).
fn harness(sheep: &SheepStatus) -> &'static str {
    sheep.runtime.as_str()
}

/// Where a sheep runs: its backend, with the pane on a visible one, `@host` on a host, and `⎇`
/// when it works in its own git worktree (`--isolate`).
fn place(sheep: &SheepStatus) -> String {
    let mut place = match &sheep.pane {
        Some(pane) => format!("{} {pane}", sheep.backend),
        None => sheep.backend.to_string(),
    };
    if let Some(host) = &sheep.host {
        place.push_str(&format!(" @{host}"));
    }
    if sheep.worktree.is_some() {
        place.push_str(" ⎇");
    }
    place
}

/// The settled tasks of `herd` at broker time `now`, filtered like the rows (by name, task
/// or outcome).
pub(crate) fn settled(herd: &HerdResult, now: i64, filter: &str) -> Vec<SettledRow> {
    let needle = filter.trim().to_lowercase();
    herd.settled
        .iter()
        .map(|t| settled_row(t, now))
        .filter(|t| {
            needle.is_empty()
                || [&t.name, &t.task, &t.outcome]
                    .iter()
                    .any(|field| field.to_lowercase().contains(&needle))
        })
        .collect()
}

fn settled_row(task: &SettledTask, now: i64) -> SettledRow {
    let outcome = match task.status {
        TaskState::Completed => "completed".to_owned(),
        TaskState::Cancelled => "cancelled".to_owned(),
        status => format!("{} rc {}", status.as_str(), task.return_code),
    };
    SettledRow {
        name: task.display_name.clone(),
        task: task.title.clone(),
        status: task.status,
        outcome,
        detail: task.outcome.clone().unwrap_or_default(),
        took: duration(task.completed_at - task.started_at),
        ago: format!("{} ago", duration(now - task.completed_at)),
        note: task.note.clone(),
    }
}

/// The header's totals: sheep per state, tokens and cost, settled tasks per outcome.
pub(crate) fn totals(herd: &HerdResult) -> String {
    let mut parts = Vec::new();
    let count = herd.sheep.len();
    let mut states: Vec<(State, usize)> = Vec::new();
    for sheep in &herd.sheep {
        let state = State::of(sheep);
        match states.iter_mut().find(|(s, _)| *s == state) {
            Some((_, n)) => *n += 1,
            None => states.push((state, 1)),
        }
    }
    states.sort();
    let breakdown: Vec<String> = states
        .iter()
        .map(|(state, n)| format!("{n} {}", state.label()))
        .collect();
    if breakdown.is_empty() {
        parts.push("no sheep".to_owned());
    } else {
        parts.push(format!("{count} sheep: {}", breakdown.join(" · ")));
    }
    let mut total = shepherd_core::herd::Usage::default();
    let mut known = false;
    for sheep in &herd.sheep {
        if let Some(u) = &sheep.usage {
            known = true;
            total.tokens_in += u.tokens_in;
            total.tokens_out += u.tokens_out;
            total.tokens += u.tokens;
            total.cost += u.cost;
        }
    }
    if known {
        parts.push(usage(&total));
    }
    if !herd.settled.is_empty() {
        let mut outcomes: Vec<(TaskState, usize)> = Vec::new();
        for task in &herd.settled {
            match outcomes.iter_mut().find(|(s, _)| *s == task.status) {
                Some((_, n)) => *n += 1,
                None => outcomes.push((task.status, 1)),
            }
        }
        let outcomes: Vec<String> = outcomes
            .iter()
            .map(|(status, n)| format!("{n} {}", status.as_str()))
            .collect();
        parts.push(format!(
            "{} settled: {}",
            herd.settled.len(),
            outcomes.join(" · ")
        ));
    }
    parts.join("  ·  ")
}

/// `1.2k tok $0.04`: tokens in and out together (with the open task's so far), and cost when
/// there was any.
pub(crate) fn usage(usage: &shepherd_core::herd::Usage) -> String {
    let tokens = tokens(usage.tokens_in + usage.tokens_out + usage.tokens);
    if usage.cost > 0.0 {
        format!("{tokens} tok ${:.2}", usage.cost)
    } else {
        format!("{tokens} tok")
    }
}

/// A token count the way people read it: `950`, `12.3k`, `4.1M`.
pub(crate) fn tokens(n: u64) -> String {
    #[allow(clippy::cast_precision_loss)]
    let value = n as f64;
    match n {
        0..1_000 => n.to_string(),
        1_000..999_950 => format!("{:.1}k", value / 1e3),
        _ => format!("{:.1}M", value / 1e6),
    }
}

/// A duration in two units at most: `42s`, `3m05s`, `2h05m`, `3d04h`.
pub(crate) fn duration(ms: i64) -> String {
    let secs = ms.max(0) / 1000;
    match secs {
        0..60 => format!("{secs}s"),
        60..3600 => format!("{}m{:02}s", secs / 60, secs % 60),
        3600..86_400 => format!("{}h{:02}m", secs / 3600, secs % 3600 / 60),
        _ => format!("{}d{:02}h", secs / 86_400, secs % 86_400 / 3600),
    }
}

#[cfg(test)]
mod tests;
