//! What a person (or a calling program) sees while a run works: one line per task with its
//! agent, state and elapsed time.
//!
//! Progress always goes to stderr, so stdout carries only the result (and with `--json`,
//! exactly one JSON document). On a terminal the lines are redrawn in place (`live`); when
//! stderr is a pipe or a file, a plain line is written whenever a task changes state
//! (`plain`); `jsonl` writes one JSON object per change for programs such as the pi
//! `subagent` tool; `off` writes nothing. `auto` picks `live` or `plain`.

use std::io::{IsTerminal as _, Write as _};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use clap::ValueEnum;
use serde_json::json;
use shepherd_core::run::{StepPhase, StepStatus};

/// How progress is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ProgressMode {
    /// `live` when stderr is a terminal, else `plain`.
    Auto,
    /// Lines redrawn in place.
    Live,
    /// One line per state change.
    Plain,
    /// One JSON object per state change.
    Jsonl,
    /// Nothing.
    Off,
}

/// Where a task is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Phase {
    /// Waiting for its turn (a concurrency slot, or the previous chain step).
    Queued,
    /// Its sheep is being started and handed the task.
    Starting,
    /// Its sheep works on it.
    Running,
    /// Its task waits out a provider limit: what `status` says of it, when it ends (ms) and
    /// the provider.
    Limited {
        words: String,
        until: i64,
        provider: String,
    },
    /// Its task went on with its agent's fallback after a limit: the fallback as shown.
    FellBack(String),
    /// Its sheep is being closed.
    Closing,
    /// Finished with this status (`completed`, `failed`, `cancelled`, `skipped`, …).
    Done(StepStatus),
}

impl Phase {
    fn word(&self) -> &str {
        match self {
            Self::Queued => "queued",
            Self::Starting => "starting",
            Self::Running | Self::FellBack(_) => "running",
            Self::Limited { .. } => "rate-limited",
            Self::Closing => "closing",
            Self::Done(status) => status.as_str(),
        }
    }
}

#[derive(Debug)]
struct Row {
    agent: String,
    phase: Phase,
    started: Option<Instant>,
    took: Option<Duration>,
    task_id: Option<String>,
    /// The host its sheep runs on, when not this machine.
    host: Option<String>,
}

impl Row {
    fn elapsed(&self) -> Option<Duration> {
        self.took.or_else(|| self.started.map(|s| s.elapsed()))
    }
}

#[derive(Debug)]
struct State {
    rows: Vec<Row>,
    /// Lines drawn by the last live redraw.
    drawn: usize,
}

/// The progress display of one run.
#[derive(Debug)]
pub(super) struct Progress {
    mode: ProgressMode,
    state: Mutex<State>,
}

impl Progress {
    /// A display for tasks of these agents, in input order.
    pub(super) fn new(mode: ProgressMode, agents: &[String]) -> Self {
        let mode = match mode {
            ProgressMode::Auto if std::io::stderr().is_terminal() => ProgressMode::Live,
            ProgressMode::Auto => ProgressMode::Plain,
            other => other,
        };
        let rows = agents
            .iter()
            .map(|agent| Row {
                agent: agent.clone(),
                phase: Phase::Queued,
                started: None,
                took: None,
                task_id: None,
                host: None,
            })
            .collect();
        Self {
            mode,
            state: Mutex::new(State { rows, drawn: 0 }),
        }
    }

    /// Whether the display wants a redraw every second (elapsed times move).
    pub(super) fn is_live(&self) -> bool {
        self.mode == ProgressMode::Live
    }

    /// Names the run (so it can be followed again with `--attach`), then draws the lines.
    pub(super) fn start(&self, run_id: &str) {
        match self.mode {
            ProgressMode::Plain => write_stderr(&format!("run {run_id}\n")),
            ProgressMode::Jsonl => {
                write_stderr(&format!("{}\n", json!({ "event": "run", "runId": run_id })));
            }
            _ => {}
        }
        if self.is_live() {
            self.redraw();
        }
    }

    /// Records that task `index` has its task id.
    fn task_id(&self, index: usize, task_id: &str) {
        let mut state = self.state.lock().expect("progress lock");
        if let Some(row) = state.rows.get_mut(index) {
            row.task_id = Some(task_id.to_owned());
        }
    }

    /// Records the host task `index` runs on.
    fn host(&self, index: usize, host: &str) {
        let mut state = self.state.lock().expect("progress lock");
        if let Some(row) = state.rows.get_mut(index) {
            row.host = Some(host.to_owned());
        }
    }

