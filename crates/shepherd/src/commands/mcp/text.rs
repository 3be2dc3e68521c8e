//! What the model reads: the result text of every tool, in the same words as the pi tools.
//!
//! A parent tool's result is one block the model can rely on — a one-line service message,
//! then `call:` (the tool and its arguments), `return:` (the value) and `details:` (everything
//! else, one `key in words: value` line each) — built by [`success`] and [`failure`] exactly as
//! the pi extension's `protocol.ts` builds it, so a model that learnt Shepherd in pi reads the
//! same thing here. A failure carries the broker's stable code, its one-line message and a hint
//! saying what to do instead, and is marked as a tool error (never a protocol error). The other
//! helpers put sheep, tasks, runs and inbox items into words (`ops.ts`, `notifications.ts`,
//! `subagent.ts` in the pi package).

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{Map, Value, json};

use super::error::ToolError;

/// Detail keys never shown: the call and the return value have their own sections, and lists
/// the service line already spells out.
const HIDDEN_DETAILS: &[&str] = &[
    "call",
    "agent",
    "label",
    "model",
    "status",
    "artifactSession",
    "returnValue",
    "result",
    "agents",
    "sheep",
    "completed",
];

/// `returnCode` → `return code`.
fn words(key: &str) -> String {
    let mut out = String::with_capacity(key.len() + 4);
    let mut previous: Option<char> = None;
    for c in key.chars() {
        if c.is_ascii_uppercase()
            && previous.is_some_and(|p| p.is_ascii_lowercase() || p.is_ascii_digit())
        {
            out.push(' ');
        }
        out.push(c.to_ascii_lowercase());
        previous = Some(c);
    }
    out
}

