//! [`HerdrBackend`]: sheep in Herdr tabs, split panes or workspaces.
//!
//! A launch makes a pane whose own program is the supervisor (`super::place`,
//! `super::command`), without taking focus, with the sheep's cwd and environment given at
//! creation — so the capability token never appears on a command line — and the display name
//! as its label. The launch record names the pane with its terminal id ([`super::identity`]),
//! and every later action finds the pane by that identity first: a pane that moved is
//! followed, a pane id reused after a Herdr restart is never touched, and a server that is gone
//! counts as having taken its panes with it. Reads go through `pane.read`, always asking for a
//! generous number of rows and trimming on our side, because Herdr returns blank text for
//! small `lines` on the recent sources. A close is confirmed by `pane.list`, woken early by
//! Herdr's events.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::api::CommandPane;
use super::client::{DEFAULT_CALL_TIMEOUT, HerdrClient};
use super::command;
use super::error::HerdrError;
use super::events::{HerdrEvents, Hub};
use super::identity::{GoneBecause, PaneRef, Whereabouts, locate};
use super::server::{self, ServerStart, ServerStatus};
use super::session;
use super::socket::{HerdrEnv, SocketTarget};
use super::wire::PaneInfo;
use crate::headless::TERM_GRACE;
use crate::process;
use crate::{Backend, BackendKind, LaunchRecord, LaunchSpec, Presence, ReadSource, TermError};

/// How long a launch may take (the original allowed 15 s).
pub const DEFAULT_LAUNCH_TIMEOUT: Duration = Duration::from_secs(15);
/// Rows always asked for when reading: small counts on the recent sources come back blank.
const READ_FLOOR: u32 = 200;
/// Extra rows asked for beyond what the caller wants, to cover blank rows under the output.
const READ_SLACK: u32 = 100;
/// The most rows asked for in one read.
const READ_CEILING: u32 = 20_000;
/// Longest pause before looking at a pane again while waiting for it to go: Herdr reports
/// events on a 100 ms poll (after replaying old ones to a new subscription), and checks a
/// closing pane's processes every 20 ms.
const RECHECK: Duration = Duration::from_millis(20);
/// How many ancestors are searched for a pane's process (the original looked at 12).
const ANCESTRY_LIMIT: usize = 16;
/// How long cleaning up a half-made launch may take.
pub(crate) const CLEANUP_TIMEOUT: Duration = Duration::from_secs(2);
/// How long the server gets to answer whether it is still there.
const AVAILABILITY_TIMEOUT: Duration = Duration::from_secs(2);
/// How long a supervisor that was asked to end gets to exit before its pane is closed anyway.
const SUPERVISOR_EXIT: Duration = Duration::from_secs(2);
/// How long a sheep's leftover processes get to be reaped before its pane is closed anyway.
const LINGER_LIMIT: Duration = Duration::from_secs(3);

/// How to reach Herdr.
#[derive(Debug, Clone)]
pub struct HerdrConfig {
    /// The Herdr variables of the environment Shepherd was started in.
    pub env: HerdrEnv,
    /// An explicit socket, overriding the environment.
    pub socket: Option<std::path::PathBuf>,
    /// An explicit session name, overriding the environment.
    pub session: Option<String>,
    /// How to start a server when none answers; `None` fails instead.
    pub start: Option<ServerStart>,
    /// How long one socket call may take.
    pub call_timeout: Duration,
    /// How long a launch may take.
    pub launch_timeout: Duration,
}

impl HerdrConfig {
    /// Reach the server `env` points at; never start one.
    pub fn new(env: HerdrEnv) -> Self {
        Self {
            env,
            socket: None,
            session: None,
            start: None,
            call_timeout: DEFAULT_CALL_TIMEOUT,
            launch_timeout: DEFAULT_LAUNCH_TIMEOUT,
        }
    }

    /// Also start `herdr server` (from `HERDR_BIN_PATH`, else `herdr` on `PATH`) when none
    /// answers: for when the user chose Herdr explicitly.
    #[must_use]
    pub fn starting_server(mut self) -> Self {
        let bin = self.env.bin_path.clone().unwrap_or_else(|| "herdr".into());
        self.start = Some(ServerStart::new(bin));
        self
    }
}

/// Runs sheep in Herdr.
pub struct HerdrBackend {
    client: HerdrClient,
    server: ServerStatus,
    hub: Arc<Hub>,
    workspace_hint: Option<String>,
    launch_timeout: Duration,
}

impl std::fmt::Debug for HerdrBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HerdrBackend")
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

