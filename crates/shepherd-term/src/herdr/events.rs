//! Herdr's pushed events, on one long-lived `events.subscribe` connection.
//!
//! The subscription asks for every `pane.closed` (which also follows a shell exit, since a pane
//! closes when its shell ends) plus, for each pane Shepherd watches, `pane.exited` and
//! `pane.agent_status_changed` — Herdr needs a `pane_id` for those two. The events feed two
//! consumers: the backend itself, which waits on them to confirm a close instead of polling
//! `pane.list`, and the broker, which receives them as [`HerdrEvent`]s through
//! [`HerdrEvents`]. Duplicates are dropped (Herdr replays recent events to a new subscriber,
//! and two subscriptions overlap briefly when the watched set changes); event names are
//! accepted in both spellings (`pane_closed`, `pane.closed`).
//!
//! Watching a new pane replaces the subscription make-before-break: the new connection is
//! acknowledged before the old one is shut down, so no event falls into a gap.
//!
//! **Reconnect on drop.** When the stream ends unexpectedly (Herdr restarted, the socket was
//! cut), the consumer gets [`HerdrEvent::Disconnected`] and a reader thread reconnects with a
//! backoff of 50 ms doubling to 2 s. Before and after resubscribing it lists Herdr's panes and
//! reports every watched pane that vanished meanwhile as [`HerdrEvent::PaneClosed`] — so a
//! close is never lost, even across a gap — then sends [`HerdrEvent::Reconnected`]. Status
//! changes that happened during a gap are not replayed. While disconnected, the backend falls
//! back to asking `pane.list` directly.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::io::{BufRead, Read};
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

use super::client::{HerdrClient, Subscription};
use super::error::HerdrError;
use super::wire::{AgentStatus, EventLine, normalize_event_name};

/// First pause before reconnecting a dropped event stream.
const INITIAL_BACKOFF: Duration = Duration::from_millis(50);
/// Longest pause between reconnection attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(2);
/// Longest event line read; longer ones are skipped as unreadable.
const MAX_EVENT_BYTES: u64 = 16 * 1024 * 1024;

/// Something Herdr reported about a pane, or about the event stream itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HerdrEvent {
    /// The pane is gone (closed, or its shell exited). Reported once per pane.
    PaneClosed {
        /// The pane.
        pane_id: String,
    },
    /// The pane's shell exited (a closed event follows). Reported once per pane.
    PaneExited {
        /// The pane.
        pane_id: String,
    },
    /// A watched pane's agent changed state. Reported when the state differs from the last
    /// one seen.
    AgentStatus {
        /// The pane.
        pane_id: String,
        /// The new state.
        status: AgentStatus,
        /// The agent Herdr recognised, if any.
        agent: Option<String>,
    },
    /// The event stream dropped; reconnecting. Until [`HerdrEvent::Reconnected`], events may
    /// be late.
    Disconnected {
        /// Why it dropped.
        reason: String,
    },
    /// The stream is back; closes that happened meanwhile were reported just before this.
    Reconnected,
}

/// The broker's end of the event stream. `recv` returns `None` once the backend is dropped.
#[derive(Debug)]
pub struct HerdrEvents {
    receiver: UnboundedReceiver<HerdrEvent>,
}

impl HerdrEvents {
    /// The next event.
    pub async fn recv(&mut self) -> Option<HerdrEvent> {
        self.receiver.recv().await
    }

    /// The next event if one is already waiting.
    pub fn try_recv(&mut self) -> Option<HerdrEvent> {
        self.receiver.try_recv().ok()
    }

    /// The underlying channel, for `select!` loops that want it directly.
    pub fn into_inner(self) -> UnboundedReceiver<HerdrEvent> {
        self.receiver
    }
}

/// What the event stream has told us, shared by the reader thread and the backend.
#[derive(Default)]
struct HubState {
    /// Panes whose exit and agent status we subscribe to.
    watched: BTreeSet<String>,
    /// Panes known to be gone (ids are never reused, so this only grows).
    gone: HashSet<String>,
    /// Panes whose shell exited.
    exited: HashSet<String>,
    /// The last agent status seen per pane.
    status: HashMap<String, AgentStatus>,
    /// Whether a subscription is live.
    connected: bool,
    /// Bumped whenever a new subscription replaces the old; a reader thread whose generation
    /// is stale exits.
    generation: u64,
    /// The backend was dropped.
    stopped: bool,
    /// A handle on the live subscription's socket, to shut it down when replaced.
    current: Option<UnixStream>,
    /// The broker's channel, once it asked for one.
    forward: Option<UnboundedSender<HerdrEvent>>,
}

impl HubState {
    fn send(&self, event: HerdrEvent) {
        if let Some(forward) = &self.forward {
            let _receiver_gone = forward.send(event);
        }
    }

