//! A finished run's report: the document `shepherd run --json` prints, built by the broker so
//! every front end (the CLI, the pi `subagent` tool, MCP) gets the same one.
//!
//! Each task's final text goes out whole up to 50 KiB; a longer text is cut there and its full
//! form is written to a private file (mode 0600, in `<runtime dir>/results/`, the per-user
//! directory that also holds the broker sockets — the note keeps the full text durably), whose
//! path the result names. `exitCode` is the return code of the first task, in input order, that
//! did not complete — 0 when all did, 130 when the run was cancelled.

use std::os::unix::fs::DirBuilderExt as _;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;
use shepherd_notes::Mode;

use super::model::{Outcome, Plan as PlanResult, RunSpec};

/// Longest result text shown whole.
pub(crate) const MAX_TEXT_BYTES: usize = 50 * 1024;

/// Exit status of a cancelled run.
const EXIT_CANCELLED: u8 = 130;

/// The report.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct RunDocument<'a> {
    run_id: &'a str,
    mode: &'static str,
    /// The fieldnotes session (absent when the run wrote no notes).
    session_name: Option<&'a str>,
    session_path: Option<&'a str>,
    session_relative_path: Option<&'a str>,
    resumed: bool,
    results: Vec<ResultDocument<'a>>,
    /// Tasks that completed, and all tasks.
    succeeded: usize,
    total: usize,
    /// For a chain that stopped: which step, and how it ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    stopped: Option<Stopped<'a>>,
    /// Whether the run was cancelled (a signal, an explicit cancel, or its client gone).
    interrupted: bool,
    /// Why it was cancelled.
    #[serde(skip_serializing_if = "Option::is_none")]
    cancelled: Option<&'a str>,
    /// The exit status `shepherd run` gives it.
    exit_code: u8,
    /// Worktrees left for the user to integrate or discard, and remote sheep's branches
    /// brought home (absent when none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    worktrees: Vec<Value>,
    /// Problems that did not change any result (e.g. a note that could not be finalised).
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    warnings: &'a [String],
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct ResultDocument<'a> {
    agent: &'a str,
    agent_id: Option<&'a str>,
    task_id: Option<&'a str>,
    status: &'a str,
    return_code: Option<i32>,
    text: String,
    error: Option<&'a str>,
    note: Option<&'a str>,
    note_relative: Option<&'a str>,
    full_output: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    worktree: Option<Value>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Stopped<'a> {
    /// 1-based step number.
    step: usize,
    agent: &'a str,
    status: &'a str,
    /// `failed (rc 1)`.
    phrase: String,
}

/// Everything the report is built from.
pub(crate) struct Finished<'a> {
    pub(crate) run_id: &'a str,
    pub(crate) spec: &'a RunSpec,
    pub(crate) plan: &'a PlanResult,
    pub(crate) outcomes: &'a [Outcome],
    pub(crate) cancelled: Option<&'a str>,
    pub(crate) warnings: &'a [String],
    pub(crate) results_dir: &'a Path,
}

