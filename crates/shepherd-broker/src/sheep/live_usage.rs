//! What the open task of each sheep has used so far, for the herd view.
//!
//! A pi sheep reports every turn's tokens and cost (`report` with `turn`), and another agent's
//! headless driver every model response's. The herd keeps that
//! count only for a task with a budget, which needs it; a dashboard wants it for every task,
//! while it runs, not just from the run's record once the task settled. So the broker also
//! keeps each sheep's count for its open task here, as runtime state: it is not journaled (a
//! restarted broker counts again from the next turn), it is dropped when the sheep moves on to
//! another task, and a counted turn wakes the herd feed. Once the task settles, its run's own
//! record carries the same usage, split into input and output.

use shepherd_core::budget::Usage as TurnUsage;
use shepherd_core::herd::SheepStatus;
use shepherd_core::ids::{AgentId, TaskId};

use std::sync::Mutex;

use crate::state::broker::{Broker, Links};

/// Adds one turn of `sender`'s open task `task`.
pub(crate) fn count(broker: &Broker, sender: &AgentId, task: &TaskId, turn: &TurnUsage) {
    {
        let mut links = broker.links.lock().expect("links lock");
        let entry = links
            .live_usage
            .entry(sender.clone())
            .or_insert_with(|| (task.clone(), TurnUsage::default()));
        if &entry.0 != task {
            *entry = (task.clone(), TurnUsage::default());
        }
        entry.1.add(turn);
    }
    broker.store.generation.send_modify(|g| *g += 1);
}

/// Adds what each sheep's open task used so far to its status.
pub(crate) fn overlay(links: &Mutex<Links>, sheep: &mut [SheepStatus]) {
    let links = links.lock().expect("links lock");
    for status in sheep.iter_mut() {
        let Some((task, used)) = links.live_usage.get(&status.agent_id) else {
            continue;
        };
        if status.task.as_ref().is_none_or(|t| &t.id != task) || used.is_zero() {
            continue;
        }
        let usage = status.usage.get_or_insert_with(Default::default);
        usage.tokens += used.tokens;
        if used.cost.is_finite() && used.cost > 0.0 {
            usage.cost += used.cost;
        }
    }
}
