//! `shepherd_done` and a sheep's reports about its own runs.
//!
//! The rules are the original extension's (upstream §3.2–§3.11): `done` settles only the
//! sender's own task, is re-anchored when it names the wrong one and dropped observably when
//! there is none, and a `completed` done is refused while a question is open; a run that ends
//! while its task is still open is a turn without `shepherd_done`, which the herd nudges (up
//! to `doneNudges` reminders) before the parent hears.

use super::Tx;
use super::error::HerdError;
use super::limits::LimitWaits;
use super::model::{Activity, Event, Notice, NoticeKind, Payload};
use super::steps::{settle, touch};
use crate::envelope;
use crate::error_code::ErrorCode;
use crate::ids::{AgentId, MessageId, Participant, TaskId};
use crate::task::{DoneStatus, TaskState};

/// A sheep's `shepherd_done`.
#[derive(Debug, Clone)]
pub struct DoneInput {
    /// The authenticated sender.
    pub sender: AgentId,
    /// The task it named, if any.
    pub task_id: Option<String>,
    /// Completed, blocked or failed.
    pub status: DoneStatus,
    /// Its summary.
    pub summary: Option<String>,
}

/// What became of a done.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DoneOutcome {
    /// It settled the task.
    Settled {
        /// The task settled.
        task_id: TaskId,
        /// The task id the sheep named, when it named another one.
        corrected_from: Option<String>,
    },
    /// The task had already settled; the stored result stands.
    Duplicate {
        /// The task.
        task_id: TaskId,
    },
    /// The sender has no open task; the parent was told.
    Dropped,
}

/// A sheep's report about its own run (pi sheep send these from their extension).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunReport {
    /// A run (turn sequence) began.
    Started,
    /// A run ended.
    Settled {
        /// pi's stop reason (`stop`, `error`, `aborted`, …).
        stop_reason: Option<String>,
        /// The error that ended it.
        error: Option<String>,
        /// The run's final assistant text.
        text: Option<String>,
        /// What the error was, when its harness recognised a limit or a server error in it
        /// (the task waits instead of failing).
        limit: Option<crate::limit::LimitSignal>,
    },
}

/// Applies a sheep's `shepherd_done`.
pub fn done(tx: &mut Tx<'_>, input: DoneInput) -> Result<DoneOutcome, HerdError> {
    if let Some(summary) = &input.summary {
        envelope::check_summary(summary)
            .map_err(|err| HerdError::new(err.code(), err.to_string()))?;
    }
    let sheep = tx
        .herd()
        .sheep
        .get(&input.sender)
        .ok_or_else(|| HerdError::unknown_agent_id(input.sender.as_str()))?;
    let named = input.task_id.as_deref().and_then(TaskId::parse);
    if let Some(named) = &named
        && let Some(task) = tx.herd().tasks.get(named)
        && task.agent_id == input.sender
        && task.state.is_terminal()
    {
        return Ok(DoneOutcome::Duplicate {
            task_id: named.clone(),
        });
    }
    let display = sheep.display_name();
    let Some(active) = sheep.active_task.clone() else {
        let text = format!(
            "{display} ({}) called shepherd_done ({}) but has no open task; the completion was dropped.",
            input.sender,
            status_word(input.status),
        );
        tx.enqueue(
            Participant::Parent,
            Payload::Notice(Notice {
                notice: NoticeKind::TaskDoneDropped,
                text,
                agent_id: Some(input.sender.clone()),
                task_id: named,
            }),
        );
        return Ok(DoneOutcome::Dropped);
    };
    let task = &tx.herd().tasks[&active];
    if input.status == DoneStatus::Completed && task.pending_request.is_some() {
        return Err(HerdError::new(
            ErrorCode::PendingRequest,
            format!(
                "Task {active} still waits for a reply to {}; a completed done is ignored until it is \
                 answered (done with blocked or failed settles it now).",
                task.pending_request
                    .as_ref()
                    .map(MessageId::as_str)
                    .unwrap_or_default()
            ),
        ));
    }
    let corrected_from = input
        .task_id
        .clone()
        .filter(|given| given != active.as_str());
    if let Some(given) = &corrected_from {
        let text = format!(
            "{display} ({}) called shepherd_done naming task {given}; it was applied to its open task {active}.",
            input.sender
        );
        tx.enqueue(
            Participant::Parent,
            Payload::Notice(Notice {
                notice: NoticeKind::TaskDoneMismatch,
                text,
                agent_id: Some(input.sender.clone()),
                task_id: Some(active.clone()),
            }),
        );
    }
    let summary = input.summary.filter(|s| !s.trim().is_empty());
    let error = match input.status {
        DoneStatus::Completed => None,
        DoneStatus::Blocked | DoneStatus::Failed => Some(summary.clone().unwrap_or_else(|| {
            format!("The sheep reported the task {}.", status_word(input.status))
        })),
    };
    settle(
        tx,
        &active,
        input.status.task_state(),
        summary.clone(),
        summary,
        error,
    );
    Ok(DoneOutcome::Settled {
        task_id: active,
        corrected_from,
    })
}

