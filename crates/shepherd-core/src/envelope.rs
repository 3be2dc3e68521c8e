//! Message envelopes between the shepherd and its sheep.
//!
//! An envelope is what lands in a participant's inbox: a delegated task, a message, a reply or
//! a reminder. The field names are the original extension's (schema version 1) so a sheep-side
//! integration written against either reads the same JSON. Limits live here too, so every
//! front end refuses the same oversized input with the same words.

use crate::error_code::ErrorCode;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ids::{MessageId, Participant, TaskId};
use crate::task::DoneStatus;

/// The envelope schema version.
pub const SCHEMA_VERSION: u32 = 1;

/// Largest message content accepted, in bytes (64 KiB).
pub const MAX_CONTENT_BYTES: usize = 64 * 1024;

/// Largest task description accepted, in characters.
pub const MAX_TASK_CHARS: usize = 100_000;

/// What an envelope carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A delegated task for the receiving sheep.
    Task,
    /// A message (possibly a tracked question).
    Message,
    /// An answer to an earlier message (`replyTo`).
    Reply,
    /// A reminder from Shepherd itself (for example a forgotten `shepherd_done`).
    Reminder,
}

/// How urgently a message reaches an agent that is busy.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum Delivery {
    /// Queued for the agent's next turn (default).
    #[default]
    #[serde(rename = "followUp")]
    FollowUp,
    /// Injected into the agent's current turn.
    #[serde(rename = "steer")]
    Steer,
}

impl Delivery {
    /// Parses `followUp` or `steer`.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "followUp" => Some(Self::FollowUp),
            "steer" => Some(Self::Steer),
            _ => None,
        }
    }
}

impl std::str::FromStr for Delivery {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::parse(text).ok_or_else(|| format!("delivery `{text}` is not followUp or steer"))
    }
}

/// One message between participants of a herd.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Envelope {
    /// Always [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// This envelope's id.
    pub message_id: MessageId,
    /// What it carries.
    pub kind: Kind,
    /// Who sent it (for relayed replies: the relaying participant).
    pub sender_id: Participant,
    /// Whose inbox it is in.
    pub target_id: Participant,
    /// The task it concerns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<TaskId>,
    /// A caller-chosen conversation thread.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<String>,
    /// The message this one answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply_to: Option<MessageId>,
    /// Whether the sender waits for a reply.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub expects_reply: bool,
    /// When an expected reply is due (ms since the epoch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline_at: Option<i64>,
    /// Follow-up or steer.
    pub delivery: Delivery,
    /// The text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// A completion status, for envelopes that report one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<DoneStatus>,
    /// The true author of a relayed reply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin_sender_id: Option<Participant>,
    /// For a task with a note: the note's absolute path (also in the content's context block),
    /// so a program can find it without reading the block.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// When the broker accepted it (ms since the epoch).
    pub created_at: i64,
}

impl Envelope {
    /// Whether delivering this envelope should start a turn in an idle agent: tasks, replies,
    /// questions and reminders do; plain messages wait for the agent's next turn.
    pub fn triggers_turn(&self) -> bool {
        matches!(self.kind, Kind::Task | Kind::Reply | Kind::Reminder) || self.expects_reply
    }

    /// The author a reader should see: the original author of a relayed reply, else the sender.
    pub fn author(&self) -> &Participant {
        self.origin_sender_id.as_ref().unwrap_or(&self.sender_id)
    }
}

/// Why message content was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ContentError {
    /// Empty or whitespace only.
    #[error("{what} must not be empty")]
    Empty {
        /// `Message content`, `Task description`, …
        what: &'static str,
    },
    /// Over the limit.
    #[error("{what} is {size} {unit}; the limit is {limit} {unit}")]
    TooLarge {
        /// `Message content`, `Task description`, …
        what: &'static str,
        /// The size given.
        size: usize,
        /// The limit.
        limit: usize,
        /// `bytes` or `characters`.
        unit: &'static str,
    },
}

impl ContentError {
    /// The stable wire code: `invalid_task` for empty input, `too_large` for oversized input.
    pub fn code(&self) -> ErrorCode {
        match self {
            Self::Empty { .. } => ErrorCode::InvalidTask,
            Self::TooLarge { .. } => ErrorCode::TooLarge,
        }
    }
}

/// Checks message content: non-empty and at most [`MAX_CONTENT_BYTES`] bytes.
pub fn check_message(content: &str) -> Result<(), ContentError> {
    let what = "Message content";
    if content.trim().is_empty() {
        return Err(ContentError::Empty { what });
    }
    if content.len() > MAX_CONTENT_BYTES {
        return Err(ContentError::TooLarge {
            what,
            size: content.len(),
            limit: MAX_CONTENT_BYTES,
            unit: "bytes",
        });
    }
    Ok(())
}

/// Checks a task description: non-empty and at most [`MAX_TASK_CHARS`] characters.
pub fn check_task(description: &str) -> Result<(), ContentError> {
    let what = "Task description";
    if description.trim().is_empty() {
        return Err(ContentError::Empty { what });
    }
    let chars = description.chars().count();
    if chars > MAX_TASK_CHARS {
        return Err(ContentError::TooLarge {
            what,
            size: chars,
            limit: MAX_TASK_CHARS,
            unit: "characters",
        });
    }
    Ok(())
}

/// Checks a done summary: may be empty, at most [`MAX_CONTENT_BYTES`] bytes.
pub fn check_summary(summary: &str) -> Result<(), ContentError> {
    if summary.len() > MAX_CONTENT_BYTES {
        return Err(ContentError::TooLarge {
            what: "Done summary",
            size: summary.len(),
            limit: MAX_CONTENT_BYTES,
            unit: "bytes",
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_limits() {
        assert!(check_message("hi").is_ok());
        assert_eq!(check_message("  ").unwrap_err().code(), "invalid_task");
        let big = "x".repeat(MAX_CONTENT_BYTES + 1);
        assert_eq!(check_message(&big).unwrap_err().code(), "too_large");
        assert!(check_message(&big[1..]).is_ok());
        assert!(check_task(&"y".repeat(MAX_TASK_CHARS)).is_ok());
        assert!(check_task(&"y".repeat(MAX_TASK_CHARS + 1)).is_err());
    }

    #[test]
    fn envelope_wire_shape_is_camel_case() {
        let env = Envelope {
            schema_version: SCHEMA_VERSION,
            message_id: MessageId::mint("1a2b3c4d", "01"),
            kind: Kind::Message,
            sender_id: Participant::Parent,
            target_id: Participant::Parent,
            task_id: None,
            thread_id: None,
            reply_to: None,
            expects_reply: true,
            deadline_at: Some(5),
            delivery: Delivery::Steer,
            content: Some("ping".into()),
            status: None,
            origin_sender_id: None,
            note: None,
            created_at: 1,
        };
        let json = serde_json::to_value(&env).unwrap();
        assert_eq!(json["expectsReply"], true);
        assert_eq!(json["delivery"], "steer");
        assert_eq!(json["senderId"], "shepherd");
        assert!(env.triggers_turn());
        let back: Envelope = serde_json::from_value(json).unwrap();
        assert_eq!(back, env);
    }
}