    /// Shows the run as the broker pushed it.
    pub(super) fn update(&self, view: &shepherd_core::protocol::RunView) {
        for (index, step) in view.steps.iter().enumerate() {
            if let Some(task_id) = &step.task_id {
                self.task_id(index, task_id);
            }
            if let Some(host) = &step.host {
                self.host(index, host);
            }
            let phase = match (step.phase, step.status) {
                (StepPhase::Done, Some(status)) => Phase::Done(status),
                (StepPhase::Starting, _) => Phase::Starting,
                (StepPhase::Running, _) => match &step.rate_limit {
                    Some(limit) => Phase::Limited {
                        words: limit.describe(),
                        until: limit.until,
                        provider: limit.provider.clone(),
                    },
                    None => match &step.fell_back_to {
                        Some(fallback) => Phase::FellBack(fallback.clone()),
                        None => Phase::Running,
                    },
                },
                (StepPhase::Closing, _) => Phase::Closing,
                (StepPhase::Queued | StepPhase::Done, _) => Phase::Queued,
            };
            // Starting and closing can pass between two pushes; show them in order anyway.
            self.set(index, phase);
        }
    }

    /// Moves task `index` to `phase` and shows it.
    pub(super) fn set(&self, index: usize, phase: Phase) {
        let line = {
            let mut state = self.state.lock().expect("progress lock");
            let total = state.rows.len();
            let Some(row) = state.rows.get_mut(index) else {
                return;
            };
            if row.phase == phase {
                return;
            }
            if phase == Phase::Starting && row.started.is_none() {
                row.started = Some(Instant::now());
            }
            if matches!(phase, Phase::Done(_)) {
                row.took = row.started.map(|s| s.elapsed());
            }
            row.phase = phase;
            match self.mode {
                ProgressMode::Plain => Some(plain_line(index, total, row)),
                ProgressMode::Jsonl => Some(json_line(index, total, row)),
                _ => None,
            }
        };
        match line {
            // A plain line may carry a sheep's words; a JSON line escapes them itself.
            Some(line) => {
                let shown = shepherd_core::printable::printable(&line);
                write_stderr(&format!("{shown}\n"));
            }
            None if self.is_live() => self.redraw(),
            None => {}
        }
    }

    /// Redraws the live lines in place.
    pub(super) fn redraw(&self) {
        if !self.is_live() {
            return;
        }
        let mut state = self.state.lock().expect("progress lock");
        let (width, height) = terminal_size();
        let lines = live_lines(&state.rows, height);
        let mut out = String::new();
        if state.drawn > 0 {
            out.push_str(&format!("\x1b[{}A", state.drawn));
        }
        for line in &lines {
            // Only the drawing's own escapes reach the terminal, never a sheep's.
            let line: String = shepherd_core::printable::printable(line)
                .chars()
                .filter(|c| *c != '\n')
                .take(width)
                .collect();
            out.push_str(&format!("\r\x1b[2K{line}\n"));
        }
        // A shorter block than last time: clear what is left of the old one below.
        for _ in lines.len()..state.drawn {
            out.push_str("\r\x1b[2K\n");
        }
        if state.drawn > lines.len() {
            out.push_str(&format!("\x1b[{}A", state.drawn - lines.len()));
        }
        state.drawn = lines.len();
        drop(state);
        write_stderr(&out);
    }
}

fn seconds(elapsed: Option<Duration>) -> String {
    elapsed.map_or_else(String::new, |d| format!("{:.1}s", d.as_secs_f64()))
}

fn plain_line(index: usize, total: usize, row: &Row) -> String {
    let mut line = format!(
        "[{}/{total}] {}: {}",
        index + 1,
        row.agent,
        match &row.phase {
            Phase::Limited { words, .. } => words.clone(),
            Phase::FellBack(fallback) => format!("fell back to {fallback}"),
            phase => phase.word().to_owned(),
        }
    );
    if let Some(host) = row.host.as_ref().filter(|_| row.phase != Phase::Queued) {
        line.push_str(&format!(" on host {host}"));
    }
    match &row.phase {
        Phase::Running | Phase::Limited { .. } | Phase::FellBack(_) => {
            if let Some(id) = &row.task_id {
                line.push_str(&format!(" (task {id})"));
            }
        }
        Phase::Done(_) if row.started.is_some() => {
            line.push_str(&format!(" in {}", seconds(row.elapsed())));
        }
        _ => {}
    }
    line
}

