//! [`HerdrBackend`]: sheep in Herdr tabs, split panes or workspaces.
//!
//! A launch creates the pane without taking focus (Herdr's creation methods get
//! `focus: false`), with the sheep's cwd and environment given at creation — so the capability
//! token never appears on a command line — and the display name as the tab, workspace and pane
//! label. It then waits until the pane's shell owns its terminal (`pane.process_info`; while
//! another process, such as an rc-file command, holds it, we wait on that process's pidfd)
//! and types the supervisor's command line. From then on the supervisor reports to the broker
//! itself. Reads go through `pane.read`, always asking for a generous number of rows and
//! trimming on our side, because Herdr returns blank text for small `lines` on the recent
//! sources. A close is confirmed by Herdr's `pane_closed` event, or `pane.list` when the event
//! stream is down.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::client::{DEFAULT_CALL_TIMEOUT, HerdrClient, NewPane};
use super::error::HerdrError;
use super::events::{HerdrEvents, Hub};
use super::server::{self, ServerStart, ServerStatus};
use super::shell;
use super::socket::{HerdrEnv, SocketTarget};
use super::wire::PaneInfo;
use crate::headless::TERM_GRACE;
use crate::process;
use crate::{
    Backend, BackendKind, LaunchRecord, LaunchSpec, Placement, Presence, ReadSource, TermError,
};

