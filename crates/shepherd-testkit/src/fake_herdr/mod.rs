//! Herdr for tests: a fake server that tells the truth, and a private real one.
//!
//! The real Herdr runs in the test suite ([`real::RealHerdr`]: found through `HERDR_BIN` or
//! `PATH`, one private server per test); the fake is for what a real server cannot be made to
//! show on demand — a refused request, a reply that never comes, a stream cut at a chosen
//! moment — and for inspecting exactly what a client asked. So the fake is kept true to every
//! difference measured against Herdr 0.8.0 (protocol 20; `research/herdr-real-check.md` §6),
//! and contract tests run against both:
//! - newline-delimited JSON, one request per connection (the server closes after its reply);
//! - a fresh server has no workspace; ids run `w1:p1` … `w1:p9`, `w1:pA` … and start again
//!   after a restart, while terminal ids never repeat; `pane.move` to another workspace gives
//!   a new pane id (the old one still resolves for `pane.get`);
//! - `layout.apply` starts a pane with a program as its argv; `pane.close` signals the pane's
//!   whole session (HUP, TERM, KILL, up to 250 ms each) and holds every request meanwhile;
//! - events come from a ring of the last 512 that every new subscription replays, one event
//!   per entry per 100 ms poll; `pane.exited` takes no pane and reports every pane's exits; a
//!   program's end sends only `pane_exited`;
//! - reads have no padding rows; `pane.rename` answers `pane_info`; error codes, texts and
//!   ids are Herdr's; `pane.wait_for_output` sends `revision` and a full `read`.
//!
//! Tests script it — errors with any code, a request left unanswered, replies without a
//! newline or without closing, event-name spellings, a shell slow to read its rc file — and
//! inspect what it saw: every request, what was created, typed and closed, and whether focus
//! ever moved. With [`FakeOptions::run_processes`] it really runs pane programs and typed lines
//! with the pane's environment, so `shepherd supervise` can run end to end in a fake pane.

mod events;
mod ids;
mod model;
pub mod real;
mod run;
mod server;
mod session;

use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{Map, json};

pub use events::EventStyle;
pub use model::{FakePane, FakeState, FakeTab, FakeWorkspace, Request, VIEWPORT_ROWS};
pub use real::RealHerdr;

use events::EventKind;
use model::{Failure, Leaving};

/// How a fake server behaves. The defaults are a fresh Herdr 0.8.0 server.
#[derive(Debug, Clone)]
pub struct FakeOptions {
    /// The protocol `ping` reports (Herdr 0.8.0: 20).
    pub protocol: u32,
    /// The version `ping` reports.
    pub version: String,
    /// How event names are spelled.
    pub event_style: EventStyle,
    /// Start with workspace `w1` (label `main`), tab `w1:t1` and focused shell pane `w1:p1`,
    /// like a user's session; a fresh server has no workspace.
    pub initial_workspace: bool,
    /// Run pane programs and lines typed with Enter for real, as children of the fake.
    pub run_processes: bool,
    /// Shell panes run an rc file for this long after they open; a line typed meanwhile is
    /// read by it and never runs (the shell still reports that it owns its terminal).
    pub slow_shell_rc: Option<Duration>,
    /// Close each connection after the reply, as Herdr does; when false the fake keeps it open
    /// until the client closes it.
    pub close_after_reply: bool,
    /// End replies with a newline; when false a reply ends at the connection's end.
    pub newline_after_reply: bool,
    /// How often subscriptions get their next event (Herdr: 100 ms).
    pub event_poll: Duration,
    /// Report enum values no Shepherd knows (`agent_status: "pondering"`).
    pub odd_values: bool,
}

impl Default for FakeOptions {
    fn default() -> Self {
        Self {
            protocol: 20,
            version: "0.8.0".into(),
            event_style: EventStyle::Observed,
            initial_workspace: false,
            run_processes: false,
            slow_shell_rc: None,
            close_after_reply: true,
            newline_after_reply: true,
            event_poll: Duration::from_millis(100),
            odd_values: false,
        }
    }
}

impl FakeOptions {
    /// A user's session: the defaults plus workspace `w1` with its shell pane `w1:p1`.
    pub fn with_user_session() -> Self {
        Self {
            initial_workspace: true,
            ..Self::default()
        }
    }
}

/// State shared by the fake's threads.
pub(crate) struct Shared {
    state: Mutex<FakeState>,
    pub(crate) changed: Condvar,
    pub(crate) socket: PathBuf,
    closing: AtomicBool,
    /// Herdr answers requests on one app thread: a slow `pane.close` holds everyone.
    app: Mutex<()>,
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

    /// Starts a fake on `socket` (replacing a stale socket file there). Starting another on
    /// the same socket after dropping one is a server restart with a fresh session.
    pub fn start_at(socket: &Path, options: FakeOptions) -> std::io::Result<Self> {
        let shared = Arc::new(Shared {
            state: Mutex::new(FakeState::new(options)),
            changed: Condvar::new(),
            socket: socket.to_path_buf(),
            closing: AtomicBool::new(false),
            app: Mutex::new(()),
        });
        let accept = server::listen(&shared)?;
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

    /// The pane's program or shell ends by itself: only `pane_exited`, and the pane is gone.
    pub fn exit_pane(&self, pane_id: &str) {
        self.change(|state| state.remove_pane(pane_id, Leaving::Exited));
    }

    /// The pane's agent changes state, telling subscribers.
    pub fn set_agent_status(&self, pane_id: &str, status: &str, agent: &str) {
        self.change(|state| {
            let Some(pane) = state.pane_mut(pane_id) else {
                return;
            };
            pane.agent_status = status.into();
            let (id, ws) = (pane.id.clone(), pane.workspace_id.clone());
            let mut extra = Map::new();
            extra.insert("workspace_id".into(), json!(ws));
            extra.insert("agent_status".into(), json!(status));
            extra.insert("agent".into(), json!(agent));
            state.emit(EventKind::AgentStatus, &id, &extra);
        });
    }

    /// Sets the pid `pane.process_info` reports as the pane's root process.
    pub fn set_shell_pid(&self, pane_id: &str, pid: u32) {
        self.change(|state| {
            if let Some(pane) = state.pane_mut(pane_id) {
                pane.shell_pid = pid;
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
        server::stop_everything(&mut self.shared.lock());
        self.shared.changed.notify_all();
    }
}