    fn mark_gone(&mut self, pane_id: &str) -> bool {
        self.watched.remove(pane_id);
        self.status.remove(pane_id);
        if self.gone.insert(pane_id.to_owned()) {
            self.send(HerdrEvent::PaneClosed {
                pane_id: pane_id.to_owned(),
            });
            true
        } else {
            false
        }
    }
}

/// The event stream's shared state and its reader threads.
pub(crate) struct Hub {
    client: HerdrClient,
    state: Mutex<HubState>,
    changed: Condvar,
    /// Serialises subscription replacement so the newest watched set always wins.
    resubscribe: Mutex<()>,
}

impl Hub {
    /// Subscribes (or, when Herdr does not answer, starts retrying in the background).
    pub(crate) fn start(client: HerdrClient) -> Arc<Self> {
        let hub = Arc::new(Self {
            client,
            state: Mutex::new(HubState::default()),
            changed: Condvar::new(),
            resubscribe: Mutex::new(()),
        });
        let first = hub.open(&BTreeSet::new()).ok();
        if let Some(sub) = &first {
            let mut state = hub.lock();
            state.current = sub.reader.get_ref().try_clone().ok();
            state.connected = true;
        }
        spawn_reader(&hub, 0, first);
        hub
    }

    /// The broker's receiver; only the first call gets one.
    pub(crate) fn take_events(&self) -> Option<HerdrEvents> {
        let mut state = self.lock();
        if state.forward.is_some() || state.stopped {
            return None;
        }
        let (sender, receiver) = unbounded_channel();
        state.forward = Some(sender);
        Some(HerdrEvents { receiver })
    }

    /// Starts reporting `pane_id`'s exit and agent status.
    pub(crate) fn watch(self: &Arc<Self>, pane_id: &str) {
        let _serial = self
            .resubscribe
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let watched = {
            let mut state = self.lock();
            let fresh = !state.gone.contains(pane_id) && state.watched.insert(pane_id.to_owned());
            // While disconnected, the reconnecting reader subscribes with the new set.
            if state.stopped || !fresh || !state.connected {
                return;
            }
            state.watched.clone()
        };
        match self.open(&watched) {
            Ok(sub) => self.install(sub),
            Err(err) => tracing::warn!(
                "could not widen the Herdr event subscription to pane {pane_id}: {err}; \
                 its closing is still reported"
            ),
        }
    }

    /// Whether the pane is known to be gone.
    pub(crate) fn is_gone(&self, pane_id: &str) -> bool {
        self.lock().gone.contains(pane_id)
    }

    /// Records a pane confirmed gone by other means (a `pane.list` without it).
    pub(crate) fn mark_gone(&self, pane_id: &str) {
        if self.lock().mark_gone(pane_id) {
            self.changed.notify_all();
        }
    }

    /// Whether a subscription is live.
    pub(crate) fn connected(&self) -> bool {
        self.lock().connected
    }

