//! Letting a held key's sheep go again: one probe at the reset, then rounds that grow while the
//! provider takes them.
//!
//! The reset of a closed key is the time the provider named, or Shepherd's guess; either way the
//! key may still be limited then, so [`tick_limits`] lets one sheep go (the first limited) and
//! nobody else until it shows a model response ([`progressed`]). A refusal closes the key again
//! (`super::apply`), so a key that is still limited draws one refusal per reset, not one per
//! held sheep. Once the probe answered, the next round lets [`super::Limiter::batch`] sheep go
//! (two at first); a round every one of which answered doubles the next, a refusal halves it,
//! and `maxConcurrentTurns` bounds it. A round that does not answer within
//! [`super::PROBE_GRACE_MS`] (a slow start-up, a sheep that ended without a response) is
//! followed by the next anyway. With nobody left to let go, the key is open again.
//!
//! A key whose sheep were still being served when its reset passed showed its room
//! ([`super::Limiter::room`]): sending a probe while they fill it would only draw a refusal
//! (a wasted restart and a doubled wait). So none goes then; each of the key's runs that ends
//! without an error hands its place to the next held sheep at once ([`run_ended`]: a run just
//! finished shows the key serves), and once a round answered the next lets go as many as the
//! room has free places. A refusal closes the key as ever, and the room shrinks to the sheep
//! still served beside it; an answer beside more sheep than the room held grows it.

use super::{Limiter, Tx, in_turn, occupying, resume};
use crate::herd::model::Event;
use crate::herd::{Herd, Sheep};
use crate::ids::{AgentId, Participant};
use crate::limit::ProviderKey;

/// A sheep showed a model response (a turn's usage, or a run that ended without an error):
/// when it was let go after a reset and its round has now answered, the next round goes.
pub fn progressed(tx: &mut Tx<'_>, agent_id: &AgentId) {
    let over = tx
        .herd()
        .sheep
        .get(agent_id)
        .and_then(|s| s.active_task.as_ref())
        .and_then(|t| tx.herd().tasks.get(t))
        .filter(|t| t.limited_since.is_some() && t.limit.is_none())
        .map(|t| t.id.clone());
    if let Some(task_id) = over {
        tx.emit(Event::LimitOver { task_id });
    }
    let Some(key) = key_of(tx.herd(), agent_id) else {
        return;
    };
    let answering = tx
        .herd()
        .limiters
        .get(&key)
        .is_some_and(|l| l.releasing && l.answering.contains(agent_id));
    if !answering {
        return;
    }
    let at = tx.now();
    tx.emit(Event::LimitAnswered {
        key: key.clone(),
        agent_id: agent_id.clone(),
        at,
    });
    let next = tx
        .herd()
        .limiters
        .get(&key)
        .filter(|l| l.answering.is_empty())
        .map(|l| next_round(tx.herd(), &key, l));
    if let Some(size) = next.filter(|size| *size > 0) {
        release_round(tx, &key, size);
    }
}

/// How many go in `key`'s next round once the last one answered: [`super::Limiter::batch`],
/// or, when the key's room is known, as many as it has free places.
fn next_round(herd: &Herd, key: &ProviderKey, limiter: &Limiter) -> u32 {
    if limiter.room == 0 {
        limiter.batch
    } else {
        limiter.room.saturating_sub(occupying(herd, key, limiter))
    }
}

/// The provider key `agent_id` spends, when it has one.
fn key_of(herd: &Herd, agent_id: &AgentId) -> Option<ProviderKey> {
    herd.sheep
        .get(agent_id)
        .and_then(|s| s.provider_key.clone())
}

