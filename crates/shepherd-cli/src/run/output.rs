//! What a finished run prints and how it exits, from the report the broker wrote.
//!
//! Human output: a single task's or a chain's last text, or `Parallel: X/Y succeeded` with one
//! `### [agent] status` section per task, then the session to continue. `--json`: the report
//! itself, one compact document. The exit status is the report's `exitCode`: the return code of
//! the first task, in input order, that did not complete — 0 when all did, 130 when the run was
//! cancelled.

use std::process::ExitCode;

use shepherd_core::fieldnotes::status::Mode;
use shepherd_core::run::{RunReport, RunResult};

use crate::Printer;

/// Prints the run's report and returns its exit status.
pub(super) fn emit(report: &RunReport, printer: &Printer) -> ExitCode {
    printer.emit(report, || human(report));
    ExitCode::from(report.exit_code)
}

/// Prints the run's report and how its branches landed (`--merge`; `--json`: `{run, merge}`),
/// and returns the run's exit status when it did not complete, else the merge's.
pub(super) fn emit_with_merge(
    report: &RunReport,
    merged: &shepherd_core::land::MergeView,
    printer: &Printer,
) -> ExitCode {
    let doc = serde_json::json!({ "run": report, "merge": merged });
    printer.emit(&doc, || {
        format!(
            "{}
{}",
            human(report),
            shepherd_client::land_words::merge_text(merged)
        )
    });
    let code = match report.exit_code {
        0 => merged.exit_code.unwrap_or(2),
        code => code,
    };
    ExitCode::from(code)
}

/// `shepherd/r-t1-a: 2 commits, changes preserved on refs/shepherd/preserved/…` — and where a
/// kept worktree is, and why.
fn branch_line(worktree: &shepherd_core::worktree::WorktreeReport) -> String {
    use shepherd_core::worktree::WorktreeReport;
    let mut line = worktree.branch().to_owned();
    match worktree {
        WorktreeReport::Local(local) => {
            let commits = local.patch.as_ref().map_or(0, |p| p.commits.len());
            let own = commits - usize::from(local.preserved.is_some());
            line.push_str(&format!(": {own} commit(s)"));
            if let Some(preserved) = &local.preserved {
                line.push_str(&format!(", uncommitted changes preserved on {preserved}"));
            }
            if local.kept {
                line.push_str(&format!(
                    "; worktree kept at {}: {}",
                    local.path,
                    local.reason.as_deref().unwrap_or("kept")
                ));
            }
        }
        WorktreeReport::Remote(remote) => {
            line.push_str(&format!(
                ": {} commit(s) from host {}",
                remote.commits.len(),
                remote.host
            ));
            if remote.kept {
                line.push_str(&format!(
                    "; worktree kept there at {}: {}",
                    remote.path,
                    remote.reason.as_deref().unwrap_or("kept")
                ));
            }
        }
    }
    line
}

fn phrase(result: &RunResult) -> String {
    match result.return_code {
        Some(rc) => format!("{} (rc {rc})", result.status),
        None => result.status.as_str().to_owned(),
    }
}

fn human(report: &RunReport) -> String {
    let results = &report.results;
    let mut out = String::new();
    match report.mode {
        Mode::Parallel => {
            out.push_str(&format!(
                "Parallel: {}/{} succeeded\n",
                report.succeeded,
                results.len()
            ));
            for result in results {
                out.push_str(&format!("\n### [{}] {}\n\n", result.agent, result.status));
                out.push_str(result.text.trim_end());
                out.push('\n');
            }
        }
        mode => {
            let stopped = report.stopped.as_ref();
            let last = stopped.map_or(results.len().saturating_sub(1), |s| s.step - 1);
            if let Some(result) = results.get(last) {
                out.push_str(result.text.trim_end());
                out.push('\n');
            }
            if mode == Mode::Chain
                && let Some(stopped) = stopped
            {
                out.push_str(&format!(
                    "\nChain stopped at step {} of {} ({}): {}\n",
                    stopped.step,
                    results.len(),
                    stopped.agent,
                    stopped.phrase
                ));
            } else if mode == Mode::Single
                && let Some(result) = results.first()
                && !result.completed()
            {
                out.push_str(&format!("\n[{}] {}\n", result.agent, phrase(result)));
            }
        }
    }
    if report.interrupted {
        out.push_str("\nInterrupted: open tasks were cancelled and their sheep closed.\n");
    }
    if !report.worktrees.is_empty() {
        out.push_str(&format!(
            "\nBranches to land (`shepherd merge {}`), or to integrate or discard yourself:\n",
            report.run_id
        ));
        for worktree in &report.worktrees {
            out.push_str(&format!("- {}\n", branch_line(worktree)));
        }
    }
    for warning in &report.warnings {
        out.push_str(&format!("\nwarning: {warning}\n"));
    }
    if let Some(session) = &report.session_name {
        out.push_str(&format!(
            "\nSession `{session}`: {}{}\n",
            report.session_relative_path.as_deref().unwrap_or_default(),
            if report.resumed { " (continued)" } else { "" }
        ));
    }
    out
}
