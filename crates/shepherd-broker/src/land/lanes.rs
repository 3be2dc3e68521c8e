//! One merge at a time per target: a second merge into the same branch of the same repository
//! waits its turn, in the order the merges were submitted (or resumed after a restart), and
//! says which merge it waits for. A merge joins its lane when it is accepted, lands once it is
//! first in it, and leaves it once it is over (or cancelled while it waited).

use std::collections::VecDeque;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::state::broker::Broker;
use crate::state::work::Work;

impl Work {
    /// Puts `merge_id` at the end of `lane` (once).
    pub(super) fn join_lane(&mut self, lane: &str, merge_id: &str) {
        let queue = self.merge_lanes.entry(lane.to_owned()).or_default();
        if !queue.iter().any(|id| id == merge_id) {
            queue.push_back(merge_id.to_owned());
        }
    }

    /// The merge first in `lane`, when it is not `merge_id`.
    fn ahead_in_lane(&self, lane: &str, merge_id: &str) -> Option<String> {
        self.merge_lanes
            .get(lane)
            .and_then(VecDeque::front)
            .filter(|first| *first != merge_id)
            .cloned()
    }
}

/// Waits until `merge_id` is first in `lane`, telling `waiting` which merge it waits for each
/// time that changes. `false`: it was cancelled first.
pub(super) async fn turn(
    broker: &Arc<Broker>,
    lane: &str,
    merge_id: &str,
    cancel: &CancellationToken,
    mut waiting: impl FnMut(Option<String>),
) -> bool {
    let mut generation = broker.store.generation.subscribe();
    let mut told: Option<Option<String>> = None;
    loop {
        generation.borrow_and_update();
        let first = broker
            .work
            .lock()
            .expect("work lock")
            .ahead_in_lane(lane, merge_id);
        if told.as_ref() != Some(&first) {
            waiting(first.clone());
            told = Some(first.clone());
        }
        if first.is_none() {
            return true;
        }
        tokio::select! {
            () = cancel.cancelled() => return false,
            changed = generation.changed() => if changed.is_err() { return false },
        }
    }
}

/// Takes `merge_id` out of `lane`, and wakes the merges waiting there.
pub(super) fn leave(broker: &Broker, lane: &str, merge_id: &str) {
    {
        let mut work = broker.work.lock().expect("work lock");
        if let Some(queue) = work.merge_lanes.get_mut(lane) {
            queue.retain(|id| id != merge_id);
            if queue.is_empty() {
                work.merge_lanes.remove(lane);
            }
        }
    }
    broker.store.generation.send_modify(|g| *g += 1);
}
