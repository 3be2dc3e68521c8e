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
//! - Visible: the TUI prints nothing machine-readable and keeps its sessions in a database, so
//!   after each turn the driver asks opencode itself: `session list --format json` (once, for
//!   the id of the TUI's session) and `export <session>`, whose messages carry the parts (text,
//!   tool calls), tokens, cost and the provider error that ended a turn (which the TUI draws
//!   only in colour).

use std::path::PathBuf;

use serde_json::{Value, json};
use shepherd_core::agent_def::ThinkingLevel;
use shepherd_core::harness::Harness;

use crate::compose::{copy_if_present, merge, read_object, write_json, write_text};
use crate::profile::{MODEL_PROVIDER_HOSTS, Profile, Program, Provider};
use crate::{Adapter, Export, HarnessError, Plan, Turn, UserEnv};

/// opencode's adapter.
#[derive(Debug)]
pub(crate) struct Opencode;

/// The name Shepherd's sheep server has in opencode's configuration.
const SERVER: &str = "shepherd";

fn root(plan: &Plan) -> PathBuf {
    plan.dir.join("opencode")
}

/// The file `OPENCODE_CONFIG` names, else the user's global `opencode.json`, where a provider
/// of their own names its endpoint.
fn provider_config(user: &dyn UserEnv) -> Option<PathBuf> {
    user.dir("OPENCODE_CONFIG", ".config/opencode/opencode.json")
}

/// What Shepherd knows about opencode besides how its turns run.
pub(crate) const PROFILE: Profile = Profile {
    harness: Harness::Opencode,
    program: Program {
        var: "SHEPHERD_OPENCODE",
        name: "opencode",
        install: "npm install -g opencode-ai",
        version_home: None,
    },
    provider: Provider {
        name: None,
        endpoint_vars: &[],
        key_vars: &[],
        hosts: MODEL_PROVIDER_HOSTS,
    },
    login_with: "opencode",
    credentials: crate::profile::unchecked,
    provider_config: Some(provider_config),
};

impl Adapter for Opencode {
    fn profile(&self) -> &'static Profile {
        &PROFILE
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
        if let Some(variant) = plan.thinking.and_then(variant) {
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
            Some("tool_use") => tool_part(part, turn),
            Some("step_finish") => usage(&part["tokens"], &part["cost"], turn),
            Some("error") => turn.error(&error_message(&event["error"])),
            _ => {}
        }
    }

    fn export(&self) -> Option<Export> {
        Some(Export {
            sessions: ["session", "list", "--format", "json"]
                .map(String::from)
                .to_vec(),
            session: vec!["export".to_owned()],
        })
    }

    fn read_sessions(&self, listing: &str) -> Option<String> {
        // The newest first; a sheep's home holds its TUI's one session.
        let listing: Value = serde_json::from_str(listing).ok()?;
        listing.as_array()?.first()?["id"]
            .as_str()
            .map(str::to_owned)
    }

    fn read_export(&self, export: &str, read_to: &mut u64, turn: &mut Turn) {
        // `{info, messages: [{info, parts}]}`; an assistant message is one model response,
        // with its tokens, cost and error in `info` (complete once it has `time.completed` or
        // an error: later ones are read after the next turn).
        let Ok(export) = serde_json::from_str::<Value>(export) else {
            return;
        };
        let messages = export["messages"].as_array().map_or(&[][..], Vec::as_slice);
        let start = usize::try_from(*read_to).unwrap_or(usize::MAX);
        for message in messages.iter().skip(start) {
            let info = &message["info"];
            let assistant = info["role"] == "assistant";
            if assistant && info["time"]["completed"].is_null() && info["error"].is_null() {
                break;
            }
            *read_to += 1;
            if !assistant {
                continue;
            }
            turn.next_response();
            if let (Some(provider), Some(model)) =
                (info["providerID"].as_str(), info["modelID"].as_str())
            {
                turn.model = Some(format!("{provider}/{model}"));
            }
            for part in message["parts"].as_array().into_iter().flatten() {
                match part["type"].as_str() {
                    Some("text") => turn.text(part["text"].as_str().unwrap_or_default()),
                    Some("tool") => tool_part(part, turn),
                    _ => {}
                }
            }
            usage(&info["tokens"], &info["cost"], turn);
            // An interruption (Esc in the pane) is the user's, not a failure.
            if !info["error"].is_null() && info["error"]["name"] != "MessageAbortedError" {
                turn.error(&error_message(&info["error"]));
            }
        }
    }

    fn transcript(&self, plan: &Plan, _session: &str) -> Option<PathBuf> {
        // Sessions live in opencode's database (`opencode export <session>` prints one).
        let db = root(plan).join("data").join("opencode").join("opencode.db");
        db.exists().then_some(db)
    }
}

