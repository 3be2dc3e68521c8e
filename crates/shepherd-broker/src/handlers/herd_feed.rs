//! Pushed herd views: a parent or observer that calls `herd.subscribe` gets the herd now and
//! then a `herd` event each time it changes, so a widget or a terminal dashboard shows the herd
//! without asking for it on a timer.
//!
//! Every change goes through a commit, and every commit bumps the broker's generation; the feed
//! wakes on a bump and pushes the view only when something a person would see differs from the
//! last one pushed (an acknowledged inbox item pushes nothing). A change is pushed at once, but
//! the view is built at most once per short window: a burst of commits (a parallel run spawning
//! eight sheep) ends in one push of where the burst got to.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use shepherd_core::protocol::{HerdResult, event};

use crate::error::BrokerResult;
use crate::state::broker::Broker;
use crate::state::session::Session;

/// The shortest time between two looks at the herd (and so two pushes) for one connection.
const COALESCE: Duration = Duration::from_millis(20);

/// Runs `herd.subscribe`: answers with the herd now; later views are pushed as `herd` events
/// (once per connection however often it subscribes).
pub(crate) fn subscribe(broker: &Arc<Broker>, session: &Arc<Session>) -> BrokerResult<HerdResult> {
    let mut generation = broker.store.generation.subscribe();
    generation.borrow_and_update();
    let now = crate::handlers::parent::herd(broker)?;
    if session.follows_herd.swap(true, Ordering::SeqCst) {
        return Ok(now);
    }
    let broker = broker.clone();
    let session = session.clone();
    let mut last = comparable(&now);
    tokio::spawn(async move {
        let mut next_allowed = tokio::time::Instant::now();
        loop {
            tokio::select! {
                changed = generation.changed() => if changed.is_err() { return },
                () = session.closed.cancelled() => return,
                () = broker.shutdown.cancelled() => return,
            }
            tokio::select! {
                () = tokio::time::sleep_until(next_allowed) => {}
                () = session.closed.cancelled() => return,
                () = broker.shutdown.cancelled() => return,
            }
            generation.borrow_and_update();
            // The view is built at most once per window, pushed or not: a busy herd commits far
            // more often than anything a person sees changes.
            next_allowed = tokio::time::Instant::now() + COALESCE;
            let Ok(view) = crate::handlers::parent::herd(&broker) else {
                return;
            };
            let seen = comparable(&view);
            if seen != last {
                last = seen;
                session.push(
                    event::HERD,
                    serde_json::to_value(view).expect("the herd serialises"),
                );
            }
        }
    });
    Ok(now)
}

/// The view without what only the clock changes (the time it was taken, how long a task has
/// waited so far, how long a task under the stall watchdog has been silent): a client works
/// those out from the timestamps it already has.
fn comparable(view: &HerdResult) -> HerdResult {
    let mut view = view.clone();
    view.now = None;
    for sheep in &mut view.sheep {
        if let Some(task) = sheep.task.as_mut() {
            task.waiting_ms = None;
            if let Some(stall) = task.stall.as_mut() {
                stall.quiet_ms = 0;
            }
        }
    }
    view
}