fn indent(text: &str) -> String {
    text.split('\n')
        .map(|line| {
            if line.is_empty() {
                String::new()
            } else {
                format!("    {line}")
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn render_value(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Array(items) => items
            .iter()
            .map(|item| match item {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        other => other.to_string(),
    }
}

/// The arguments as the call echoes them: what the host sent, without nulls.
pub(crate) fn call_arguments(args: &Map<String, Value>) -> Value {
    Value::Object(
        args.iter()
            .filter(|(_, value)| !value.is_null())
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect(),
    )
}

/// The `call:` / `return:` / `details:` block. `details` holds `(key, value)` in order; a
/// `None` value is left out, a JSON null shows as `none`.
pub(crate) fn protocol_text(
    service: &str,
    tool: &str,
    args: &Value,
    return_value: &Value,
    details: &[(&str, Option<Value>)],
    key_names: &[(&str, &str)],
) -> String {
    let mut lines: Vec<(bool, String)> = details
        .iter()
        .filter(|(key, value)| !HIDDEN_DETAILS.contains(key) && value.is_some())
        .map(|(key, value)| {
            let shown = match value.as_ref().expect("filtered") {
                Value::Null => "none".to_owned(),
                Value::String(text) => text.clone(),
                other => other.to_string(),
            };
            let name = key_names
                .iter()
                .find(|(k, _)| k == key)
                .map_or_else(|| words(key), |(_, name)| (*name).to_owned());
            (*key == "returnCode", format!("    {name}: {shown}"))
        })
        .collect();
    // The return code goes last.
    lines.sort_by_key(|(last, _)| *last);
    let mut text = format!(
        "{service}\n\ncall:\n{}\n\nreturn:\n{}",
        indent(&format!("{tool} {args}")),
        indent(&render_value(return_value))
    );
    if !lines.is_empty() {
        text.push_str("\n\ndetails:\n");
        text.push_str(
            &lines
                .into_iter()
                .map(|(_, line)| line)
                .collect::<Vec<_>>()
                .join("\n"),
        );
    }
    text
}

/// A successful tool result.
pub(crate) fn success(
    tool: &str,
    args: &Map<String, Value>,
    service: &str,
    return_value: &Value,
    extra: &[(&str, Option<Value>)],
    key_names: &[(&str, &str)],
) -> CallToolResult {
    let mut details: Vec<(&str, Option<Value>)> = extra.to_vec();
    details.push(("returnCode", Some(json!(0))));
    let text = protocol_text(
        service,
        tool,
        &call_arguments(args),
        return_value,
        &details,
        key_names,
    );
    CallToolResult::success(vec![ContentBlock::text(text)])
}

/// A failed tool call, as a tool error the model reads: code, message, hint and return code.
pub(crate) fn failure(
    tool: &str,
    action: &str,
    args: &Map<String, Value>,
    error: &ToolError,
) -> CallToolResult {
    let hint = error.hint();
    let mut return_value = json!({ "code": error.code, "error": error.message });
    if let Some(hint) = &hint {
        return_value["hint"] = json!(hint);
    }
    return_value["returnCode"] = json!(error.return_code);
    let details = [
        ("action", Some(json!(action))),
        ("code", Some(json!(error.code))),
        ("error", Some(json!(error.message))),
        ("hint", hint.map(Value::String)),
        ("returnCode", Some(json!(error.return_code))),
    ];
    let service = format!(
        "Herd {action} failed (return code {}): {}",
        error.return_code, error.message
    );
    let text = protocol_text(
        &service,
        tool,
        &call_arguments(args),
        &return_value,
        &details,
        &[],
    );
    CallToolResult::error(vec![ContentBlock::text(text)])
}

/// A plain text result (the sheep's tools, runs), marked as an error when `is_error`.
pub(crate) fn plain(text: impl Into<String>, is_error: bool) -> CallToolResult {
    let content = vec![ContentBlock::text(text.into())];
    if is_error {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    }
}

/// `n thing` or `n things`.
pub(crate) fn plural(n: usize, one: &str) -> String {
    format!("{n} {one}{}", if n == 1 { "" } else { "s" })
}

/// `text` trimmed and cut to `max` characters, the last one an ellipsis.
pub(crate) fn clip(text: &str, max: usize) -> String {
    let flat = text.trim();
    if flat.chars().count() > max {
        let mut cut: String = flat.chars().take(max.saturating_sub(1)).collect();
        cut.push('…');
        cut
    } else {
        flat.to_owned()
    }
}

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
pub(crate) fn agents_text(scope: &str, agents: &[Value]) -> String {
    if agents.is_empty() {
        return format!(
            "No agent definitions found in {scope} scope. Do not guess an agent name; add a definition or choose another scope."
        );
    }
    let mut lines =
        vec!["Available agent names (copy the name exactly; names are case-sensitive):".to_owned()];
    lines.extend(agents.iter().map(|a| {
        format!(
            "{} ({}): {}",
            str_of(a, "name").unwrap_or_default(),
            str_of(a, "source").unwrap_or_default(),
            str_of(a, "description").unwrap_or_default()
        )
    }));
    lines.join("\n")
}

/// The herd, one line per sheep.
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
                str_of(s, "state").unwrap_or_default(),
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
    for key in ["task", "error"] {
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
        str_of(status, "state").unwrap_or_default()
    )
}

/// A finished run in words (the `shepherd run --json` document): the last task's text for
/// single and chain runs, `Parallel: X/Y succeeded` with a section per task for parallel
/// ones. Returns the text and whether the run failed.
pub(crate) fn run_text(run: &Value) -> (String, bool) {
    let empty = Vec::new();
    let results = run
        .get("results")
        .and_then(Value::as_array)
        .unwrap_or(&empty);
    let interrupted = run.get("interrupted").and_then(Value::as_bool) == Some(true);
    let completed = |r: &Value| str_of(r, "status") == Some("completed");
    let failed = interrupted || results.is_empty() || !results.iter().all(completed);
    let body = |r: Option<&Value>| {
        r.and_then(|r| str_of(r, "text").or_else(|| str_of(r, "error")))
            .unwrap_or("(no output)")
            .to_owned()
    };
    let mut text = if str_of(run, "mode") == Some("parallel") {
        let ok = results.iter().filter(|r| completed(r)).count();
        let mut sections = vec![format!("Parallel: {ok}/{} succeeded", results.len())];
        sections.extend(results.iter().map(|r| {
            format!(
                "### [{}] {}\n\n{}",
                str_of(r, "agent").unwrap_or_default(),
                str_of(r, "status").unwrap_or_default(),
                body(Some(r))
            )
        }));
        sections.join("\n\n")
    } else {
        let mut text = body(results.last());
        if let Some(stopped) = run.get("stopped").filter(|s| s.is_object()) {
            text.push_str(&format!(
                "\n\nChain stopped at step {} ({}): {}.",
                stopped.get("step").unwrap_or(&Value::Null),
                str_of(stopped, "agent").unwrap_or_default(),
                str_of(stopped, "status").unwrap_or_default()
            ));
        }
        text
    };
    if let Some(error) = str_of(run, "error") {
        text = format!("The run could not start: {error}");
    }
    if interrupted {
        text.push_str("\n\nThe run was cancelled.");
    }
    let kept: Vec<String> = run
        .get("worktrees")
        .and_then(Value::as_array)
        .unwrap_or(&empty)
        .iter()
        .filter(|w| w.get("kept").and_then(Value::as_bool) != Some(false))
        .map(|w| {
            let reason = str_of(w, "reason")
                .map(|r| format!(": {r}"))
                .unwrap_or_default();
            format!(
                "{} (branch {}{reason})",
                str_of(w, "path").unwrap_or_default(),
                str_of(w, "branch").unwrap_or_default()
            )
        })
        .collect();
    if !kept.is_empty() {
        text.push_str(&format!(
            "\n\nWorktrees kept (integrate or discard these yourself): {}",
            kept.join(", ")
        ));
    }
    if let Some(name) = str_of(run, "sessionName") {
        let path = str_of(run, "sessionRelativePath")
            .or_else(|| str_of(run, "sessionPath"))
            .unwrap_or_default();
        text.push_str(&format!("\n\nSession: {name} ({path})"));
    }
    (text, failed)
}

/// `mm:ss`.
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

/// An envelope as a sheep reads it (the pi sheep extension's header, then the content).
pub(crate) fn sheep_envelope(envelope: &Value) -> String {
    let author = str_of(envelope, "originSenderId")
        .or_else(|| str_of(envelope, "senderId"))
        .unwrap_or_default();
    let from = if author == "shepherd" {
        "Shepherd"
    } else {
        author
    };
    let title = match str_of(envelope, "kind") {
        Some("task") => format!("[Shepherd delegated task from {from}]"),
        Some("reminder") => "[Shepherd reminder]".to_owned(),
        _ => format!("[Shepherd message from {from}]"),
    };
    let mut lines = vec![
        title,
        format!(
            "Message ID: {}",
            str_of(envelope, "messageId").unwrap_or_default()
        ),
    ];
    for (key, label) in [
        ("taskId", "Task ID"),
        ("threadId", "Thread ID"),
        ("replyTo", "Reply to"),
    ] {
        if let Some(value) = str_of(envelope, key) {
            lines.push(format!("{label}: {value}"));
        }
    }
    if envelope.get("expectsReply").and_then(Value::as_bool) == Some(true) {
        lines.push("Expects reply: yes (answer with shepherd_message and replyTo)".to_owned());
    }
    format!(
        "{}\n\n{}",
        lines.join("\n"),
        str_of(envelope, "content").unwrap_or_default()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_block_reads_like_pi() {
        let args = json!({"agent": "worker", "label": "x", "cwd": null});
        let result = success(
            "shepherd_spawn",
            args.as_object().unwrap(),
            "shepherd_spawn spawned worker: x",
            &json!({"id": "a1", "agent": "worker", "label": "x"}),
            &[
                ("id", Some(json!("a1"))),
                ("agent", Some(json!("worker"))),
                ("displayName", Some(json!("worker: x"))),
                ("fieldnote", Some(Value::Null)),
                ("skipped", None),
            ],
            &[("id", "agent id"), ("fieldnote", "agent fieldnote")],
        );
        let text = result.content[0].as_text().unwrap().text.clone();
        assert_eq!(
            text,
            "shepherd_spawn spawned worker: x\n\ncall:\n    shepherd_spawn {\"agent\":\"worker\",\"label\":\"x\"}\n\nreturn:\n    {\"id\":\"a1\",\"agent\":\"worker\",\"label\":\"x\"}\n\ndetails:\n    agent id: a1\n    display name: worker: x\n    agent fieldnote: none\n    return code: 0"
        );
    }

    #[test]
    fn a_failure_names_code_message_and_hint() {
        let error = ToolError::new("unknown_agent", "no agent named `wrker`");
        let result = failure("shepherd_spawn", "spawn", &Map::new(), &error);
        assert_eq!(result.is_error, Some(true));
        let text = result.content[0].as_text().unwrap().text.clone();
        assert!(
            text.starts_with("Herd spawn failed (return code 1): no agent named `wrker`"),
            "{text}"
        );
        assert!(text.contains("    code: unknown_agent\n"), "{text}");
        assert!(
            text.contains("    hint: Agent names are case-sensitive"),
            "{text}"
        );
    }

    #[test]
    fn completion_lines_prefer_the_error_when_not_ok() {
        let line = completion_line(
            &json!({"displayName": "w: a", "taskId": "t1", "status": "failed",
            "returnCode": 1, "ok": false, "summary": "s", "error": "boom", "noteRelative": "n.md"}),
        );
        assert_eq!(line, "w: a task t1 failed (rc 1): boom Note: n.md");
        assert_eq!(words("returnCode"), "return code");
        assert_eq!(clip("abcdef", 4), "abc…");
    }
}
