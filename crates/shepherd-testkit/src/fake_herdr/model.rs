//! The fake's world: workspaces, tabs and panes with Herdr's id scheme (`w1`, `w1:t1`,
//! `w1:p2`, never reused), focus, what was typed and what each pane shows — and the request
//! handlers that change it, answering with the shapes recorded from Herdr 0.8.0 (our own
//! fixtures, plus an unknown field in every object to prove the client reads leniently).

use std::collections::BTreeMap;
use std::process::ChildStdin;

use serde_json::{Map, Value};

use super::FakeOptions;
use super::events::{EventKind, Subscriber};

mod handlers;
mod render;

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
    next_tab: u32,
    next_pane: u32,
}

/// A tab.
#[derive(Debug, Clone)]
pub struct FakeTab {
    /// Such as `w1:t2`.
    pub id: String,
    /// Its workspace.
    pub workspace_id: String,
    /// Its label.
    pub label: Option<String>,
    /// Whether it was closed.
    pub closed: bool,
}

/// A pane and everything done to it.
#[derive(Debug)]
pub struct FakePane {
    /// Such as `w1:p3`.
    pub id: String,
    /// Its workspace.
    pub workspace_id: String,
    /// Its tab.
    pub tab_id: String,
    /// Its label (`pane.rename`).
    pub label: Option<String>,
    /// The cwd it was created with.
    pub cwd: String,
    /// The environment it was created with.
    pub env: BTreeMap<String, String>,
    /// Every text and key sent, in order (keys as `<Key>`).
    pub typed: String,
    /// Lines completed with Enter.
    pub commands: Vec<String>,
    /// What the pane shows.
    pub screen: String,
    /// Exit codes of the commands the fake ran, in order.
    pub exit_codes: Vec<i32>,
    /// Whether it was closed.
    pub closed: bool,
    /// Its agent status as reported by events.
    pub agent_status: String,
    /// The pid `pane.process_info` reports for its shell.
    pub shell_pid: u32,
    pub(crate) pending: String,
    pub(crate) running: Option<u32>,
    pub(crate) startup: Option<(u32, Option<ChildStdin>)>,
    revision: u64,
}

impl FakePane {
    /// The pid of the command the fake is running in this pane, if any.
    pub fn running_pid(&self) -> Option<u32> {
        self.running
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
    /// An `error`; `anonymous` replies with id `""` as Herdr does for unparsable requests.
    Error {
        code: String,
        message: String,
        anonymous: bool,
    },
    /// Start an event subscription with these filters.
    Subscribe(Subscriber),
}

/// The fake server's whole state. Tests read it through [`super::FakeHerdr::inspect`].
#[derive(Debug, Default)]
pub struct FakeState {
    pub(crate) options: FakeOptions,
    workspaces: Vec<FakeWorkspace>,
    tabs: Vec<FakeTab>,
    panes: Vec<FakePane>,
    active_workspace: Option<String>,
    next_workspace: u32,
    next_terminal: u32,
    requests: Vec<Request>,
    focus_changes: u32,
    pub(crate) failures: Vec<Failure>,
    pub(crate) hangs: Vec<String>,
    pub(crate) closes: Vec<String>,
    pub(crate) subscribers: Vec<Subscriber>,
    pub(crate) next_subscriber: u64,
    pub(crate) recent_closed: Vec<(String, String)>,
    pub(crate) stopped: bool,
    pub(crate) stop_requested: bool,
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

    /// A pane, open or closed.
    pub fn pane(&self, id: &str) -> Option<&FakePane> {
        self.panes.iter().find(|pane| pane.id == id)
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
        self.panes.iter_mut().find(|pane| pane.id == id)
    }

    pub(crate) fn pane_mut(&mut self, id: &str) -> Option<&mut FakePane> {
        self.panes
            .iter_mut()
            .find(|pane| pane.id == id && !pane.closed)
    }

