//! What a herd's participants send each other and what waits for them: open requests, the
//! record of who messaged whom, inboxes and their items (envelopes, completions, stale-wait
//! reminders, notices), message receipts, and the replies kept for resent requests. Split from
//! the sheep and task records of [`super`], which re-exports all of it, so that those read on
//! their own.

use std::collections::VecDeque;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::TaskReport;
use crate::envelope::Envelope;
use crate::herd::lines::first_line;
use crate::ids::{AgentId, MessageId, Participant, TaskId, WatcherId};

/// An open tracked request: a question whose task waits for the answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Request {
    /// The question's message id.
    pub id: MessageId,
    /// The task that waits.
    pub task_id: TaskId,
    /// Who asked.
    pub asker: Participant,
    /// Who should answer.
    pub target: Participant,
    /// The question.
    pub question: String,
    /// When it was asked (ms).
    pub opened_at: i64,
    /// When the task settles blocked without an answer (ms).
    pub deadline_at: i64,
}

/// Who sent a message to whom about which task; kept to infer and route replies.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageRecord {
    /// The sender.
    pub sender: Participant,
    /// The recipient.
    pub target: Participant,
    /// The task it concerned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<TaskId>,
    /// When a message (not a task hand-over) was sent, handed out and read; absent for tasks
    /// and for records from journals written before receipts were kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receipt: Option<Receipt>,
}

/// The times a message went through, kept on its routing record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Receipt {
    /// When it was queued for its recipient (ms).
    pub sent_at: i64,
    /// When its recipient first fetched it or had it pushed (ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivered_at: Option<i64>,
    /// When its recipient acknowledged it from its inbox (ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_at: Option<i64>,
    /// The message's first line, so a list of receipts says which message is which.
    pub preview: String,
}

impl Receipt {
    /// The receipt of a message `content` queued at `now`.
    pub fn sent(now: i64, content: &str) -> Self {
        Self {
            sent_at: now,
            delivered_at: None,
            read_at: None,
            preview: first_line(content),
        }
    }
}

/// A participant's queue of undelivered items. Nothing in it is ever dropped: a full inbox
/// refuses new messages instead (see [`crate::herd::MAX_INBOX_ITEMS`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Inbox {
    /// Items not yet acknowledged, oldest first.
    pub items: VecDeque<InboxItem>,
}

/// The answer a state-changing request got, kept under its client request id so that the same
/// request sent again is answered alike instead of being applied twice.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredReply {
    /// The result, when it succeeded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// The error, when it failed after changing something.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<crate::error_code::WireError>,
}

/// One delivered-but-unacknowledged item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InboxItem {
    /// Position in the herd's global order; acknowledged by number.
    pub seq: u64,
    /// When it was queued (ms).
    pub at: i64,
    /// What it is.
    #[serde(flatten)]
    pub payload: Payload,
}

/// What an inbox item carries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", tag = "type")]
pub enum Payload {
    /// A task, message, reply or reminder.
    Envelope {
        /// The envelope.
        envelope: Envelope,
    },
    /// Tasks a watcher was waiting for have settled (parent only).
    Completion {
        /// The watcher.
        #[serde(rename = "watcherId")]
        watcher_id: WatcherId,
        /// One report per settled task, in the watcher's order.
        completions: Vec<TaskReport>,
    },
    /// A task has waited for a reply longer than the stale threshold (parent only).
    StaleWait(StaleWait),
    /// Something the parent should know that is not a message (parent only).
    Notice(Notice),
}

/// A stale-wait reminder's facts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StaleWait {
    /// The waiting task.
    pub task_id: TaskId,
    /// Its sheep.
    pub agent_id: AgentId,
    /// Its sheep's display name.
    pub display_name: String,
    /// The task text.
    pub description: String,
    /// Since when it waits (ms).
    pub waiting_since: i64,
    /// How long it has waited (ms).
    pub elapsed_ms: i64,
    /// The unanswered question's id.
    pub request_id: MessageId,
    /// The question.
    pub question: String,
    /// Who should answer.
    pub recipient: Participant,
    /// The recipient's display name (or `shepherd`).
    pub recipient_name: String,
    /// The threshold that was crossed (minutes).
    pub threshold_minutes: f64,
}

/// What a notice is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum NoticeKind {
    /// A done without any task to settle was dropped.
    TaskDoneDropped,
    /// A done naming the wrong task was applied to the sender's active task.
    TaskDoneMismatch,
    /// A sheep kept ending its turns without calling done.
    CompletionStalled,
    /// A sheep's process ended while it had no task.
    SheepExited,
    /// A sheep was closed automatically after its task settled.
    AutoClosed,
    /// A sheep due to be closed automatically could not be closed.
    AutoCloseFailed,
    /// The broker restarted and had to work around damaged state (the text says what).
    BrokerRecovered,
    /// The stall watchdog nudged a silent sheep (its task settles blocked if it stays silent).
    StallNudged,
    /// A sheep's task met a provider limit and waits for its reset (once per episode).
    RateLimited,
    /// A task's limit lasts past `fallbackAfterMinutes`: it went to its agent's fallback.
    FellBack,
}

/// A notice for the parent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Notice {
    /// What it is about.
    pub notice: NoticeKind,
    /// One human-readable paragraph.
    pub text: String,
    /// The sheep concerned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<AgentId>,
    /// The task concerned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<TaskId>,
}
