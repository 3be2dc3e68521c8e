//! The fake's request handlers: one per Herdr method it knows, answering like Herdr 0.8.0 —
//! with its error codes and texts: `invalid_request` with an empty id and a serde-style text
//! (`… at line 1 column N`, unknown methods listing the known ones), `pane_not_found` naming
//! the pane (but `pane.process_info`'s plain "pane not found"), `agent target … not found`.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::super::events::Subscriber;
use super::panes::Destination;
use super::{FakeState, Outcome};

/// What Herdr 0.8.0 lists after "expected one of" for an unknown method.
const METHODS: &str = "`ping`, `server.stop`, `server.live_handoff`, `server.reload_config`, `server.agent_manifests`, `server.reload_agent_manifests`, `notification.show`, `client.window_title.set`, `client.window_title.clear`, `session.snapshot`, `workspace.create`, `workspace.list`, `workspace.get`, `workspace.focus`, `workspace.rename`, `workspace.move`, `workspace.move_block`, `workspace.report_metadata`, `workspace.close`, `worktree.list`, `worktree.create`, `worktree.open`, `worktree.remove`, `tab.create`, `tab.list`, `tab.get`, `tab.focus`, `tab.rename`, `tab.move`, `tab.close`, `agent.list`, `agent.get`, `agent.read`, `agent.explain`, `agent.send_keys`, `agent.rename`, `agent.view.set`, `agent.view.clear`, `agent.focus`, `agent.start`, `agent.prompt`, `agent.wait`, `pane.split`, `pane.swap`, `pane.move`, `pane.zoom`, `pane.layout`, `pane.process_info`, `layout.export`, `layout.apply`, `layout.set_split_ratio`, `pane.neighbor`, `pane.edges`, `pane.focus_direction`, `pane.resize`, `pane.list`, `pane.current`, `pane.get`, `pane.focus`, `pane.input.set`, `pane.rename`, `pane.send_text`, `pane.send_keys`, `pane.send_input`, `pane.read`, `pane.graphics.set`, `pane.graphics.clear`, `pane.graphics.info`, `pane.graphics.stream`, `pane.report_agent`, `pane.report_agent_session`, `pane.report_metadata`, `pane.clear_agent_authority`, `pane.release_agent`, `pane.close`, `popup.close`, `events.subscribe`, `events.wait`, `pane.wait_for_output`, `integration.install`, `integration.uninstall`, `plugin.link`, `plugin.list`, `plugin.unlink`, `plugin.enable`, `plugin.disable`, `plugin.action.list`, `plugin.action.invoke`, `plugin.log.list`, `plugin.pane.open`, `plugin.pane.focus`, `plugin.pane.close`";

/// The pane methods the fake answers.
const PANE_METHODS: [&str; 10] = [
    "pane.get",
    "pane.rename",
    "pane.process_info",
    "pane.read",
    "pane.move",
    "pane.close",
    "pane.wait_for_output",
    "pane.send_input",
    "pane.send_text",
    "pane.send_keys",
];

