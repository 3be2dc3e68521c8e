//! Provider limits in the herd: a limited task waits instead of failing, and every sheep on the
//! same provider key waits with it.
//!
//! When a sheep's run ends on a rate or usage limit ([`crate::limit`]), its task stays open
//! with the episode recorded on it ([`TaskLimit`]), the parent hears one `rate_limited` notice,
//! and the sheep's provider key gets a [`Limiter`] closed until the reset. While a key is
//! closed no sheep on it is handed anything that would start a turn ([`Herd::turn_held`]: the
//! inbox shows it nothing). At the reset the limiter opens and lets its sheep go one at a time:
//! the first one limited goes first and is told to continue where it stopped; the next goes once
//! the one before it shows a model response (or a grace passes), so a key that is still limited
//! draws one more limit reply, not one per sheep. A server error waits the same way for the
//! sheep alone. `maxConcurrentTurns` caps the turns in flight on a key at any time. The clock
//! is [`super::tick`]'s: nothing here polls.

use std::collections::{BTreeSet, VecDeque};

mod records;

pub use records::*;

use super::Tx;
use super::model::{Event, Notice, NoticeKind, Payload};
use super::{Herd, Sheep};
use crate::ids::{AgentId, Participant, TaskId};
use crate::limit::{ErrorClass, LimitSignal, ProviderKey};
use crate::task::TaskState;

impl Herd {
    /// Whether `agent_id` may not be handed anything now: its provider key is closed for a
    /// limit (or it is let go later), it waits out a server error, or its key has
    /// `maxConcurrentTurns` turns in flight already.
    pub fn turn_held(&self, agent_id: &AgentId) -> bool {
        let Some(sheep) = self.sheep.get(agent_id) else {
            return false;
        };
        let own = sheep
            .active_task
            .as_ref()
            .and_then(|t| self.tasks.get(t))
            .and_then(|t| t.limit.as_ref());
        if own.is_some_and(|limit| limit.key.is_none()) {
            return true;
        }
        let Some(key) = &sheep.provider_key else {
            return false;
        };
        if let Some(limiter) = self.limiters.get(key)
            && (!limiter.releasing || !limiter.released.contains(agent_id))
        {
            return true;
        }
        match sheep.turn_cap {
            Some(cap) if !in_turn(sheep) => {
                let busy = self
                    .sheep
                    .values()
                    .filter(|s| s.provider_key.as_ref() == Some(key) && s.is_live() && in_turn(s))
                    .count();
                busy >= cap as usize
            }
            _ => false,
        }
    }

    /// The open limit of a task, as shown.
    pub fn limit_view(&self, task_id: &TaskId) -> Option<LimitView> {
        let task = self.tasks.get(task_id)?;
        let limit = task.limit.as_ref()?;
        let queued = limit
            .key
            .as_ref()
            .and_then(|key| self.limiters.get(key))
            .is_some_and(|l| l.releasing);
        Some(LimitView {
            class: limit.class,
            provider: limit.provider.clone(),
            since: limit.since,
            until: limit.until,
            queued,
        })
    }

    /// The earliest instant a limit has something to do: a closed key's reset, a probe's
    /// grace, a server error's wait.
    pub(super) fn next_limit(&self) -> Option<i64> {
        let keys = self
            .limiters
            .values()
            .map(|l| match (&l.probe, l.releasing) {
                (_, false) => l.until,
                (Some((_, since)), true) => since.saturating_add(PROBE_GRACE_MS),
                (None, true) => l.until,
            });
        let own = self
            .tasks
            .values()
            .filter(|t| !t.state.is_terminal())
            .filter_map(|t| t.limit.as_ref())
            .filter(|l| l.key.is_none())
            .map(|l| l.until);
        keys.chain(own).min()
    }
}

/// Whether a sheep under a turn cap was handed a turn whose run has not settled. (Its
/// activity says `working` from its task's start, turn or not.)
fn in_turn(sheep: &Sheep) -> bool {
    sheep.turn_granted
}