fn status_word(status: DoneStatus) -> &'static str {
    match status {
        DoneStatus::Completed => "completed",
        DoneStatus::Blocked => "blocked",
        DoneStatus::Failed => "failed",
    }
}

/// Applies a sheep's report about its run. A run that ends on a provider limit (or a server
/// error) leaves the open task waiting (`limits`); any other error fails it at once; a run
/// that ends normally with the task still open earns a reminder (up to `nudge_budget`), then
/// one passive notice to the parent.
pub fn report(tx: &mut Tx<'_>, sender: &AgentId, report: RunReport, nudge_budget: u32) {
    report_with(tx, sender, report, nudge_budget, &LimitWaits::default());
}

/// [`report`] with the waits a limit without a reset time gets.
pub fn report_with(
    tx: &mut Tx<'_>,
    sender: &AgentId,
    report: RunReport,
    nudge_budget: u32,
    waits: &LimitWaits,
) {
    let Some(sheep) = tx.herd().sheep.get(sender) else {
        return;
    };
    let active = sheep.active_task.clone();
    let display = sheep.display_name();
    let activity = sheep.activity;
    touch(tx, sender);
    match report {
        RunReport::Started => {
            if activity != Activity::Working {
                let at = Some(tx.now());
                tx.emit(Event::SheepActivity {
                    agent_id: sender.clone(),
                    activity: Activity::Working,
                    at,
                });
            }
        }
        RunReport::Settled {
            stop_reason,
            error,
            text,
            limit,
        } => {
            let granted = tx.herd().sheep.get(sender).is_some_and(|s| s.turn_granted);
            if activity != Activity::Idle || granted {
                let at = Some(tx.now());
                tx.emit(Event::SheepActivity {
                    agent_id: sender.clone(),
                    activity: Activity::Idle,
                    at,
                });
            }
            let failed = stop_reason.as_deref() == Some("error");
            let waiting_out_limit = active
                .as_ref()
                .and_then(|t| tx.herd().tasks.get(t))
                .is_some_and(|t| t.limit.is_some() && !t.state.is_terminal());
            if !failed && waiting_out_limit {
                // The limited run's end told again (pi 1.x reports its end twice): not a model
                // response, and not a turn that forgot `shepherd_done`.
                return;
            }
            if !failed {
                super::limits::progressed(tx, sender);
                super::limits::run_ended(tx, sender);
            }
            let Some(task_id) = active else { return };
            if failed
                && let Some(limit) = limit.as_ref().filter(|l| l.class.waits())
                && !tx.herd().tasks[&task_id].state.is_terminal()
                && super::limits::limited(tx, sender, &task_id, limit, waits)
            {
                return;
            }
            match stop_reason.as_deref() {
                Some("error") => {
                    let error = format!(
                        "{display}'s run ended with an error: {}",
                        error.as_deref().unwrap_or("unknown error")
                    );
                    settle(tx, &task_id, TaskState::Failed, None, None, Some(error));
                }
                Some("aborted") => {}
                // A one-turn task (the deprecated prompt path) is done when its run is.
                _ if tx.herd().tasks[&task_id].turn => {
                    let text = text.filter(|t| !t.trim().is_empty());
                    settle(tx, &task_id, TaskState::Completed, text.clone(), text, None);
                }
                _ => nudge(tx, sender, &task_id, &display, nudge_budget),
            }
        }
    }
}

fn nudge(tx: &mut Tx<'_>, sender: &AgentId, task_id: &TaskId, display: &str, budget: u32) {
    let task = &tx.herd().tasks[task_id];
    let asking = tx
        .herd()
        .requests
        .values()
        .any(|r| r.asker == Participant::Sheep(sender.clone()));
    if task.state != TaskState::Running || asking {
        return;
    }
    // A reminder is never worth refusing or dropping anything for.
    if tx
        .herd()
        .check_inbox_room(&Participant::Sheep(sender.clone()))
        .is_err()
    {
        return;
    }
    if task.nudges < budget {
        let n = task.nudges + 1;
        let which = if n == budget {
            "Final reminder".to_owned()
        } else {
            format!("Reminder {n} of {budget}")
        };
        let content = format!(
            "[Shepherd completion check] Task {task_id} is still open: ending a turn does not finish it. \
             If the task is done, call shepherd_done once with status completed and a short summary; if \
             you cannot go on, call it with status blocked or failed and say why. {which}."
        );
        tx.emit(Event::Nudged {
            task_id: task_id.clone(),
        });
        tx.remind(Participant::Sheep(sender.clone()), task_id, content);
    } else if !task.escalated {
        tx.emit(Event::Escalated {
            task_id: task_id.clone(),
        });
        let text = format!(
            "[Shepherd completion stalled] {display} ({sender}) keeps ending its turns without calling \
             shepherd_done for task {task_id}. Message it, wait for the task deadline, or close it."
        );
        tx.enqueue(
            Participant::Parent,
            Payload::Notice(Notice {
                notice: NoticeKind::CompletionStalled,
                text,
                agent_id: Some(sender.clone()),
                task_id: Some(task_id.clone()),
            }),
        );
    }
}
