//! The Herdr methods Shepherd uses, as typed calls on [`HerdrClient`]. Each is one request on
//! its own connection; parameters keep the API's spelling (`target_pane_id`,
//! `recent_unwrapped`, `timeout_ms`).
//!
//! Panes that run a sheep are made with `layout.apply` and a one-pane layout whose leaf
//! carries the supervisor's argv: Herdr starts that program as the pane's process, so nothing
//! is typed into a shell (whose rc files may still be running, or may read the typed line
//! themselves). Surprises measured on Herdr 0.8.0 that shape these calls:
//! - `layout.apply` with a `tab_id` *replaces* that tab: every pane in it is closed and a new
//!   tab takes its place. We only ever replace a tab we just created; a sheep's own tab is
//!   made without a `tab_id`.
//! - `layout.apply` answers with pane ids but no terminal ids; `pane.get` supplies those.
//! - `pane.move` to another tab of the same workspace keeps the pane id; to a new workspace it
//!   gives a new one (the old still resolves in `pane.get`, but `pane.list` shows only the
//!   new). The terminal id never changes, so that is the pane's identity.
//! - `pane.rename` answers with the renamed `pane_info`, not `ok`.

use std::io::ErrorKind;
use std::time::Instant;

use serde_json::{Map, Value, json};

use super::MIN_PROTOCOL;
use super::client::HerdrClient;
use super::error::HerdrError;
use super::wire::{
    self, Created, LayoutApplied, MoveReply, PaneInfo, PaneList, PaneRead, Pong, ProcessInfo,
    ProcessInfoResult, ReadResult, TabInfo, TabList, WorkspaceInfo, WorkspaceList,
};
use crate::ReadSource;

/// Where a new shell pane starts and what it carries.
#[derive(Debug, Clone, Copy)]
pub struct NewPane<'a> {
    /// Its working directory (absolute).
    pub cwd: &'a str,
    /// The tab or workspace label, where the method takes one.
    pub label: Option<&'a str>,
    /// Environment for the pane's shell.
    pub env: &'a [(String, String)],
}

impl NewPane<'_> {
    /// The shared creation parameters; `focus` is always false so nothing steals focus.
    fn params(&self) -> Map<String, Value> {
        let mut params = Map::new();
        params.insert("cwd".into(), json!(self.cwd));
        if let Some(label) = self.label {
            params.insert("label".into(), json!(label));
        }
        if !self.env.is_empty() {
            params.insert("env".into(), env_object(self.env));
        }
        params.insert("focus".into(), json!(false));
        params
    }
}

/// A pane that runs a program instead of a shell (a `layout.apply` leaf).
#[derive(Debug, Clone, Copy)]
pub struct CommandPane<'a> {
    /// The program and its arguments, run directly (no shell).
    pub argv: &'a [String],
    /// Its working directory (absolute).
    pub cwd: &'a str,
    /// Its environment, on top of the server's.
    pub env: &'a [(String, String)],
    /// The pane's label.
    pub label: &'a str,
}

/// Where `layout.apply` puts a command pane's tab.
#[derive(Debug, Clone, Copy)]
pub enum TabSlot<'a> {
    /// A new tab in this workspace.
    NewIn(&'a str),
    /// In place of this tab, closing whatever ran in it. Only for a tab we just made.
    Replacing(&'a str),
}

/// The pane and tab `layout.apply` made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppliedPane {
    /// The new pane.
    pub pane_id: String,
    /// Its tab.
    pub tab_id: String,
    /// Its workspace.
    pub workspace_id: String,
}

fn env_object(env: &[(String, String)]) -> Value {
    Value::Object(
        env.iter()
            .map(|(key, value)| (key.clone(), json!(value)))
            .collect(),
    )
}

fn pane_params(pane_id: &str) -> Value {
    json!({ "pane_id": pane_id })
}

impl HerdrClient {
    /// `ping`, without judging the protocol.
    pub fn ping(&self, deadline: Option<Instant>) -> Result<Pong, HerdrError> {
        self.call("ping", &json!({}), deadline)
    }

    /// `ping`, refusing a server older than [`MIN_PROTOCOL`].
    pub fn handshake(&self, deadline: Option<Instant>) -> Result<Pong, HerdrError> {
        let pong = self.ping(deadline)?;
        if pong.protocol < MIN_PROTOCOL {
            return Err(HerdrError::ProtocolTooOld {
                path: self.socket().to_path_buf(),
                version: pong.version,
                found: pong.protocol,
            });
        }
        Ok(pong)
    }