impl HerdrBackend {
    /// Finds the socket, makes sure a server of protocol 20 or newer answers (starting one if
    /// `config.start` says so) and opens the event subscription.
    pub fn connect(config: HerdrConfig) -> Result<Self, HerdrError> {
        let target = SocketTarget::resolve(
            config.socket.as_deref(),
            config.session.as_deref(),
            &config.env,
        )?;
        let client = HerdrClient::new(&target.path).with_timeout(config.call_timeout);
        let server = server::ensure_server(&client, &target, config.start.as_ref())?;
        let hub = Hub::start(client.clone());
        Ok(Self {
            client,
            server,
            hub,
            workspace_hint: config.env.workspace_id,
            launch_timeout: config.launch_timeout,
        })
    }

    /// The event stream for the broker: closes, exits and agent states of the sheep's panes.
    /// Only the first call gets it.
    pub fn events(&self) -> Option<HerdrEvents> {
        self.hub.take_events()
    }

    /// The server in use, and whether Shepherd started it.
    pub fn server(&self) -> &ServerStatus {
        &self.server
    }

    /// The socket client, for calls the backend does not wrap.
    pub fn client(&self) -> &HerdrClient {
        &self.client
    }

    /// Whether the server still answers (`ping` within `timeout`).
    pub fn answers(&self, timeout: Duration) -> Result<(), HerdrError> {
        self.client.ping(Some(Instant::now() + timeout)).map(drop)
    }

    pub(crate) fn workspace_hint(&self) -> Option<&str> {
        self.workspace_hint.as_deref()
    }

    /// Starts reporting a pane's exit and agent status (for records re-adopted after a broker
    /// restart; launches and `presence` do this themselves).
    pub fn watch(&self, record: &LaunchRecord) {
        if self.ours(record)
            && let Some(reference) = record.pane.as_deref().map(PaneRef::parse)
            && let Whereabouts::Here(pane) = self.find(&self.client, &reference, true)
        {
            self.follow(&reference, &pane);
        }
    }

    /// Where the pane a record names is now, by its terminal id.
    pub fn whereabouts(&self, record: &LaunchRecord) -> Whereabouts {
        let Some(reference) = record.pane.as_deref().map(PaneRef::parse) else {
            return Whereabouts::Gone(GoneBecause::Unprovable);
        };
        let client = self.client_for(record);
        let ours = self.ours(record);
        self.find(&client, &reference, ours)
    }

    /// The Herdr pane a process runs in, found through its ancestry: the pane whose process
    /// is the process's nearest ancestor. For callers whose `HERDR_PANE_ID` a wrapper stripped;
    /// `None` when no pane's process is among its ancestors.
    pub fn pane_of_process(&self, pid: u32) -> Result<Option<String>, HerdrError> {
        let chain = process::ancestry(pid, ANCESTRY_LIMIT);
        let mut nearest: Option<(usize, String)> = None;
        for pane in self.client.pane_list(None, None)? {
            let info = match self.client.pane_process_info(&pane.pane_id, None) {
                Ok(info) => info,
                Err(err) if err.is_pane_gone() => continue,
                Err(err) => return Err(err),
            };
            let depth = info
                .shell_pid
                .and_then(|shell| chain.iter().position(|pid| *pid == shell));
            if let Some(depth) = depth
                && nearest.as_ref().is_none_or(|(best, _)| depth < *best)
            {
                nearest = Some((depth, pane.pane_id));
            }
        }
        Ok(nearest.map(|(_, pane_id)| pane_id))
    }

    /// Stops the server if Shepherd started it (never the user's); returns whether it did.
    pub fn stop_started_server(&self, deadline: Instant) -> Result<bool, HerdrError> {
        server::stop_started_server(&self.client, &self.server, deadline)
    }

    fn ours(&self, record: &LaunchRecord) -> bool {
        record
            .server
            .as_deref()
            .is_none_or(|server| std::path::Path::new(server) == self.client.socket())
    }