/// A sheep's run ended on `signal` (never fatal) with `task_id` open: the task waits. Returns
/// false when it may not wait any more (too many server errors), so the caller fails it.
pub fn limited(
    tx: &mut Tx<'_>,
    agent_id: &AgentId,
    task_id: &TaskId,
    signal: &LimitSignal,
    waits: &LimitWaits,
) -> bool {
    let now = tx.now();
    let Some(sheep) = tx.herd().sheep.get(agent_id) else {
        return false;
    };
    let Some(task) = tx.herd().tasks.get(task_id) else {
        return false;
    };
    let holds_key = signal.class.holds_key();
    if signal.class == ErrorClass::Transient && task.transient_waits >= waits.transient_tries {
        return false;
    }
    let key = sheep.provider_key.clone().filter(|_| holds_key);
    let provider = sheep
        .provider_key
        .as_ref()
        .map_or_else(|| "provider".to_owned(), |k| k.provider().to_owned());
    let wait = match signal.class {
        ErrorClass::Transient => waits
            .transient_ms
            .saturating_mul(1 << task.transient_waits.min(10)),
        _ => waits.limit_ms,
    };
    let until = signal.reset_at.filter(|at| *at > now).unwrap_or(now + wait);
    let fresh = task.limit.is_none();
    let display = sheep.display_name();
    tx.emit(Event::Limited {
        agent_id: agent_id.clone(),
        task_id: task_id.clone(),
        limit: TaskLimit {
            class: signal.class,
            provider: provider.clone(),
            key,
            since: now,
            until,
            message: signal.message.clone(),
        },
    });
    if fresh {
        let text = format!(
            "{display} ({agent_id}) met a {} from {provider} on task {task_id}; the task waits \
             (it has not failed) and goes on after {} UTC: {}",
            signal.class.words(),
            clock(until),
            crate::herd::first_line(&signal.message),
        );
        tx.enqueue(
            Participant::Parent,
            Payload::Notice(Notice {
                notice: NoticeKind::RateLimited,
                text,
                agent_id: Some(agent_id.clone()),
                task_id: Some(task_id.clone()),
            }),
        );
    }
    true
}

/// A sheep showed a model response (a turn's usage, or a run that ended without an error):
/// when it was the one let go last after a reset, the next one on its key goes.
pub fn progressed(tx: &mut Tx<'_>, agent_id: &AgentId) {
    let Some(key) = tx
        .herd()
        .sheep
        .get(agent_id)
        .and_then(|s| s.provider_key.clone())
    else {
        return;
    };
    let probing = tx
        .herd()
        .limiters
        .get(&key)
        .is_some_and(|l| l.releasing && l.probe.as_ref().is_some_and(|(id, _)| id == agent_id));
    if probing {
        let at = tx.now();
        tx.emit(Event::LimitProbed {
            key: key.clone(),
            at,
        });
        release_next(tx, &key);
    }
}

/// Items are being handed to `agent_id`: under a turn cap, that is a turn begun.
pub fn granted(tx: &mut Tx<'_>, agent_id: &AgentId) {
    let grant = tx
        .herd()
        .sheep
        .get(agent_id)
        .is_some_and(|s| s.turn_cap.is_some() && !in_turn(s));
    if grant {
        tx.emit(Event::TurnGranted {
            agent_id: agent_id.clone(),
        });
    }
}

/// The limits' turn in [`super::tick`]: opens each key whose reset passed and lets its sheep
/// go one at a time; ends each server-error wait that is due.
pub(super) fn tick_limits(tx: &mut Tx<'_>) {
    let now = tx.now();
    let keys: Vec<(ProviderKey, bool, bool)> = tx
        .herd()
        .limiters
        .iter()
        .filter(|(_, l)| l.until <= now)
        .map(|(key, l)| {
            let stale = l
                .probe
                .as_ref()
                .is_none_or(|(_, since)| since.saturating_add(PROBE_GRACE_MS) <= now);
            (key.clone(), l.releasing, stale)
        })
        .collect();
    for (key, releasing, stale) in keys {
        if !releasing {
            tx.emit(Event::LimitOpened {
                key: key.clone(),
                at: now,
            });
        }
        if !releasing || stale {
            release_next(tx, &key);
        }
    }
    let due: Vec<(AgentId, TaskId)> = tx
        .herd()
        .tasks
        .values()
        .filter(|t| !t.state.is_terminal())
        .filter(|t| {
            t.limit
                .as_ref()
                .is_some_and(|l| l.key.is_none() && l.until <= now)
        })
        .map(|t| (t.agent_id.clone(), t.id.clone()))
        .collect();
    for (agent_id, task_id) in due {
        resume(tx, &agent_id, &task_id);
    }
}

/// Lets the next sheep on `key` go: the first limited one still waiting, else any other sheep
/// with something waiting for it; with none left, the key is open again.
fn release_next(tx: &mut Tx<'_>, key: &ProviderKey) {
    let herd = tx.herd();
    let Some(limiter) = herd.limiters.get(key) else {
        return;
    };
    let live = |id: &AgentId| herd.sheep.get(id).is_some_and(Sheep::is_live);
    let next = limiter
        .held
        .iter()
        .find(|id| !limiter.released.contains(*id) && live(id))
        .cloned()
        .or_else(|| {
            herd.sheep
                .values()
                .filter(|s| s.provider_key.as_ref() == Some(key) && s.is_live())
                .filter(|s| !limiter.released.contains(&s.id))
                .find(|s| {
                    herd.inboxes
                        .get(&Participant::Sheep(s.id.clone()))
                        .is_some_and(|inbox| !inbox.items.is_empty())
                })
                .map(|s| s.id.clone())
        });
    let at = tx.now();
    let Some(agent_id) = next else {
        tx.emit(Event::LimitCleared {
            key: key.clone(),
            at,
        });
        return;
    };
    tx.emit(Event::LimitReleased {
        key: key.clone(),
        agent_id: agent_id.clone(),
        at,
    });
    let task = tx
        .herd()
        .sheep
        .get(&agent_id)
        .and_then(|s| s.active_task.clone())
        .filter(|t| {
            tx.herd()
                .tasks
                .get(t)
                .is_some_and(|t| t.limit.is_some() && !t.state.is_terminal())
        });
    if let Some(task_id) = task {
        resume(tx, &agent_id, &task_id);
    }
}

