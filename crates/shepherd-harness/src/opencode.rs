//! opencode as a sheep.
//!
//! - Configuration: its own XDG config, data, state and cache directories under the sheep's
//!   directory (opencode writes its database there and installs a plugin into its config
//!   directory), holding copies of the user's global `opencode.json` and `auth.json`, and a
//!   file `OPENCODE_CONFIG` names with Shepherd's settings (laid over the user's own such file):
//!   no auto-update or sharing, the sheep tools, permissions, instructions.
//!   `OPENCODE_DISABLE_AUTOUPDATE` and `OPENCODE_DISABLE_LSP_DOWNLOAD` keep it from downloading.
//! - Sheep tools: `mcp.shepherd`, a local server running `shepherd mcp --sheep`.
//! - Tools: the list turns opencode's own `bash`, `edit`, `write` and `webfetch` on or off
//!   (`tools` and `permission`); what is allowed runs unasked.
//! - Instructions: an `instructions` file (added to its prompt), or the `build` agent's
//!   `prompt` with `omit-system-prompt`. Thinking: `--variant` (the model's reasoning effort).
//! - Headless: `run --format json TASK`, later turns `-s <session>`. stdin must be `/dev/null`
//!   (it waits for an open stdin to end). Output: one event per line (`step_start`,
//!   `tool_use`, `text`, `step_finish` with tokens and cost, `error`), each with the session id.

use std::path::PathBuf;

use serde_json::{Value, json};
use shepherd_core::harness::Harness;

use crate::compose::{copy_if_present, merge, read_object, write_json, write_text};
use crate::{Adapter, HarnessError, Plan, Turn, UserEnv};

/// opencode's adapter.
#[derive(Debug)]
pub(crate) struct Opencode;

/// The name Shepherd's sheep server has in opencode's configuration.
const SERVER: &str = "shepherd";

fn root(plan: &Plan) -> PathBuf {
    plan.dir.join("opencode")
}

impl Adapter for Opencode {
    fn harness(&self) -> Harness {
        Harness::Opencode
    }

