//! An envelope in the words a sheep reads it, whatever carries it to the agent: the pi sheep
//! extension's header (who sent it, its ids, whether a reply is expected), then the content.
//! The MCP sheep tools and the agent driver both hand envelopes on in these words.

use shepherd_core::envelope::{Envelope, Kind};
use shepherd_core::ids::{MessageId, PARENT_WIRE_NAME, TaskId};

/// An envelope as a sheep reads it (the pi sheep extension's header, then the content).
pub fn envelope_for_sheep(envelope: &Envelope) -> String {
    let author = envelope.author().as_str();
    let from = if author == PARENT_WIRE_NAME {
        "Shepherd"
    } else {
        author
    };
    let title = match envelope.kind {
        Kind::Task => format!("[Shepherd delegated task from {from}]"),
        Kind::Reminder => "[Shepherd reminder]".to_owned(),
        Kind::Message | Kind::Reply => format!("[Shepherd message from {from}]"),
    };
    let mut lines = vec![title, format!("Message ID: {}", envelope.message_id)];
    let task_id = envelope.task_id.as_ref().map(TaskId::as_str);
    let reply_to = envelope.reply_to.as_ref().map(MessageId::as_str);
    for (value, label) in [
        (task_id, "Task ID"),
        (envelope.thread_id.as_deref(), "Thread ID"),
        (reply_to, "Reply to"),
    ] {
        if let Some(value) = value.filter(|value| !value.is_empty()) {
            lines.push(format!("{label}: {value}"));
        }
    }
    if envelope.expects_reply {
        lines.push("Expects reply: yes (answer with shepherd_message and replyTo)".to_owned());
    }
    format!(
        "{}\n\n{}",
        lines.join("\n"),
        envelope.content.as_deref().unwrap_or_default()
    )
}

/// [`envelope_for_sheep`] for an envelope still in its JSON form; one that is not an envelope
/// reads as an empty message. (The tests hold the typed words to what this form printed.)
#[cfg(test)]
fn sheep_envelope(envelope: &serde_json::Value) -> String {
    use serde::Deserialize as _;
    match Envelope::deserialize(envelope) {
        Ok(envelope) => envelope_for_sheep(&envelope),
        Err(_) => "[Shepherd message from ]\nMessage ID: \n\n".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn envelope(extra: &Value) -> Value {
        let mut envelope = json!({
            "schemaVersion": 1,
            "messageId": "shepherd-message-1",
            "kind": "task",
            "senderId": "shepherd",
            "targetId": "shepherd-agent-0123abcd-1",
            "delivery": "followUp",
            "content": "do it",
            "createdAt": 1,
        });
        envelope
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        envelope
    }

    #[test]
    fn a_task_from_the_shepherd_names_its_ids_then_its_content() {
        let text = sheep_envelope(&envelope(&json!({ "taskId": "shepherd-task-1" })));
        assert_eq!(
            text,
            "[Shepherd delegated task from Shepherd]\nMessage ID: shepherd-message-1\n\
             Task ID: shepherd-task-1\n\ndo it"
        );
    }

    #[test]
    fn a_relayed_question_names_its_author_and_asks_for_a_reply() {
        let text = sheep_envelope(&envelope(&json!({
            "kind": "message",
            "senderId": "shepherd",
            "originSenderId": "shepherd-agent-0123abcd-2",
            "threadId": "t",
            "replyTo": "shepherd-message-0",
            "expectsReply": true,
        })));
        assert_eq!(
            text,
            "[Shepherd message from shepherd-agent-0123abcd-2]\nMessage ID: shepherd-message-1\n\
             Thread ID: t\nReply to: shepherd-message-0\n\
             Expects reply: yes (answer with shepherd_message and replyTo)\n\ndo it"
        );
        let reminder = sheep_envelope(&envelope(&json!({ "kind": "reminder" })));
        assert!(reminder.starts_with("[Shepherd reminder]\n"), "{reminder}");
    }
}
