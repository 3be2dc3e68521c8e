//! Receipts: when a message was sent, handed to its recipient and read.
//!
//! A sender wants to know whether what it said arrived, the way a chat shows "delivered" and
//! "read". Every message (from the parent or a sheep, not a task hand-over) keeps its times on
//! its routing record: sent when it was queued, delivered when the recipient fetched it or it
//! was pushed to the recipient's connection, read when the recipient acknowledged it from its
//! inbox (which a reader does only once it has the item). Both marks are herd events, journaled
//! like every other change, so they survive a broker restart.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::model::{Event, InboxItem, Payload, Receipt};
use super::{Herd, Tx};
use crate::ids::{MessageId, Participant, TaskId};

/// How many of the messages sent to a sheep its `status` lists, newest first.
pub const RECEIPTS_LISTED: usize = 10;

/// Where a message is on its way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReceiptState {
    /// In its recipient's inbox, not yet handed out.
    Queued,
    /// Handed to its recipient (fetched or pushed), not yet acknowledged.
    Delivered,
    /// Acknowledged by its recipient.
    Read,
    /// Its recipient was closed before reading it (its inbox went with it): it will never be
    /// read.
    Discarded,
}

impl ReceiptState {
    /// The wire word.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Queued => "queued",
            Self::Delivered => "delivered",
            Self::Read => "read",
            Self::Discarded => "discarded",
        }
    }
}

/// A message's receipt as `status` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MessageReceipt {
    /// The message.
    pub message_id: MessageId,
    /// Who sent it.
    pub sender: Participant,
    /// The sender's display name, or `shepherd`.
    pub sender_name: String,
    /// Who it went to.
    pub target: Participant,
    /// The recipient's display name, or `shepherd`.
    pub target_name: String,
    /// The task it concerned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<TaskId>,
    /// Its first line.
    pub preview: String,
    /// Where it is.
    pub state: ReceiptState,
    /// When it was queued (ms).
    pub sent_at: i64,
    /// When it was handed to its recipient (ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivered_at: Option<i64>,
    /// When its recipient acknowledged it (ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_at: Option<i64>,
}

/// Records that `who` was handed its items up to `seq`, when any message among them had not
/// been handed out before (a re-fetch of the same items changes nothing).
pub fn delivered(tx: &mut Tx<'_>, who: &Participant, seq: u64) {
    let herd = tx.herd();
    let fresh = herd.inboxes.get(who).is_some_and(|inbox| {
        inbox
            .items
            .iter()
            .take_while(|item| item.seq <= seq)
            .any(|item| {
                herd.receipt_of(item, who)
                    .is_some_and(|r| r.delivered_at.is_none())
            })
    });
    if fresh {
        let at = tx.now();
        tx.emit(Event::Delivered {
            who: who.clone(),
            seq,
            at,
        });
    }
}

impl Herd {
    /// The receipt of the message `item` carries, when it is a message addressed to `who`
    /// (a reply relayed to its asker carries the original's id, but the receipt is the
    /// addressee's).
    fn receipt_of(&self, item: &InboxItem, who: &Participant) -> Option<&Receipt> {
        let Payload::Envelope { envelope } = &item.payload else {
            return None;
        };
        self.messages
            .get(&envelope.message_id)
            .filter(|record| &record.target == who)
            .and_then(|record| record.receipt.as_ref())
    }

    /// Marks the messages among `who`'s items up to `seq` delivered at `at` (and read, when
    /// `read`); the first time counts.
    pub(super) fn mark_receipts(&mut self, who: &Participant, seq: u64, at: i64, read: bool) {
        let Some(inbox) = self.inboxes.get(who) else {
            return;
        };
        for item in inbox.items.iter().take_while(|item| item.seq <= seq) {
            let Payload::Envelope { envelope } = &item.payload else {
                continue;
            };
            let Some(receipt) = self
                .messages
                .get_mut(&envelope.message_id)
                .filter(|record| &record.target == who)
                .and_then(|record| record.receipt.as_mut())
            else {
                continue;
            };
            receipt.delivered_at.get_or_insert(at);
            if read {
                receipt.read_at.get_or_insert(at);
            }
        }
    }

    /// The receipt of one message, when the herd still keeps it.
    pub fn message_receipt(&self, id: &MessageId) -> Option<MessageReceipt> {
        let record = self.messages.get(id)?;
        let receipt = record.receipt.as_ref()?;
        let state = match (receipt.read_at, receipt.delivered_at) {
            (Some(_), _) => ReceiptState::Read,
            _ if !self.holds(&record.target, id) => ReceiptState::Discarded,
            (None, Some(_)) => ReceiptState::Delivered,
            (None, None) => ReceiptState::Queued,
        };
        Some(MessageReceipt {
            message_id: id.clone(),
            sender: record.sender.clone(),
            sender_name: self.name_of(&record.sender),
            target: record.target.clone(),
            target_name: self.name_of(&record.target),
            task_id: record.task_id.clone(),
            preview: receipt.preview.clone(),
            state,
            sent_at: receipt.sent_at,
            delivered_at: receipt.delivered_at,
            read_at: receipt.read_at,
        })
    }

    /// The latest messages sent to `who`, newest first, at most [`RECEIPTS_LISTED`].
    pub fn receipts_to(&self, who: &Participant) -> Vec<MessageReceipt> {
        self.messages
            .iter()
            .rev()
            .filter(|(_, record)| &record.target == who && record.receipt.is_some())
            .take(RECEIPTS_LISTED)
            .filter_map(|(id, _)| self.message_receipt(id))
            .collect()
    }

    /// Whether `who`'s inbox still holds message `id`. An inbox lets go of an item only when it
    /// is acknowledged (read) or when its sheep is closed (the inbox goes with it), so an unread
    /// message it no longer holds will never be read, even by the sheep resumed later.
    fn holds(&self, who: &Participant, id: &MessageId) -> bool {
        self.inboxes.get(who).is_some_and(|inbox| {
            inbox.items.iter().any(|item| {
                matches!(&item.payload, Payload::Envelope { envelope } if &envelope.message_id == id)
            })
        })
    }

    /// A participant's display name, or `shepherd` for the parent.
    fn name_of(&self, who: &Participant) -> String {
        match who {
            Participant::Parent => crate::ids::PARENT_WIRE_NAME.to_owned(),
            Participant::Sheep(id) => self
                .sheep
                .get(id)
                .map_or_else(|| id.to_string(), super::Sheep::display_name),
        }
    }
}