/// Ends a task's wait: the episode is recorded and its sheep is told to go on.
fn resume(tx: &mut Tx<'_>, agent_id: &AgentId, task_id: &TaskId) {
    let now = tx.now();
    let Some(limit) = tx.herd().tasks.get(task_id).and_then(|t| t.limit.clone()) else {
        return;
    };
    tx.emit(Event::LimitEnded {
        task_id: task_id.clone(),
        ended: "resumed".to_owned(),
        at: now,
    });
    let content = format!(
        "[Shepherd {}] The {} from {} has passed (waited {}s). Continue task {task_id} where you \
         stopped; when it is done, call shepherd_done as before.",
        match limit.class {
            ErrorClass::Transient => "retry",
            _ => "rate limit",
        },
        limit.class.words(),
        limit.provider,
        (now - limit.since).max(0).div_euclid(1000),
    );
    tx.remind(Participant::Sheep(agent_id.clone()), task_id, content);
    super::controls::touch_task(tx, task_id);
}

/// A task settled during its wait: the episode is closed with what ended it.
pub(super) fn settled_while_limited(tx: &mut Tx<'_>, task_id: &TaskId, state: TaskState) {
    if tx
        .herd()
        .tasks
        .get(task_id)
        .is_some_and(|t| t.limit.is_some())
    {
        let at = tx.now();
        tx.emit(Event::LimitEnded {
            task_id: task_id.clone(),
            ended: state.as_str().to_owned(),
            at,
        });
    }
}

/// Applies the limit events.
pub(super) fn apply(herd: &mut Herd, event: &Event) {
    match event {
        Event::Limited {
            agent_id,
            task_id,
            limit,
        } => {
            if let Some(task) = herd.tasks.get_mut(task_id) {
                if limit.class == ErrorClass::Transient {
                    task.transient_waits += 1;
                }
                task.limit_replies += 1;
                let since = task.limit.as_ref().map_or(limit.since, |l| l.since);
                task.limit = Some(TaskLimit {
                    since,
                    ..limit.clone()
                });
            }
            if let Some(key) = &limit.key {
                let limiter = herd.limiters.entry(key.clone()).or_insert_with(|| Limiter {
                    provider: limit.provider.clone(),
                    until: limit.until,
                    releasing: false,
                    held: VecDeque::new(),
                    released: BTreeSet::new(),
                    probe: None,
                });
                // A limit met while sheep were being let go closes the key again.
                limiter.until = if limiter.releasing {
                    limit.until
                } else {
                    limiter.until.max(limit.until)
                };
                limiter.releasing = false;
                limiter.released.clear();
                limiter.probe = None;
                if !limiter.held.contains(agent_id) {
                    limiter.held.push_back(agent_id.clone());
                }
            }
            if let Some(sheep) = herd.sheep.get_mut(agent_id) {
                sheep.turn_granted = false;
            }
        }
        Event::LimitOpened { key, .. } => {
            if let Some(limiter) = herd.limiters.get_mut(key) {
                limiter.releasing = true;
            }
        }
        Event::LimitReleased { key, agent_id, at } => {
            if let Some(limiter) = herd.limiters.get_mut(key) {
                limiter.released.insert(agent_id.clone());
                limiter.held.retain(|id| id != agent_id);
                limiter.probe = Some((agent_id.clone(), *at));
            }
        }
        Event::LimitProbed { key, .. } => {
            if let Some(limiter) = herd.limiters.get_mut(key) {
                limiter.probe = None;
            }
        }
        Event::LimitCleared { key, .. } => {
            herd.limiters.remove(key);
        }
        Event::LimitEnded { task_id, ended, at } => {
            if let Some(task) = herd.tasks.get_mut(task_id)
                && let Some(limit) = task.limit.take()
            {
                task.limit_episodes.push(LimitEpisode {
                    class: limit.class,
                    provider: limit.provider,
                    since: limit.since,
                    waited_ms: (at - limit.since).max(0),
                    replies: std::mem::take(&mut task.limit_replies),
                    ended: ended.clone(),
                });
            }
        }
        Event::TurnGranted { agent_id } => {
            if let Some(sheep) = herd.sheep.get_mut(agent_id) {
                sheep.turn_granted = true;
            }
        }
        _ => {}
    }
}
