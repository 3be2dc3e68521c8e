//! Provider limits in the herd: a limited task waits instead of failing, and every sheep on the
//! same provider key waits with it.
//!
//! When a sheep's run ends on a rate or usage limit, or an overload ([`crate::limit`]), its task
//! stays open with the episode recorded on it ([`TaskLimit`]), the parent hears one
//! `rate_limited` notice, and the sheep's provider key gets a [`Limiter`] closed until the reset
//! — the one the error named, else a guess of a few seconds that doubles with each refusal in a
//! row up to `rateLimitWaitSeconds`. While a key is closed no sheep on it is handed anything
//! that would start a turn ([`Herd::turn_held`]: the inbox shows it nothing). At the reset one
//! sheep probes (`release`): while it is refused nobody else on the key goes, so a key still
//! limited draws one refusal per reset; once it shows a model response the others go in rounds
//! that double while every one of a round answers and halve when one is refused, bounded by
//! `maxConcurrentTurns`, so a held herd comes back as fast as the provider takes it. Sheep whose
//! runs the key was still serving at the reset show its room ([`Limiter::room`]): while they
//! fill it no probe goes, each of their runs that ends cleanly hands its place to the next held
//! sheep, and the rounds fill the room instead of growing from two. A server
//! error waits the same way for the sheep alone. Limits an agent rode out with its own retries
//! are recorded as episodes too ([`ridden_out`]). The clock is [`super::tick`]'s: nothing here
//! polls.

use std::collections::{BTreeSet, VecDeque};

mod records;
mod release;

pub use records::*;
pub(super) use release::tick_limits;
pub use release::{granted, progressed, run_ended};

