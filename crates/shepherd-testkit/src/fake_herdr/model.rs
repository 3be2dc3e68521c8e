//! The fake's world: workspaces, tabs and panes with Herdr's id shapes ([`super::ids`]),
//! focus, what was typed, what each pane shows and which program it runs — and the request
//! handlers that change it, answering with the shapes recorded from Herdr 0.8.0 (our own
//! fixtures, plus an unknown field in every object to prove the client reads leniently).
//! A fresh fake, like a fresh server, has no workspace at all.

use std::collections::BTreeMap;
use std::process::ChildStdin;
use std::time::Instant;

use serde_json::{Map, Value, json};

use super::FakeOptions;
use super::events::{EventKind, Ring, Subscriber};
use super::ids;
use super::session;

mod handlers;
mod panes;
mod render;

pub(crate) use handlers::error;
pub(crate) use panes::Leaving;

/// Rows of a fake pane's screen.
pub const VIEWPORT_ROWS: usize = 23;
/// Rows `pane.read` returns from the recent sources when no `lines` is given.
const DEFAULT_READ_LINES: usize = 80;
/// Fake shells get pids from here up: Linux pids stay below 2^22, so these never name a real
/// process (and never one of the caller's ancestors).
const FAKE_SHELL_PIDS: u32 = 1 << 22;

/// A request as received.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// Its method.
    pub method: String,
    /// Its params.
    pub params: Value,
}

/// A workspace.
#[derive(Debug, Clone)]
pub struct FakeWorkspace {
    /// Such as `w1`.
    pub id: String,
    /// Its label.
    pub label: Option<String>,
    /// Its active tab.
    pub active_tab: String,
    /// Its focused pane.
    pub focused_pane: String,
    /// Whether it was closed.
    pub closed: bool,
    next_tab: u64,
    next_pane: u64,
}

/// A tab.
#[derive(Debug, Clone)]
pub struct FakeTab {
    /// Such as `w1:t2`.
    pub id: String,
    /// Its workspace.
    pub workspace_id: String,
    /// Its label (a new tab's label is its number).
    pub label: Option<String>,
    /// Whether it was closed.
    pub closed: bool,
}

/// A pane and everything done to it.
#[derive(Debug)]
pub struct FakePane {
    /// Its current id, such as `w1:p3`.
    pub id: String,
    /// Ids it had before moves; they still resolve for `pane.get` and `pane.read`.
    pub aliases: Vec<String>,
    /// Its terminal: unique, kept across moves.
    pub terminal_id: String,
    /// Its workspace.
    pub workspace_id: String,
    /// Its tab.
    pub tab_id: String,
    /// Its label.
    pub label: Option<String>,
    /// The cwd it was created with.
    pub cwd: String,
    /// The environment it was created with.
    pub env: BTreeMap<String, String>,
    /// The program it was created to run (`layout.apply`); `None` for a shell pane.
    pub command: Option<Vec<String>>,
    /// Every text and key sent, in order (keys as `<Key>`).
    pub typed: String,
    /// Lines completed with Enter.
    pub commands: Vec<String>,
    /// What the pane shows.
    pub screen: String,
    /// Exit codes of the commands the fake ran in it, in order.
    pub exit_codes: Vec<i32>,
    /// Whether it was closed.
    pub closed: bool,
    /// Its agent status as reported by events.
    pub agent_status: String,
    /// The pid `pane.process_info` reports as its root process.
    pub shell_pid: u32,
    pub(crate) pending: String,
    /// A typed line's job, running for real (shell panes).
    pub(crate) running: Option<u32>,
    /// Whether the pane's program runs for real (then `shell_pid` is its pid).
    pub(crate) real_root: bool,
    /// The write end of the program's stdin, held so it never sees EOF.
    pub(crate) stdin: Option<ChildStdin>,
    /// A `pane.close` is under way: the program's end is not an exit.
    pub(crate) closing: bool,
    pub(crate) created: Instant,
    revision: u64,
}

impl FakePane {
    /// The pid of the command the fake is running in this pane for real, if any.
    pub fn running_pid(&self) -> Option<u32> {
        self.running
            .or_else(|| self.real_root.then_some(self.shell_pid))
    }

    /// Whether `id` names this pane (its id or an earlier one).
    pub fn answers_to(&self, id: &str) -> bool {
        self.id == id || self.aliases.iter().any(|alias| alias == id)
    }

    /// Ends everything the pane runs at once (the pane is being dropped without a close).
    pub(crate) fn end_everything(&mut self) {
        session::kill_now(self.running, self.real_root.then_some(self.shell_pid));
        self.stdin = None;
    }
}