    /// `workspace.list`.
    pub fn workspace_list(
        &self,
        deadline: Option<Instant>,
    ) -> Result<Vec<WorkspaceInfo>, HerdrError> {
        let list: WorkspaceList = self.call("workspace.list", &json!({}), deadline)?;
        Ok(list.workspaces)
    }

    /// `workspace.create`, without focus; returns the new workspace's root pane (a shell).
    pub fn workspace_create(
        &self,
        pane: &NewPane<'_>,
        deadline: Option<Instant>,
    ) -> Result<PaneInfo, HerdrError> {
        self.create("workspace.create", pane.params(), deadline)
    }

    /// `tab.create` in `workspace_id`, without focus; returns the new tab's root pane (a
    /// shell).
    pub fn tab_create(
        &self,
        workspace_id: &str,
        pane: &NewPane<'_>,
        deadline: Option<Instant>,
    ) -> Result<PaneInfo, HerdrError> {
        let mut params = pane.params();
        params.insert("workspace_id".into(), json!(workspace_id));
        self.create("tab.create", params, deadline)
    }

    /// `tab.list`, of every workspace.
    pub fn tab_list(&self, deadline: Option<Instant>) -> Result<Vec<TabInfo>, HerdrError> {
        let list: TabList = self.call("tab.list", &json!({}), deadline)?;
        Ok(list.tabs)
    }

    /// `pane.split` of `target_pane_id` towards `direction` (`right` or `down`), without
    /// focus: a new shell pane. Panes take no label at creation; see [`Self::pane_rename`].
    pub fn pane_split(
        &self,
        target_pane_id: &str,
        direction: &str,
        pane: &NewPane<'_>,
        deadline: Option<Instant>,
    ) -> Result<PaneInfo, HerdrError> {
        let mut params = pane.params();
        params.remove("label");
        params.insert("target_pane_id".into(), json!(target_pane_id));
        params.insert("direction".into(), json!(direction));
        self.create("pane.split", params, deadline)
    }

    /// `layout.apply` of a one-pane layout running `pane`'s program, labelled `tab_label`,
    /// without focus.
    pub fn layout_apply_command(
        &self,
        slot: TabSlot<'_>,
        tab_label: &str,
        pane: &CommandPane<'_>,
        deadline: Option<Instant>,
    ) -> Result<AppliedPane, HerdrError> {
        const METHOD: &str = "layout.apply";
        let mut leaf = json!({
            "type": "pane",
            "command": pane.argv,
            "cwd": pane.cwd,
            "label": pane.label,
        });
        if !pane.env.is_empty() {
            leaf["env"] = env_object(pane.env);
        }
        let mut params = json!({ "root": leaf, "tab_label": tab_label, "focus": false });
        match slot {
            TabSlot::NewIn(workspace) => params["workspace_id"] = json!(workspace),
            TabSlot::Replacing(tab) => params["tab_id"] = json!(tab),
        }
        let applied: LayoutApplied = self.call(METHOD, &params, deadline)?;
        let layout = applied.layout;
        match layout.root.pane_id {
            Some(pane_id) if !pane_id.is_empty() => Ok(AppliedPane {
                pane_id,
                tab_id: layout.tab_id,
                workspace_id: layout.workspace_id,
            }),
            _ => Err(HerdrError::Protocol {
                method: METHOD.to_owned(),
                detail: "the applied layout names no pane".into(),
            }),
        }
    }

    /// `pane.move` of `pane_id` into `tab_id`, split `direction` (`right` or `down`) of
    /// `target_pane_id`, without focus; returns the pane where it landed.
    pub fn pane_move_beside(
        &self,
        pane_id: &str,
        tab_id: &str,
        target_pane_id: &str,
        direction: &str,
        deadline: Option<Instant>,
    ) -> Result<PaneInfo, HerdrError> {
        let params = json!({
            "pane_id": pane_id,
            "destination": {
                "type": "tab", "tab_id": tab_id, "split": direction,
                "target_pane_id": target_pane_id,
            },
            "focus": false,
        });
        let reply: MoveReply = self.call("pane.move", &params, deadline)?;
        Ok(reply.move_result.pane)
    }

    /// `pane.get`.
    pub fn pane_get(
        &self,
        pane_id: &str,
        deadline: Option<Instant>,
    ) -> Result<PaneInfo, HerdrError> {
        let mut params = Map::new();
        params.insert("pane_id".into(), json!(pane_id));
        self.create("pane.get", params, deadline)
    }

