//! Time-driven rules: task deadlines (timed out, rc 124), reply deadlines (blocked, rc 2),
//! stale-wait reminders (one per waiting episode; they never change state) and the opt-in stall
//! watchdog (`controls`). The broker asks
//! [`Herd::next_deadline`] when to wake and calls [`tick`] when it does; nothing polls.

use super::model::{Event, Payload, StaleWait};
use super::steps::settle;
use super::{Herd, Tx};
use crate::ids::Participant;
use crate::task::TaskState;

/// The settings that time-driven rules read.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HerdConfig {
    /// Remind the parent after a task has waited this long for a reply (ms); `None` disables.
    pub stale_after_ms: Option<i64>,
    /// Forgotten-done reminders a sheep gets before the parent is told.
    pub done_nudges: u32,
}

impl Default for HerdConfig {
    fn default() -> Self {
        Self {
            stale_after_ms: Some(5 * 60_000),
            done_nudges: 1,
        }
    }
}

impl Herd {
    /// The earliest instant (ms) at which [`tick`] has something to do.
    pub fn next_deadline(&self, config: &HerdConfig) -> Option<i64> {
        let tasks = self.tasks.values().filter(|t| !t.state.is_terminal());
        let task_deadlines = tasks.clone().map(|t| t.deadline_at);
        let reply_deadlines = self.requests.values().map(|r| r.deadline_at);
        let stale = config.stale_after_ms.map(|after| {
            tasks
                .filter(|t| t.state == TaskState::Waiting && !t.stale_notified)
                .filter_map(|t| t.waiting_since.map(|since| since.saturating_add(after)))
                .min()
        });
        task_deadlines
            .chain(reply_deadlines)
            .chain(stale.flatten())
            .chain(self.next_stall())
            .chain(self.next_limit())
            .min()
    }
}

/// Applies every deadline that has passed by `tx.now()`.
pub fn tick(tx: &mut Tx<'_>, config: &HerdConfig) {
    let now = tx.now();
    let expired: Vec<_> = tx
        .herd()
        .tasks
        .values()
        .filter(|t| !t.state.is_terminal() && t.deadline_at <= now)
        .map(|t| t.id.clone())
        .collect();
    for task_id in expired {
        let error = match &tx.herd().tasks[&task_id].limit {
            Some(limit) => format!(
                "Tracked task deadline reached while rate-limited ({} from {}, waiting since {} UTC).",
                limit.class.words(),
                limit.provider,
                super::limits::clock(limit.since)
            ),
            None => "Tracked task deadline reached.".into(),
        };
        settle(tx, &task_id, TaskState::TimedOut, None, None, Some(error));
    }
    super::limits::tick_limits(tx);

    let unanswered: Vec<_> = tx
        .herd()
        .requests
        .values()
        .filter(|r| r.deadline_at <= now)
        .cloned()
        .collect();
    for request in unanswered {
        let target = recipient_name(tx.herd(), &request.target);
        let error = format!(
            "Tracked reply deadline reached. Timed out waiting for a reply from {target} (message {} never answered).",
            request.id
        );
        settle(
            tx,
            &request.task_id,
            TaskState::Blocked,
            None,
            None,
            Some(error),
        );
    }

    super::controls::tick_stalls(tx);

    let Some(after) = config.stale_after_ms else {
        return;
    };
    let stale: Vec<_> = tx
        .herd()
        .tasks
        .values()
        .filter(|t| t.state == TaskState::Waiting && !t.stale_notified)
        .filter(|t| {
            t.waiting_since
                .is_some_and(|since| since.saturating_add(after) <= now)
        })
        .map(|t| t.id.clone())
        .collect();
    for task_id in stale {
        let herd = tx.herd();
        let task = &herd.tasks[&task_id];
        let Some(request) = task
            .pending_request
            .as_ref()
            .and_then(|id| herd.requests.get(id))
        else {
            continue;
        };
        let since = task.waiting_since.unwrap_or(now);
        let notice = StaleWait {
            task_id: task_id.clone(),
            agent_id: task.agent_id.clone(),
            display_name: herd
                .sheep
                .get(&task.agent_id)
                .map(super::Sheep::display_name)
                .unwrap_or_default(),
            description: task.description.clone(),
            waiting_since: since,
            elapsed_ms: now - since,
            request_id: request.id.clone(),
            question: request.question.clone(),
            recipient: request.target.clone(),
            recipient_name: recipient_name(herd, &request.target),
            threshold_minutes: after as f64 / 60_000.0,
        };
        tx.emit(Event::StaleNotified { task_id });
        tx.enqueue(Participant::Parent, Payload::StaleWait(notice));
    }
}

fn recipient_name(herd: &Herd, who: &Participant) -> String {
    match who {
        Participant::Parent => "shepherd".to_owned(),
        Participant::Sheep(id) => herd
            .sheep
            .get(id)
            .map_or_else(|| id.to_string(), super::Sheep::display_name),
    }
}