/// A scripted failure.
#[derive(Debug, Clone)]
pub(crate) struct Failure {
    pub(crate) method: String,
    pub(crate) code: String,
    pub(crate) message: String,
    pub(crate) times: u32,
}

/// What a handler decided.
pub(crate) enum Outcome {
    /// A `result`.
    Reply(Value),
    /// An `error`; `id` replaces the request id when set (`""` for unparsable requests, a
    /// probe's own id for subscription probes).
    Error {
        code: String,
        message: String,
        id: Option<String>,
    },
    /// Start an event subscription.
    Subscribe(Subscriber),
    /// Close a pane the way Herdr does: signal its session, wait, then answer.
    Close(String),
    /// Wait for output, outside the app lock.
    WaitOutput(Value),
}

/// The fake server's whole state. Tests read it through [`super::FakeHerdr::inspect`].
#[derive(Debug, Default)]
pub struct FakeState {
    pub(crate) options: FakeOptions,
    workspaces: Vec<FakeWorkspace>,
    tabs: Vec<FakeTab>,
    panes: Vec<FakePane>,
    active_workspace: Option<String>,
    next_workspace: u64,
    next_fake_pid: u32,
    requests: Vec<Request>,
    focus_changes: u32,
    pub(crate) failures: Vec<Failure>,
    pub(crate) hangs: Vec<String>,
    pub(crate) closes: Vec<String>,
    pub(crate) subscribers: Vec<Subscriber>,
    pub(crate) next_subscriber: u64,
    pub(crate) ring: Ring,
    pub(crate) stopped: bool,
    pub(crate) stop_requested: bool,
    /// Panes whose program should be started for real once the reply is out.
    pub(crate) to_start: Vec<String>,
}

impl FakeState {
    pub(crate) fn new(options: FakeOptions) -> Self {
        let mut state = Self {
            options,
            ..Self::default()
        };
        if state.options.initial_workspace {
            let (ws, _tab, _pane) =
                state.create_workspace(Some("main".into()), "/".into(), BTreeMap::new());
            state.active_workspace = Some(ws);
        }
        state
    }

    /// Every request received, in order.
    pub fn requests(&self) -> &[Request] {
        &self.requests
    }

    /// The params of every request for `method`.
    pub fn requests_for(&self, method: &str) -> Vec<&Value> {
        self.requests
            .iter()
            .filter(|request| request.method == method)
            .map(|request| &request.params)
            .collect()
    }

    /// How many times anything changed which pane or workspace has focus.
    pub fn focus_changes(&self) -> u32 {
        self.focus_changes
    }

    /// The pane with focus: the focused pane of the active workspace.
    pub fn focused_pane(&self) -> Option<&str> {
        let active = self.active_workspace.as_deref()?;
        let ws = self.workspaces.iter().find(|ws| ws.id == active)?;
        Some(&ws.focused_pane)
    }

    /// A pane, open or closed, by its id or an earlier one.
    pub fn pane(&self, id: &str) -> Option<&FakePane> {
        self.panes.iter().rev().find(|pane| pane.answers_to(id))
    }

    /// The open pane with `label`.
    pub fn pane_labelled(&self, label: &str) -> Option<&FakePane> {
        self.panes
            .iter()
            .find(|pane| !pane.closed && pane.label.as_deref() == Some(label))
    }

    /// Every pane ever created, in order.
    pub fn panes(&self) -> &[FakePane] {
        &self.panes
    }

    /// Ids of the open panes.
    pub fn open_panes(&self) -> Vec<&str> {
        self.panes
            .iter()
            .filter(|pane| !pane.closed)
            .map(|pane| pane.id.as_str())
            .collect()
    }

    /// Every workspace ever created.
    pub fn workspaces(&self) -> &[FakeWorkspace] {
        &self.workspaces
    }

    /// Every tab ever created.
    pub fn tabs(&self) -> &[FakeTab] {
        &self.tabs
    }

    /// How many event subscribers are connected.
    pub fn subscriber_count(&self) -> usize {
        self.subscribers.len()
    }

    /// Whether `server.stop` was called.
    pub fn stopped(&self) -> bool {
        self.stopped
    }

    pub(crate) fn log(&mut self, method: &str, params: &Value) {
        self.requests.push(Request {
            method: method.to_owned(),
            params: params.clone(),
        });
    }

    pub(crate) fn pane_any_mut(&mut self, id: &str) -> Option<&mut FakePane> {
        self.panes.iter_mut().rev().find(|pane| pane.answers_to(id))
    }

