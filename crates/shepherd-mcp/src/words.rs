//! Sheep, tasks, runs and inbox items in words, as the pi package puts them (`ops.ts`,
//! `tools.ts`, `notifications.ts`, `subagent.ts`, and the sheep extension's envelope header),
//! so a model reads the same lines over MCP as in pi. Everything here works on the broker's
//! JSON answers and never fails: a missing field reads as empty.

use serde_json::{Value, json};
use shepherd_core::fieldnotes::status::Mode;
use shepherd_core::run::{RunReport, RunResult};
use shepherd_core::worktree::WorktreeReport;

use super::text::{clip, plural};

fn str_of<'v>(value: &'v Value, key: &str) -> Option<&'v str> {
    value
        .get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

/// One settled task in words: `worker: fix task <id> completed (rc 0): summary. Note: …`.
pub(crate) fn completion_line(report: &Value) -> String {
    let rc = report
        .get("returnCode")
        .and_then(Value::as_i64)
        .map(|rc| format!(" (rc {rc})"))
        .unwrap_or_default();
    let ok = report.get("ok").and_then(Value::as_bool) == Some(true);
    let said = if ok {
        str_of(report, "summary").or_else(|| str_of(report, "text"))
    } else {
        str_of(report, "error")
            .or_else(|| str_of(report, "summary"))
            .or_else(|| str_of(report, "text"))
    };
    let said = said
        .map(|s| format!(": {}", clip(s, 600)))
        .unwrap_or_default();
    let note = str_of(report, "noteRelative")
        .map(|n| format!(" Note: {n}"))
        .unwrap_or_default();
    let who = str_of(report, "displayName")
        .or_else(|| str_of(report, "agentId"))
        .unwrap_or_default();
    format!(
        "{who} task {} {}{rc}{said}{note}",
        str_of(report, "taskId").unwrap_or_default(),
        str_of(report, "status").unwrap_or_default()
    )
}

/// The agent listing: the exact names a spawn accepts.
/// Each definition file that was skipped (`name`, `file`, `reason`) follows the names, one line
/// each, as `shepherd agents --verbose` lists them.
pub(crate) fn agents_text(scope: &str, agents: &[Value], skipped: &[Value]) -> String {
    let mut lines = Vec::new();
    if agents.is_empty() {
        lines.push(format!(
            "No agent definitions found in {scope} scope. Do not guess an agent name; add a definition or choose another scope."
        ));
    } else {
        lines.push(
            "Available agent names (copy the name exactly; names are case-sensitive):".to_owned(),
        );
        lines.extend(agents.iter().map(|a| {
            format!(
                "{} ({}): {}",
                str_of(a, "name").unwrap_or_default(),
                str_of(a, "source").unwrap_or_default(),
                str_of(a, "description").unwrap_or_default()
            )
        }));
    }
    if !skipped.is_empty() {
        lines.push(String::new());
        lines.push(format!(
            "Skipped {}, each defining no agent until it is fixed:",
            plural(skipped.len(), "definition file")
        ));
        lines.extend(skipped.iter().map(|s| {
            format!(
                "{}: {}: {}",
                str_of(s, "name").unwrap_or("?"),
                str_of(s, "file").unwrap_or_default(),
                str_of(s, "reason").unwrap_or_default()
            )
        }));
    }
    lines.join("\n")
}

/// The herd, one line per sheep.
/// A sheep's state in words, with its host: `working`, `working on host box`, or `link down
/// since 2026-12-06T10:00:00Z on host box` while its host cannot be reached (its last known
/// state is then not what it is).
fn state_words(sheep: &Value) -> String {
    let host = str_of(sheep, "host")
        .map(|host| format!(" on host {host}"))
        .unwrap_or_default();
    let down = sheep
        .get("linkDownSince")
        .and_then(Value::as_i64)
        .and_then(|ms| jiff::Timestamp::from_millisecond(ms).ok());
    match down {
        Some(since) => format!("link down since {since}{host}"),
        None => format!("{}{host}", str_of(sheep, "state").unwrap_or_default()),
    }
}