/// How long a launch may take, shell start-up included (the original allowed 15 s).
pub const DEFAULT_LAUNCH_TIMEOUT: Duration = Duration::from_secs(15);
/// Rows always asked for when reading: small counts on the recent sources come back blank.
const READ_FLOOR: u32 = 200;
/// Extra rows asked for beyond what the caller wants, to cover blank rows under the output.
const READ_SLACK: u32 = 100;
/// The most rows asked for in one read.
const READ_CEILING: u32 = 20_000;
/// Pause before asking again when there is nothing to wait on (a process we cannot see, an
/// event stream that is down). Any Herdr event ends it early.
const RETRY_PAUSE: Duration = Duration::from_millis(25);
/// How many ancestors are searched for a pane's shell (the original looked at 12).
const ANCESTRY_LIMIT: usize = 16;
/// How long cleaning up a half-made launch may take.
const CLEANUP_TIMEOUT: Duration = Duration::from_secs(2);

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

    /// The event stream for the broker: pane closes and exits, agent status changes. Only the
    /// first call gets it.
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

    /// Starts reporting a pane's exit and agent status (for records re-adopted after a broker
    /// restart; launches and `presence` do this themselves).
    pub fn watch(&self, record: &LaunchRecord) {
        if let Some(pane) = &record.pane
            && self.ours(record)
        {
            self.hub.watch(pane);
        }
    }

    /// The Herdr pane a process runs in, found through its ancestry: the pane whose shell is
    /// the process's nearest ancestor. For callers whose `HERDR_PANE_ID` a wrapper stripped;
    /// `None` when no pane's shell is among its ancestors.
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

    /// Creates the pane for `spec`.
    fn place(
        &self,
        spec: &LaunchSpec,
        new: &NewPane<'_>,
        deadline: Instant,
    ) -> Result<PaneInfo, TermError> {
        let direction = match spec.placement {
            Placement::Tab => {
                let pane = match self.tab_workspace(spec.caller_pane.as_deref(), deadline)? {
                    Some(workspace) => self.client.tab_create(&workspace, new, Some(deadline)),
                    // No workspace at all: a new one's root pane is the sheep's.
                    None => self.client.workspace_create(new, Some(deadline)),
                };
                return pane.map_err(launch_error);
            }
            Placement::Workspace => {
                return self
                    .client
                    .workspace_create(new, Some(deadline))
                    .map_err(launch_error);
            }
            Placement::PaneRight => "right",
            Placement::PaneDown => "down",
        };
        let Some(caller) = spec.caller_pane.as_deref() else {
            return Err(TermError::NoCallerPane(format!(
                "placement {} splits the caller's Herdr pane, but no caller pane is known: run \
                 inside a Herdr pane (HERDR_PANE_ID) or use placement tab",
                placement_name(spec.placement)
            )));
        };
        self.client
            .pane_split(caller, direction, new, Some(deadline))
            .map_err(|err| {
                if err.is_pane_gone() {
                    TermError::NoCallerPane(format!(
                        "the caller's Herdr pane {caller} does not exist; use placement tab"
                    ))
                } else {
                    launch_error(err)
                }
            })
    }

    /// The workspace a new tab goes to: the caller's, the environment's, the focused one,
    /// the first one, or `None` when there is none.
    fn tab_workspace(
        &self,
        caller: Option<&str>,
        deadline: Instant,
    ) -> Result<Option<String>, TermError> {
        if let Some(caller) = caller {
            match self.client.pane_get(caller, Some(deadline)) {
                Ok(pane) if !pane.workspace_id.is_empty() => return Ok(Some(pane.workspace_id)),
                Ok(_) => {}
                Err(err) if err.is_pane_gone() => {}
                Err(err) => return Err(launch_error(err)),
            }
        }
        let workspaces = self
            .client
            .workspace_list(Some(deadline))
            .map_err(launch_error)?;
        if let Some(hint) = &self.workspace_hint
            && workspaces.iter().any(|ws| &ws.workspace_id == hint)
        {
            return Ok(Some(hint.clone()));
        }
        Ok(workspaces
            .iter()
            .find(|ws| ws.focused)
            .or_else(|| workspaces.first())
            .map(|ws| ws.workspace_id.clone()))
    }

    /// Labels the pane, waits for its shell and types the supervisor's command.
    fn start_supervisor(
        &self,
        pane_id: &str,
        spec: &LaunchSpec,
        exe: &str,
        deadline: Instant,
    ) -> Result<(), TermError> {
        // Cosmetic: a failure leaves an unlabelled pane, not a failed launch.
        if let Err(err) = self
            .client
            .pane_rename(pane_id, &spec.display_name, Some(deadline))
        {
            tracing::warn!("could not label Herdr pane {pane_id}: {err}");
        }
        self.hub.watch(pane_id);
        self.wait_for_shell(pane_id, deadline)?;
        let command = shell::supervisor_command(spec, exe);
        self.client
            .pane_send_input(pane_id, &command, &["Enter"], Some(deadline))
            .map_err(launch_error)
    }

    /// Waits until the pane's shell owns its terminal, so the typed line reaches the shell's
    /// prompt rather than a start-up script.
    fn wait_for_shell(&self, pane_id: &str, deadline: Instant) -> Result<(), TermError> {
        loop {
            let info = self
                .client
                .pane_process_info(pane_id, Some(deadline))
                .map_err(launch_error)?;
            // When Herdr cannot tell, typing now is still safe: the terminal buffers it.
            let (Some(false), Some(holder)) =
                (info.shell_in_foreground(), info.foreground_process_group_id)
            else {
                return Ok(());
            };
            self.wait_for_holder(pane_id, holder, deadline)?;
            if Instant::now() >= deadline {
                return Err(TermError::Launch(format!(
                    "the shell in Herdr pane {pane_id} was not ready within {} ms: process \
                     {holder} holds its terminal",
                    self.launch_timeout.as_millis()
                )));
            }
        }
    }

    /// Waits for the process holding a pane's terminal to end (its pidfd), or briefly when
    /// we cannot see it; fails if the pane closes meanwhile.
    fn wait_for_holder(
        &self,
        pane_id: &str,
        holder: u32,
        deadline: Instant,
    ) -> Result<(), TermError> {
        let closed = if process::alive(holder) && !process::is_zombie(holder) {
            process::wait_gone(holder, deadline);
            self.hub.is_gone(pane_id)
        } else {
            self.hub
                .wait_gone(pane_id, deadline.min(Instant::now() + RETRY_PAUSE))
        };
        if closed {
            return Err(TermError::Launch(format!(
                "Herdr pane {pane_id} closed before its shell was ready"
            )));
        }
        Ok(())
    }

    /// Waits until `pane_id` is gone: Herdr's close event, or `pane.list` without it.
    fn confirm_gone(
        &self,
        client: &HerdrClient,
        ours: bool,
        pane_id: &str,
        deadline: Instant,
    ) -> Result<(), TermError> {
        loop {
            if ours && self.hub.is_gone(pane_id) {
                return Ok(());
            }
            if let Ok(false) = client.pane_listed(pane_id, deadline) {
                if ours {
                    self.hub.mark_gone(pane_id);
                }
                return Ok(());
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(TermError::NotConfirmed(format!(
                    "Herdr pane {pane_id} was still open at the close deadline"
                )));
            }
            // With the event stream up, its close event ends the wait; otherwise ask again.
            let until = if ours && self.hub.connected() {
                deadline
            } else {
                deadline.min(now + RETRY_PAUSE)
            };
            self.hub.wait_gone(pane_id, until);
        }
    }

    /// For a kept pane: waits until nothing but the shell runs in it.
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
                Err(err) if err.is_pane_gone() => return Ok(()),
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
            if self.wait_for_holder(pane_id, holder, deadline).is_err() {
                // The pane closed, and its processes with it.
                return Ok(());
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
        let new = NewPane {
            cwd,
            label: Some(&spec.display_name),
            env: &spec.env,
        };
        let pane = self.place(spec, &new, deadline)?;
        if let Err(err) = self.start_supervisor(&pane.pane_id, spec, exe, deadline) {
            // Nothing half-made is left behind.
            let cleanup = Instant::now() + CLEANUP_TIMEOUT;
            if let Err(close) = self.client.pane_close(&pane.pane_id, Some(cleanup)) {
                tracing::warn!(
                    "could not close Herdr pane {} after a failed launch: {close}",
                    pane.pane_id
                );
            }
            return Err(err);
        }
        Ok(LaunchRecord {
            pane: Some(pane.pane_id),
            window: Some(pane.tab_id).filter(|tab| !tab.is_empty()),
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
        let Some(pane_id) = record.pane.as_deref() else {
            return Err(TermError::Read("this sheep has no Herdr pane".into()));
        };
        if lines == 0 {
            return Ok(String::new());
        }
        let ask = lines
            .saturating_add(READ_SLACK)
            .clamp(READ_FLOOR, READ_CEILING);
        let read = self
            .client_for(record)
            .pane_read(pane_id, source, ask, None)
            .map_err(|err| {
                if err.is_pane_gone() {
                    TermError::Read(format!("Herdr pane {pane_id} is gone"))
                } else {
                    TermError::Read(err.to_string())
                }
            })?;
        // Rows under the last output are blank on a screen that is not full.
        Ok(process::last_lines(read.text.trim_end(), lines as usize))
    }

    fn close(
        &self,
        record: &LaunchRecord,
        keep_pane: bool,
        deadline: Instant,
    ) -> Result<(), TermError> {
        let Some(pane_id) = record.pane.as_deref() else {
            return Ok(());
        };
        let client = self.client_for(record);
        let ours = self.ours(record);
        if keep_pane {
            return self.confirm_quiet(&client, record, pane_id, deadline);
        }
        if !(ours && self.hub.is_gone(pane_id)) {
            match client.pane_close(pane_id, Some(deadline)) {
                Ok(()) => {}
                Err(err) if err.is_pane_gone() => {}
                Err(err) => {
                    return Err(TermError::NotConfirmed(format!(
                        "could not close Herdr pane {pane_id}: {err}"
                    )));
                }
            }
        }
        self.confirm_gone(&client, ours, pane_id, deadline)?;
        // The pane's hang-up reaches the terminal's foreground group (the supervisor); the
        // sheep leads a group of its own, so end whatever of it is left.
        if let Some(pgid) = record.pid
            && process::group_alive(pgid)
            && !process::terminate_group(pgid, TERM_GRACE, deadline)
        {
            return Err(TermError::NotConfirmed(format!(
                "the sheep (process group {pgid}) outlived its Herdr pane {pane_id}"
            )));
        }
        Ok(())
    }

    fn presence(&self, record: &LaunchRecord) -> Presence {
        let Some(pane_id) = record.pane.as_deref() else {
            return Presence::Unknown;
        };
        let ours = self.ours(record);
        if ours && self.hub.is_gone(pane_id) {
            return Presence::Gone;
        }
        match self
            .client_for(record)
            .pane_listed(pane_id, Instant::now() + DEFAULT_CALL_TIMEOUT)
        {
            Ok(true) => {
                if ours {
                    self.hub.watch(pane_id);
                }
                Presence::Present
            }
            Ok(false) => {
                if ours {
                    self.hub.mark_gone(pane_id);
                }
                Presence::Gone
            }
            Err(err) => {
                tracing::debug!("cannot tell whether Herdr pane {pane_id} exists: {err}");
                Presence::Unknown
            }
        }
    }
}

fn launch_error(err: HerdrError) -> TermError {
    match err {
        HerdrError::Unreachable { .. } | HerdrError::ProtocolTooOld { .. } => {
            TermError::Unavailable(err.to_string())
        }
        other => TermError::Launch(other.to_string()),
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

fn placement_name(placement: Placement) -> &'static str {
    match placement {
        Placement::Tab => "tab",
        Placement::PaneRight => "pane_right",
        Placement::PaneDown => "pane_down",
        Placement::Workspace => "workspace",
    }
}