use super::Tx;
use super::model::{Activity, Event, LimitEpisode, Notice, NoticeKind, Payload, TaskLimit};
use super::{Herd, Sheep};
use crate::ids::{AgentId, Participant, TaskId};
use crate::limit::{ErrorClass, LimitSignal, ProviderKey};

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
            Some(cap) if !in_turn(sheep) => self.turns_on(key) >= cap as usize,
            _ => false,
        }
    }

    /// Whether a model response of `agent_id` would change anything here: its task came back
    /// from a limit and has not answered since, or its key is letting sheep go and waits for
    /// its answer. (A sheep reports its run's first response as it shows; most runs need not
    /// journal it.)
    pub fn awaits_answer(&self, agent_id: &AgentId) -> bool {
        let Some(sheep) = self.sheep.get(agent_id) else {
            return false;
        };
        let back_from_limit = sheep
            .active_task
            .as_ref()
            .and_then(|t| self.tasks.get(t))
            .is_some_and(|t| t.limited_since.is_some() && t.limit.is_none());
        let released = sheep
            .provider_key
            .as_ref()
            .and_then(|key| self.limiters.get(key))
            .is_some_and(|l| l.releasing && l.answering.contains(agent_id));
        back_from_limit || released
    }

    /// The turns in flight on `key` (counted only under a turn cap).
    fn turns_on(&self, key: &ProviderKey) -> usize {
        self.sheep
            .values()
            .filter(|s| s.provider_key.as_ref() == Some(key) && s.is_live() && in_turn(s))
            .count()
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
            guessed: limit.guessed,
        })
    }

    /// The earliest instant a limit has something to do: a closed key's reset, a round's
    /// grace, a server error's wait.
    pub(super) fn next_limit(&self) -> Option<i64> {
        let keys = self.limiters.values().map(|l| {
            if l.releasing {
                l.round_at.saturating_add(PROBE_GRACE_MS)
            } else {
                l.until
            }
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

    /// The provider `agent_id` spends, as shown to people (its account too, when it was given
    /// one): `anthropic`, `anthropic, account WORK_KEY`.
    pub fn provider_of(&self, agent_id: &AgentId) -> String {
        let Some(sheep) = self.sheep.get(agent_id) else {
            return "provider".to_owned();
        };
        sheep
            .provider
            .clone()
            .or_else(|| sheep.provider_key.as_ref().map(|k| k.provider().to_owned()))
            .unwrap_or_else(|| "provider".to_owned())
    }
}

/// How many sheep on `key` (other than `but`) the provider is serving: their tasks are under
/// way with everything handed to them taken, and wait for no limit.
fn serving(herd: &Herd, key: &ProviderKey, but: Option<&AgentId>) -> u32 {
    let count = herd
        .sheep
        .values()
        .filter(|s| s.provider_key.as_ref() == Some(key) && Some(&s.id) != but)
        .filter(|s| served(herd, s))
        .count();
    u32::try_from(count).unwrap_or(u32::MAX)
}

/// Whether the provider is serving `sheep`. (Its activity says `working` from its task's
/// start, so a task handed over while the key was closed, not taken yet, is told apart by its
/// inbox.)
fn served(herd: &Herd, sheep: &Sheep) -> bool {
    let limited = sheep
        .active_task
        .as_ref()
        .and_then(|t| herd.tasks.get(t))
        .is_some_and(|t| t.limit.is_some());
    let untaken = herd
        .inboxes
        .get(&Participant::Sheep(sheep.id.clone()))
        .is_some_and(|inbox| !inbox.items.is_empty());
    sheep.is_live() && sheep.activity == Activity::Working && !limited && !untaken
}

/// How many sheep hold a place in `key`'s room: those it is serving, and those let go that
/// have not shown a model response yet.
fn occupying(herd: &Herd, key: &ProviderKey, limiter: &Limiter) -> u32 {
    let count = herd
        .sheep
        .values()
        .filter(|s| s.provider_key.as_ref() == Some(key))
        .filter(|s| limiter.answering.contains(&s.id) || served(herd, s))
        .count();
    u32::try_from(count).unwrap_or(u32::MAX)
}

/// Whether a sheep under a turn cap was handed a turn whose run has not settled. (Its
/// activity says `working` from its task's start, turn or not.)
fn in_turn(sheep: &Sheep) -> bool {
    sheep.turn_granted
}

/// How many guessed waits of `task` of the same kind as `class` began within the last four
/// caps: the next guess doubles that often, so a storm backs off while a limit met now and
/// then starts short again.
fn recent_guesses(task: &super::Task, class: ErrorClass, now: i64, waits: &LimitWaits) -> u32 {
    let transient = class == ErrorClass::Transient;
    let window = waits.limit_ms.max(waits.transient_ms).saturating_mul(4);
    let recent = task
        .limit_episodes
        .iter()
        .filter(|e| e.guessed && (e.class == ErrorClass::Transient) == transient)
        .filter(|e| now.saturating_sub(e.since) <= window)
        .count();
    u32::try_from(recent).unwrap_or(u32::MAX)
}

/// A sheep's run ended on `signal` (never fatal) with `task_id` open: the task waits. Returns
/// false when the sheep or task is gone, so the caller fails it.
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
    let key = sheep
        .provider_key
        .clone()
        .filter(|_| signal.class.holds_key());
    let provider = tx.herd().provider_of(agent_id);
    let named = signal.reset_at.filter(|at| *at > now);
    let wait = match (
        signal.class,
        key.as_ref().and_then(|k| tx.herd().limiters.get(k)),
    ) {
        (ErrorClass::Transient, _) => waits.guess(
            waits.transient_ms,
            recent_guesses(task, signal.class, now, waits),
        ),
        // A probe refused again: the guess doubles.
        (_, Some(limiter)) => waits.guess(
            waits.first_ms,
            limiter.guesses + u32::from(limiter.releasing),
        ),
        (_, None) if key.is_some() => waits.guess(waits.first_ms, 0),
        (_, None) => waits.guess(
            waits.first_ms,
            recent_guesses(task, signal.class, now, waits),
        ),
    };
    let until = named.unwrap_or(now + wait);
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
            guessed: named.is_none(),
        },
    });
    if fresh {
        let when = if named.is_some() {
            format!("goes on after {} UTC", clock(until))
        } else {
            format!(
                "tries again at {} UTC (the provider named no reset)",
                clock(until)
            )
        };
        let text = format!(
            "{display} ({agent_id}) met a {} from {provider} on task {task_id}; the task waits \
             (it has not failed) and {when}: {}",
            signal.class.words(),
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

/// `agent_id`'s agent rode out a limit with its own retries, as its output showed: recorded as
/// an episode of its open task. Nothing waits for it.
pub fn ridden_out(tx: &mut Tx<'_>, agent_id: &AgentId, ridden: &RiddenOut) {
    let Some(task_id) = tx
        .herd()
        .sheep
        .get(agent_id)
        .and_then(|s| s.active_task.clone())
        .filter(|t| {
            tx.herd()
                .tasks
                .get(t)
                .is_some_and(|t| !t.state.is_terminal())
        })
    else {
        return;
    };
    let provider = tx.herd().provider_of(agent_id);
    tx.emit(Event::LimitRiddenOut {
        task_id,
        episode: LimitEpisode {
            class: ridden.class,
            provider,
            since: ridden.since,
            waited_ms: ridden.waited_ms.max(0),
            replies: ridden.replies,
            ended: RIDDEN_OUT.to_owned(),
            guessed: false,
        },
    });
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
    super::steps::touch_task(tx, task_id);
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
                task.limited_since.get_or_insert(limit.since);
                let since = task.limit.as_ref().map_or(limit.since, |l| l.since);
                task.limit = Some(TaskLimit {
                    since,
                    ..limit.clone()
                });
            }
            if let Some(key) = &limit.key {
                closed(herd, key, agent_id, limit);
            }
            if let Some(sheep) = herd.sheep.get_mut(agent_id) {
                sheep.turn_granted = false;
            }
        }
        Event::LimitOpened { key, at } => {
            let serving = serving(herd, key, None);
            if let Some(limiter) = herd.limiters.get_mut(key) {
                // Runs still going at the reset: the key was serving them all at once.
                limiter.room = limiter.room.max(serving);
                limiter.releasing = true;
                limiter.probed = false;
                limiter.answering.clear();
                limiter.round_at = *at;
            }
        }
        Event::LimitReleased { key, agent_id, at } => {
            if let Some(limiter) = herd.limiters.get_mut(key) {
                limiter.released.insert(agent_id.clone());
                limiter.held.retain(|id| id != agent_id);
                limiter.answering.insert(agent_id.clone());
                limiter.round_at = *at;
            }
        }
        Event::LimitAnswered { key, agent_id, .. } => {
            let serving = serving(herd, key, None);
            if let Some(limiter) = herd.limiters.get_mut(key)
                && limiter.answering.remove(agent_id)
            {
                // An answer beside more sheep than the room held: the room grew.
                if limiter.room > 0 {
                    limiter.room = limiter.room.max(serving);
                }
                if limiter.answering.is_empty() && limiter.probed {
                    limiter.batch = limiter.batch.saturating_mul(2);
                } else if limiter.answering.is_empty() {
                    limiter.probed = true;
                }
            }
        }
        Event::LimitProbed { key, .. } => {
            // Written by earlier versions: the one sheep let go answered.
            if let Some(limiter) = herd.limiters.get_mut(key) {
                limiter.answering.clear();
                limiter.probed = true;
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
                    guessed: limit.guessed,
                });
            }
        }
        Event::LimitOver { task_id } => {
            if let Some(task) = herd.tasks.get_mut(task_id) {
                task.limited_since = None;
            }
        }
        Event::LimitRiddenOut { task_id, episode } => {
            if let Some(task) = herd.tasks.get_mut(task_id) {
                task.limit_episodes.push(episode.clone());
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

/// A refusal on `key`: its limiter closes until the limit's reset. One met while sheep were
/// being let go closes it again — the refused sheep goes last next time, and the rounds after
/// the next probe are half as large when the probe had answered.
fn closed(herd: &mut Herd, key: &ProviderKey, agent_id: &AgentId, limit: &TaskLimit) {
    let beside = serving(herd, key, Some(agent_id));
    let limiter = herd.limiters.entry(key.clone()).or_insert_with(|| Limiter {
        provider: limit.provider.clone(),
        until: limit.until,
        releasing: false,
        held: VecDeque::new(),
        released: BTreeSet::new(),
        answering: BTreeSet::new(),
        round_at: limit.since,
        probed: false,
        batch: FIRST_BATCH,
        guesses: 0,
        room: 0,
    });
    let reopened = limiter.releasing;
    if reopened {
        // Refused beside sheep still served: the key serves no more than them.
        if limiter.room > 0 && beside > 0 {
            limiter.room = limiter.room.min(beside);
        }
        limiter.until = limit.until;
        if limiter.probed {
            limiter.batch = (limiter.batch / 2).max(1);
        }
        limiter.guesses = if limit.guessed {
            limiter.guesses + 1
        } else {
            0
        };
    } else {
        limiter.until = limiter.until.max(limit.until);
        if !limit.guessed {
            limiter.guesses = 0;
        }
    }
    limiter.releasing = false;
    limiter.probed = false;
    limiter.released.clear();
    limiter.answering.clear();
    // A sheep refused again goes after those that have waited longer.
    limiter.held.retain(|id| id != agent_id);
    limiter.held.push_back(agent_id.clone());
}