    /// Waits until the pane is known gone, up to `until`. Returns whether it is.
    pub(crate) fn wait_gone(&self, pane_id: &str, until: Instant) -> bool {
        let mut state = self.lock();
        loop {
            if state.gone.contains(pane_id) {
                return true;
            }
            let left = until.saturating_duration_since(Instant::now());
            if state.stopped || left.is_zero() {
                return false;
            }
            state = self
                .changed
                .wait_timeout(state, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Ends the reader threads and closes the broker's channel.
    pub(crate) fn stop(&self) {
        let current = {
            let mut state = self.lock();
            state.stopped = true;
            state.forward = None;
            state.current.take()
        };
        if let Some(stream) = current {
            let _already_closed = stream.shutdown(std::net::Shutdown::Both);
        }
        self.changed.notify_all();
    }

    fn lock(&self) -> MutexGuard<'_, HubState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn open(&self, watched: &BTreeSet<String>) -> Result<Subscription, HerdrError> {
        self.client.subscribe(&subscriptions(watched), None)
    }

    /// Makes `sub` the live subscription and retires the previous one.
    fn install(self: &Arc<Self>, sub: Subscription) {
        let Ok(handle) = sub.reader.get_ref().try_clone() else {
            tracing::warn!("could not keep a handle on the Herdr event stream");
            return;
        };
        let (generation, old) = {
            let mut state = self.lock();
            if state.stopped {
                return;
            }
            state.generation += 1;
            state.connected = true;
            (state.generation, state.current.replace(handle))
        };
        if let Some(old) = old {
            let _already_closed = old.shutdown(std::net::Shutdown::Both);
        }
        spawn_reader(self, generation, Some(sub));
    }

    /// Reads events until the stream ends; returns why it ended.
    fn pump(&self, sub: Subscription) -> String {
        let mut reader = sub.reader;
        let mut line = Vec::new();
        loop {
            line.clear();
            match reader
                .by_ref()
                .take(MAX_EVENT_BYTES)
                .read_until(b'\n', &mut line)
            {
                Ok(0) => return "Herdr closed the event stream".into(),
                Ok(_) => self.apply(&line),
                Err(err) if err.kind() == std::io::ErrorKind::Interrupted => {}
                Err(err) => return format!("reading Herdr events: {err}"),
            }
        }
    }

    fn apply(&self, line: &[u8]) {
        let event: EventLine = match serde_json::from_slice(line) {
            Ok(event) => event,
            Err(err) => {
                tracing::debug!("skipping an unreadable Herdr event line: {err}");
                return;
            }
        };
        let data = event.data;
        let name = if event.event.is_empty() {
            data.kind.clone()
        } else {
            event.event
        };
        if data.pane_id.is_empty() {
            return;
        }
        let mut state = self.lock();
        let changed = match normalize_event_name(&name).as_str() {
            "pane_closed" => state.mark_gone(&data.pane_id),
            "pane_exited" => {
                let fresh = state.exited.insert(data.pane_id.clone());
                if fresh {
                    state.send(HerdrEvent::PaneExited {
                        pane_id: data.pane_id,
                    });
                }
                fresh
            }
            "pane_agent_status_changed" if !state.gone.contains(&data.pane_id) => {
                let previous = state.status.insert(data.pane_id.clone(), data.agent_status);
                let fresh = previous != Some(data.agent_status);
                if fresh {
                    state.send(HerdrEvent::AgentStatus {
                        pane_id: data.pane_id,
                        status: data.agent_status,
                        agent: data.agent,
                    });
                }
                fresh
            }
            _ => false,
        };
        drop(state);
        if changed {
            self.changed.notify_all();
        }
    }

    /// Reports every watched pane that Herdr no longer lists as closed.
    fn reconcile(&self) {
        let watched: Vec<String> = self.lock().watched.iter().cloned().collect();
        if watched.is_empty() {
            return;
        }
        let Ok(panes) = self.client.pane_list(None, None) else {
            return;
        };
        let live: HashSet<&str> = panes.iter().map(|pane| pane.pane_id.as_str()).collect();
        for pane_id in watched.iter().filter(|id| !live.contains(id.as_str())) {
            self.mark_gone(pane_id);
        }
    }

    /// Pauses before a reconnection attempt; returns false when this reader should exit.
    fn backoff(&self, generation: u64, pause: Duration) -> bool {
        let until = Instant::now() + pause;
        let mut state = self.lock();
        loop {
            if state.stopped || state.generation != generation {
                return false;
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return true;
            }
            state = self
                .changed
                .wait_timeout(state, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// One reader thread: pumps its subscription, and if that drops while still current,
    /// reconnects with backoff.
    fn run(&self, generation: u64, mut sub: Option<Subscription>) {
        let mut pause = INITIAL_BACKOFF;
        loop {
            if let Some(live) = sub.take() {
                let reason = self.pump(live);
                let mut state = self.lock();
                if state.stopped || state.generation != generation {
                    return;
                }
                state.connected = false;
                state.current = None;
                state.send(HerdrEvent::Disconnected { reason });
                drop(state);
                self.changed.notify_all();
            }
            if !self.backoff(generation, pause) {
                return;
            }
            pause = (pause * 2).min(MAX_BACKOFF);
            // Panes that vanished during the gap would make Herdr refuse the subscription.
            self.reconcile();
            let watched = self.lock().watched.clone();
            let Ok(fresh) = self.open(&watched) else {
                continue;
            };
            let handle = fresh.reader.get_ref().try_clone().ok();
            {
                let mut state = self.lock();
                if state.stopped || state.generation != generation {
                    return;
                }
                state.current = handle;
                state.connected = true;
            }
            self.changed.notify_all();
            self.reconcile();
            self.lock().send(HerdrEvent::Reconnected);
            pause = INITIAL_BACKOFF;
            sub = Some(fresh);
        }
    }
}

fn spawn_reader(hub: &Arc<Hub>, generation: u64, sub: Option<Subscription>) {
    let hub = Arc::clone(hub);
    let spawned = std::thread::Builder::new()
        .name("herdr-events".into())
        .stack_size(128 * 1024)
        .spawn(move || hub.run(generation, sub));
    if let Err(err) = spawned {
        tracing::warn!("could not start the Herdr event reader: {err}");
    }
}

/// Every pane's closing, plus exit and agent status of the watched panes (Herdr requires a
/// `pane_id` for those two).
fn subscriptions(watched: &BTreeSet<String>) -> Vec<Value> {
    let mut subscriptions = vec![json!({ "type": "pane.closed" })];
    for pane_id in watched {
        subscriptions.push(json!({ "type": "pane.exited", "pane_id": pane_id }));
        subscriptions.push(json!({ "type": "pane.agent_status_changed", "pane_id": pane_id }));
    }
    subscriptions
}
