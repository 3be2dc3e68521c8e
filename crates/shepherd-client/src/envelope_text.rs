//! An envelope in the words a sheep reads it, whatever carries it to the agent: the pi sheep
//! extension's header (who sent it, its ids, whether a reply is expected), then the content.
//! The MCP sheep tools and the agent driver both hand envelopes on in these words.

use serde_json::Value;

fn str_of<'v>(value: &'v Value, key: &str) -> Option<&'v str> {
    value
        .get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

/// An envelope as a sheep reads it (the pi sheep extension's header, then the content).
pub fn sheep_envelope(envelope: &Value) -> String {
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