/// Builds the report.
pub(crate) fn build(run: &Finished<'_>) -> Value {
    let agents: Vec<&str> = run.spec.steps.iter().map(|s| s.agent.as_str()).collect();
    let shown: Vec<ShownText> = run
        .outcomes
        .iter()
        .enumerate()
        .map(|(index, outcome)| {
            let name = format!(
                "{}-t{}-{}",
                run.run_id,
                index + 1,
                shepherd_core::slug::agent_slug(agents[index])
            );
            shown_text(&outcome.text, run.results_dir, &name)
        })
        .collect();
    let stopped_at = (run.spec.mode == Mode::Chain)
        .then(|| run.outcomes.iter().position(|o| !o.completed()))
        .flatten();
    let exit_code = if run.cancelled.is_some() {
        EXIT_CANCELLED
    } else {
        run.outcomes
            .iter()
            .filter(|o| !o.completed())
            .find_map(|o| o.return_code)
            .map_or(0, |rc| u8::try_from(rc).unwrap_or(1).max(1))
    };
    let kept: Vec<Value> = run
        .outcomes
        .iter()
        .filter_map(|o| o.worktree.as_ref())
        .filter(|w| w.kept)
        .map(|w| serde_json::to_value(w).expect("worktree reports serialise"))
        .chain(
            run.outcomes
                .iter()
                .filter_map(|o| o.remote_worktree.clone())
                .filter(|w| w["kept"] == true || w["broughtHome"] == true),
        )
        .collect();
    let doc = RunDocument {
        run_id: run.run_id,
        mode: run.spec.mode.as_str(),
        session_name: Some(run.plan.session_name.as_str()).filter(|s| !s.is_empty()),
        session_path: Some(run.plan.session_path.as_str()).filter(|s| !s.is_empty()),
        session_relative_path: Some(run.plan.session_relative_path.as_str())
            .filter(|s| !s.is_empty()),
        resumed: run.plan.resumed,
        results: run
            .outcomes
            .iter()
            .zip(&shown)
            .enumerate()
            .map(|(index, (outcome, shown))| ResultDocument {
                agent: agents[index],
                agent_id: outcome.agent_id.as_deref(),
                task_id: outcome.task_id.as_deref(),
                status: &outcome.status,
                return_code: outcome.return_code,
                text: shown.text.clone(),
                error: outcome.error.as_deref(),
                note: run.plan.notes.get(index).map(String::as_str),
                note_relative: run.plan.notes_relative.get(index).map(String::as_str),
                full_output: shown.full_output.as_ref().map(|p| p.display().to_string()),
                worktree: outcome
                    .worktree
                    .as_ref()
                    .map(|w| serde_json::to_value(w).expect("worktree reports serialise"))
                    .or_else(|| outcome.remote_worktree.clone()),
            })
            .collect(),
        succeeded: run.outcomes.iter().filter(|o| o.completed()).count(),
        total: run.outcomes.len(),
        stopped: stopped_at.map(|index| Stopped {
            step: index + 1,
            agent: agents[index],
            status: &run.outcomes[index].status,
            phrase: run.outcomes[index].phrase(),
        }),
        interrupted: run.cancelled.is_some(),
        cancelled: run.cancelled,
        exit_code,
        worktrees: kept,
        warnings: run.warnings,
    };
    serde_json::to_value(doc).expect("reports serialise")
}

/// A result text ready to show: cut at 50 KiB, with the file holding all of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ShownText {
    pub(crate) text: String,
    pub(crate) full_output: Option<PathBuf>,
}

/// Cuts `text` at [`MAX_TEXT_BYTES`] (on a character boundary), saving the whole of it as
/// `<dir>/<name>.txt` (0600) and naming that file at the end of the cut text.
pub(crate) fn shown_text(text: &str, dir: &Path, name: &str) -> ShownText {
    if text.len() <= MAX_TEXT_BYTES {
        return ShownText {
            text: text.to_owned(),
            full_output: None,
        };
    }
    let mut cut = MAX_TEXT_BYTES;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    let path = dir.join(format!("{name}.txt"));
    let saved = std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .and_then(|()| shepherd_fs::write_atomic(&path, text.as_bytes(), Some(0o600)));
    let note = match &saved {
        Ok(()) => format!("Full output: {}", path.display()),
        Err(err) => format!(
            "the full output could not be saved to {}: {err}",
            path.display()
        ),
    };
    ShownText {
        text: format!(
            "{}\n\n[Output truncated at 50 KiB of {} bytes. {note}]",
            &text[..cut],
            text.len()
        ),
        full_output: saved.ok().map(|()| path),
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;

    use super::*;

    #[test]
    fn long_texts_are_cut_with_a_private_file_holding_all_of_them() {
        let dir = tempfile::tempdir().unwrap();
        let results = dir.path().join("results");
        let short = shown_text("hello", &results, "r-t1-a");
        assert_eq!(short.text, "hello");
        assert!(short.full_output.is_none());
        assert!(!results.exists(), "no file for a short text");

        let long = "é".repeat(MAX_TEXT_BYTES);
        let shown = shown_text(&long, &results, "r-t1-a");
        let path = shown.full_output.unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), long);
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let kept = shown.text.split("\n\n[Output truncated").next().unwrap();
        assert_eq!(kept.len(), MAX_TEXT_BYTES);
        assert!(
            shown
                .text
                .ends_with(&format!("Full output: {}]", path.display())),
            "{}",
            &shown.text[shown.text.len() - 200..]
        );
    }
}