fn json_line(index: usize, total: usize, row: &Row) -> String {
    json!({
        "event": "progress",
        "index": index,
        "total": total,
        "agent": row.agent,
        "state": row.phase.word(),
        "taskId": row.task_id,
        "host": row.host,
        "elapsedMs": row.elapsed().map(|d| d.as_millis() as u64),
        "rateLimit": match &row.phase {
            Phase::Limited { words, until, provider } => {
                json!({"until": until, "provider": provider, "text": words})
            }
            _ => serde_json::Value::Null,
        },
        "fellBackTo": match &row.phase {
            Phase::FellBack(fallback) => json!(fallback),
            _ => serde_json::Value::Null,
        },
    })
    .to_string()
}

fn live_line(index: usize, total: usize, row: &Row) -> String {
    let mark = match &row.phase {
        Phase::Queued => "·",
        Phase::Starting | Phase::Running | Phase::FellBack(_) | Phase::Closing => "▸",
        Phase::Limited { .. } => "⏸",
        Phase::Done(StepStatus::Completed) => "✓",
        Phase::Done(_) => "✗",
    };
    let width = total.to_string().len();
    let mut line = format!(
        "{mark} [{:>width$}/{total}] {:<16} {:<10} {}",
        index + 1,
        row.agent,
        row.phase.word(),
        seconds(row.elapsed())
    );
    if let Some(host) = &row.host {
        line.push_str(&format!("  on host {host}"));
    }
    match &row.phase {
        Phase::Limited { words, .. } => format!("{line}  {words}"),
        Phase::FellBack(fallback) => format!("{line}  fell back to {fallback}"),
        _ => line,
    }
}

/// The live lines for a block at most `max` lines tall. Redrawing in place moves the cursor up
/// over the block, which cannot reach above the top of the terminal; so when the rows do not
/// fit, the rows in progress are shown first, then the others in input order, and the last line
/// counts what is hidden.
fn live_lines(rows: &[Row], max: usize) -> Vec<String> {
    let total = rows.len();
    if total <= max {
        return rows
            .iter()
            .enumerate()
            .map(|(index, row)| live_line(index, total, row))
            .collect();
    }
    let in_progress = |row: &Row| {
        matches!(
            row.phase,
            Phase::Starting
                | Phase::Running
                | Phase::Limited { .. }
                | Phase::FellBack(_)
                | Phase::Closing
        )
    };
    let room = max.saturating_sub(1).max(1);
    let mut shown: Vec<usize> = (0..total)
        .filter(|&i| in_progress(&rows[i]))
        .chain((0..total).filter(|&i| !in_progress(&rows[i])))
        .take(room)
        .collect();
    shown.sort_unstable();
    let mut hidden = (0, 0, 0);
    for (index, row) in rows.iter().enumerate() {
        if shown.binary_search(&index).is_err() {
            match row.phase {
                Phase::Queued => hidden.0 += 1,
                Phase::Done(_) => hidden.1 += 1,
                _ => hidden.2 += 1,
            }
        }
    }
    let mut lines: Vec<String> = shown
        .iter()
        .map(|&index| live_line(index, total, &rows[index]))
        .collect();
    let counts = [
        (hidden.2, "in progress"),
        (hidden.1, "finished"),
        (hidden.0, "queued"),
    ]
    .into_iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, what)| format!("{n} {what}"))
    .collect::<Vec<_>>()
    .join(", ");
    lines.push(format!("… {} more tasks ({counts})", total - shown.len()));
    lines
}

/// The usable width and the most lines the live block may take (one row is kept for the
/// cursor); 120 × 24 when stderr is not a terminal that says.
fn terminal_size() -> (usize, usize) {
    let size = rustix::termios::tcgetwinsize(std::io::stderr()).ok();
    let width = size
        .map(|size| usize::from(size.ws_col))
        .filter(|cols| *cols > 10)
        .map_or(120, |cols| cols - 1);
    let height = size
        .map(|size| usize::from(size.ws_row))
        .filter(|rows| *rows > 2)
        .map_or(23, |rows| rows - 1);
    (width, height)
}