impl FakeState {
    /// Handles one request (`id` is the request's, `line_len` its length, for error texts).
    pub(crate) fn handle(
        &mut self,
        method: &str,
        params: &Value,
        id: &str,
        line_len: usize,
    ) -> Outcome {
        let invalid = |message: &str| Outcome::Error {
            code: "invalid_request".into(),
            message: format!("invalid request: {message} at line 1 column {line_len}"),
            id: Some(String::new()),
        };
        let text = |key: &str| params.get(key).and_then(Value::as_str).map(str::to_owned);
        let env = env_of(params);
        let focus = params
            .get("focus")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let cwd = text("cwd").unwrap_or_else(|| "/".into());
        match method {
            "ping" => Outcome::Reply(json!({
                "type": "pong",
                "version": self.options.version,
                "protocol": self.options.protocol,
                "capabilities": {"live_handoff": true, "detached_server_daemon": true},
            })),
            "server.stop" => {
                self.stop_requested = true;
                ok()
            }
            "workspace.list" => Outcome::Reply(json!({
                "type": "workspace_list",
                "workspaces": self.workspaces.iter().filter(|ws| !ws.closed).map(|ws| self.workspace_json(ws)).collect::<Vec<_>>(),
            })),
            "tab.list" => Outcome::Reply(json!({
                "type": "tab_list",
                "tabs": self.tabs.iter().filter(|t| !t.closed).map(|t| self.tab_json(&t.id)).collect::<Vec<_>>(),
            })),
            "workspace.create" => {
                let had_active = self.active_workspace.is_some();
                let (ws, tab, pane) = self.create_workspace(text("label"), cwd, env);
                // The first workspace of a server becomes the active one whatever was asked.
                if !had_active || focus {
                    self.focus_changes += u32::from(had_active);
                    self.active_workspace = Some(ws.clone());
                }
                Outcome::Reply(json!({
                    "type": "workspace_created",
                    "workspace": self.workspace_json(self.workspace(&ws)),
                    "tab": self.tab_json(&tab),
                    "root_pane": self.pane_json(&pane),
                }))
            }
            "tab.create" => {
                let ws = match self.target_workspace(text("workspace_id")) {
                    Ok(ws) => ws,
                    Err(outcome) => return outcome,
                };
                let (tab, pane) = self.create_tab(&ws, text("label"), cwd, env, None);
                if focus {
                    self.focus(&ws, &tab, &pane);
                }
                Outcome::Reply(json!({
                    "type": "tab_created",
                    "tab": self.tab_json(&tab),
                    "root_pane": self.pane_json(&pane),
                }))
            }
            "layout.apply" => self.layout_apply(params, focus),
            "pane.split" => {
                if !matches!(text("direction").as_deref(), Some("right" | "down")) {
                    return invalid("missing field `direction`");
                }
                let target = match text("target_pane_id")
                    .or_else(|| self.focused_pane().map(str::to_owned))
                {
                    Some(target) if self.pane_mut(&target).is_some() => target,
                    Some(target) => return not_found(&target),
                    None => return error("pane_not_found", "no focused pane"),
                };
                let (ws, tab) = {
                    let target = self.pane(&target).expect("checked above");
                    (target.workspace_id.clone(), target.tab_id.clone())
                };
                let pane = self.create_pane(&ws, &tab, cwd, env, None);
                if focus {
                    self.focus(&ws, &tab, &pane);
                }
                Outcome::Reply(json!({"type": "pane_info", "pane": self.pane_json(&pane)}))
            }
            "pane.list" => {
                let only = text("workspace_id");
                let panes: Vec<Value> = self
                    .panes
                    .iter()
                    .filter(|pane| {
                        !pane.closed && only.as_ref().is_none_or(|ws| &pane.workspace_id == ws)
                    })
                    .map(|pane| self.pane_json(&pane.id))
                    .collect();
                Outcome::Reply(json!({"type": "pane_list", "panes": panes}))
            }
            "agent.list" => Outcome::Reply(json!({"type": "agent_list", "agents": []})),
            "agent.get" => match text("target") {
                Some(target) => error(
                    "agent_not_found",
                    format!("agent target {target} not found"),
                ),
                None => invalid("missing field `target`"),
            },
            "events.subscribe" => {
                let now = self.ring.current();
                match Subscriber::parse(
                    params,
                    |pane| self.pane(pane).is_some_and(|p| !p.closed),
                    now,
                ) {
                    Ok(subscriber) => Outcome::Subscribe(subscriber),
                    Err((code, message, None)) if code == "invalid_request" => invalid(&message),
                    Err((code, message, probe)) => Outcome::Error {
                        code,
                        message,
                        id: probe.map(|index| format!("{id}:sub:{index}:probe")),
                    },
                }
            }
            _ if PANE_METHODS.contains(&method) => self.handle_pane(method, params, &invalid),
            _ => invalid(&format!(
                "unknown variant `{method}`, expected one of {METHODS}"
            )),
        }
    }