    /// The client for the server that holds `record`'s pane.
    fn client_for(&self, record: &LaunchRecord) -> Cow<'_, HerdrClient> {
        match &record.server {
            Some(server) if !self.ours(record) => Cow::Owned(self.client.clone_for(server)),
            _ => Cow::Borrowed(&self.client),
        }
    }

    /// [`locate`]; for a pane on our own server (`ours`), what the event stream already knows
    /// counts, and what is found is recorded there.
    fn find(&self, client: &HerdrClient, reference: &PaneRef, ours: bool) -> Whereabouts {
        let terminal = reference.terminal_id.as_deref();
        if let (true, Some(terminal)) = (ours, terminal)
            && self.hub.is_gone(terminal)
        {
            return Whereabouts::Gone(GoneBecause::NotListed);
        }
        let found = locate(client, reference, Instant::now() + DEFAULT_CALL_TIMEOUT);
        if let (true, Some(terminal)) = (ours, terminal) {
            match &found {
                Whereabouts::Gone(_) => self.hub.mark_gone(terminal),
                Whereabouts::Here(pane) => self.follow(reference, pane),
                Whereabouts::Unknown(_) => {}
            }
        }
        found
    }

    fn follow(&self, reference: &PaneRef, pane: &PaneInfo) {
        self.hub
            .watch(&pane.terminal_id, &reference.to_string(), &pane.pane_id);
    }

    /// Waits until the pane is gone: `pane.list` no longer shows its terminal (or its server
    /// is gone), woken early by Herdr's events.
    fn confirm_gone(
        &self,
        client: &HerdrClient,
        ours: bool,
        reference: &PaneRef,
        deadline: Instant,
    ) -> Result<(), TermError> {
        loop {
            let seen = self.hub.changes();
            match self.find(client, reference, ours) {
                Whereabouts::Gone(_) => return Ok(()),
                Whereabouts::Here(pane) if Instant::now() >= deadline => {
                    return Err(TermError::NotConfirmed(format!(
                        "Herdr pane {} was still open at the close deadline",
                        pane.pane_id
                    )));
                }
                Whereabouts::Unknown(err) if Instant::now() >= deadline => {
                    return Err(TermError::NotConfirmed(format!(
                        "cannot tell whether Herdr pane {} is gone: {err}",
                        reference.pane_id
                    )));
                }
                Whereabouts::Here(_) | Whereabouts::Unknown(_) => {}
            }
            let until = deadline.min(Instant::now() + RECHECK);
            if ours && self.hub.connected() {
                self.hub.wait_change(seen, until);
            } else {
                std::thread::sleep(until.saturating_duration_since(Instant::now()));
            }
        }
    }

    /// Closes a pane found `Here`: lets a sheep's leftovers go first, so Herdr's close (which
    /// holds every other request while the pane's processes linger) is quick; then confirms.
    fn close_pane(
        &self,
        client: &HerdrClient,
        ours: bool,
        reference: &PaneRef,
        record: &LaunchRecord,
        pane: &PaneInfo,
        deadline: Instant,
    ) -> Result<(), TermError> {
        // A supervisor asked to end has reported its sheep's end and is exiting: give it a
        // moment. One that is stuck is left to Herdr's close.
        let supervisor_runs = record.supervisor_pid.is_some_and(|pid| {
            !process::wait_gone(pid, deadline.min(Instant::now() + SUPERVISOR_EXIT))
        });
        let root = client
            .pane_process_info(&pane.pane_id, Some(deadline))
            .ok()
            .and_then(|info| info.shell_pid);
        if !supervisor_runs && let Some(root) = root {
            session::wait_quiet(root, deadline.min(Instant::now() + LINGER_LIMIT));
        }
        // A pane whose program ended closes by itself; asking again is harmless.
        match client.pane_close(&pane.pane_id, Some(deadline)) {
            Ok(()) => {}
            Err(err) if err.is_pane_gone() || err.is_server_gone() => {}
            Err(err) => {
                return Err(TermError::NotConfirmed(format!(
                    "could not close Herdr pane {}: {err}",
                    pane.pane_id
                )));
            }
        }
        self.confirm_gone(client, ours, reference, deadline)
    }

    /// For a kept pane: waits until nothing but its shell runs in it.
    fn confirm_quiet(
        &self,
        client: &HerdrClient,
        record: &LaunchRecord,
        pane_id: &str,
        deadline: Instant,
    ) -> Result<(), TermError> {
        if let Some(pid) = record.supervisor_pid
            && !process::wait_gone(pid, deadline)
        {
            return Err(TermError::NotConfirmed(format!(
                "the supervisor (pid {pid}) in Herdr pane {pane_id} did not end in time"
            )));
        }
        loop {
            let info = match client.pane_process_info(pane_id, Some(deadline)) {
                Ok(info) => info,
                Err(err) if err.is_pane_gone() || err.is_server_gone() => return Ok(()),
                Err(err) => {
                    return Err(TermError::NotConfirmed(format!(
                        "cannot check Herdr pane {pane_id}: {err}"
                    )));
                }
            };
            if info.only_shell_runs() {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(TermError::NotConfirmed(format!(
                    "the sheep's processes in Herdr pane {pane_id} still ran at the close deadline"
                )));
            }
            let holder = info.foreground_process_group_id.unwrap_or_default();
            if process::alive(holder) && !process::is_zombie(holder) {
                process::wait_gone(holder, deadline);
            } else {
                std::thread::sleep(
                    deadline
                        .saturating_duration_since(Instant::now())
                        .min(RECHECK),
                );
            }
        }
    }
}

impl Drop for HerdrBackend {
    fn drop(&mut self) {
        self.hub.stop();
    }
}