    /// Whether `pane.list` (over every workspace) shows `pane_id`.
    pub fn pane_listed(&self, pane_id: &str, deadline: Instant) -> Result<bool, HerdrError> {
        let panes = self.pane_list(None, Some(deadline))?;
        Ok(panes.iter().any(|pane| pane.pane_id == pane_id))
    }

    /// `pane.list`, of one workspace or all.
    pub fn pane_list(
        &self,
        workspace_id: Option<&str>,
        deadline: Option<Instant>,
    ) -> Result<Vec<PaneInfo>, HerdrError> {
        let params = match workspace_id {
            Some(id) => json!({ "workspace_id": id }),
            None => json!({}),
        };
        let list: PaneList = self.call("pane.list", &params, deadline)?;
        Ok(list.panes)
    }

    /// `pane.rename`: the label Herdr shows for the pane.
    pub fn pane_rename(
        &self,
        pane_id: &str,
        label: &str,
        deadline: Option<Instant>,
    ) -> Result<(), HerdrError> {
        let params = json!({ "pane_id": pane_id, "label": label });
        self.request("pane.rename", &params, deadline).map(drop)
    }

    /// `pane.process_info`: the pane's root process and who owns its terminal's foreground.
    pub fn pane_process_info(
        &self,
        pane_id: &str,
        deadline: Option<Instant>,
    ) -> Result<ProcessInfo, HerdrError> {
        let result: ProcessInfoResult =
            self.call("pane.process_info", &pane_params(pane_id), deadline)?;
        Ok(result.process_info)
    }

    /// `pane.read` as plain text (`strip_ansi`), asking for `lines` rows.
    pub fn pane_read(
        &self,
        pane_id: &str,
        source: ReadSource,
        lines: u32,
        deadline: Option<Instant>,
    ) -> Result<PaneRead, HerdrError> {
        let params = json!({
            "pane_id": pane_id,
            "source": wire::api_source(source),
            "lines": lines,
            "format": "text",
            "strip_ansi": true,
        });
        let result: ReadResult = self.call("pane.read", &params, deadline)?;
        Ok(result.read)
    }

    /// `pane.send_input`: `text`, then `keys` (Herdr key names such as `Enter`).
    pub fn pane_send_input(
        &self,
        pane_id: &str,
        text: &str,
        keys: &[&str],
        deadline: Option<Instant>,
    ) -> Result<(), HerdrError> {
        let params = json!({ "pane_id": pane_id, "text": text, "keys": keys });
        self.request("pane.send_input", &params, deadline).map(drop)
    }

    /// `pane.focus`: the pane (with its tab and workspace) becomes the focused one.
    pub fn pane_focus(&self, pane_id: &str, deadline: Option<Instant>) -> Result<(), HerdrError> {
        self.request("pane.focus", &pane_params(pane_id), deadline)
            .map(drop)
    }

    /// `pane.close`. Herdr answers only once the pane's processes are gone (it sends HUP, TERM
    /// and KILL to the pane's whole session, waiting up to 250 ms after each), and holds every
    /// other request meanwhile.
    pub fn pane_close(&self, pane_id: &str, deadline: Option<Instant>) -> Result<(), HerdrError> {
        self.request("pane.close", &pane_params(pane_id), deadline)
            .map(drop)
    }

    /// `server.stop`: ends the server and every pane in it. A server that goes away before
    /// answering has done what was asked.
    pub fn server_stop(&self, deadline: Option<Instant>) -> Result<(), HerdrError> {
        match self.request("server.stop", &json!({}), deadline) {
            Ok(_) | Err(HerdrError::NoReply { .. }) => Ok(()),
            Err(HerdrError::Io { source, .. })
                if matches!(
                    source.kind(),
                    ErrorKind::ConnectionReset | ErrorKind::BrokenPipe
                ) =>
            {
                Ok(())
            }
            Err(err) => Err(err),
        }
    }

    fn create(
        &self,
        method: &str,
        params: Map<String, Value>,
        deadline: Option<Instant>,
    ) -> Result<PaneInfo, HerdrError> {
        let created: Created = self.call(method, &Value::Object(params), deadline)?;
        created.into_pane().ok_or_else(|| HerdrError::Protocol {
            method: method.to_owned(),
            detail: "the reply names no pane".into(),
        })
    }
}