pub(crate) fn herd_text(sheep: &[Value]) -> String {
    if sheep.is_empty() {
        return "No sheep in this herd.".to_owned();
    }
    sheep
        .iter()
        .map(|s| {
            let mut line = format!(
                "• {} [{}] id={}",
                str_of(s, "displayName").unwrap_or_default(),
                state_words(s),
                str_of(s, "agentId").unwrap_or_default()
            );
            if let Some(task) = s.get("task").filter(|t| t.is_object()) {
                let stale = if task.get("stale").and_then(Value::as_bool) == Some(true) {
                    " (stale)"
                } else {
                    ""
                };
                line.push_str(&format!(
                    " task {} {}{stale}",
                    str_of(task, "id").unwrap_or_default(),
                    str_of(task, "state").unwrap_or_default()
                ));
            }
            if let Some(error) = str_of(s, "error") {
                line.push_str(&format!(" ({error})"));
            }
            line
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// One sheep's public status: id, state, task, error (no pane ids).
pub(crate) fn public_status(status: &Value) -> Value {
    let mut out = json!({ "id": status.get("agentId"), "state": status.get("state") });
    for key in ["task", "error", "host", "linkDownSince"] {
        if let Some(value) = status.get(key).filter(|v| !v.is_null()) {
            out[key] = value.clone();
        }
    }
    out
}

/// One sheep's status in words.
pub(crate) fn status_text(status: &Value) -> String {
    let task = status.get("task").filter(|t| t.is_object());
    let task_text = task
        .map(|t| {
            format!(
                "; task {} {}",
                str_of(t, "id").unwrap_or_default(),
                str_of(t, "state").unwrap_or_default()
            )
        })
        .unwrap_or_default();
    let waiting = task
        .filter(|t| str_of(t, "state") == Some("waiting"))
        .and_then(|t| {
            let on = str_of(t, "waitingOn")?;
            let stale = if t.get("stale").and_then(Value::as_bool) == Some(true) {
                ", stale"
            } else {
                ""
            };
            Some(format!(" (waiting on {on}{stale})"))
        })
        .unwrap_or_default();
    format!(
        "{} {}{task_text}{waiting}.",
        str_of(status, "displayName").unwrap_or("agent"),
        state_words(status)
    )
}

/// A finished run in words (the `shepherd run --json` document): the last task's text for
/// single and chain runs, `Parallel: X/Y succeeded` with a section per task for parallel
/// ones. Returns the text and whether the run failed.
pub(crate) fn run_text(run: &RunReport) -> (String, bool) {
    let results = &run.results;
    let failed = run.interrupted || results.is_empty() || !results.iter().all(RunResult::completed);
    let body = |r: Option<&RunResult>| {
        r.map(|r| {
            if r.text.is_empty() {
                r.error.clone().unwrap_or_default()
            } else {
                r.text.clone()
            }
        })
        .filter(|text| !text.is_empty())
        .unwrap_or_else(|| "(no output)".to_owned())
    };
    let mut text = if run.mode == Mode::Parallel {
        let ok = results.iter().filter(|r| r.completed()).count();
        let mut sections = vec![format!("Parallel: {ok}/{} succeeded", results.len())];
        sections.extend(
            results
                .iter()
                .map(|r| format!("### [{}] {}\n\n{}", r.agent, r.status, body(Some(r)))),
        );
        sections.join("\n\n")
    } else {
        let mut text = body(results.last());
        if let Some(stopped) = &run.stopped {
            text.push_str(&format!(
                "\n\nChain stopped at step {} ({}): {}.",
                stopped.step, stopped.agent, stopped.status
            ));
        }
        text
    };
    if run.interrupted {
        match &run.cancelled {
            Some(reason) => text.push_str(&format!("\n\nThe run was cancelled. Why: {reason}.")),
            None => text.push_str("\n\nThe run was cancelled."),
        }
    }
    // Every branch with work on it: what `shepherd_merge` lands.
    let branches: Vec<String> = run
        .worktrees
        .iter()
        .map(|w| {
            let mut said = w.branch().to_owned();
            match w {
                WorktreeReport::Local(local) => {
                    if let Some(preserved) = &local.preserved {
                        said.push_str(&format!(" (uncommitted changes preserved on {preserved})"));
                    }
                    if local.kept {
                        said.push_str(&format!(
                            " (worktree kept at {}: {})",
                            local.path,
                            local.reason.as_deref().unwrap_or("kept")
                        ));
                    }
                }
                WorktreeReport::Remote(remote) => {
                    said.push_str(&format!(" (from host {})", remote.host));
                    if remote.kept {
                        said.push_str(&format!(
                            " (worktree kept there at {}: {})",
                            remote.path,
                            remote.reason.as_deref().unwrap_or("kept")
                        ));
                    }
                }
            }
            said
        })
        .collect();
    if !branches.is_empty() {
        text.push_str(&format!(
            "\n\nBranches to land (shepherd_merge {{\"run\": \"{}\"}}), or to integrate or discard yourself: {}",
            run.run_id,
            branches.join(", ")
        ));
    }
    if let Some(name) = &run.session_name {
        let path = run
            .session_relative_path
            .as_deref()
            .or(run.session_path.as_deref())
            .unwrap_or_default();
        let continued = if run.resumed { " (continued)" } else { "" };
        text.push_str(&format!("\n\nSession: {name} ({path}){continued}"));
    }
    (text, failed)
}

/// `mm:ss`.
/// Why a message goes otherwise than asked (a `steer` to a sheep that cannot be steered
/// mid-turn), as a sentence and a space to go before what follows; empty when it goes as asked.
pub(crate) fn changed_delivery(result: &Value) -> String {
    str_of(result, "deliveryChanged").map_or_else(String::new, |why| format!("{why} "))
}

fn minutes_seconds(ms: i64) -> String {
    let total = (ms / 1000).max(0);
    format!("{:02}:{:02}", total / 60, total % 60)
}

/// One parent inbox item in words (as pi shows it), `name` giving a sheep's display name.
pub(crate) fn inbox_item(item: &Value, name: &dyn Fn(&str) -> String) -> Option<String> {
    match str_of(item, "type")? {
        "completion" => {
            let empty = Vec::new();
            let completions = item
                .get("completions")
                .and_then(Value::as_array)
                .unwrap_or(&empty);
            let summary = completions
                .iter()
                .map(|c| {
                    format!(
                        "{} {}",
                        str_of(c, "displayName")
                            .or_else(|| str_of(c, "agentId"))
                            .unwrap_or_default(),
                        str_of(c, "status").unwrap_or_default()
                    )
                })
                .collect::<Vec<_>>()
                .join(", ");
            let heading = if completions.len() == 1 {
                "completion"
            } else {
                "completions"
            };
            let lines: Vec<String> = completions
                .iter()
                .map(|c| format!("- {}", completion_line(c)))
                .collect();
            Some(format!(
                "shepherd_watcher {heading}: {summary}\n{}",
                lines.join("\n")
            ))
        }
        "envelope" => {
            let envelope = item.get("envelope")?;
            let author = str_of(envelope, "originSenderId")
                .or_else(|| str_of(envelope, "senderId"))
                .unwrap_or_default();
            let reply = str_of(envelope, "kind") == Some("reply");
            let mut ids = vec![format!(
                "Message ID: {}",
                str_of(envelope, "messageId").unwrap_or_default()
            )];
            if !author.is_empty() && author != "shepherd" {
                ids.push(format!("From agent id: {author}"));
            }
            for (key, label) in [
                ("taskId", "Task ID"),
                ("threadId", "Thread ID"),
                ("replyTo", "Reply to"),
            ] {
                if let Some(value) = str_of(envelope, key) {
                    ids.push(format!("{label}: {value}"));
                }
            }
            if envelope.get("expectsReply").and_then(Value::as_bool) == Some(true) {
                let task = str_of(envelope, "taskId")
                    .map(|t| format!(", taskId {t}"))
                    .unwrap_or_default();
                ids.push(format!(
                    "Expects reply: yes (answer with shepherd_message target {author}, replyTo {}{task})",
                    str_of(envelope, "messageId").unwrap_or_default()
                ));
            }
            Some(format!(
                "Shepherd {} from {}\n{}\n\n{}",
                if reply { "reply" } else { "message" },
                name(author),
                ids.join("\n"),
                str_of(envelope, "content").unwrap_or_default()
            ))
        }
        "stale_wait" => {
            let who = str_of(item, "displayName").unwrap_or_default();
            let agent = str_of(item, "agentId").unwrap_or_default();
            let task = str_of(item, "taskId").unwrap_or_default();
            let request = str_of(item, "requestId").unwrap_or_default();
            let recipient = str_of(item, "recipientName").unwrap_or_default();
            Some(
                [
                    format!(
                        "Shepherd stale wait: {who} has waited {} for a reply (stale after {} min).",
                        minutes_seconds(item.get("elapsedMs").and_then(Value::as_i64).unwrap_or(0)),
                        item.get("thresholdMinutes").unwrap_or(&Value::Null)
                    ),
                    format!(
                        "Task: {task} (owner {who}, agent id {agent}) - {}",
                        clip(str_of(item, "description").unwrap_or_default(), 200)
                    ),
                    format!("Question: {}", clip(str_of(item, "question").unwrap_or_default(), 400)),
                    format!("Pending request: {request} (waiting on {recipient})"),
                    format!(
                        "You may answer on the owner's behalf with shepherd_message {{target: \"{agent}\", taskId: \"{task}\", replyTo: \"{request}\"}}, nudge {recipient}, or let the reply deadline settle the task blocked."
                    ),
                ]
                .join("\n"),
            )
        }
        "notice" => {
            let who = str_of(item, "agentId")
                .map(|id| format!(" ({})", name(id)))
                .unwrap_or_default();
            Some(format!(
                "Shepherd notice: {}{who}\n{}",
                str_of(item, "notice").unwrap_or_default(),
                str_of(item, "text").unwrap_or_default()
            ))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completion_lines_prefer_the_error_when_not_ok() {
        let line = completion_line(
            &json!({"displayName": "w: a", "taskId": "t1", "status": "failed",
            "returnCode": 1, "ok": false, "summary": "s", "error": "boom", "noteRelative": "n.md"}),
        );
        assert_eq!(line, "w: a task t1 failed (rc 1): boom Note: n.md");
    }
}
