//! Herdr's pushed events, for the panes Shepherd watches.
//!
//! What a real Herdr 0.8.0 does, measured (and what shaped this module):
//! - `pane.exited` and `pane.closed` take no pane: every such subscription receives every
//!   pane's events (a `pane_id` given to `pane.exited` is ignored). So one long-lived *base*
//!   subscription asks for `pane.closed`, `pane.exited` and `pane.moved` once, and we keep the
//!   events of the panes we watch.
//! - A pane whose program ends sends only `pane_exited` (no `pane_closed`, no `tab_closed`)
//!   and is gone within ~0.15 s; `pane.close` sends only `pane_closed`.
//! - Every new subscription entry of those kinds starts at the beginning of Herdr's ring of the
//!   last 512 events and replays them, one event per entry per 100 ms poll. So the base
//!   subscription is never replaced (a replacement would replay history again), and events
//!   are hints: whether a pane is gone is always settled by `pane.list` (see
//!   [`super::identity`]).
//! - `pane.agent_status_changed` needs a `pane_id` and starts at the present (no replay), so
//!   agent states come from a second *status* subscription, replaced make-before-break when
//!   the watched set changes.
//! - A moved pane gets a new id and the event names only the new one, so a `pane_moved` makes
//!   us list the panes again and follow each watched terminal to its current id.
//!
//! Panes are watched by terminal id (their identity) and reported to the broker under the
//! reference their launch recorded. **Reconnect on drop.** When the base stream ends (Herdr
//! restarted, the socket was cut), the consumer gets [`HerdrEvent::Disconnected`] and the
//! reader reconnects with a backoff of 50 ms doubling to 2 s; a server that is gone took its
//! panes with it, so every watched pane is reported closed. Once back, it lists the panes,
//! reports the watched ones that vanished meanwhile and sends [`HerdrEvent::Reconnected`].

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
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

