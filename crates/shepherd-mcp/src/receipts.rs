//! Receipts and herd-mates in words, as the pi package puts them (`parent/tools.ts`'s status,
//! the sheep extension's `shepherd_status` and `shepherd_herd`): whether a message was
//! delivered and read, the latest messages a sheep was sent, and who is in a sheep's herd.
//! Everything works on the broker's typed answers.

use serde_json::{Map, Value, json};
use shepherd_core::error_code::ErrorCode;
use shepherd_core::herd::{MessageReceipt, SheepStatus};
use shepherd_core::protocol::{HerdMatesResult, StatusResult};

use super::error::ToolError;

/// A broker time (ms since the epoch) as an RFC 3339 UTC timestamp.
fn at(ms: Option<i64>) -> Option<String> {
    jiff::Timestamp::from_millisecond(ms?)
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
pub(crate) fn receipt_text(receipt: &MessageReceipt) -> String {
    let state = receipt.state.as_str();
    let times: Vec<String> = [
        ("sent", Some(receipt.sent_at)),
        ("delivered", receipt.delivered_at),
        ("read", receipt.read_at),
    ]
    .iter()
    .filter_map(|(word, ms)| at(*ms).map(|t| format!("{word} {t}")))
    .collect();
    format!(
        "Message {} from {} to {} is {state} ({}): {}.",
        receipt.message_id,
        receipt.sender_name,
        receipt.target_name,
        meaning(state),
        times.join(", ")
    )
}

/// A receipt as a tool returns it.
pub(crate) fn public_receipt(receipt: &MessageReceipt) -> Value {
    let mut out = Map::new();
    out.insert("messageId".into(), json!(receipt.message_id));
    out.insert("state".into(), json!(receipt.state));
    out.insert("sender".into(), json!(receipt.sender));
    out.insert("target".into(), json!(receipt.target));
    if let Some(task) = &receipt.task_id {
        out.insert("taskId".into(), json!(task));
    }
    out.insert("sentAt".into(), json!(receipt.sent_at));
    if let Some(delivered) = receipt.delivered_at {
        out.insert("deliveredAt".into(), json!(delivered));
    }
    if let Some(read) = receipt.read_at {
        out.insert("readAt".into(), json!(read));
    }
    Value::Object(out)
}

/// The lines a sheep's status adds for the messages it was sent, newest first.
pub(crate) fn messages_text(status: &SheepStatus) -> String {
    if status.messages.is_empty() {
        return String::new();
    }
    let lines: Vec<String> = status
        .messages
        .iter()
        .map(|m| {
            format!(
                "- {} from {}: {} \"{}\"",
                m.message_id,
                m.sender_name,
                m.state.as_str(),
                m.preview
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
/// A whole herd is not an answer to a status of one.
pub(crate) fn status_answer(
    status: &StatusResult,
    sheep_text: impl FnOnce(&SheepStatus) -> String,
    sheep_shown: impl FnOnce(&SheepStatus) -> Value,
) -> Result<(String, Value), ToolError> {
    let sheep = match status {
        StatusResult::Message(receipt) => {
            return Ok((receipt_text(receipt), public_receipt(receipt)));
        }
        StatusResult::One(sheep) => sheep,
        StatusResult::All(_) => {
            return Err(ToolError::new(
                ErrorCode::Protocol,
                "status answered with the whole herd instead of one sheep or message",
            ));
        }
    };
    let mut shown = sheep_shown(sheep);
    if !sheep.messages.is_empty()
        && let Value::Object(fields) = &mut shown
    {
        fields.insert(
            "messages".into(),
            sheep.messages.iter().map(public_receipt).collect(),
        );
    }
    Ok((
        format!("{}{}", sheep_text(sheep), messages_text(sheep)),
        shown,
    ))
}

/// The herd as a sheep sees it (`herd.mates`), one line per sheep, itself marked.
pub(crate) fn mates_text(result: &HerdMatesResult) -> String {
    let lines: Vec<String> = result
        .mates
        .iter()
        .map(|m| {
            let you = if m.is_self { " (you)" } else { "" };
            format!(
                "- {} ({}): {}, {}{you}",
                m.display_name,
                m.agent_id,
                m.state,
                m.runtime.as_str()
            )
        })
        .collect();
    format!(
        "Your herd, in spawn order (message a herd-mate by its agent id or display name; the parent is `shepherd`):\n{}",
        lines.join("\n")
    )
}
