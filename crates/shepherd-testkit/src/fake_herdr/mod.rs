//! A fake Herdr server for contract tests of Shepherd's Herdr backend.
//!
//! No usable Herdr can be installed on CI, so this test double binds a Unix socket and speaks
//! Herdr's protocol as observed on Herdr 0.8.0 (protocol 20): newline-delimited JSON, one
//! request per connection (the server closes after its reply), and `events.subscribe` streams
//! that stay open and receive pushed events. Its replies are our own fixtures written from
//! those observations, with an unknown extra field in every object so clients must read
//! leniently. Tests script it — errors with any code, a request left unanswered, replies
//! without a newline or without closing, event-name spellings, a shell slow to start — and
//! inspect what it saw: every request, what was created, typed and closed, and whether focus
//! ever moved. With [`FakeOptions::run_typed`] it really runs typed lines with the pane's
//! environment, so `shepherd supervise` can run end to end in a fake pane.

mod events;
mod model;
mod run;

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

pub use events::EventStyle;
pub use model::{FakePane, FakeState, FakeTab, FakeWorkspace, Request, VIEWPORT_ROWS};

use events::EventKind;
use model::{Failure, Outcome};

/// How a fake server behaves.
#[derive(Debug, Clone)]
pub struct FakeOptions {
    /// The protocol `ping` reports (Herdr 0.8.0: 20).
    pub protocol: u32,
    /// The version `ping` reports.
    pub version: String,
    /// How event names are spelled.
    pub event_style: EventStyle,
    /// Start with workspace `w1` (label `main`), tab `w1:t1` and focused pane `w1:p1`, like a
    /// user's session; otherwise start empty.
    pub initial_workspace: bool,
    /// Run lines typed with Enter as `sh -c` children of the fake.
    pub run_typed: bool,
    /// Let each new pane's terminal be held by another process until
    /// [`FakeHerdr::finish_shell_start`].
    pub slow_shell_start: bool,
    /// Close each connection after the reply, as Herdr does; when false the fake keeps it open
    /// until the client closes it.
    pub close_after_reply: bool,
    /// End replies with a newline; when false a reply ends at the connection's end.
    pub newline_after_reply: bool,
    /// Replay recent pane closings to each new subscriber, as Herdr does.
    pub replay_on_subscribe: bool,
    /// Report enum values no Shepherd knows (`agent_status: "pondering"`).
    pub odd_values: bool,
}

impl Default for FakeOptions {
    fn default() -> Self {
        Self {
            protocol: 20,
            version: "0.8.0".into(),
            event_style: EventStyle::Observed,
            initial_workspace: true,
            run_typed: false,
            slow_shell_start: false,
            close_after_reply: true,
            newline_after_reply: true,
            replay_on_subscribe: false,
            odd_values: false,
        }
    }
}

/// State shared by the fake's threads.
pub(crate) struct Shared {
    state: Mutex<FakeState>,
    pub(crate) changed: Condvar,
    pub(crate) socket: PathBuf,
    closing: AtomicBool,
}

impl Shared {
    pub(crate) fn lock(&self) -> MutexGuard<'_, FakeState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A running fake Herdr server. Dropping it stops it and ends every process it started.
pub struct FakeHerdr {
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
    _dir: Option<tempfile::TempDir>,
}

impl FakeHerdr {
    /// Starts a fake on a socket in a fresh temporary directory.
    pub fn start(options: FakeOptions) -> std::io::Result<Self> {
        let dir = tempfile::Builder::new().prefix("fake-herdr").tempdir()?;
        let mut fake = Self::start_at(&dir.path().join("herdr.sock"), options)?;
        fake._dir = Some(dir);
        Ok(fake)
    }

