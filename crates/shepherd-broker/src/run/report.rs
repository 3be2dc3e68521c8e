//! A finished run's report ([`RunReport`]): the document `shepherd run --json` prints, built by
//! the broker so every front end (the CLI, the pi `subagent` tool, MCP) gets the same one.
//!
//! Each task's final text goes out whole up to 50 KiB; a longer text is cut there and its full
//! form is written to a private file (mode 0600, in `<runtime dir>/results/`, the per-user
//! directory that also holds the broker sockets — the note keeps the full text durably), whose
//! path the result names. `exitCode` is the return code of the first task, in input order, that
//! did not complete — 0 when all did, 130 when the run was cancelled.

use std::os::unix::fs::DirBuilderExt as _;
use std::path::{Path, PathBuf};

use shepherd_core::run::{RunReport, RunResult, Stopped};
use shepherd_notes::Mode;

use super::model::{Outcome, Plan as PlanResult, RunSpec};

/// Longest result text shown whole.
pub(crate) const MAX_TEXT_BYTES: usize = 50 * 1024;

/// Exit status of a cancelled run.
const EXIT_CANCELLED: u8 = 130;

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
pub(crate) fn build(run: &Finished<'_>) -> RunReport {
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
    let kept = run
        .outcomes
        .iter()
        .filter_map(|o| o.worktree.as_ref())
        .filter(|w| w.needs_integrating())
        .chain(
            run.outcomes
                .iter()
                .filter_map(|o| o.remote_worktree.as_ref())
                .filter(|w| w.needs_integrating()),
        )
        .cloned()
        .collect();
    let named = |text: &str| Some(text.to_owned()).filter(|s| !s.is_empty());
    RunReport {
        run_id: run.run_id.to_owned(),
        mode: run.spec.mode,
        session_name: named(&run.plan.session_name),
        session_path: named(&run.plan.session_path),
        session_relative_path: named(&run.plan.session_relative_path),
        resumed: run.plan.resumed,
        results: run
            .outcomes
            .iter()
            .zip(&shown)
            .enumerate()
            .map(|(index, (outcome, shown))| RunResult {
                agent: agents[index].to_owned(),
                host: outcome.host.clone(),
                agent_id: outcome.agent_id.clone(),
                task_id: outcome.task_id.clone(),
                status: outcome.status,
                return_code: outcome.return_code,
                text: shown.text.clone(),
                error: outcome.error.clone(),
                note: run.plan.notes.get(index).cloned(),
                note_relative: run.plan.notes_relative.get(index).cloned(),
                full_output: shown.full_output.as_ref().map(|p| p.display().to_string()),
                worktree: outcome
                    .worktree
                    .clone()
                    .or_else(|| outcome.remote_worktree.clone()),
            })
            .collect(),
        succeeded: run.outcomes.iter().filter(|o| o.completed()).count(),
        total: run.outcomes.len(),
        stopped: stopped_at.map(|index| Stopped {
            step: index + 1,
            agent: agents[index].to_owned(),
            status: run.outcomes[index].status,
            phrase: run.outcomes[index].phrase(),
        }),
        interrupted: run.cancelled.is_some(),
        cancelled: run.cancelled.map(str::to_owned),
        exit_code,
        worktrees: kept,
        warnings: run.warnings.to_vec(),
    }
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
