//! [`Herd::apply`]: the only code that changes a herd. Commands decide; this applies what they
//! decided, and the broker's journal replay applies the same events in the same order.

use super::model::{Activity, Event, Phase, Task};
use super::{Herd, MAX_MESSAGE_RECORDS, MAX_STORED_REPLIES};
use crate::task::TaskState;

impl Herd {
    /// Applies one event. Events referring to unknown sheep or tasks are ignored, so a journal
    /// that outlived part of its state still replays.
    pub fn apply(&mut self, event: &Event) {
        match event {
            Event::SheepCreated { sheep } => {
                self.sheep.insert(sheep.id.clone(), (**sheep).clone());
                self.inboxes
                    .entry(super::Participant::Sheep(sheep.id.clone()))
                    .or_default();
            }
            Event::SheepLaunched { agent_id, launch } => {
                if let Some(sheep) = self.sheep.get_mut(agent_id) {
                    sheep.launch = Some(launch.clone());
                }
            }
            Event::SheepReady { agent_id, at } => {
                if let Some(sheep) = self.sheep.get_mut(agent_id)
                    && sheep.phase == Phase::Starting
                {
                    sheep.phase = Phase::Ready;
                    stamp(sheep, *at);
                }
            }
            Event::SheepActivity {
                agent_id,
                activity,
                at,
            } => {
                if let Some(sheep) = self.sheep.get_mut(agent_id) {
                    // A turn handed over under a cap is over.
                    if *activity == Activity::Idle {
                        sheep.turn_granted = false;
                    }
                    if sheep.activity != *activity {
                        sheep.activity = *activity;
                        stamp(sheep, *at);
                    }
                }
            }
            Event::SheepFailed { agent_id, exit, at }
            | Event::SheepExited { agent_id, exit, at } => {
                if let Some(sheep) = self.sheep.get_mut(agent_id) {
                    let phase = match event {
                        Event::SheepFailed { .. } => Phase::Failed,
                        _ if sheep.phase == Phase::Closing => Phase::Closing,
                        _ => Phase::Exited,
                    };
                    if phase != sheep.phase {
                        stamp(sheep, *at);
                    }
                    sheep.phase = phase;
                    sheep.activity = Activity::Idle;
                    sheep.exit = Some(exit.clone());
                }
            }
            Event::SheepClosing { agent_id, at } => {
                if let Some(sheep) = self.sheep.get_mut(agent_id) {
                    sheep.phase = Phase::Closing;
                    stamp(sheep, *at);
                }
            }
            Event::SheepClosed { agent_id, at } => {
                if let Some(sheep) = self.sheep.get_mut(agent_id) {
                    sheep.phase = Phase::Closed;
                    sheep.activity = Activity::Idle;
                    stamp(sheep, *at);
                }
                // Nothing will ever read a closed sheep's inbox again.
                self.inboxes
                    .remove(&super::Participant::Sheep(agent_id.clone()));
            }
            Event::TaskCreated { task } => {
                if let Some(sheep) = self.sheep.get_mut(&task.agent_id) {
                    sheep.active_task = Some(task.id.clone());
                    // The first task after a resume carries the note it continues.
                    sheep.continues = None;
                }
                self.tasks.insert(task.id.clone(), (**task).clone());
            }
            Event::TaskStarted { task_id, note, at } => {
                let mut agent = None;
                if let Some(task) = self.tasks.get_mut(task_id)
                    && task.state == TaskState::Created
                {
                    task.state = TaskState::Running;
                    task.note.clone_from(note);
                    task.started_at = *at;
                    agent = Some(task.agent_id.clone());
                }
                if let Some(sheep) = agent.and_then(|id| self.sheep.get_mut(&id)) {
                    sheep.activity = Activity::Working;
                    stamp(sheep, *at);
                }
            }
            Event::RequestOpened { request } => {
                if let Some(task) = self.tasks.get_mut(&request.task_id)
                    && !task.state.is_terminal()
                {
                    task.state = TaskState::Waiting;
                    task.pending_request = Some(request.id.clone());
                    task.waiting_since.get_or_insert(request.opened_at);
                    self.requests.insert(request.id.clone(), request.clone());
                }
            }
            Event::RequestResolved { request_id } => {
                if let Some(request) = self.requests.shift_remove(request_id)
                    && let Some(task) = self.tasks.get_mut(&request.task_id)
                    && task.pending_request.as_ref() == Some(request_id)
                {
                    resume(task);
                }
            }
            Event::TaskSettled { task_id, result } => self.settle(task_id, result),
            Event::TaskCursor { task_id, cursor } => {
                if let Some(task) = self.tasks.get_mut(task_id) {
                    task.session_cursor = Some(*cursor);
                }
            }
            Event::TaskOutput { task_id, output } => {
                if let Some(task) = self.tasks.get_mut(task_id) {
                    task.output = Some(output.clone());
                }
            }
            Event::TaskFinalized { task_id } => {
                if let Some(task) = self.tasks.get_mut(task_id) {
                    task.finalized = true;
                }
            }
            Event::MessageRecorded { message_id, record } => {
                self.messages.insert(message_id.clone(), record.clone());
                while self.messages.len() > MAX_MESSAGE_RECORDS {
                    self.messages.shift_remove_index(0);
                }
            }
            Event::Enqueued { to, item } => {
                self.last_seq = self.last_seq.max(item.seq);
                if let Some(inbox) = self.inbox_for(to) {
                    inbox.items.push_back(item.clone());
                }
            }
            Event::Acked { who, seq, at } => {
                if let Some(at) = at {
                    self.mark_receipts(who, *seq, *at, true);
                }
                if let Some(inbox) = self.inboxes.get_mut(who) {
                    while inbox.items.front().is_some_and(|item| item.seq <= *seq) {
                        inbox.items.pop_front();
                    }
                }
            }
            Event::Delivered { who, seq, at } => self.mark_receipts(who, *seq, *at, false),
            Event::WatcherAdded { watcher } => {
                if watcher.delivered.len() < watcher.task_ids.len() {
                    self.watchers.insert(watcher.id.clone(), watcher.clone());
                }
            }
            Event::WatcherDelivered {
                watcher_id,
                task_ids,
            } => {
                if let Some(watcher) = self.watchers.get_mut(watcher_id) {
                    watcher.delivered.extend(task_ids.iter().cloned());
                    if watcher.delivered.len() >= watcher.task_ids.len() {
                        self.watchers.shift_remove(watcher_id);
                    }
                }
            }
            Event::StaleNotified { task_id } => {
                if let Some(task) = self.tasks.get_mut(task_id) {
                    task.stale_notified = true;
                }
            }
            Event::Nudged { task_id } => {
                if let Some(task) = self.tasks.get_mut(task_id) {
                    task.nudges += 1;
                }
            }
            Event::Escalated { task_id } => {
                if let Some(task) = self.tasks.get_mut(task_id) {
                    task.escalated = true;
                }
            }
            Event::Replied { request_id, reply } => {
                self.replies.insert(request_id.clone(), reply.clone());
                while self.replies.len() > MAX_STORED_REPLIES {
                    self.replies.shift_remove_index(0);
                }
            }
            Event::RunSubmitted { .. }
            | Event::RunPlanned { .. }
            | Event::RunStepChanged { .. }
            | Event::RunCancelled { .. }
            | Event::RunFinished { .. } => super::run::apply(&mut self.runs, event),
            Event::MergeSubmitted { .. }
            | Event::MergeStarted { .. }
            | Event::MergeBranch { .. }
            | Event::MergeAdvancing { .. }
            | Event::BranchLanded { .. }
            | Event::MergeCancelled { .. }
            | Event::MergeFinished { .. } => {
                super::merge::apply(&mut self.merges, &mut self.landed, event);
            }
            Event::FieldnotesFixed { on } => {
                self.fieldnotes.get_or_insert(*on);
            }
            Event::NoteAttached { task_id, note } => {
                if let Some(task) = self.tasks.get_mut(task_id)
                    && task.note.is_none()
                {
                    task.note = Some(note.clone());
                    task.finalized = false;
                }
            }
            Event::TaskWithdrawn { task_id } => {
                if let Some(task) = self.tasks.get(task_id)
                    && task.state == TaskState::Created
                {
                    let agent_id = task.agent_id.clone();
                    let continues = task.continues.clone();
                    self.tasks.shift_remove(task_id);
                    if let Some(sheep) = self.sheep.get_mut(&agent_id)
                        && sheep.active_task.as_ref() == Some(task_id)
                    {
                        sheep.active_task = None;
                        sheep.continues = sheep.continues.take().or(continues);
                    }
                }
            }
            Event::SheepReopened { .. }
            | Event::WorktreeReleased { .. }
            | Event::TaskUsage { .. }
            | Event::TaskActive { .. }
            | Event::StallNudged { .. } => super::controls::apply(self, event),
            Event::Limited { .. }
            | Event::LimitOpened { .. }
            | Event::LimitReleased { .. }
            | Event::LimitProbed { .. }
            | Event::LimitAnswered { .. }
            | Event::LimitRiddenOut { .. }
            | Event::LimitOver { .. }
            | Event::LimitCleared { .. }
            | Event::LimitEnded { .. }
            | Event::TurnGranted { .. } => super::limits::apply(self, event),
            Event::TaskFellBack { .. } => super::fallback::apply(self, event),
        }
    }