    fn program_var(&self) -> &'static str {
        "SHEPHERD_OPENCODE"
    }

    fn program_name(&self) -> &'static str {
        "opencode"
    }

    fn prepare(&self, plan: &mut Plan, user: &dyn UserEnv) -> Result<(), HarnessError> {
        let root = root(plan);
        let (config, data) = (root.join("config"), root.join("data"));
        if let Some(user_config) = user.dir("XDG_CONFIG_HOME", ".config") {
            for file in ["opencode.json", "opencode.jsonc", "config.json"] {
                copy_if_present(
                    &user_config.join("opencode").join(file),
                    &config.join("opencode").join(file),
                )?;
            }
        }
        if let Some(user_data) = user.dir("XDG_DATA_HOME", ".local/share") {
            copy_if_present(
                &user_data.join("opencode").join("auth.json"),
                &data.join("opencode").join("auth.json"),
            )?;
        }
        let mut settings = Value::Object(
            user.var("OPENCODE_CONFIG")
                .map(|file| read_object(&PathBuf::from(file)))
                .unwrap_or_default(),
        );
        let global = read_object(&config.join("opencode").join("opencode.json"));
        let command = plan.mcp.clone();
        merge(
            &mut settings,
            json!({
                "autoupdate": false,
                "share": "disabled",
                "mcp": {SERVER: {"type": "local", "command": command, "enabled": true}},
            }),
        );
        let tools = plan.tool_set();
        let allow = |on: bool| if on { "allow" } else { "deny" };
        let (shell, edit, web) = tools
            .as_ref()
            .map_or((true, true, true), |t| (t.shell, t.edit, t.web));
        merge(
            &mut settings,
            json!({
                "permission": {"bash": allow(shell), "edit": allow(edit), "webfetch": allow(web)},
                "tools": {"bash": shell, "edit": edit, "write": edit, "patch": edit, "webfetch": web},
            }),
        );
        if !plan.instructions.trim().is_empty() {
            if plan.replace_system_prompt {
                merge(
                    &mut settings,
                    json!({"agent": {"build": {"prompt": plan.instructions}}}),
                );
            } else {
                let file = plan.dir.join("instructions.md");
                write_text(&file, &plan.instructions)?;
                merge(
                    &mut settings,
                    json!({"instructions": [file.display().to_string()]}),
                );
            }
        }
        plan.configured_model = settings["model"]
            .as_str()
            .or_else(|| global.get("model").and_then(Value::as_str))
            .map(str::to_owned);
        let file = plan.dir.join("opencode.json");
        write_json(&file, &settings)?;
        plan.env.extend(
            [
                ("OPENCODE_CONFIG", file.display().to_string()),
                ("XDG_CONFIG_HOME", config.display().to_string()),
                ("XDG_DATA_HOME", data.display().to_string()),
                ("XDG_STATE_HOME", root.join("state").display().to_string()),
                ("XDG_CACHE_HOME", root.join("cache").display().to_string()),
                ("OPENCODE_DISABLE_AUTOUPDATE", "1".to_owned()),
                ("OPENCODE_DISABLE_LSP_DOWNLOAD", "1".to_owned()),
            ]
            .map(|(k, v)| (k.to_owned(), v)),
        );
        Ok(())
    }

    fn headless_args(&self, plan: &Plan, prompt: &str, session: Option<&str>) -> Vec<String> {
        let mut args: Vec<String> = vec!["run".into(), "--format".into(), "json".into()];
        if let Some(model) = &plan.model {
            args.extend(["-m".into(), model.clone()]);
        }
        if let Some(variant) = plan.thinking.as_deref().and_then(variant) {
            args.extend(["--variant".into(), variant.into()]);
        }
        if let Some(session) = session {
            args.extend(["-s".into(), session.into()]);
        }
        args.push("--".into());
        args.push(prompt.into());
        args
    }

    fn interactive_args(&self, plan: &Plan) -> Vec<String> {
        let mut args: Vec<String> = Vec::new();
        if let Some(model) = &plan.model {
            args.extend(["-m".into(), model.clone()]);
        }
        args
    }

    fn ready_text(&self) -> &'static str {
        // The prompt's placeholder ("Ask anything") shows only until the first message; the
        // footer's hint stays.
        "ctrl+p commands"
    }

    fn busy(&self, screen: &str) -> bool {
        screen.contains("esc interrupt")
    }

    fn read_event(&self, event: &Value, turn: &mut Turn) {
        if let Some(session) = event["sessionID"].as_str() {
            turn.session = Some(session.to_owned());
        }
        let part = &event["part"];
        match event["type"].as_str() {
            Some("text") => turn.text(part["text"].as_str().unwrap_or_default()),
            Some("tool_use") => {
                let name = part["tool"].as_str().unwrap_or("tool");
                let state = &part["state"];
                turn.tool_call(name, &state["input"]);
                let failed = state["status"] == "error";
                let output = state["output"]
                    .as_str()
                    .or(state["error"].as_str())
                    .unwrap_or_default();
                turn.tool_result(name, output, failed);
            }
            Some("step_finish") => {
                let tokens = &part["tokens"];
                let count = |v: &Value| v.as_u64().unwrap_or(0);
                turn.tokens(
                    count(&tokens["input"]),
                    count(&tokens["output"]) + count(&tokens["reasoning"]),
                    count(&tokens["cache"]["read"]),
                    count(&tokens["cache"]["write"]),
                );
                if let Some(cost) = part["cost"].as_f64() {
                    turn.cost = Some(turn.cost.unwrap_or(0.0) + cost);
                }
            }
            Some("error") => {
                let error = &event["error"];
                let message = error["data"]["message"]
                    .as_str()
                    .or_else(|| error["message"].as_str())
                    .map_or_else(|| error.to_string(), str::to_owned);
                turn.error(&message);
            }
            _ => {}
        }
    }

    fn transcript(&self, plan: &Plan, _session: &str) -> Option<PathBuf> {
        // Sessions live in opencode's database (`opencode export <session>` prints one).
        let db = root(plan).join("data").join("opencode").join("opencode.db");
        db.exists().then_some(db)
    }
}

/// opencode's `--variant` for a thinking level.
fn variant(level: &str) -> Option<&'static str> {
    match level {
        "minimal" => Some("minimal"),
        "low" => Some("low"),
        "medium" => Some("medium"),
        "high" => Some("high"),
        "xhigh" | "max" => Some("max"),
        _ => None,
    }
}