    /// An open pane, by its id or an earlier one.
    pub(crate) fn pane_mut(&mut self, id: &str) -> Option<&mut FakePane> {
        self.panes
            .iter_mut()
            .find(|pane| pane.answers_to(id) && !pane.closed)
    }

    /// An open pane by its current id only (what `pane.list` shows).
    pub(crate) fn open_pane(&self, id: &str) -> Option<&FakePane> {
        self.panes.iter().find(|pane| pane.id == id && !pane.closed)
    }

    fn create_workspace(
        &mut self,
        label: Option<String>,
        cwd: String,
        env: BTreeMap<String, String>,
    ) -> (String, String, String) {
        self.next_workspace += 1;
        let id = format!("w{}", ids::encode(self.next_workspace));
        self.workspaces.push(FakeWorkspace {
            id: id.clone(),
            label,
            active_tab: String::new(),
            focused_pane: String::new(),
            closed: false,
            next_tab: 0,
            next_pane: 0,
        });
        let (tab, pane) = self.create_tab(&id, None, cwd, env, None);
        let ws = self.workspace_mut(&id);
        ws.active_tab.clone_from(&tab);
        ws.focused_pane.clone_from(&pane);
        (id, tab, pane)
    }

    fn create_tab(
        &mut self,
        ws: &str,
        label: Option<String>,
        cwd: String,
        env: BTreeMap<String, String>,
        command: Option<Vec<String>>,
    ) -> (String, String) {
        let workspace = self.workspace_mut(ws);
        workspace.next_tab += 1;
        let number = workspace.next_tab;
        let id = format!("{ws}:t{}", ids::encode(number));
        self.tabs.push(FakeTab {
            id: id.clone(),
            workspace_id: ws.to_owned(),
            label: Some(label.unwrap_or_else(|| number.to_string())),
            closed: false,
        });
        let pane = self.create_pane(ws, &id, cwd, env, command);
        (id, pane)
    }

    fn new_pane_id(&mut self, ws: &str) -> String {
        let workspace = self.workspace_mut(ws);
        workspace.next_pane += 1;
        format!("{ws}:p{}", ids::encode(workspace.next_pane))
    }

    fn create_pane(
        &mut self,
        ws: &str,
        tab: &str,
        cwd: String,
        env: BTreeMap<String, String>,
        command: Option<Vec<String>>,
    ) -> String {
        let id = self.new_pane_id(ws);
        self.next_fake_pid += 1;
        let real_root = command.is_some() && self.options.run_processes;
        if real_root {
            self.to_start.push(id.clone());
        }
        self.panes.push(FakePane {
            id: id.clone(),
            aliases: Vec::new(),
            terminal_id: ids::terminal_id(),
            workspace_id: ws.to_owned(),
            tab_id: tab.to_owned(),
            label: None,
            cwd,
            env,
            command,
            typed: String::new(),
            commands: Vec::new(),
            screen: String::new(),
            exit_codes: Vec::new(),
            closed: false,
            agent_status: "unknown".into(),
            shell_pid: FAKE_SHELL_PIDS + self.next_fake_pid,
            pending: String::new(),
            running: None,
            real_root: false,
            stdin: None,
            closing: false,
            created: Instant::now(),
            revision: u64::from(self.next_fake_pid),
        });
        id
    }

    fn focus(&mut self, ws: &str, tab: &str, pane: &str) {
        self.focus_changes += 1;
        self.active_workspace = Some(ws.to_owned());
        let workspace = self.workspace_mut(ws);
        workspace.active_tab = tab.to_owned();
        workspace.focused_pane = pane.to_owned();
    }

    /// Adds an event to the ring.
    pub(crate) fn emit(&mut self, kind: EventKind, subject: &str, extra: &Map<String, Value>) {
        let mut data = extra.clone();
        let key = if kind == EventKind::TabClosed {
            "tab_id"
        } else {
            "pane_id"
        };
        data.insert(key.into(), json!(subject));
        self.ring.push(kind, subject, data);
    }

    fn workspace(&self, id: &str) -> &FakeWorkspace {
        self.workspaces
            .iter()
            .find(|ws| ws.id == id)
            .expect("known workspace")
    }

    fn workspace_mut(&mut self, id: &str) -> &mut FakeWorkspace {
        self.workspaces
            .iter_mut()
            .find(|ws| ws.id == id)
            .expect("known workspace")
    }

    fn workspace_open(&self, id: &str) -> bool {
        self.workspaces.iter().any(|ws| ws.id == id && !ws.closed)
    }
}
