//! Receipts and herd-mates in words, as the pi package puts them (`parent/tools.ts`'s status,
//! the sheep extension's `shepherd_status` and `shepherd_herd`): whether a message was
//! delivered and read, the latest messages a sheep was sent, and who is in a sheep's herd.
//! Everything works on the broker's JSON answers and never fails: a missing field reads as
//! empty.

use serde_json::{Value, json};

fn str_of<'v>(value: &'v Value, key: &str) -> &'v str {
    value.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// A broker time (ms since the epoch) as an RFC 3339 UTC timestamp.
fn at(value: &Value, key: &str) -> Option<String> {
    let ms = value.get(key).and_then(Value::as_i64)?;
    jiff::Timestamp::from_millisecond(ms)
        .ok()
        .map(|t| t.to_string())
}

/// What a receipt state means, for a reader who does not know the words.
fn meaning(state: &str) -> &'static str {
    match state {
        "queued" => "not yet fetched by its recipient",
        "delivered" => "handed to its recipient, not yet acknowledged",
        "read" => "acknowledged by its recipient",
        "discarded" => "its recipient was closed before reading it",
        _ => "unknown",
    }
}

/// `Message <id> from <a> to <b> is read (acknowledged by its recipient): sent …, delivered …,
/// read ….`
pub(crate) fn receipt_text(receipt: &Value) -> String {
    let state = str_of(receipt, "state");
    let times: Vec<String> = [
        ("sent", "sentAt"),
        ("delivered", "deliveredAt"),
        ("read", "readAt"),
    ]
    .iter()
    .filter_map(|(word, key)| at(receipt, key).map(|t| format!("{word} {t}")))
    .collect();
    format!(
        "Message {} from {} to {} is {state} ({}): {}.",
        str_of(receipt, "messageId"),
        str_of(receipt, "senderName"),
        str_of(receipt, "targetName"),
        meaning(state),
        times.join(", ")
    )
}

/// A receipt as a tool returns it.
pub(crate) fn public_receipt(receipt: &Value) -> Value {
    let mut out = json!({ "messageId": receipt.get("messageId"), "state": receipt.get("state") });
    for key in [
        "sender",
        "target",
        "taskId",
        "sentAt",
        "deliveredAt",
        "readAt",
    ] {
        if let Some(value) = receipt.get(key).filter(|v| !v.is_null()) {
            out[key] = value.clone();
        }
    }
    out
}

/// The lines a sheep's status adds for the messages it was sent, newest first.
pub(crate) fn messages_text(status: &Value) -> String {
    let messages = status.get("messages").and_then(Value::as_array);
    let Some(messages) = messages.filter(|m| !m.is_empty()) else {
        return String::new();
    };
    let lines: Vec<String> = messages
        .iter()
        .map(|m| {
            format!(
                "- {} from {}: {} \"{}\"",
                str_of(m, "messageId"),
                str_of(m, "senderName"),
                str_of(m, "state"),
                str_of(m, "preview")
            )
        })
        .collect();
    format!(
        "\nLatest messages sent to it, newest first (queued, delivered, read or discarded):\n{}",
        lines.join("\n")
    )
}

/// What `status` answered, in words and as the tool returns it: a message's receipt, or one
/// sheep (`sheep_text` and `sheep_shown` render the sheep itself) with its latest messages.
pub(crate) fn status_answer(
    status: &Value,
    sheep_text: impl FnOnce(&Value) -> String,
    sheep_shown: impl FnOnce(&Value) -> Value,
) -> (String, Value) {
    if status.get("messageId").is_some() {
        return (receipt_text(status), public_receipt(status));
    }
    let mut shown = sheep_shown(status);
    if let Some(messages) = status.get("messages").and_then(Value::as_array) {
        shown["messages"] = messages.iter().map(public_receipt).collect();
    }
    (
        format!("{}{}", sheep_text(status), messages_text(status)),
        shown,
    )
}

/// The herd as a sheep sees it (`herd.mates`), one line per sheep, itself marked.
pub(crate) fn mates_text(result: &Value) -> String {
    let mates = result.get("mates").and_then(Value::as_array);
    let lines: Vec<String> = mates
        .into_iter()
        .flatten()
        .map(|m| {
            let you = if m.get("isSelf").and_then(Value::as_bool) == Some(true) {
                " (you)"
            } else {
                ""
            };
            format!(
                "- {} ({}): {}, {}{you}",
                str_of(m, "displayName"),
                str_of(m, "agentId"),
                str_of(m, "state"),
                m.get("runtime").and_then(Value::as_str).unwrap_or("pi")
            )
        })
        .collect();
    format!(
        "Your herd, in spawn order (message a herd-mate by its agent id or display name; the parent is `shepherd`):\n{}",
        lines.join("\n")
    )
}
