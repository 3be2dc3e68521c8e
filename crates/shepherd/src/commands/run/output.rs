//! What a finished run prints and how it exits.
//!
//! Each task's final text goes out whole up to 50 KiB; a longer text is cut there and its full
//! form is written to a private file (mode 0600, in `<runtime dir>/results/`, the per-user
//! directory that also holds the broker sockets — the note keeps the full text durably), whose
//! path the result names. Human output: a single task's or a chain's last text, or
//! `Parallel: X/Y succeeded` with one `### [agent] status` section per task, then the session to
//! continue. `--json`: one compact document (see `RunDocument`). The exit status is the return
//! code of the first task, in input order, that did not complete — 0 when all did, 130 when the
//! run was interrupted.

use std::os::unix::fs::DirBuilderExt as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde::Serialize;

use super::orchestrate::{RunOutcome, status_phrase};
use super::plan::Mode;
use super::worktree::WorktreeReport;
use crate::output::Printer;

/// Longest result text shown whole.
pub(super) const MAX_TEXT_BYTES: usize = 50 * 1024;

/// Exit status of an interrupted run.
const EXIT_INTERRUPTED: u8 = 130;

/// The `--json` document.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct RunDocument<'a> {
    mode: &'static str,
    session_name: &'a str,
    session_path: &'a str,
    session_relative_path: &'a str,
    resumed: bool,
    results: Vec<ResultDocument<'a>>,
    /// Tasks that completed, and all tasks.
    succeeded: usize,
    total: usize,
    /// For a chain that stopped: which step, and how it ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    stopped: Option<Stopped<'a>>,
    /// Whether SIGINT/SIGTERM/SIGHUP cancelled the run.
    interrupted: bool,
    /// The process exit status.
    exit_code: u8,
    /// Worktrees left for the user to integrate or discard (absent when none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    worktrees: Vec<&'a WorktreeReport>,
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
    note: &'a str,
    note_relative: &'a str,
    full_output: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    worktree: Option<&'a WorktreeReport>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Stopped<'a> {
    /// 1-based step number.
    step: usize,
    agent: &'a str,
    status: &'a str,
}

/// A result text ready to show: cut at 50 KiB, with the file holding all of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ShownText {
    pub(super) text: String,
    pub(super) full_output: Option<PathBuf>,
}

/// Cuts `text` at [`MAX_TEXT_BYTES`] (on a character boundary), saving the whole of it as
/// `<dir>/<name>.txt` (0600) and naming that file at the end of the cut text.
pub(super) fn shown_text(text: &str, dir: &Path, name: &str) -> ShownText {
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

/// The exit status: 130 when interrupted, else the first non-zero return code of a task that
/// did not complete, in input order, else 0.
pub(super) fn exit_status(run: &RunOutcome) -> u8 {
    if run.interrupted {
        return EXIT_INTERRUPTED;
    }
    run.outcomes
        .iter()
        .filter(|o| !o.completed())
        .find_map(|o| o.return_code)
        .map_or(0, |rc| u8::try_from(rc).unwrap_or(1).max(1))
}

/// Prints the run and returns its exit status.
pub(super) fn emit(
    run: &RunOutcome,
    mode: Mode,
    agents: &[String],
    results_dir: &Path,
    run_id: &str,
    printer: &Printer,
) -> ExitCode {
    let shown: Vec<ShownText> = run
        .outcomes
        .iter()
        .enumerate()
        .map(|(index, outcome)| {
            let name = format!(
                "{run_id}-t{}-{}",
                index + 1,
                shepherd_core::slug::agent_slug(&agents[index])
            );
            shown_text(&outcome.text, results_dir, &name)
        })
        .collect();
    let exit = exit_status(run);
    let succeeded = run.outcomes.iter().filter(|o| o.completed()).count();
    let kept: Vec<&WorktreeReport> = run
        .outcomes
        .iter()
        .filter_map(|o| o.worktree.as_ref())
        .filter(|w| w.kept)
        .collect();
    let stopped = run.stopped_at.map(|index| Stopped {
        step: index + 1,
        agent: &agents[index],
        status: &run.outcomes[index].status,
    });
    let doc = RunDocument {
        mode: mode.as_str(),
        session_name: &run.plan.session_name,
        session_path: &run.plan.session_path,
        session_relative_path: &run.plan.session_relative_path,
        resumed: run.plan.resumed,
        results: run
            .outcomes
            .iter()
            .zip(&shown)
            .enumerate()
            .map(|(index, (outcome, shown))| ResultDocument {
                agent: &agents[index],
                agent_id: outcome.agent_id.as_deref(),
                task_id: outcome.task_id.as_deref(),
                status: &outcome.status,
                return_code: outcome.return_code,
                text: shown.text.clone(),
                error: outcome.error.as_deref(),
                note: &run.plan.notes[index],
                note_relative: &run.plan.notes_relative[index],
                full_output: shown.full_output.as_ref().map(|p| p.display().to_string()),
                worktree: outcome.worktree.as_ref(),
            })
            .collect(),
        succeeded,
        total: run.outcomes.len(),
        stopped,
        interrupted: run.interrupted,
        exit_code: exit,
        worktrees: kept.clone(),
        warnings: &run.warnings,
    };
    printer.emit(&doc, || human(run, mode, agents, &shown, &kept));
    ExitCode::from(exit)
}

fn human(
    run: &RunOutcome,
    mode: Mode,
    agents: &[String],
    shown: &[ShownText],
    kept: &[&WorktreeReport],
) -> String {
    let mut out = String::new();
    match mode {
        Mode::Parallel => {
            let succeeded = run.outcomes.iter().filter(|o| o.completed()).count();
            out.push_str(&format!(
                "Parallel: {succeeded}/{} succeeded\n",
                run.outcomes.len()
            ));
            for ((outcome, shown), agent) in run.outcomes.iter().zip(shown).zip(agents) {
                out.push_str(&format!("\n### [{agent}] {}\n\n", outcome.status));
                out.push_str(shown.text.trim_end());
                out.push('\n');
            }
        }
        Mode::Single | Mode::Chain => {
            let last = run
                .stopped_at
                .unwrap_or(run.outcomes.len().saturating_sub(1));
            if let Some(shown) = shown.get(last) {
                out.push_str(shown.text.trim_end());
                out.push('\n');
            }
            if let Some(index) = run.stopped_at.filter(|_| mode == Mode::Chain) {
                out.push_str(&format!(
                    "\nChain stopped at step {} of {} ({}): {}\n",
                    index + 1,
                    run.outcomes.len(),
                    agents[index],
                    status_phrase(&run.outcomes[index])
                ));
            } else if mode == Mode::Single && !run.outcomes[0].completed() {
                out.push_str(&format!(
                    "\n[{}] {}\n",
                    agents[0],
                    status_phrase(&run.outcomes[0])
                ));
            }
        }
    }
    if run.interrupted {
        out.push_str("\nInterrupted: open tasks were cancelled and their sheep closed.\n");
    }
    if !kept.is_empty() {
        out.push_str("\nWorktrees kept (integrate or discard these yourself):\n");
        for worktree in kept {
            out.push_str(&format!(
                "- {} (branch {}): {}\n",
                worktree.path,
                worktree.branch,
                worktree.reason.as_deref().unwrap_or("kept")
            ));
        }
    }
    for warning in &run.warnings {
        out.push_str(&format!("\nwarning: {warning}\n"));
    }
    out.push_str(&format!(
        "\nSession `{}`: {}{}\n",
        run.plan.session_name,
        run.plan.session_relative_path,
        if run.plan.resumed { " (continued)" } else { "" }
    ));
    out
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
