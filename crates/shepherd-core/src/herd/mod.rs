//! The herd state machine: sheep, tasks, tracked requests, inboxes and watchers.
//!
//! The broker owns one [`Herd`] per parent. Every change goes through a command here (spawn,
//! delegate, message, done, close, tick, …) that validates against the current state and then
//! records [`Event`]s through a [`Tx`]; [`Herd::apply`] is the only code that mutates state, and
//! the broker journals the same events, so replaying the journal after a crash rebuilds exactly
//! the state that was acknowledged. Nothing here does I/O or reads a clock: `now` (ms since the
//! epoch) and freshly minted ids come in as arguments, and what must happen outside (deliver an
//! inbox item, finalise a note, start a timer) is read back from the recorded events and the
//! resulting state.

mod apply;
mod controls;
mod done;
mod error;
pub mod fallback;
mod lifecycle;
pub mod limits;
mod lines;
mod mates;
pub mod merge;
mod messaging;
mod model;
pub mod needs;
mod receipts;
mod resolve;
mod run;
mod steps;
mod tasks;
mod tick;
mod view;
mod watch;

#[cfg(test)]
mod controls_tests;
#[cfg(test)]
mod receipts_tests;
#[cfg(test)]
mod tests;

pub use controls::{Reopen, reopen, usage, worktree_released};
pub use done::{DoneInput, DoneOutcome, RunReport, done, report, report_with};
pub use error::HerdError;
pub use lifecycle::{
    NewSheep, admit, begin_close, closed, exited, failed_to_start, launched, ready,
};
pub use lines::{first_line, last_line};
pub use mates::HerdMate;
pub use messaging::{MessageInput, MessageOutcome, send};
pub use model::*;
pub use receipts::{MessageReceipt, RECEIPTS_LISTED, ReceiptState, delivered};
pub use resolve::Resolved;
pub use run::{MAX_FINISHED_RUNS, cancel_run, finish_run, plan_run, run_step, submit_run};
pub use steps::{ACTIVITY_RESOLUTION_MS, settle, settle_with_code, touch, touch_task};
pub use tasks::{
    DelegateInput, attach_note, cursor, delegate, finalized, fix_fieldnotes, output, start_task,
    withdraw,
};
pub use tick::{HerdConfig, tick};
pub use view::{
    SETTLED_LISTED, SessionLink, SettledTask, SheepStatus, StallView, TaskView, Usage, ack,
};
pub use watch::{WatchOutcome, watch};

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use crate::ids::{AgentId, MessageId, Participant, TaskId, WatcherId};

/// Most unacknowledged items a sheep's inbox holds: a task or message to a sheep whose inbox is
/// this full is refused (`inbox_full`), never dropped.
pub const MAX_INBOX_ITEMS: usize = 1000;

/// Most unacknowledged items the parent's inbox holds before sheep messages to the parent are
/// refused. What the broker itself reports (completions, notices) is always kept.
pub const MAX_PARENT_INBOX_ITEMS: usize = 10_000;

/// Most stored replies kept for resent requests (oldest forgotten first). A resend comes within
/// seconds of the first attempt, so this is far more than needed.
pub const MAX_STORED_REPLIES: usize = 4096;

/// Most message routing records kept for reply inference.
pub const MAX_MESSAGE_RECORDS: usize = 10_000;

/// The runtime state of one parent's herd.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Herd {
    /// The 8-hex namespace in every id this herd mints.
    pub namespace: String,
    /// Sheep in spawn order.
    pub sheep: IndexMap<AgentId, Sheep>,
    /// Tasks in creation order.
    pub tasks: IndexMap<TaskId, Task>,
    /// Open tracked requests by message id.
    pub requests: IndexMap<MessageId, Request>,
    /// Routing facts of recent messages, for reply inference and relays.
    pub messages: IndexMap<MessageId, MessageRecord>,
    /// Every participant's inbox.
    pub inboxes: BTreeMap<Participant, Inbox>,
    /// Durable watchers.
    pub watchers: IndexMap<WatcherId, Watcher>,
    /// The last inbox sequence number handed out.
    pub last_seq: u64,
    /// Answers to state-changing requests by client request id, oldest first.
    #[serde(default)]
    pub replies: IndexMap<String, StoredReply>,
    /// Runs, in submission order (finished ones kept for a while).
    #[serde(default)]
    pub runs: IndexMap<String, Run>,
    /// Merges, in submission order (finished ones kept for a while).
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub merges: IndexMap<String, Merge>,
    /// Every branch a merge landed, by target and branch ([`landed_key`]).
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub landed: IndexMap<String, Landed>,
    /// Whether this herd writes fieldnotes: the `fieldnotes` setting as it was when the herd
    /// first needed it, fixed for the herd's life (as the original fixes it per session).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fieldnotes: Option<bool>,
    /// The provider keys closed for a limit, or letting their sheep go after its reset.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub limiters: BTreeMap<crate::limit::ProviderKey, limits::Limiter>,
}