    fn handle_pane(
        &mut self,
        method: &str,
        params: &Value,
        invalid: &dyn Fn(&str) -> Outcome,
    ) -> Outcome {
        let Some(pane_id) = params
            .get("pane_id")
            .and_then(Value::as_str)
            .map(str::to_owned)
        else {
            return invalid("missing field `pane_id`");
        };
        if self.pane_mut(&pane_id).is_none() {
            if method == "pane.process_info" {
                return error("pane_not_found", "pane not found");
            }
            return not_found(&pane_id);
        }
        match method {
            "pane.get" => {
                Outcome::Reply(json!({"type": "pane_info", "pane": self.pane_json(&pane_id)}))
            }
            "pane.rename" => {
                let label = params
                    .get("label")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                self.pane_mut(&pane_id).expect("checked").label = label;
                Outcome::Reply(json!({"type": "pane_info", "pane": self.pane_json(&pane_id)}))
            }
            "pane.process_info" => Outcome::Reply(json!({
                "type": "pane_process_info",
                "process_info": self.process_info_json(&pane_id),
            })),
            "pane.read" => {
                let source = params.get("source").and_then(Value::as_str).unwrap_or("");
                let lines = params
                    .get("lines")
                    .and_then(Value::as_u64)
                    .map(|n| usize::try_from(n).unwrap_or(usize::MAX));
                let Some((text, truncated)) = self.read(&pane_id, source, lines) else {
                    return invalid(&format!("unknown variant `{source}`"));
                };
                Outcome::Reply(
                    json!({"type": "pane_read", "read": self.read_json(&pane_id, source, &text, truncated)}),
                )
            }
            "pane.move" => self.pane_move(&pane_id, params, invalid),
            "pane.close" => Outcome::Close(pane_id),
            "pane.wait_for_output" => Outcome::WaitOutput(params.clone()),
            // Typing is handled by the server loop, which may run what was typed.
            _ => ok(),
        }
    }

    /// `read` objects, as `pane.read` and `pane.wait_for_output` send them.
    pub(crate) fn read_json(
        &self,
        pane_id: &str,
        source: &str,
        text: &str,
        truncated: bool,
    ) -> Value {
        let pane = self.pane(pane_id).expect("known pane");
        json!({
            "pane_id": pane.id, "workspace_id": pane.workspace_id, "tab_id": pane.tab_id,
            "source": source, "format": "text", "text": text, "revision": 0, "truncated": truncated,
            "x_fake_field": "ignored",
        })
    }

    /// The workspace a new tab goes to: the named one, else the active one.
    fn target_workspace(&self, named: Option<String>) -> Result<String, Outcome> {
        match named.or_else(|| self.active_workspace.clone()) {
            Some(ws) if self.workspace_open(&ws) => Ok(ws),
            Some(ws) => Err(error(
                "workspace_not_found",
                format!("workspace {ws} not found"),
            )),
            None => Err(error("workspace_not_found", "no active workspace")),
        }
    }