/// `agent_id`'s run ended without an error. When its key is letting its sheep go and knows
/// its room, the place the run held goes to the next held sheep at once: a run just finished
/// is evidence the key serves, so it needs no probe.
pub fn run_ended(tx: &mut Tx<'_>, agent_id: &AgentId) {
    let Some(key) = key_of(tx.herd(), agent_id) else {
        return;
    };
    let free = tx
        .herd()
        .limiters
        .get(&key)
        .filter(|l| l.releasing && l.room > 0)
        .map(|l| l.room.saturating_sub(occupying(tx.herd(), &key, l)));
    if let Some(free) = free.filter(|free| *free > 0) {
        release_round(tx, &key, free);
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

/// The limits' turn in [`crate::herd::tick`]: each key whose reset passed lets its probe go; a
/// round that did not answer within the grace is followed by the next; each server-error wait
/// that is due ends.
pub(in crate::herd) fn tick_limits(tx: &mut Tx<'_>) {
    let now = tx.now();
    let keys: Vec<(ProviderKey, bool, u32)> = tx
        .herd()
        .limiters
        .iter()
        .filter(|(_, l)| {
            if l.releasing {
                l.round_at.saturating_add(super::PROBE_GRACE_MS) <= now
            } else {
                l.until <= now
            }
        })
        .map(|(key, l)| (key.clone(), l.releasing, if l.probed { l.batch } else { 1 }))
        .collect();
    for (key, releasing, round) in keys {
        if releasing {
            release_round(tx, &key, round);
        } else {
            tx.emit(Event::LimitOpened {
                key: key.clone(),
                at: now,
            });
            // Sheep still served fill the room the key showed: their runs' ends let the held
            // ones go (`run_ended`), or the grace does.
            let full = tx
                .herd()
                .limiters
                .get(&key)
                .is_some_and(|l| l.room > 0 && occupying(tx.herd(), &key, l) >= l.room);
            if !full {
                release_round(tx, &key, 1);
            }
        }
    }
    let due: Vec<(AgentId, crate::ids::TaskId)> = tx
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

/// Lets up to `size` more sheep on `key` go (never past its turn cap): the limited ones first,
/// in the order they met the limit, then any other with something waiting for it. With nobody
/// left to let go and nobody of the last round still to answer, the key is open again.
pub(super) fn release_round(tx: &mut Tx<'_>, key: &ProviderKey, size: u32) {
    let herd = tx.herd();
    let Some(limiter) = herd.limiters.get(key) else {
        return;
    };
    let waiting = |id: &AgentId| {
        let Some(sheep) = herd.sheep.get(id).filter(|s| s.is_live()) else {
            return false;
        };
        let limited = sheep
            .active_task
            .as_ref()
            .and_then(|t| herd.tasks.get(t))
            .is_some_and(|t| t.limit.is_some() && !t.state.is_terminal());
        let inbox = herd
            .inboxes
            .get(&Participant::Sheep(id.clone()))
            .is_some_and(|inbox| !inbox.items.is_empty());
        limited || inbox
    };
    let cap = herd
        .sheep
        .values()
        .filter(|s| s.provider_key.as_ref() == Some(key))
        .filter_map(|s| s.turn_cap)
        .min();
    let size = cap.map_or(size, |cap| size.min(cap)).max(1) as usize;
    let mut next: Vec<AgentId> = limiter
        .held
        .iter()
        .filter(|id| !limiter.released.contains(*id) && waiting(id))
        .cloned()
        .collect();
    next.extend(
        herd.sheep
            .values()
            .filter(|s| s.provider_key.as_ref() == Some(key))
            .map(|s: &Sheep| &s.id)
            .filter(|id| !limiter.released.contains(*id) && !limiter.held.contains(*id))
            .filter(|id| waiting(id))
            .cloned(),
    );
    next.truncate(size);
    let at = tx.now();
    if next.is_empty() {
        if limiter.answering.is_empty() || limiter.round_at + super::PROBE_GRACE_MS <= at {
            tx.emit(Event::LimitCleared {
                key: key.clone(),
                at,
            });
        }
        return;
    }
    for agent_id in next {
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
}