impl Backend for HerdrBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Herdr
    }

    fn launch(&self, spec: &LaunchSpec) -> Result<LaunchRecord, TermError> {
        let deadline = Instant::now() + self.launch_timeout;
        let exe = utf8(&spec.shepherd_exe, "the shepherd executable")?;
        let cwd = utf8(&spec.cwd, "the working directory")?;
        if spec.program.is_empty() {
            return Err(TermError::Launch("the sheep has no program to run".into()));
        }
        let argv = command::pane_argv(spec, exe);
        let pane = CommandPane {
            argv: &argv,
            cwd,
            env: &spec.env,
            label: &spec.display_name,
        };
        let placed = self.place(spec, &pane, deadline)?;
        let reference = PaneRef::new(placed.pane_id.clone(), placed.terminal_id.clone());
        if reference.terminal_id.is_some() {
            self.follow(&reference, &placed);
        }
        Ok(LaunchRecord {
            pane: Some(reference.to_string()),
            window: Some(placed.tab_id).filter(|tab| !tab.is_empty()),
            server: Some(self.client.socket().to_string_lossy().into_owned()),
            ..LaunchRecord::default()
        })
    }

    fn read(
        &self,
        record: &LaunchRecord,
        source: ReadSource,
        lines: u32,
    ) -> Result<String, TermError> {
        let Some(recorded) = record.pane.as_deref() else {
            return Err(TermError::Read("this sheep has no Herdr pane".into()));
        };
        let pane = match self.whereabouts(record) {
            Whereabouts::Here(pane) => pane,
            Whereabouts::Gone(_) => {
                let id = PaneRef::parse(recorded).pane_id;
                return Err(TermError::Read(format!("Herdr pane {id} is gone")));
            }
            Whereabouts::Unknown(err) => return Err(TermError::Read(err.to_string())),
        };
        if lines == 0 {
            return Ok(String::new());
        }
        let ask = lines
            .saturating_add(READ_SLACK)
            .clamp(READ_FLOOR, READ_CEILING);
        let read = self
            .client_for(record)
            .pane_read(&pane.pane_id, source, ask, None)
            .map_err(|err| {
                if err.is_pane_gone() || err.is_server_gone() {
                    TermError::Read(format!("Herdr pane {} is gone", pane.pane_id))
                } else {
                    TermError::Read(err.to_string())
                }
            })?;
        // Rows under the last output may be blank on a screen that is not full.
        Ok(process::last_lines(read.text.trim_end(), lines as usize))
    }

    fn close(
        &self,
        record: &LaunchRecord,
        keep_pane: bool,
        deadline: Instant,
    ) -> Result<(), TermError> {
        let Some(reference) = record.pane.as_deref().map(PaneRef::parse) else {
            return Ok(());
        };
        let client = self.client_for(record);
        let ours = self.ours(record);
        match self.find(&client, &reference, ours) {
            Whereabouts::Gone(_) => {}
            Whereabouts::Unknown(err) => {
                return Err(TermError::NotConfirmed(format!(
                    "cannot tell whether Herdr pane {} is still open: {err}",
                    reference.pane_id
                )));
            }
            Whereabouts::Here(pane) if keep_pane => {
                self.confirm_quiet(&client, record, &pane.pane_id, deadline)?;
            }
            Whereabouts::Here(pane) => {
                self.close_pane(&client, ours, &reference, record, &pane, deadline)?;
            }
        }
        // The pane's hang-up reaches its session; the sheep leads a group of its own, so end
        // whatever of it is left.
        if let Some(pgid) = record.pid
            && process::group_alive(pgid)
            && !process::terminate_group(pgid, TERM_GRACE, deadline)
        {
            return Err(TermError::NotConfirmed(format!(
                "the sheep (process group {pgid}) outlived its Herdr pane {}",
                reference.pane_id
            )));
        }
        Ok(())
    }

    fn available(&self) -> Result<(), TermError> {
        self.answers(AVAILABILITY_TIMEOUT)
            .map_err(|err| TermError::Unavailable(err.to_string()))
    }

    fn presence(&self, record: &LaunchRecord) -> Presence {
        match self.whereabouts(record) {
            Whereabouts::Here(_) => Presence::Present,
            Whereabouts::Gone(_) => Presence::Gone,
            Whereabouts::Unknown(err) => {
                tracing::debug!("cannot tell whether a Herdr pane exists: {err}");
                Presence::Unknown
            }
        }
    }
}

fn utf8<'a>(path: &'a std::path::Path, what: &str) -> Result<&'a str, TermError> {
    path.to_str().ok_or_else(|| {
        TermError::Launch(format!(
            "{what} {} is not valid UTF-8, which Herdr cannot take",
            path.display()
        ))
    })
}
