//! How panes leave and move, and which events that makes, as measured on Herdr 0.8.0:
//! `pane.close` sends only `pane_closed`; a pane whose program (or shell) ends sends only
//! `pane_exited` and is gone; neither announces the tab or workspace that closes with its last
//! pane. `layout.apply` over an existing tab closes its panes and sends `tab_closed`.
//! `pane.move` to another tab of the same workspace keeps the pane id; to another workspace it
//! gives a new id there, the old one still resolving for `pane.get` and `pane.read`; either
//! way the terminal id stays and `pane_moved` names the new id.

use serde_json::Map;

use super::super::events::EventKind;
use super::FakeState;

/// Why a pane goes away.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Leaving {
    /// `pane.close`.
    Closed,
    /// Its program or shell ended.
    Exited,
}

/// Where `pane.move` puts a pane.
pub(crate) enum Destination {
    /// Into an existing tab, beside a pane of it.
    Tab { tab_id: String },
    /// A new tab of a workspace.
    NewTab {
        workspace_id: String,
        label: Option<String>,
    },
    /// A new workspace.
    NewWorkspace {
        label: Option<String>,
        tab_label: Option<String>,
    },
}

impl FakeState {
    /// Removes a pane (and its tab and workspace when it was their last), recording the event
    /// Herdr sends for `why`.
    pub(crate) fn remove_pane(&mut self, pane_id: &str, why: Leaving) {
        let Some(pane) = self.pane_mut(pane_id) else {
            return;
        };
        pane.closed = true;
        if why != Leaving::Closed {
            pane.end_everything();
        }
        let (id, ws, tab) = (
            pane.id.clone(),
            pane.workspace_id.clone(),
            pane.tab_id.clone(),
        );
        match why {
            Leaving::Closed => self.emit(EventKind::PaneClosed, &id, &ws_data(&ws)),
            Leaving::Exited => self.emit(EventKind::PaneExited, &id, &ws_data(&ws)),
        }
        self.after_leaving(&id, &ws, &tab);
    }

    /// Keeps focus, tabs and workspaces consistent once `pane_id` left `tab` of `ws`.
    fn after_leaving(&mut self, pane_id: &str, ws: &str, tab: &str) {
        let left_in_tab: Vec<String> = self
            .panes
            .iter()
            .filter(|p| !p.closed && p.tab_id == tab)
            .map(|p| p.id.clone())
            .collect();
        if let Some(next) = left_in_tab.first() {
            let workspace = self.workspace_mut(ws);
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
                let workspace = self.workspace_mut(ws);
                if workspace.active_tab == tab {
                    workspace.active_tab = next_tab;
                    workspace.focused_pane = next_pane;
                }
            }
            None => {
                self.workspace_mut(ws).closed = true;
                if self.active_workspace.as_deref() == Some(ws) {
                    self.active_workspace = self
                        .workspaces
                        .iter()
                        .find(|w| !w.closed)
                        .map(|w| w.id.clone());
                }
            }
        }
    }

    /// Closes every pane of `tab` for a layout that replaces it; `tab_closed` follows.
    pub(crate) fn replace_tab(&mut self, tab: &str, ws: &str) {
        let panes: Vec<String> = self
            .panes
            .iter()
            .filter(|p| !p.closed && p.tab_id == tab)
            .map(|p| p.id.clone())
            .collect();
        // Keep the workspace alive meanwhile: its new tab is about to be made.
        for pane in panes {
            if let Some(p) = self.pane_mut(&pane) {
                p.closed = true;
                p.end_everything();
            }
        }
        if let Some(t) = self.tabs.iter_mut().find(|t| t.id == tab) {
            t.closed = true;
        }
        self.emit(EventKind::TabClosed, tab, &ws_data(ws));
    }

    /// Moves a pane; returns its id afterwards.
    pub(crate) fn move_pane(&mut self, pane_id: &str, to: Destination) -> String {
        let (old_id, old_ws, old_tab) = {
            let pane = self.pane(pane_id).expect("checked by the handler");
            (
                pane.id.clone(),
                pane.workspace_id.clone(),
                pane.tab_id.clone(),
            )
        };
        let (ws, tab) = match to {
            Destination::Tab { tab_id } => {
                let ws = self
                    .tabs
                    .iter()
                    .find(|t| t.id == tab_id)
                    .map(|t| t.workspace_id.clone())
                    .unwrap_or_default();
                (ws, tab_id)
            }
            Destination::NewTab {
                workspace_id,
                label,
            } => {
                let workspace = self.workspace_mut(&workspace_id);
                workspace.next_tab += 1;
                let number = workspace.next_tab;
                let tab = self.new_tab_record(&workspace_id, number, label);
                (workspace_id, tab)
            }
            Destination::NewWorkspace { label, tab_label } => {
                self.next_workspace += 1;
                let ws = format!("w{}", super::ids::encode(self.next_workspace));
                self.workspaces.push(super::FakeWorkspace {
                    id: ws.clone(),
                    label,
                    active_tab: String::new(),
                    focused_pane: String::new(),
                    closed: false,
                    next_tab: 1,
                    next_pane: 0,
                });
                let tab = self.new_tab_record(&ws, 1, tab_label);
                self.workspace_mut(&ws).active_tab.clone_from(&tab);
                (ws, tab)
            }
        };
        let new_id = if ws == old_ws {
            old_id.clone()
        } else {
            self.new_pane_id(&ws)
        };
        if let Some(pane) = self.pane_mut(&old_id) {
            if new_id != old_id {
                pane.aliases.push(old_id.clone());
                pane.id.clone_from(&new_id);
            }
            pane.workspace_id.clone_from(&ws);
            pane.tab_id.clone_from(&tab);
        }
        if self.workspace(&ws).focused_pane.is_empty() {
            self.workspace_mut(&ws).focused_pane.clone_from(&new_id);
        }
        self.emit(EventKind::PaneMoved, &new_id, &ws_data(&ws));
        self.after_leaving(&old_id, &old_ws, &old_tab);
        new_id
    }

    fn new_tab_record(&mut self, ws: &str, number: u64, label: Option<String>) -> String {
        let id = format!("{ws}:t{}", super::ids::encode(number));
        self.tabs.push(super::FakeTab {
            id: id.clone(),
            workspace_id: ws.to_owned(),
            label: Some(label.unwrap_or_else(|| number.to_string())),
            closed: false,
        });
        id
    }
}

fn ws_data(ws: &str) -> Map<String, serde_json::Value> {
    let mut data = Map::new();
    data.insert("workspace_id".into(), serde_json::json!(ws));
    data
}
