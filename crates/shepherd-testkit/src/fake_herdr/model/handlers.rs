//! The fake's request handlers: one per Herdr method it knows, answering like Herdr 0.8.0
//! (including `invalid_request` with an empty id for unknown methods and missing parameters,
//! and `pane_not_found` for unknown panes).

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::super::events::Subscriber;
use super::{FakeState, Outcome};

impl FakeState {
    /// Handles one request.
    pub(crate) fn handle(&mut self, method: &str, params: &Value) -> Outcome {
        let text = |key: &str| params.get(key).and_then(Value::as_str).map(str::to_owned);
        let env = || -> BTreeMap<String, String> {
            params
                .get("env")
                .and_then(Value::as_object)
                .map(|env| {
                    env.iter()
                        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
                        .collect()
                })
                .unwrap_or_default()
        };
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
            "workspace.create" => {
                let had_active = self.active_workspace.is_some();
                let (ws, tab, pane) = self.create_workspace(text("label"), cwd, env());
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
                let ws = match text("workspace_id").or_else(|| self.active_workspace.clone()) {
                    Some(ws) if self.workspaces.iter().any(|w| w.id == ws && !w.closed) => ws,
                    Some(ws) => {
                        return error("workspace_not_found", format!("workspace {ws} not found"));
                    }
                    None => return error("workspace_not_found", "no active workspace"),
                };
                let (tab, pane) = self.create_tab(&ws, text("label"), cwd, env());
                if focus {
                    self.focus(&ws, &tab, &pane);
                }
                Outcome::Reply(json!({
                    "type": "tab_created",
                    "tab": self.tab_json(&tab),
                    "root_pane": self.pane_json(&pane),
                }))
            }
            "pane.split" => {
                if !matches!(text("direction").as_deref(), Some("right" | "down")) {
                    return invalid("missing or unknown field `direction`");
                }
                let target = match text("target_pane_id")
                    .or_else(|| self.focused_pane().map(str::to_owned))
                {
                    Some(target) if self.pane_mut(&target).is_some() => target,
                    Some(target) => {
                        return error("pane_not_found", format!("pane {target} not found"));
                    }
                    None => return error("pane_not_found", "no focused pane"),
                };
                let (ws, tab) = {
                    let target = self.pane(&target).expect("checked above");
                    (target.workspace_id.clone(), target.tab_id.clone())
                };
                let pane = self.create_pane(&ws, &tab, cwd, env());
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
                Some(target) => error("agent_not_found", format!("no agent in {target}")),
                None => invalid("missing field `target`"),
            },
            "events.subscribe" => {
                match Subscriber::parse(params, |pane| self.pane(pane).is_some_and(|p| !p.closed)) {
                    Ok(subscriber) => Outcome::Subscribe(subscriber),
                    Err((code, message)) if code == "invalid_request" => invalid(message),
                    Err((code, message)) => error(&code, message),
                }
            }
            _ if method.starts_with("pane.") => self.handle_pane(method, params),
            _ => invalid(format!("unknown variant `{method}`")),
        }
    }

    fn handle_pane(&mut self, method: &str, params: &Value) -> Outcome {
        let Some(pane_id) = params
            .get("pane_id")
            .and_then(Value::as_str)
            .map(str::to_owned)
        else {
            return invalid("missing field `pane_id`");
        };
        if self.pane_mut(&pane_id).is_none() {
            return error("pane_not_found", format!("pane {pane_id} not found"));
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
                ok()
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
                    .map(|n| n as usize);
                let Some((text, truncated)) = self.read(&pane_id, source, lines) else {
                    return invalid(format!("unknown variant `{source}`"));
                };
                Outcome::Reply(json!({"type": "pane_read", "read": {
                    "pane_id": pane_id, "workspace_id": self.pane(&pane_id).map(|p| p.workspace_id.clone()),
                    "source": source, "format": "text", "text": text, "revision": 0, "truncated": truncated,
                    "x_fake_field": "ignored",
                }}))
            }
            "pane.close" => {
                self.close_pane(&pane_id, false);
                ok()
            }
            "pane.wait_for_output" => {
                let needle = params
                    .pointer("/match/value")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                let screen = self
                    .pane(&pane_id)
                    .map(|p| p.screen.clone())
                    .unwrap_or_default();
                match screen.lines().find(|line| line.contains(needle)) {
                    Some(line) => Outcome::Reply(
                        json!({"type": "output_matched", "pane_id": pane_id, "matched_line": line}),
                    ),
                    None => error("timeout", "timed out waiting for output match"),
                }
            }
            // Typing is handled by the server loop, which may run what was typed.
            "pane.send_input" | "pane.send_text" | "pane.send_keys" => ok(),
            _ => invalid(format!("unknown variant `{method}`")),
        }
    }
}

fn error(code: &str, message: impl Into<String>) -> Outcome {
    Outcome::Error {
        code: code.into(),
        message: message.into(),
        anonymous: false,
    }
}

fn invalid(message: impl Into<String>) -> Outcome {
    Outcome::Error {
        code: "invalid_request".into(),
        message: format!("invalid request: {}", message.into()),
        anonymous: true,
    }
}

fn ok() -> Outcome {
    Outcome::Reply(json!({"type": "ok", "x_fake_field": null}))
}