/// A tool part (`{tool, state: {status, input, output | error}}`): the call and its result.
fn tool_part(part: &Value, turn: &mut Turn) {
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

/// A response's tokens (`{input, output, reasoning, cache: {read, write}}`) and cost.
fn usage(tokens: &Value, cost: &Value, turn: &mut Turn) {
    let count = |v: &Value| v.as_u64().unwrap_or(0);
    turn.tokens(
        count(&tokens["input"]),
        count(&tokens["output"]) + count(&tokens["reasoning"]),
        count(&tokens["cache"]["read"]),
        count(&tokens["cache"]["write"]),
    );
    if let Some(cost) = cost.as_f64() {
        turn.cost = Some(turn.cost.unwrap_or(0.0) + cost);
    }
}

/// The message of an error (`{name, data: {message}}`).
fn error_message(error: &Value) -> String {
    let message = error["data"]["message"]
        .as_str()
        .or_else(|| error["message"].as_str())
        .map_or_else(|| error.to_string(), str::to_owned);
    // opencode gives the provider's message alone; its status tells a limit from a refusal.
    match error["data"]["statusCode"].as_u64() {
        Some(status) if !message.contains(&status.to_string()) => format!("{status} {message}"),
        _ => message,
    }
}

/// opencode's `--variant` for a thinking level.
fn variant(level: ThinkingLevel) -> Option<&'static str> {
    match level {
        ThinkingLevel::Minimal => Some("minimal"),
        ThinkingLevel::Low => Some("low"),
        ThinkingLevel::Medium => Some("medium"),
        ThinkingLevel::High => Some("high"),
        ThinkingLevel::Xhigh | ThinkingLevel::Max => Some("max"),
        ThinkingLevel::Off => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assistant(id: &str, parts: Value, extra: Value) -> Value {
        let mut info = json!({"id": id, "role": "assistant", "providerID": "fake",
            "modelID": "m", "cost": 0.25, "time": {"created": 1, "completed": 2},
            "tokens": {"input": 10, "output": 4, "reasoning": 1, "cache": {"read": 2, "write": 0}}});
        merge(&mut info, extra);
        let mut message = json!({ "info": info });
        message["parts"] = parts;
        message
    }

    #[test]
    fn an_export_gives_the_turns_figures_and_is_read_once() {
        let user = json!({"info": {"id": "u1", "role": "user"}, "parts": [{"type": "text", "text": "task"}]});
        let shell = json!([{"type": "step-start"}, {"type": "tool", "tool": "bash",
            "state": {"status": "completed", "input": {"command": "ls"}, "output": "a"}}]);
        let done = json!([{"type": "tool", "tool": "shepherd_shepherd_done",
            "state": {"status": "completed", "input": {}, "output": "ok"}}]);
        let words = json!([{"type": "text", "text": "Done."}]);
        let unfinished = assistant("a4", json!([]), json!({"time": {"completed": null}}));
        let export = json!({"info": {"id": "s"}, "messages": [user,
            assistant("a1", shell, json!({})), assistant("a2", done, json!({})),
            assistant("a3", words, json!({})), unfinished]})
        .to_string();
        let mut read_to = 0;
        let mut turn = Turn::default();
        Opencode.read_export(&export, &mut read_to, &mut turn);
        turn.finish();
        assert_eq!(
            read_to, 4,
            "the unfinished response waits for the next read"
        );
        assert_eq!((turn.responses, turn.tool_calls), (3, 2));
        assert!(turn.done_called);
        assert_eq!(
            (turn.tokens_in, turn.tokens_out, turn.cache_read),
            (30, 15, 6)
        );
        assert_eq!(turn.cost, Some(0.75));
        assert_eq!(turn.text.as_deref(), Some("Done."));
        assert_eq!(turn.model.as_deref(), Some("fake/m"));
        assert_eq!(turn.error, None);
        let mut again = Turn::default();
        Opencode.read_export(&export, &mut read_to, &mut again);
        assert_eq!(
            (again.responses, again.tool_calls, again.cost),
            (0, 0, None)
        );
    }

    #[test]
    fn a_provider_error_in_an_export_ends_the_turn_and_an_interruption_does_not() {
        let error =
            |name: &str| json!({"error": {"name": name, "data": {"message": "the model refuses"}}});
        let export = json!({"messages": [assistant("a1", json!([]), error("APIError"))]});
        let mut turn = Turn::default();
        Opencode.read_export(&export.to_string(), &mut 0, &mut turn);
        assert_eq!(turn.error.as_deref(), Some("the model refuses"));
        let export =
            json!({"messages": [assistant("a1", json!([]), error("MessageAbortedError"))]});
        let mut turn = Turn::default();
        Opencode.read_export(&export.to_string(), &mut 0, &mut turn);
        assert_eq!(turn.error, None);
    }

    #[test]
    fn the_session_is_the_newest_listed() {
        let listing = r#"[{"id": "ses_b", "title": "x"}, {"id": "ses_a"}]"#;
        assert_eq!(Opencode.read_sessions(listing).as_deref(), Some("ses_b"));
        assert_eq!(Opencode.read_sessions("[]"), None);
    }
}