    /// Starts a fake on `socket` (replacing a stale socket file there).
    pub fn start_at(socket: &Path, options: FakeOptions) -> std::io::Result<Self> {
        let _stale = std::fs::remove_file(socket);
        let listener = UnixListener::bind(socket)?;
        let shared = Arc::new(Shared {
            state: Mutex::new(FakeState::new(options)),
            changed: Condvar::new(),
            socket: socket.to_path_buf(),
            closing: AtomicBool::new(false),
        });
        let accepting = Arc::clone(&shared);
        let accept = std::thread::Builder::new()
            .name("fake-herdr".into())
            .spawn(move || accept_loop(&accepting, &listener))?;
        Ok(Self {
            shared,
            accept: Some(accept),
            _dir: None,
        })
    }

    /// The socket clients connect to.
    pub fn socket(&self) -> &Path {
        &self.shared.socket
    }

    /// Reads the fake's state.
    pub fn inspect<R>(&self, read: impl FnOnce(&FakeState) -> R) -> R {
        read(&self.shared.lock())
    }

    /// Waits until `done` holds, up to `timeout`; returns whether it did.
    pub fn wait_until(&self, timeout: Duration, mut done: impl FnMut(&FakeState) -> bool) -> bool {
        let until = Instant::now() + timeout;
        let mut state = self.shared.lock();
        loop {
            if done(&state) {
                return true;
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            state = self
                .shared
                .changed
                .wait_timeout(state, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// The next request for `method` fails with `code` and `message`.
    pub fn fail(&self, method: &str, code: &str, message: &str) {
        self.fail_times(method, code, message, 1);
    }

    /// The next `times` requests for `method` fail with `code` and `message`.
    pub fn fail_times(&self, method: &str, code: &str, message: &str, times: u32) {
        self.shared.lock().failures.push(Failure {
            method: method.into(),
            code: code.into(),
            message: message.into(),
            times,
        });
    }

    /// The next request for `method` is read and the connection closed without a reply, as a
    /// server that is going away does.
    pub fn close_next(&self, method: &str) {
        self.shared.lock().closes.push(method.into());
    }

    /// Forgets every scripted failure not yet used.
    pub fn clear_failures(&self) {
        self.shared.lock().failures.clear();
    }

    /// The next request for `method` gets no reply at all.
    pub fn hang_next(&self, method: &str) {
        self.shared.lock().hangs.push(method.into());
    }

    /// Sets what `pane_id` shows.
    pub fn set_screen(&self, pane_id: &str, text: &str) {
        self.change(|state| {
            if let Some(pane) = state.pane_mut(pane_id) {
                pane.screen = text.into();
            }
        });
    }

    /// The pane's shell exits: `pane_exited`, then `pane_closed`.
    pub fn exit_pane(&self, pane_id: &str) {
        self.change(|state| state.close_pane(pane_id, true));
    }

    /// The pane's agent changes state, telling subscribers.
    pub fn set_agent_status(&self, pane_id: &str, status: &str, agent: &str) {
        self.change(|state| {
            let Some(pane) = state.pane_mut(pane_id) else {
                return;
            };
            pane.agent_status = status.into();
            let ws = pane.workspace_id.clone();
            let mut extra = Map::new();
            extra.insert("agent_status".into(), json!(status));
            extra.insert("agent".into(), json!(agent));
            state.emit(EventKind::AgentStatus, pane_id, &ws, &extra);
        });
    }

    /// Sets the pid `pane.process_info` reports for the pane's shell.
    pub fn set_shell_pid(&self, pane_id: &str, pid: u32) {
        self.change(|state| {
            if let Some(pane) = state.pane_mut(pane_id) {
                pane.shell_pid = pid;
            }
        });
    }

    /// Ends the process holding a slow-starting pane's terminal.
    pub fn finish_shell_start(&self, pane_id: &str) {
        self.change(|state| {
            if let Some(pane) = state.pane_mut(pane_id) {
                run::release_holder(pane);
            }
        });
    }

    /// Cuts every event subscription (clients should reconnect).
    pub fn drop_subscribers(&self) {
        self.change(|state| {
            for subscriber in state.subscribers.drain(..) {
                if let Some(stream) = subscriber.stream {
                    let _closed = stream.shutdown(std::net::Shutdown::Both);
                }
            }
        });
    }

    /// Waits until a client called `server.stop`, up to `timeout`.
    pub fn wait_stopped(&self, timeout: Duration) -> bool {
        self.wait_until(timeout, FakeState::stopped)
    }

    fn change(&self, apply: impl FnOnce(&mut FakeState)) {
        apply(&mut self.shared.lock());
        self.shared.changed.notify_all();
    }
}

impl Drop for FakeHerdr {
    fn drop(&mut self) {
        self.shared.closing.store(true, Ordering::SeqCst);
        // Wake the accept loop; it then sees `closing`.
        let _woken = UnixStream::connect(&self.shared.socket);
        if let Some(accept) = self.accept.take() {
            let _joined = accept.join();
        }
        stop_everything(&mut self.shared.lock());
    }
}

fn stop_everything(state: &mut FakeState) {
    for subscriber in state.subscribers.drain(..) {
        if let Some(stream) = subscriber.stream {
            let _closed = stream.shutdown(std::net::Shutdown::Both);
        }
    }
    let ids: Vec<String> = state.panes().iter().map(|pane| pane.id.clone()).collect();
    for id in ids {
        if let Some(pane) = state.pane_any_mut(&id) {
            run::kill_all(pane);
        }
    }
}

fn accept_loop(shared: &Arc<Shared>, listener: &UnixListener) {
    for stream in listener.incoming() {
        if shared.closing.load(Ordering::SeqCst) || shared.lock().stopped() {
            break;
        }
        if let Ok(stream) = stream {
            let shared = Arc::clone(shared);
            std::thread::spawn(move || serve(&shared, &stream));
        }
    }
    let _removed = std::fs::remove_file(&shared.socket);
}

/// Answers one connection: one request, one reply (or a subscription that stays open).
fn serve(shared: &Arc<Shared>, stream: &UnixStream) {
    let _bounded = stream.set_read_timeout(Some(Duration::from_secs(60)));
    let Ok(read_half) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(read_half);
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    let request: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
    let id = request
        .get("id")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let method = request
        .get("method")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let params = request.get("params").cloned().unwrap_or_else(|| json!({}));
    let mut state = shared.lock();
    state.log(&method, &params);
    if let Some(at) = state.closes.iter().position(|closed| *closed == method) {
        state.closes.remove(at);
        drop(state);
        shared.changed.notify_all();
        return;
    }
    if let Some(at) = state.hangs.iter().position(|hung| *hung == method) {
        state.hangs.remove(at);
        drop(state);
        shared.changed.notify_all();
        drain(reader);
        return;
    }
    let before = state.panes().len();
    let outcome = match scripted_failure(&mut state, &method) {
        Some(outcome) => outcome,
        None if method.is_empty() => Outcome::Error {
            code: "invalid_request".into(),
            message: format!("invalid request: cannot parse {:?}", line.trim_end()),
            anonymous: true,
        },
        None => state.handle(&method, &params),
    };
    let reply = match outcome {
        Outcome::Reply(result) => {
            after_success(shared, &mut state, &method, &params, before);
            json!({"id": id, "result": result, "x_fake_top": {"ignored": true}})
        }
        Outcome::Error {
            code,
            message,
            anonymous,
        } => {
            let id = if anonymous { String::new() } else { id };
            json!({"id": id, "error": {"code": code, "message": message}})
        }
        Outcome::Subscribe(subscriber) => {
            let number = subscribe(shared, state, stream, subscriber, &id);
            // The subscription lasts until the client hangs up, however long that takes.
            let _unbounded = stream.set_read_timeout(None);
            drain(reader);
            shared.lock().subscribers.retain(|s| s.number != number);
            shared.changed.notify_all();
            return;
        }
    };
    let stopping = std::mem::take(&mut state.stop_requested);
    let (close, newline) = (
        state.options.close_after_reply,
        state.options.newline_after_reply,
    );
    drop(state);
    shared.changed.notify_all();
    let mut bytes = reply.to_string().into_bytes();
    if newline {
        bytes.push(b'\n');
    }
    let _gone = (&*stream).write_all(&bytes);
    if stopping {
        // Only after the reply is out: a process serving the fake exits once it is stopped.
        let mut state = shared.lock();
        state.stopped = true;
        stop_everything(&mut state);
        drop(state);
        shared.changed.notify_all();
        // Wake the accept loop so it notices and removes the socket.
        let _woken = UnixStream::connect(&shared.socket);
    }
    if close || !newline {
        return;
    }
    drain(reader);
}

fn scripted_failure(state: &mut FakeState, method: &str) -> Option<Outcome> {
    let at = state.failures.iter().position(|f| f.method == method)?;
    let failure = &mut state.failures[at];
    let outcome = Outcome::Error {
        code: failure.code.clone(),
        message: failure.message.clone(),
        anonymous: false,
    };
    failure.times = failure.times.saturating_sub(1);
    if failure.times == 0 {
        state.failures.remove(at);
    }
    Some(outcome)
}

/// Effects beyond the reply: typing (and maybe running) text, holding new panes' terminals.
fn after_success(
    shared: &Arc<Shared>,
    state: &mut FakeState,
    method: &str,
    params: &Value,
    before: usize,
) {
    if state.options.slow_shell_start {
        let new: Vec<String> = state.panes()[before..]
            .iter()
            .map(|p| p.id.clone())
            .collect();
        for id in new {
            if let Some(pane) = state.pane_mut(&id) {
                run::start_holder(shared, pane);
            }
        }
    }
    if !matches!(
        method,
        "pane.send_input" | "pane.send_text" | "pane.send_keys"
    ) {
        return;
    }
    let run_typed = state.options.run_typed;
    let pane_id = params.get("pane_id").and_then(Value::as_str).unwrap_or("");
    let Some(pane) = state.pane_mut(pane_id) else {
        return;
    };
    let text = params.get("text").and_then(Value::as_str).unwrap_or("");
    pane.typed.push_str(text);
    pane.pending.push_str(text);
    let keys = params
        .get("keys")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for key in keys.iter().filter_map(Value::as_str) {
        pane.typed.push_str(&format!("<{key}>"));
        if key.eq_ignore_ascii_case("enter") {
            let line = std::mem::take(&mut pane.pending);
            pane.screen.push_str(&format!("$ {line}\n"));
            pane.commands.push(line.clone());
            if run_typed {
                run::run_line(shared, pane, &line);
            }
        }
    }
}

/// Acknowledges a subscription and registers it; events can only follow the acknowledgement
/// because both happen under the state lock.
fn subscribe(
    shared: &Shared,
    mut state: MutexGuard<'_, FakeState>,
    stream: &UnixStream,
    mut subscriber: events::Subscriber,
    id: &str,
) -> u64 {
    state.next_subscriber += 1;
    subscriber.number = state.next_subscriber;
    let number = subscriber.number;
    let Ok(events) = stream.try_clone() else {
        return number;
    };
    let _bounded = events.set_write_timeout(Some(Duration::from_secs(2)));
    subscriber.stream = Some(events);
    let ack = json!({"id": id, "result": {"type": "subscription_started", "x_fake_field": 7}});
    if !subscriber.send(&ack) {
        return number;
    }
    if state.options.replay_on_subscribe && subscriber.wants_closed() {
        let style = state.options.event_style;
        for (pane, ws) in state.recent_closed.clone() {
            subscriber.deliver(style, EventKind::Closed, &pane, &ws, &Map::new());
        }
    }
    state.subscribers.push(subscriber);
    drop(state);
    shared.changed.notify_all();
    number
}

/// Reads until the client closes (or the read timeout passes).
fn drain(mut reader: BufReader<UnixStream>) {
    let mut sink = [0_u8; 1024];
    while matches!(reader.read(&mut sink), Ok(read) if read > 0) {}
}