fn write_stderr(text: &str) {
    let mut stderr = std::io::stderr().lock();
    // A closed stderr must not stop the run; progress is only a view.
    let _ignored = stderr.write_all(text.as_bytes());
    let _flushed = stderr.flush();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_name_the_task_agent_and_state() {
        let row = Row {
            agent: "worker".into(),
            phase: Phase::Running,
            started: None,
            took: None,
            task_id: Some("t-1".into()),
            host: None,
        };
        assert_eq!(plain_line(0, 2, &row), "[1/2] worker: running (task t-1)");
        let done = Row {
            phase: Phase::Done(StepStatus::Failed),
            started: Some(Instant::now()),
            took: Some(Duration::from_millis(1500)),
            ..row
        };
        assert_eq!(plain_line(1, 2, &done), "[2/2] worker: failed in 1.5s");
        let skipped = Row {
            phase: Phase::Done(StepStatus::Skipped),
            started: None,
            took: None,
            agent: "b".into(),
            task_id: None,
            host: None,
        };
        assert_eq!(plain_line(1, 2, &skipped), "[2/2] b: skipped");
        let json: serde_json::Value = serde_json::from_str(&json_line(1, 2, &done)).unwrap();
        assert_eq!(json["state"], "failed");
        assert_eq!(json["elapsedMs"], 1500);
        assert!(live_line(1, 2, &done).starts_with("✗ [2/2] worker"));
    }

    /// A task whose sheep runs on a host says so in every form, once it is under way.
    #[test]
    fn a_task_on_a_host_says_where_it_runs() {
        let queued = Row {
            agent: "scribe".into(),
            phase: Phase::Queued,
            started: None,
            took: None,
            task_id: None,
            host: Some("host-a".into()),
        };
        assert_eq!(plain_line(1, 2, &queued), "[2/2] scribe: queued");
        let running = Row {
            phase: Phase::Running,
            task_id: Some("t-2".into()),
            ..queued
        };
        assert_eq!(
            plain_line(1, 2, &running),
            "[2/2] scribe: running on host host-a (task t-2)"
        );
        assert!(live_line(1, 2, &running).ends_with("on host host-a"));
        let json: serde_json::Value = serde_json::from_str(&json_line(1, 2, &running)).unwrap();
        assert_eq!(json["host"], "host-a");
    }

    #[test]
    fn a_task_waiting_out_a_limit_says_so_with_its_reset_and_provider() {
        let row = Row {
            agent: "worker".into(),
            phase: Phase::Limited {
                words: "rate-limited until 14:05:09 (anthropic)".into(),
                until: 1_000,
                provider: "anthropic".into(),
            },
            started: None,
            took: None,
            task_id: Some("t-1".into()),
            host: None,
        };
        assert_eq!(
            plain_line(0, 1, &row),
            "[1/1] worker: rate-limited until 14:05:09 (anthropic) (task t-1)"
        );
        let json: serde_json::Value = serde_json::from_str(&json_line(0, 1, &row)).unwrap();
        assert_eq!(json["state"], "rate-limited");
        assert_eq!(json["rateLimit"]["until"], 1_000);
        assert_eq!(json["rateLimit"]["provider"], "anthropic");
        assert!(live_line(0, 1, &row).ends_with("rate-limited until 14:05:09 (anthropic)"));
    }

    #[test]
    fn a_task_its_fallback_took_over_names_the_fallback_and_its_account() {
        let fallback =
            "worker (fallback, claude-code, WORK_KEY): fix (anthropic, account WORK_KEY)";
        let row = Row {
            agent: "worker".into(),
            phase: Phase::FellBack(fallback.into()),
            started: None,
            took: None,
            task_id: Some("t-1".into()),
            host: None,
        };
        assert_eq!(
            plain_line(0, 1, &row),
            format!("[1/1] worker: fell back to {fallback} (task t-1)")
        );
        let json: serde_json::Value = serde_json::from_str(&json_line(0, 1, &row)).unwrap();
        assert_eq!(json["state"], "running");
        assert_eq!(json["fellBackTo"], fallback);
        assert!(live_line(0, 1, &row).ends_with(&format!("fell back to {fallback}")));
    }

    fn rows(phases: &[Phase]) -> Vec<Row> {
        phases
            .iter()
            .enumerate()
            .map(|(i, phase)| Row {
                agent: format!("a{i}"),
                phase: phase.clone(),
                started: None,
                took: None,
                task_id: None,
                host: None,
            })
            .collect()
    }

    #[test]
    fn a_block_taller_than_the_terminal_keeps_the_running_rows_and_counts_the_rest() {
        let done = Phase::Done(StepStatus::Completed);
        let all = rows(&[
            done.clone(),
            done,
            Phase::Queued,
            Phase::Running,
            Phase::Queued,
            Phase::Running,
        ]);
        assert_eq!(live_lines(&all, 6).len(), 6, "they fit: every row");
        let lines = live_lines(&all, 4);
        assert_eq!(lines.len(), 4, "{lines:#?}");
        assert!(lines[0].contains("[1/6] a0"), "{lines:#?}");
        assert!(lines[1].contains("[4/6] a3"), "{lines:#?}");
        assert!(lines[2].contains("[6/6] a5"), "{lines:#?}");
        assert_eq!(lines[3], "… 3 more tasks (1 finished, 2 queued)");
    }
}
