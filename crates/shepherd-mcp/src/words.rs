//! Sheep, tasks, runs and inbox items in words, as the pi package puts them (`ops.ts`,
//! `tools.ts`, `notifications.ts`, `subagent.ts`, and the sheep extension's envelope header),
//! so a model reads the same lines over MCP as in pi. Everything here works on the broker's
//! typed answers and never fails: an empty text reads as absent.

use serde_json::{Map, Value, json};
use shepherd_config::DiscoveryWarning;
use shepherd_core::agent_def::AgentDef;
use shepherd_core::envelope::Kind;
use shepherd_core::fieldnotes::status::Mode;
use shepherd_core::herd::{InboxItem, Payload, SheepStatus, TaskReport};
use shepherd_core::ids::{MessageId, TaskId};
use shepherd_core::protocol::MessageResult;
use shepherd_core::run::{RunReport, RunResult};
use shepherd_core::task::TaskState;
use shepherd_core::worktree::WorktreeReport;

use super::text::{clip, plural};

/// An optional text that is there and not empty.
fn said(text: Option<&String>) -> Option<&str> {
    text.map(String::as_str).filter(|s| !s.is_empty())
}

/// A text that is not empty.
fn filled(text: &str) -> Option<&str> {
    Some(text).filter(|s| !s.is_empty())
}

/// The word a closed set puts on the wire (`task_done_dropped`, …).
fn wire_word<T: serde::Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(Value::String(word)) => word,
        _ => String::new(),
    }
}

/// One settled task in words: `worker: fix task <id> completed (rc 0): summary. Note: …`.
pub(crate) fn completion_line(report: &TaskReport) -> String {
    let rc = report
        .return_code
        .map(|rc| format!(" (rc {rc})"))
        .unwrap_or_default();
    let told = if report.ok {
        said(report.summary.as_ref()).or_else(|| said(report.text.as_ref()))
    } else {
        said(report.error.as_ref())
            .or_else(|| said(report.summary.as_ref()))
            .or_else(|| said(report.text.as_ref()))
    };
    let told = told
        .map(|s| format!(": {}", clip(s, 600)))
        .unwrap_or_default();
    let note = said(report.note_relative.as_ref())
        .map(|n| format!(" Note: {n}"))
        .unwrap_or_default();
    let who = filled(&report.display_name)
        .or_else(|| filled(report.agent_id.as_str()))
        .unwrap_or_default();
    format!(
        "{who} task {} {}{rc}{told}{note}",
        report.task_id,
        report.status.as_str()
    )
}

/// The agent listing: the exact names a spawn accepts.
/// Each definition file that was skipped (`name`, `file`, `reason`) follows the names, one line
/// each, as `shepherd agents --verbose` lists them.
pub(crate) fn agents_text(
    scope: &str,
    agents: &[AgentDef],
    skipped: &[&DiscoveryWarning],
) -> String {
    let mut lines = Vec::new();
    if agents.is_empty() {
        lines.push(format!(
            "No agent definitions found in {scope} scope. Do not guess an agent name; add a definition or choose another scope."
        ));
    } else {
        lines.push(
            "Available agent names (copy the name exactly; names are case-sensitive):".to_owned(),
        );
        lines.extend(
            agents
                .iter()
                .map(|a| format!("{} ({}): {}", a.name, a.source, a.description)),
        );
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
                said(s.name.as_ref()).unwrap_or("?"),
                s.file.to_string_lossy(),
                s.reason
            )
        }));
    }
    lines.join("\n")
}

/// The herd, one line per sheep.
/// A sheep's state in words, with its host: `working`, `working on host box`, or `link down
/// since 2026-12-06T10:00:00Z on host box` while its host cannot be reached (its last known
/// state is then not what it is).
fn state_words(sheep: &SheepStatus) -> String {
    let host = said(sheep.host.as_ref())
        .map(|host| format!(" on host {host}"))
        .unwrap_or_default();
    let down = sheep
        .link_down_since
        .and_then(|ms| jiff::Timestamp::from_millisecond(ms).ok());
    match down {
        Some(since) => format!("link down since {since}{host}"),
        None => format!("{}{host}", sheep.state),
    }
}

