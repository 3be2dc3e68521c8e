//! Limits that last: a task whose provider is limited for longer than the user will wait is
//! handed to a fresh sheep of its agent's `fallback:` instead of waiting.
//!
//! The broker decides when (it reads the definition and `fallbackAfterMinutes`) and spawns the
//! fresh sheep; here the task moves. [`fall_back`] ends the wait on the first sheep and makes
//! the task `created` again on the new one, keeping what the first sheep left ([`FellBack`]:
//! its note, its limit episodes), and tells the parent once. The task keeps its id, deadline,
//! budget and session, so the parent's `watch` and a run's step follow it to its end; the
//! broker's hand-over then reserves the second note in the same session and finalises the first
//! with a link to it.

use super::model::{Activity, Event, FellBack, Notice, NoticeKind, Payload, Phase};
use super::{Herd, Tx};
use crate::ids::{AgentId, Participant, TaskId};
use crate::limit::ErrorClass;
use crate::task::TaskState;

/// When a task waiting on a limit falls back, at `now`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FallbackDue {
    /// Now: it has waited `after_ms` already, or the reset its provider named lies further
    /// than that past the start of its wait.
    Now(TaskId),
    /// At this instant (ms), once it has waited `after_ms`, unless it goes on before.
    At(TaskId, i64),
}

impl Herd {
    /// Whether the task `agent_id` waits with on a rate or usage limit is one a fallback would
    /// take over, and when. The time counted is the time spent waiting, not the reset a guess
    /// put on the wait (a provider that names none is probed every few seconds, so its limit
    /// lasts as long as it is refused); a reset the provider named counts in full at once.
    pub fn fallback_due(&self, agent_id: &AgentId, after_ms: i64, now: i64) -> Option<FallbackDue> {
        let sheep = self.sheep.get(agent_id)?;
        let task = self.tasks.get(sheep.active_task.as_ref()?)?;
        let limit = task.limit.as_ref()?;
        let limit_class = matches!(limit.class, ErrorClass::RateLimit | ErrorClass::UsageLimit);
        if !limit_class || task.state.is_terminal() {
            return None;
        }
        let named_lasting = !limit.guessed && limit.until.saturating_sub(limit.since) > after_ms;
        let at = task
            .limited_since
            .unwrap_or(limit.since)
            .saturating_add(after_ms);
        Some(if named_lasting || at <= now {
            FallbackDue::Now(task.id.clone())
        } else {
            FallbackDue::At(task.id.clone(), at)
        })
    }
}

impl Herd {
    /// The fallback `task_id` went on with, once it fell back, as shown: its display name and
    /// its provider, with the account when it runs on another one (`worker (fallback, codex):
    /// fix-login (openai)`).
    pub fn fallback_view(&self, task_id: &TaskId) -> Option<String> {
        let task = self.tasks.get(task_id)?;
        task.fell_back_from.as_ref()?;
        let name = self
            .sheep
            .get(&task.agent_id)
            .map_or_else(|| task.agent_id.to_string(), super::Sheep::display_name);
        Some(format!("{name} ({})", self.provider_of(&task.agent_id)))
    }
}

/// Hands `task_id`, waiting on a limit on `from`, to `to`, a fresh sheep with nothing to do.
/// Returns false (and changes nothing) when the task is no longer waiting on `from` or `to`
/// cannot take it.
pub fn fall_back(tx: &mut Tx<'_>, task_id: &TaskId, from: &AgentId, to: &AgentId) -> bool {
    let herd = tx.herd();
    let Some(task) = herd.tasks.get(task_id) else {
        return false;
    };
    let Some(limit) = task.limit.clone() else {
        return false;
    };
    let waiting = &task.agent_id == from && !task.state.is_terminal();
    let free = herd
        .sheep
        .get(to)
        .is_some_and(|s| s.phase == Phase::Ready && s.active_task.is_none());
    if !waiting || !free {
        return false;
    }
    let first = herd
        .sheep
        .get(from)
        .map_or_else(|| from.to_string(), super::Sheep::display_name);
    let next = herd
        .sheep
        .get(to)
        .map_or_else(|| to.to_string(), super::Sheep::display_name);
    let account = herd
        .sheep
        .get(to)
        .and_then(|s| s.provider.clone())
        .map(|provider| format!(" on {provider}"))
        .unwrap_or_default();
    let limited_since = task.limited_since.unwrap_or(limit.since);
    let at = tx.now();
    tx.emit(Event::LimitEnded {
        task_id: task_id.clone(),
        ended: format!("fell back to {next}"),
        at,
    });
    tx.emit(Event::TaskFellBack {
        task_id: task_id.clone(),
        from: from.clone(),
        to: to.clone(),
        provider: limit.provider.clone(),
        until: limit.until,
        at,
    });
    let lasts = if limit.guessed {
        format!(
            "that has lasted since {} UTC",
            super::limits::clock(limited_since)
        )
    } else {
        format!("that lasts until {} UTC", super::limits::clock(limit.until))
    };
    let text = format!(
        "{first} ({from}) met a {} from {} on task {task_id} {lasts}, past \
         fallbackAfterMinutes; the task was handed to {next} ({to}){account}, its agent's \
         fallback, and goes on there.",
        limit.class.words(),
        limit.provider,
    );
    tx.enqueue(
        Participant::Parent,
        Payload::Notice(Notice {
            notice: NoticeKind::FellBack,
            text,
            agent_id: Some(to.clone()),
            task_id: Some(task_id.clone()),
        }),
    );
    true
}

/// Applies [`Event::TaskFellBack`].
pub(super) fn apply(herd: &mut Herd, event: &Event) {
    let Event::TaskFellBack {
        task_id,
        from,
        to,
        provider,
        until,
        at,
    } = event
    else {
        return;
    };
    let display_name = herd
        .sheep
        .get(from)
        .map_or_else(|| from.to_string(), super::Sheep::display_name);
    if let Some(task) = herd.tasks.get_mut(task_id) {
        task.fell_back_from = Some(FellBack {
            agent_id: from.clone(),
            display_name,
            note: task.note.take(),
            episodes: std::mem::take(&mut task.limit_episodes),
            provider: provider.clone(),
            until: *until,
            at: *at,
        });
        task.agent_id = to.clone();
        task.state = TaskState::Created;
        task.started_at = None;
        task.finalized = false;
        task.output = None;
        task.nudges = 0;
        task.escalated = false;
        task.session_cursor = None;
        task.waiting_since = None;
        task.pending_request = None;
        task.stale_notified = false;
        task.continues = None;
        task.limit = None;
        task.limit_replies = 0;
        task.transient_waits = 0;
        task.limited_since = None;
        if let Some(stall) = &mut task.stall {
            stall.active_at = *at;
            stall.nudged_at = None;
        }
        if let Some(handover) = &mut task.handover {
            // The first sheep's planned note and session are its own.
            handover.planned_note = None;
            handover.session_file = None;
            handover.session_cursor = None;
        }
    }
    if let Some(sheep) = herd.sheep.get_mut(from) {
        sheep.active_task = None;
        sheep.activity = Activity::Idle;
    }
    if let Some(sheep) = herd.sheep.get_mut(to) {
        sheep.active_task = Some(task_id.clone());
    }
    for limiter in herd.limiters.values_mut() {
        limiter.held.retain(|id| id != from);
    }
}