    /// `layout.apply` of a one-pane layout: a new tab (or one replacing `tab_id`) whose pane
    /// runs the leaf's `command`.
    fn layout_apply(&mut self, params: &Value, focus: bool) -> Outcome {
        let root = params.get("root").cloned().unwrap_or(Value::Null);
        if root.get("type").and_then(Value::as_str) != Some("pane") {
            return error(
                "invalid_params",
                "the fake Herdr applies only one-pane layouts",
            );
        }
        let text = |key: &str| params.get(key).and_then(Value::as_str).map(str::to_owned);
        let ws = match text("tab_id") {
            Some(tab) => {
                let Some(ws) = self
                    .tabs
                    .iter()
                    .find(|t| t.id == tab && !t.closed)
                    .map(|t| t.workspace_id.clone())
                else {
                    return error("tab_not_found", format!("tab {tab} not found"));
                };
                let was_active = self.workspace(&ws).active_tab == tab;
                self.replace_tab(&tab, &ws);
                (ws, was_active)
            }
            None => match self.target_workspace(text("workspace_id")) {
                Ok(ws) => (ws, false),
                Err(outcome) => return outcome,
            },
        };
        let (ws, replaced_active) = ws;
        let leaf = |key: &str| root.get(key).and_then(Value::as_str).map(str::to_owned);
        let command: Option<Vec<String>> =
            root.get("command").and_then(Value::as_array).map(|argv| {
                argv.iter()
                    .map(|word| word.as_str().unwrap_or_default().to_owned())
                    .collect()
            });
        let cwd = leaf("cwd").unwrap_or_else(|| "/".into());
        let (tab, pane) = self.create_tab(&ws, text("tab_label"), cwd, env_of(&root), command);
        if let Some(label) = leaf("label") {
            self.pane_mut(&pane).expect("just made").label = Some(label);
        }
        if focus || replaced_active {
            let workspace = self.workspace_mut(&ws);
            workspace.active_tab.clone_from(&tab);
            workspace.focused_pane.clone_from(&pane);
            if focus {
                self.focus(&ws, &tab, &pane);
            }
        }
        let shown = self.pane(&pane).expect("just made");
        Outcome::Reply(json!({"type": "layout_apply", "layout": {
            "workspace_id": ws, "tab_id": tab, "zoomed": false, "focused_pane_id": pane,
            "root": {"type": "pane", "pane_id": pane, "label": shown.label, "cwd": shown.cwd, "command": shown.command},
        }}))
    }

    fn pane_move(
        &mut self,
        pane_id: &str,
        params: &Value,
        invalid: &dyn Fn(&str) -> Outcome,
    ) -> Outcome {
        let dest = params.get("destination").cloned().unwrap_or(Value::Null);
        let field = |key: &str| dest.get(key).and_then(Value::as_str).map(str::to_owned);
        let to = match field("type").as_deref() {
            Some("tab") => {
                let Some(tab_id) = field("tab_id") else {
                    return invalid("missing field `tab_id`");
                };
                if !self.tabs.iter().any(|t| t.id == tab_id && !t.closed) {
                    return error("tab_not_found", format!("tab {tab_id} not found"));
                }
                if let Some(target) = field("target_pane_id")
                    && self.open_pane(&target).is_none()
                {
                    return not_found(&target);
                }
                Destination::Tab { tab_id }
            }
            Some("new_tab") => {
                let workspace_id = match self.target_workspace(field("workspace_id")) {
                    Ok(ws) => ws,
                    Err(outcome) => return outcome,
                };
                Destination::NewTab {
                    workspace_id,
                    label: field("label"),
                }
            }
            Some("new_workspace") => Destination::NewWorkspace {
                label: field("label"),
                tab_label: field("tab_label"),
            },
            _ => return invalid("missing field `destination`"),
        };
        let previous = self.pane(pane_id).map(|p| p.id.clone()).unwrap_or_default();
        let moved = self.move_pane(pane_id, to);
        Outcome::Reply(json!({"type": "pane_move", "move_result": {
            "changed": true, "previous_pane_id": previous, "pane": self.pane_json(&moved),
        }}))
    }
}

fn env_of(params: &Value) -> BTreeMap<String, String> {
    params
        .get("env")
        .and_then(Value::as_object)
        .map(|env| {
            env.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
                .collect()
        })
        .unwrap_or_default()
}

pub(crate) fn error(code: &str, message: impl Into<String>) -> Outcome {
    Outcome::Error {
        code: code.into(),
        message: message.into(),
        id: None,
    }
}

fn not_found(pane: &str) -> Outcome {
    error("pane_not_found", format!("pane {pane} not found"))
}

pub(crate) fn ok() -> Outcome {
    Outcome::Reply(json!({"type": "ok", "x_fake_field": null}))
}