pub(crate) fn herd_text(sheep: &[SheepStatus]) -> String {
    if sheep.is_empty() {
        return "No sheep in this herd.".to_owned();
    }
    sheep
        .iter()
        .map(|s| {
            let mut line = format!(
                "• {} [{}] id={}",
                s.display_name,
                state_words(s),
                s.agent_id
            );
            if let Some(task) = &s.task {
                let stale = if task.stale { " (stale)" } else { "" };
                line.push_str(&format!(" task {} {}{stale}", task.id, task.state.as_str()));
            }
            if let Some(error) = said(s.error.as_ref()) {
                line.push_str(&format!(" ({error})"));
            }
            line
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// One sheep's public status: id, state, task, error (no pane ids).
pub(crate) fn public_status(status: &SheepStatus) -> Value {
    let mut out = Map::new();
    out.insert("id".into(), json!(status.agent_id));
    out.insert("state".into(), json!(status.state));
    if let Some(task) = &status.task {
        out.insert("task".into(), json!(task));
    }
    if let Some(error) = &status.error {
        out.insert("error".into(), json!(error));
    }
    if let Some(host) = &status.host {
        out.insert("host".into(), json!(host));
    }
    if let Some(since) = status.link_down_since {
        out.insert("linkDownSince".into(), json!(since));
    }
    Value::Object(out)
}

/// One sheep's status in words.
pub(crate) fn status_text(status: &SheepStatus) -> String {
    let task = status.task.as_ref();
    let task_text = task
        .map(|t| format!("; task {} {}", t.id, t.state.as_str()))
        .unwrap_or_default();
    let waiting = task
        .filter(|t| t.state == TaskState::Waiting)
        .and_then(|t| {
            let on = said(t.waiting_on.as_ref())?;
            let stale = if t.stale { ", stale" } else { "" };
            Some(format!(" (waiting on {on}{stale})"))
        })
        .unwrap_or_default();
    format!(
        "{} {}{task_text}{waiting}.",
        filled(&status.display_name).unwrap_or("agent"),
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

/// Why a message goes otherwise than asked (a `steer` to a sheep that cannot be steered
/// mid-turn), as a sentence and a space to go before what follows; empty when it goes as asked.
pub(crate) fn changed_delivery(result: &MessageResult) -> String {
    said(result.delivery_changed.as_ref()).map_or_else(String::new, |why| format!("{why} "))
}

/// `mm:ss`.
fn minutes_seconds(ms: i64) -> String {
    let total = (ms / 1000).max(0);
    format!("{:02}:{:02}", total / 60, total % 60)
}

/// One parent inbox item in words (as pi shows it), `name` giving a sheep's display name.
pub(crate) fn inbox_item(item: &InboxItem, name: &dyn Fn(&str) -> String) -> Option<String> {
    match &item.payload {
        Payload::Completion { completions, .. } => {
            let summary = completions
                .iter()
                .map(|c| {
                    format!(
                        "{} {}",
                        filled(&c.display_name)
                            .or_else(|| filled(c.agent_id.as_str()))
                            .unwrap_or_default(),
                        c.status.as_str()
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
        Payload::Envelope { envelope } => {
            let author = envelope.author().as_str();
            let reply = envelope.kind == Kind::Reply;
            let message_id = envelope.message_id.as_str();
            let mut ids = vec![format!("Message ID: {message_id}")];
            if !author.is_empty() && author != "shepherd" {
                ids.push(format!("From agent id: {author}"));
            }
            let task_id = envelope
                .task_id
                .as_ref()
                .map(TaskId::as_str)
                .filter(|t| !t.is_empty());
            for (value, label) in [
                (task_id, "Task ID"),
                (said(envelope.thread_id.as_ref()), "Thread ID"),
                (
                    envelope
                        .reply_to
                        .as_ref()
                        .map(MessageId::as_str)
                        .filter(|r| !r.is_empty()),
                    "Reply to",
                ),
            ] {
                if let Some(value) = value {
                    ids.push(format!("{label}: {value}"));
                }
            }
            if envelope.expects_reply {
                let task = task_id.map(|t| format!(", taskId {t}")).unwrap_or_default();
                ids.push(format!(
                    "Expects reply: yes (answer with shepherd_message target {author}, replyTo {message_id}{task})"
                ));
            }
            Some(format!(
                "Shepherd {} from {}\n{}\n\n{}",
                if reply { "reply" } else { "message" },
                name(author),
                ids.join("\n"),
                envelope.content.as_deref().unwrap_or_default()
            ))
        }
        Payload::StaleWait(wait) => {
            let who = &wait.display_name;
            let agent = &wait.agent_id;
            let task = &wait.task_id;
            let request = &wait.request_id;
            let recipient = &wait.recipient_name;
            Some(
                [
                    format!(
                        "Shepherd stale wait: {who} has waited {} for a reply (stale after {} min).",
                        minutes_seconds(wait.elapsed_ms),
                        // As JSON writes it (`30.0`), which is how it has always read.
                        json!(wait.threshold_minutes)
                    ),
                    format!(
                        "Task: {task} (owner {who}, agent id {agent}) - {}",
                        clip(&wait.description, 200)
                    ),
                    format!("Question: {}", clip(&wait.question, 400)),
                    format!("Pending request: {request} (waiting on {recipient})"),
                    format!(
                        "You may answer on the owner's behalf with shepherd_message {{target: \"{agent}\", taskId: \"{task}\", replyTo: \"{request}\"}}, nudge {recipient}, or let the reply deadline settle the task blocked."
                    ),
                ]
                .join("\n"),
            )
        }
        Payload::Notice(notice) => {
            let who = notice
                .agent_id
                .as_ref()
                .map(|id| format!(" ({})", name(id.as_str())))
                .unwrap_or_default();
            Some(format!(
                "Shepherd notice: {}{who}\n{}",
                wire_word(&notice.notice),
                notice.text
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completion_lines_prefer_the_error_when_not_ok() {
        let report: TaskReport = serde_json::from_value(json!({"displayName": "w: a",
            "taskId": "t1", "agentId": "a1", "agent": "w", "label": "a", "status": "failed",
            "returnCode": 1, "ok": false, "summary": "s", "error": "boom", "noteRelative": "n.md"}))
        .expect("a task report");
        let line = completion_line(&report);
        assert_eq!(line, "w: a task t1 failed (rc 1): boom Note: n.md");
    }

    const SHEEP: &str = "shepherd-agent-1a2b3c4d-0f0e0d0c";

    /// An inbox item as the broker sends it.
    fn item(json: Value) -> InboxItem {
        serde_json::from_value(json).expect("an inbox item")
    }

    fn name(id: &str) -> String {
        if id == SHEEP {
            "worker: a".to_owned()
        } else {
            id.to_owned()
        }
    }

    #[test]
    fn a_stale_wait_reads_as_pi_words_with_its_threshold_as_json_writes_it() {
        let stale = item(json!({"seq": 3, "at": 1, "type": "stale_wait",
            "taskId": "shepherd-task-1", "agentId": SHEEP, "displayName": "worker: a",
            "description": "fix the login", "waitingSince": 0, "elapsedMs": 125_000,
            "requestId": "shepherd-message-9", "question": "which branch?",
            "recipient": "shepherd", "recipientName": "shepherd", "thresholdMinutes": 30.0}));
        let words = inbox_item(&stale, &name).expect("words");
        assert_eq!(
            words.lines().take(4).collect::<Vec<_>>(),
            [
                "Shepherd stale wait: worker: a has waited 02:05 for a reply (stale after 30.0 min).",
                &format!(
                    "Task: shepherd-task-1 (owner worker: a, agent id {SHEEP}) - fix the login"
                ),
                "Question: which branch?",
                "Pending request: shepherd-message-9 (waiting on shepherd)",
            ]
        );
    }

    #[test]
    fn a_notice_says_its_kind_as_on_the_wire_and_names_its_sheep() {
        let notice = item(json!({"seq": 4, "at": 1, "type": "notice",
            "notice": "sheep_exited", "text": "it ended", "agentId": SHEEP}));
        assert_eq!(
            inbox_item(&notice, &name).as_deref(),
            Some("Shepherd notice: sheep_exited (worker: a)\nit ended")
        );
    }

    #[test]
    fn a_question_from_a_sheep_names_its_ids_and_how_to_answer() {
        let question = item(json!({"seq": 5, "at": 1, "type": "envelope", "envelope": {
            "schemaVersion": 1, "messageId": "shepherd-message-7", "kind": "message",
            "senderId": SHEEP, "targetId": "shepherd", "taskId": "shepherd-task-1",
            "expectsReply": true, "delivery": "followUp", "content": "which branch?",
            "createdAt": 1}}));
        assert_eq!(
            inbox_item(&question, &name).expect("words"),
            format!(
                "Shepherd message from worker: a\nMessage ID: shepherd-message-7\nFrom agent id: {SHEEP}\nTask ID: shepherd-task-1\nExpects reply: yes (answer with shepherd_message target {SHEEP}, replyTo shepherd-message-7, taskId shepherd-task-1)\n\nwhich branch?"
            )
        );
    }
}
