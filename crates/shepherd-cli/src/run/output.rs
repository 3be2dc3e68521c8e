//! What a finished run prints and how it exits, from the report the broker wrote.
//!
//! Human output: a single task's or a chain's last text, or `Parallel: X/Y succeeded` with one
//! `### [agent] status` section per task, then the session to continue. `--json`: the report
//! itself, one compact document. The exit status is the report's `exitCode`: the return code of
//! the first task, in input order, that did not complete — 0 when all did, 130 when the run was
//! cancelled.

use std::process::ExitCode;

use serde_json::Value;

use crate::Printer;

/// Prints the run's report and returns its exit status.
pub(super) fn emit(report: &Value, printer: &Printer) -> ExitCode {
    let exit = report["exitCode"]
        .as_u64()
        .and_then(|code| u8::try_from(code).ok())
        .unwrap_or(1);
    printer.emit(report, || human(report));
    ExitCode::from(exit)
}

fn text(value: &Value) -> &str {
    value.as_str().unwrap_or_default()
}

fn phrase(result: &Value) -> String {
    match result["returnCode"].as_i64() {
        Some(rc) => format!("{} (rc {rc})", text(&result["status"])),
        None => text(&result["status"]).to_owned(),
    }
}

fn human(report: &Value) -> String {
    let empty = Vec::new();
    let results = report["results"].as_array().unwrap_or(&empty);
    let mut out = String::new();
    match text(&report["mode"]) {
        "parallel" => {
            out.push_str(&format!(
                "Parallel: {}/{} succeeded\n",
                report["succeeded"].as_u64().unwrap_or(0),
                results.len()
            ));
            for result in results {
                out.push_str(&format!(
                    "\n### [{}] {}\n\n",
                    text(&result["agent"]),
                    text(&result["status"])
                ));
                out.push_str(text(&result["text"]).trim_end());
                out.push('\n');
            }
        }
        mode => {
            let stopped = report["stopped"]["step"].as_u64().map(|s| s as usize);
            let last = stopped.map_or(results.len().saturating_sub(1), |step| step - 1);
            if let Some(result) = results.get(last) {
                out.push_str(text(&result["text"]).trim_end());
                out.push('\n');
            }
            if mode == "chain"
                && let Some(step) = stopped
            {
                out.push_str(&format!(
                    "\nChain stopped at step {step} of {} ({}): {}\n",
                    results.len(),
                    text(&report["stopped"]["agent"]),
                    text(&report["stopped"]["phrase"])
                ));
            } else if mode == "single"
                && let Some(result) = results.first()
                && text(&result["status"]) != "completed"
            {
                out.push_str(&format!(
                    "\n[{}] {}\n",
                    text(&result["agent"]),
                    phrase(result)
                ));
            }
        }
    }
    if report["interrupted"] == true {
        out.push_str("\nInterrupted: open tasks were cancelled and their sheep closed.\n");
    }
    if let Some(kept) = report["worktrees"].as_array().filter(|k| !k.is_empty()) {
        out.push_str("\nWorktrees kept (integrate or discard these yourself):\n");
        for worktree in kept {
            out.push_str(&format!(
                "- {} (branch {}): {}\n",
                text(&worktree["path"]),
                text(&worktree["branch"]),
                worktree["reason"].as_str().unwrap_or("kept")
            ));
        }
    }
    for warning in report["warnings"].as_array().into_iter().flatten() {
        out.push_str(&format!("\nwarning: {}\n", text(warning)));
    }
    if let Some(session) = report["sessionName"].as_str() {
        out.push_str(&format!(
            "\nSession `{session}`: {}{}\n",
            text(&report["sessionRelativePath"]),
            if report["resumed"] == true {
                " (continued)"
            } else {
                ""
            }
        ));
    }
    out
}