/// A change in progress: commands validate first, then [`Tx::emit`] each event, which applies it
/// at once and records it for the journal. [`Tx::finish`] flushes watcher notifications for
/// tasks that became reportable during the change, coalesced per watcher.
#[derive(Debug)]
pub struct Tx<'a> {
    herd: &'a mut Herd,
    now: i64,
    events: Vec<Event>,
    newly_reportable: Vec<TaskId>,
}

impl<'a> Tx<'a> {
    /// Starts a change at `now` (ms since the epoch).
    pub fn new(herd: &'a mut Herd, now: i64) -> Self {
        Self {
            herd,
            now,
            events: Vec::new(),
            newly_reportable: Vec::new(),
        }
    }

    /// The state as changed so far.
    pub fn herd(&self) -> &Herd {
        self.herd
    }

    /// The time of this change.
    pub fn now(&self) -> i64 {
        self.now
    }

    /// Applies `event` and records it.
    pub fn emit(&mut self, event: Event) {
        let was = reportable_tasks_of(&event, self.herd);
        self.herd.apply(&event);
        for task_id in was {
            if self
                .herd
                .tasks
                .get(&task_id)
                .is_some_and(Task::is_reportable)
            {
                self.newly_reportable.push(task_id);
            }
        }
        self.events.push(event);
    }

    /// Appends an item to `to`'s inbox.
    pub fn enqueue(&mut self, to: Participant, payload: Payload) {
        let item = InboxItem {
            seq: self.herd.last_seq + 1,
            at: self.now,
            payload,
        };
        self.emit(Event::Enqueued { to, item });
    }

    /// Queues a reminder to `to` about `task_id`, sent as the parent: the nudges and the
    /// go-ons the herd sends by itself. Its id is minted from the inbox position it takes.
    pub fn remind(&mut self, to: Participant, task_id: &TaskId, content: String) {
        use crate::envelope::{Delivery, Envelope, Kind, SCHEMA_VERSION};
        let envelope = Envelope {
            schema_version: SCHEMA_VERSION,
            message_id: MessageId::mint(
                &self.herd.namespace,
                &format!("{:016x}", self.herd.last_seq + 1),
            ),
            kind: Kind::Reminder,
            sender_id: Participant::Parent,
            target_id: to.clone(),
            task_id: Some(task_id.clone()),
            thread_id: None,
            reply_to: None,
            expects_reply: false,
            deadline_at: None,
            delivery: Delivery::FollowUp,
            content: Some(content),
            status: None,
            origin_sender_id: None,
            note: None,
            created_at: self.now,
        };
        self.enqueue(to, Payload::Envelope { envelope });
    }

    /// Whether anything changed so far.
    pub fn changed(&self) -> bool {
        !self.events.is_empty()
    }

    /// Ends the change: notifies watchers of tasks that became reportable, and returns every
    /// event recorded, in order.
    pub fn finish(mut self) -> Vec<Event> {
        watch::flush(&mut self);
        self.events
    }
}

/// Tasks an event may make reportable (settled with a final note), checked after it applies.
fn reportable_tasks_of(event: &Event, herd: &Herd) -> Vec<TaskId> {
    match event {
        Event::TaskSettled { task_id, .. } | Event::TaskFinalized { task_id } => {
            if herd.tasks.get(task_id).is_some_and(Task::is_reportable) {
                Vec::new()
            } else {
                vec![task_id.clone()]
            }
        }
        _ => Vec::new(),
    }
}