    fn inbox_for(&mut self, to: &super::Participant) -> Option<&mut super::Inbox> {
        match to {
            super::Participant::Parent => Some(self.inboxes.entry(to.clone()).or_default()),
            super::Participant::Sheep(_) => self.inboxes.get_mut(to),
        }
    }

    fn settle(&mut self, task_id: &super::TaskId, result: &super::TaskResult) {
        let Some(task) = self.tasks.get_mut(task_id) else {
            return;
        };
        if task.state.is_terminal() {
            return;
        }
        task.state = result.status;
        task.result = Some(result.clone());
        task.pending_request = None;
        task.waiting_since = None;
        task.stale_notified = false;
        task.finalized = task.note.is_none();
        let agent_id = task.agent_id.clone();
        self.requests
            .retain(|_, request| &request.task_id != task_id);
        if let Some(sheep) = self.sheep.get_mut(&agent_id) {
            if sheep.active_task.as_ref() == Some(task_id) {
                sheep.active_task = None;
            }
            sheep.last_outcome = Some(result.status);
            stamp(sheep, Some(result.completed_at));
            // A coding agent reports its own activity (its run may still be writing its last
            // words); any other sheep is idle once its task is settled.
            if !sheep.runtime.reports_runs() {
                sheep.activity = Activity::Idle;
            }
        }
    }
}

/// Records when what a person sees of `sheep` last changed, when the event says.
fn stamp(sheep: &mut super::Sheep, at: Option<i64>) {
    if at.is_some() {
        sheep.since = at;
    }
}

/// A task whose last question was answered goes back to running; its waiting episode ends.
fn resume(task: &mut Task) {
    task.pending_request = None;
    task.waiting_since = None;
    task.stale_notified = false;
    if task.state == TaskState::Waiting {
        task.state = TaskState::Running;
    }
}