/// Something Herdr reported about a watched pane, or about the event stream itself. `pane` is
/// the pane as its launch record names it (`w1:p3@term_…`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HerdrEvent {
    /// The pane is gone (closed, its program ended, or its server went away). Reported once.
    PaneClosed {
        /// The pane.
        pane: String,
    },
    /// The pane's program ended (a [`HerdrEvent::PaneClosed`] follows). Reported once.
    PaneExited {
        /// The pane.
        pane: String,
    },
    /// A watched pane's agent changed state. Reported when the state differs from the last
    /// one seen.
    AgentStatus {
        /// The pane.
        pane: String,
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

/// A watched pane.
#[derive(Debug, Clone)]
struct Watched {
    /// As its launch record names it.
    reference: String,
    /// Its current pane id.
    pane_id: String,
}

/// What the event streams have told us, shared by the reader threads and the backend.
#[derive(Default)]
struct HubState {
    /// Watched panes by terminal id.
    watched: BTreeMap<String, Watched>,
    /// Terminals known to be gone (terminal ids are never reused, so this only grows).
    gone: HashSet<String>,
    /// Terminals whose program ended.
    exited: HashSet<String>,
    /// The last agent status seen per terminal.
    status: HashMap<String, AgentStatus>,
    /// Whether the base subscription is live.
    connected: bool,
    /// The backend was dropped.
    stopped: bool,
    /// Bumped on everything a waiter may care about.
    changes: u64,
    /// The live base subscription's socket, to shut it down on stop.
    base: Option<UnixStream>,
    /// The live status subscription's socket and the pane ids it covers.
    status_stream: Option<UnixStream>,
    status_panes: BTreeSet<String>,
    /// Bumped when the status subscription is replaced; a stale reader exits quietly.
    status_generation: u64,
    /// The broker's channel, once it asked for one.
    forward: Option<UnboundedSender<HerdrEvent>>,
}

impl HubState {
    fn send(&self, event: HerdrEvent) {
        if let Some(forward) = &self.forward {
            let _receiver_gone = forward.send(event);
        }
    }

    /// The watched terminal whose pane currently has `pane_id`.
    fn terminal_of(&self, pane_id: &str) -> Option<String> {
        self.watched
            .iter()
            .find(|(_, watched)| watched.pane_id == pane_id)
            .map(|(terminal, _)| terminal.clone())
    }

    fn mark_gone(&mut self, terminal: &str) {
        self.status.remove(terminal);
        let watched = self.watched.remove(terminal);
        if self.gone.insert(terminal.to_owned())
            && let Some(watched) = watched
        {
            self.send(HerdrEvent::PaneClosed {
                pane: watched.reference,
            });
        }
        self.changes += 1;
    }

    fn mark_all_gone(&mut self) {
        let terminals: Vec<String> = self.watched.keys().cloned().collect();
        for terminal in terminals {
            self.mark_gone(&terminal);
        }
    }

    fn close_status_stream(&mut self) {
        if let Some(old) = self.status_stream.take() {
            let _already_closed = old.shutdown(std::net::Shutdown::Both);
        }
        self.status_panes.clear();
    }
}

/// The event streams' shared state and their reader threads.
pub(crate) struct Hub {
    client: HerdrClient,
    state: Mutex<HubState>,
    changed: Condvar,
    /// Serialises status subscription replacement so the newest watched set always wins.
    status_serial: Mutex<()>,
}

impl Hub {
    /// Subscribes (or, when Herdr does not answer, starts retrying in the background).
    pub(crate) fn start(client: HerdrClient) -> Arc<Self> {
        let hub = Arc::new(Self {
            client,
            state: Mutex::new(HubState::default()),
            changed: Condvar::new(),
            status_serial: Mutex::new(()),
        });
        let first = hub.open_base().ok();
        if let Some(sub) = &first {
            let mut state = hub.lock();
            state.base = sub.reader.get_ref().try_clone().ok();
            state.connected = true;
        }
        let reader = Arc::clone(&hub);
        spawn_thread("herdr-events", move || reader.run_base(first));
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

    /// Starts reporting the pane with `terminal` (now `pane_id`, recorded as `reference`).
    pub(crate) fn watch(self: &Arc<Self>, terminal: &str, reference: &str, pane_id: &str) {
        {
            let mut state = self.lock();
            if state.stopped || state.gone.contains(terminal) {
                return;
            }
            let fresh = Watched {
                reference: reference.to_owned(),
                pane_id: pane_id.to_owned(),
            };
            let known = state.watched.insert(terminal.to_owned(), fresh);
            if known.is_some_and(|old| old.pane_id == pane_id) {
                return;
            }
        }
        // Herdr probes every pane of a new status subscription before acknowledging it: do
        // that off the caller's path.
        let hub = Arc::clone(self);
        spawn_thread("herdr-status", move || hub.refresh_status());
    }

    /// Whether the pane with `terminal` is known to be gone.
    pub(crate) fn is_gone(&self, terminal: &str) -> bool {
        self.lock().gone.contains(terminal)
    }

    /// Records a pane confirmed gone by other means (a `pane.list` without it).
    pub(crate) fn mark_gone(&self, terminal: &str) {
        self.lock().mark_gone(terminal);
        self.changed.notify_all();
    }

    /// Whether the base subscription is live.
    pub(crate) fn connected(&self) -> bool {
        self.lock().connected
    }

    /// A counter that moves whenever anything was heard; pass it to [`Self::wait_change`].
    pub(crate) fn changes(&self) -> u64 {
        self.lock().changes
    }

    /// Waits until something was heard since `seen`, up to `until`.
    pub(crate) fn wait_change(&self, seen: u64, until: Instant) {
        let mut state = self.lock();
        while state.changes == seen && !state.stopped {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
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
        {
            let mut state = self.lock();
            state.stopped = true;
            state.forward = None;
            if let Some(base) = state.base.take() {
                let _already_closed = base.shutdown(std::net::Shutdown::Both);
            }
            state.close_status_stream();
        }
        self.changed.notify_all();
    }

    fn lock(&self) -> MutexGuard<'_, HubState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn open_base(&self) -> Result<Subscription, HerdrError> {
        let subscriptions = [
            json!({ "type": "pane.closed" }),
            json!({ "type": "pane.exited" }),
            json!({ "type": "pane.moved" }),
        ];
        self.client.subscribe(&subscriptions, None)
    }

    /// Replaces the status subscription with one covering the watched panes' current ids.
    fn refresh_status(self: &Arc<Self>) {
        let _serial = self
            .status_serial
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let panes: BTreeSet<String> = {
            let mut state = self.lock();
            let panes: BTreeSet<String> = state
                .watched
                .values()
                .map(|watched| watched.pane_id.clone())
                .collect();
            if state.stopped || (panes == state.status_panes && state.status_stream.is_some()) {
                return;
            }
            if panes.is_empty() {
                state.close_status_stream();
                return;
            }
            panes
        };
        let subscriptions: Vec<Value> = panes
            .iter()
            .map(|pane| json!({ "type": "pane.agent_status_changed", "pane_id": pane }))
            .collect();
        let sub = match self.client.subscribe(&subscriptions, None) {
            Ok(sub) => sub,
            Err(err) => {
                // A watched pane that vanished meanwhile fails the probe; the next change of
                // the watched set (its close is on its way) tries again.
                tracing::debug!("could not subscribe to Herdr agent states: {err}");
                return;
            }
        };
        let Ok(handle) = sub.reader.get_ref().try_clone() else {
            return;
        };
        let generation = {
            let mut state = self.lock();
            if state.stopped {
                return;
            }
            state.close_status_stream();
            state.status_stream = Some(handle);
            state.status_panes = panes;
            state.status_generation += 1;
            state.status_generation
        };
        let reader = Arc::clone(self);
        spawn_thread("herdr-status", move || {
            let _reason = reader.pump(sub);
            let mut state = reader.lock();
            if state.status_generation == generation {
                // Dropped under us (the server went away): the next refresh subscribes again.
                state.status_stream = None;
                state.status_panes.clear();
            }
        });
    }

    /// Reads events until the stream ends; returns why it ended.
    fn pump(self: &Arc<Self>, sub: Subscription) -> String {
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

    fn apply(self: &Arc<Self>, line: &[u8]) {
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
        let name = normalize_event_name(&name);
        if name == "pane_moved" {
            // Only the new id is named: find out which watched pane went where.
            self.reconcile();
            return;
        }
        let mut state = self.lock();
        let Some(terminal) = state.terminal_of(&data.pane_id) else {
            return;
        };
        let reference = state.watched[&terminal].reference.clone();
        match name.as_str() {
            "pane_closed" => state.mark_gone(&terminal),
            "pane_exited" => {
                if state.exited.insert(terminal.clone()) {
                    state.send(HerdrEvent::PaneExited { pane: reference });
                }
                // Herdr closes a pane whose program ended, without a `pane_closed`.
                state.mark_gone(&terminal);
            }
            "pane_agent_status_changed" => {
                let previous = state.status.insert(terminal, data.agent_status);
                if previous != Some(data.agent_status) {
                    state.send(HerdrEvent::AgentStatus {
                        pane: reference,
                        status: data.agent_status,
                        agent: data.agent,
                    });
                    state.changes += 1;
                }
            }
            _ => return,
        }
        drop(state);
        self.changed.notify_all();
    }

    /// Lists Herdr's panes: follows each watched terminal to its current pane id and reports
    /// the ones no longer there as closed (all of them when the server is gone).
    fn reconcile(self: &Arc<Self>) {
        if self.lock().watched.is_empty() {
            return;
        }
        let panes = match self.client.pane_list(None, None) {
            Ok(panes) => panes,
            Err(err) => {
                if err.is_server_gone() {
                    self.lock().mark_all_gone();
                    self.changed.notify_all();
                }
                return;
            }
        };
        let current: HashMap<&str, &str> = panes
            .iter()
            .map(|pane| (pane.terminal_id.as_str(), pane.pane_id.as_str()))
            .collect();
        let mut moved = false;
        {
            let mut state = self.lock();
            let terminals: Vec<String> = state.watched.keys().cloned().collect();
            for terminal in terminals {
                match current.get(terminal.as_str()) {
                    Some(pane_id) => {
                        let watched = state.watched.get_mut(&terminal).expect("listed above");
                        if watched.pane_id != *pane_id {
                            (*pane_id).clone_into(&mut watched.pane_id);
                            moved = true;
                        }
                    }
                    None => state.mark_gone(&terminal),
                }
            }
            state.changes += 1;
        }
        self.changed.notify_all();
        if moved {
            self.refresh_status();
        }
    }

    /// Pauses before a reconnection attempt; returns false when the hub was stopped.
    fn backoff(&self, pause: Duration) -> bool {
        let until = Instant::now() + pause;
        let mut state = self.lock();
        loop {
            if state.stopped {
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

    /// The base reader: pumps the subscription and, if it drops, reconnects with backoff.
    fn run_base(self: &Arc<Self>, mut sub: Option<Subscription>) {
        let mut pause = INITIAL_BACKOFF;
        loop {
            if let Some(live) = sub.take() {
                let reason = self.pump(live);
                let mut state = self.lock();
                if state.stopped {
                    return;
                }
                state.connected = false;
                state.base = None;
                state.changes += 1;
                state.send(HerdrEvent::Disconnected { reason });
                drop(state);
                self.changed.notify_all();
            }
            if !self.backoff(pause) {
                return;
            }
            pause = (pause * 2).min(MAX_BACKOFF);
            let fresh = match self.open_base() {
                Ok(fresh) => fresh,
                Err(err) => {
                    if err.is_server_gone() {
                        // The server's panes ended with it.
                        self.lock().mark_all_gone();
                        self.changed.notify_all();
                    }
                    continue;
                }
            };
            {
                let mut state = self.lock();
                if state.stopped {
                    return;
                }
                state.base = fresh.reader.get_ref().try_clone().ok();
                state.connected = true;
                state.changes += 1;
            }
            self.changed.notify_all();
            self.reconcile();
            self.lock().send(HerdrEvent::Reconnected);
            self.refresh_status();
            pause = INITIAL_BACKOFF;
            sub = Some(fresh);
        }
    }
}

fn spawn_thread(name: &str, body: impl FnOnce() + Send + 'static) {
    let spawned = std::thread::Builder::new()
        .name(name.into())
        .stack_size(128 * 1024)
        .spawn(body);
    if let Err(err) = spawned {
        tracing::warn!("could not start the Herdr event reader: {err}");
    }
}
