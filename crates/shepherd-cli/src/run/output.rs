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

fn phrase(result: &RunResult) -> String {
    match result.return_code {
        Some(rc) => format!("{} (rc {rc})", result.status),
        None => result.status.clone(),
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
        out.push_str("\nWorktrees kept (integrate or discard these yourself):\n");
        for worktree in &report.worktrees {
            let reason = match worktree {
                shepherd_core::worktree::WorktreeReport::Local(local) => local.reason.clone(),
                shepherd_core::worktree::WorktreeReport::Remote(remote) => remote.reason.clone(),
            };
            out.push_str(&format!(
                "- {} (branch {}): {}\n",
                worktree.path().display(),
                worktree.branch(),
                reason.as_deref().unwrap_or("kept")
            ));
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