    fn create_workspace(
        &mut self,
        label: Option<String>,
        cwd: String,
        env: BTreeMap<String, String>,
    ) -> (String, String, String) {
        self.next_workspace += 1;
        let id = format!("w{}", self.next_workspace);
        self.workspaces.push(FakeWorkspace {
            id: id.clone(),
            label,
            active_tab: String::new(),
            focused_pane: String::new(),
            closed: false,
            next_tab: 0,
            next_pane: 0,
        });
        let (tab, pane) = self.create_tab(&id, None, cwd, env);
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
    ) -> (String, String) {
        let workspace = self.workspace_mut(ws);
        workspace.next_tab += 1;
        let id = format!("{ws}:t{}", workspace.next_tab);
        self.tabs.push(FakeTab {
            id: id.clone(),
            workspace_id: ws.to_owned(),
            label,
            closed: false,
        });
        let pane = self.create_pane(ws, &id, cwd, env);
        (id, pane)
    }

    fn create_pane(
        &mut self,
        ws: &str,
        tab: &str,
        cwd: String,
        env: BTreeMap<String, String>,
    ) -> String {
        let workspace = self.workspace_mut(ws);
        workspace.next_pane += 1;
        let id = format!("{ws}:p{}", workspace.next_pane);
        self.next_terminal += 1;
        self.panes.push(FakePane {
            id: id.clone(),
            workspace_id: ws.to_owned(),
            tab_id: tab.to_owned(),
            label: None,
            cwd,
            env,
            typed: String::new(),
            commands: Vec::new(),
            screen: String::new(),
            exit_codes: Vec::new(),
            closed: false,
            agent_status: "unknown".into(),
            shell_pid: FAKE_SHELL_PIDS + self.next_terminal,
            pending: String::new(),
            running: None,
            startup: None,
            revision: u64::from(self.next_terminal),
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

    /// Closes a pane (and its tab and workspace when it was their last), telling subscribers.
    pub(crate) fn close_pane(&mut self, pane_id: &str, exited: bool) {
        let Some(pane) = self.pane_mut(pane_id) else {
            return;
        };
        pane.closed = true;
        super::run::hang_up(pane);
        let (ws, tab) = (pane.workspace_id.clone(), pane.tab_id.clone());
        if exited {
            self.emit(EventKind::Exited, pane_id, &ws, &Map::new());
        }
        self.emit(EventKind::Closed, pane_id, &ws, &Map::new());
        self.recent_closed.push((pane_id.to_owned(), ws.clone()));
        let left_in_tab: Vec<String> = self
            .panes
            .iter()
            .filter(|p| !p.closed && p.tab_id == tab)
            .map(|p| p.id.clone())
            .collect();
        if let Some(next) = left_in_tab.first() {
            let workspace = self.workspace_mut(&ws);
            if workspace.focused_pane == pane_id {
                workspace.focused_pane.clone_from(next);
            }
            return;
        }
        if let Some(t) = self.tabs.iter_mut().find(|t| t.id == tab) {
            t.closed = true;
        }
        let next_tab = self
            .tabs
            .iter()
            .find(|t| !t.closed && t.workspace_id == ws)
            .map(|t| t.id.clone());
        match next_tab {
            Some(next_tab) => {
                let next_pane = self
                    .panes
                    .iter()
                    .find(|p| !p.closed && p.tab_id == next_tab)
                    .map(|p| p.id.clone())
                    .unwrap_or_default();
                let workspace = self.workspace_mut(&ws);
                if workspace.active_tab == tab {
                    workspace.active_tab = next_tab;
                    workspace.focused_pane = next_pane;
                }
            }
            None => {
                self.workspace_mut(&ws).closed = true;
                if self.active_workspace.as_deref() == Some(&ws) {
                    self.active_workspace = self
                        .workspaces
                        .iter()
                        .find(|w| !w.closed)
                        .map(|w| w.id.clone());
                }
            }
        }
    }

    /// Sends an event to every subscriber that asked for it; drops subscribers that are gone.
    pub(crate) fn emit(
        &mut self,
        kind: EventKind,
        pane_id: &str,
        ws: &str,
        extra: &Map<String, Value>,
    ) {
        let style = self.options.event_style;
        self.subscribers
            .retain_mut(|subscriber| subscriber.deliver(style, kind, pane_id, ws, extra));
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
}
