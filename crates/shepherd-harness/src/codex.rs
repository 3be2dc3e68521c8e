//! Codex CLI as a sheep.
//!
//! - Configuration: its own `CODEX_HOME` under the sheep's directory, holding a copy of the
//!   user's `config.toml` (model, providers) and `auth.json`. Everything Shepherd adds is a
//!   `-c` override on the command line, so the copy stays the user's text: update checks and
//!   analytics off, the sheep tools, instructions, reasoning effort, sandbox.
//! - Sheep tools: `[mcp_servers.shepherd]` running `shepherd mcp --sheep`, `required` (Codex
//!   waits for it before the first turn, and fails the turn when it cannot start), approved
//!   without asking, with the sheep's `SHEPHERD_*` variables passed through (Codex gives MCP
//!   servers a bare environment otherwise).
//! - Tools: Codex cannot remove single tools; it has a shell and sandbox modes. A read-only
//!   tool list runs in the `read-only` sandbox; a list with a shell (or none) runs unsandboxed,
//!   as the definition allows anything its shell can do; a list that allows edits but no shell
//!   cannot be honoured (every Codex turn has a shell) and is refused. Without web tools in the
//!   list, web search is off.
//! - Headless: `exec --json --skip-git-repo-check`, later turns `exec resume <thread>`. stdin
//!   must be `/dev/null` (it waits for an open stdin to end). Output: `thread.started`,
//!   `item.*` (commands, MCP calls, messages), `turn.completed` with usage, `turn.failed` or
//!   `error`. No cost; the model is the one asked for or configured.

use shepherd_core::limit::{Classified, ErrorClass};
use std::path::PathBuf;

use serde_json::Value;
use shepherd_core::agent_def::ThinkingLevel;
use shepherd_core::harness::{Harness, ToolSet};

use crate::compose::{copy_if_present, toml_array, toml_string, write_text};
use crate::profile::{Credentials, Login, Profile, Program, Provider};
use crate::{Adapter, HarnessError, Plan, Turn, Unsupported, UserEnv};

/// Codex's adapter.
#[derive(Debug)]
pub(crate) struct Codex;

/// The name Shepherd's sheep server has in Codex's configuration.
const SERVER: &str = "shepherd";

fn codex_home(plan: &Plan) -> PathBuf {
    plan.dir.join("codex")
}

/// The top-level `model = "…"` of a `config.toml`, read without a TOML parser (only the lines
/// before the first table count).
fn configured_model(text: &str) -> Option<String> {
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            return None;
        }
        let Some(rest) = line.strip_prefix("model") else {
            continue;
        };
        let Some(value) = rest.trim_start().strip_prefix('=') else {
            continue;
        };
        let value = value.trim().trim_matches(|c| c == '"' || c == '\'');
        if !value.is_empty() {
            return Some(value.to_owned());
        }
    }
    None
}

/// A Codex sheep: its key variables or the user's `auth.json`; nothing to check when the
/// user's configuration picks a provider other than OpenAI.
fn credentials(_model: Option<&str>, user: &dyn UserEnv) -> Option<Credentials> {
    let home = user.dir("CODEX_HOME", ".codex")?;
    let config = fs_err::read_to_string(home.join("config.toml")).unwrap_or_default();
    match codex_provider(&config) {
        Some(provider) if provider != "openai" => None,
        _ => Some(Credentials::own(
            &PROFILE,
            vec![Login::file(home.join("auth.json"))],
        )),
    }
}

/// The top-level `model_provider` of a Codex `config.toml` (the keys before the first table).
fn codex_provider(config: &str) -> Option<String> {
    config
        .lines()
        .map(str::trim)
        .take_while(|line| !line.starts_with('['))
        .find_map(|line| {
            let (key, value) = line.split_once('=')?;
            (key.trim() == "model_provider")
                .then(|| value.trim().trim_matches(['"', '\'']).to_owned())
        })
}

/// The user's `config.toml`, where a provider of their own names its endpoint.
fn provider_config(user: &dyn UserEnv) -> Option<PathBuf> {
    user.dir("CODEX_HOME", ".codex")
        .map(|home| home.join("config.toml"))
}

/// What Shepherd knows about Codex besides how its turns run.
pub(crate) const PROFILE: Profile = Profile {
    harness: Harness::Codex,
    program: Program {
        var: "SHEPHERD_CODEX",
        name: "codex",
        install: "npm install -g @openai/codex",
        version_home: None,
    },
    provider: Provider {
        name: Some("openai"),
        endpoint_vars: &["OPENAI_BASE_URL"],
        key_vars: &["CODEX_API_KEY", "OPENAI_API_KEY"],
        hosts: &[
            "api.openai.com:443",
            "chatgpt.com:443",
            "auth.openai.com:443",
        ],
    },
    login_with: "Codex",
    credentials,
    provider_config: Some(provider_config),
};

impl Adapter for Codex {
    fn profile(&self) -> &'static Profile {
        &PROFILE
    }

    fn classify_error(&self, error: &str, now: jiff::Timestamp) -> Classified {
        // Codex words a server error as "high demand" and a usage limit's reset as a time of
        // day ("… or try again at 6:55 PM."); a 429 after its own retries is
        // "exceeded retry limit, last status: 429 Too Many Requests".
        if error.contains("high demand") {
            return Classified {
                class: ErrorClass::Transient,
                reset: None,
            };
        }
        crate::limits::classify_with_clock(error, &["try again at "], now)
    }

    fn check_tools(&self, tools: &ToolSet) -> Result<(), Unsupported> {
        if tools.edit && !tools.shell {
            return Err(Unsupported {
                harness: Harness::Codex,
                restriction: "a tool list that allows edits but no shell (every Codex turn has a \
                              shell, which can change any file)"
                    .to_owned(),
            });
        }
        Ok(())
    }

    fn prepare(&self, plan: &mut Plan, user: &dyn UserEnv) -> Result<(), HarnessError> {
        let home = codex_home(plan);
        fs_err::create_dir_all(&home)
            .map_err(HarnessError::io(format!("creating {}", home.display())))?;
        if let Some(user_home) = user.dir("CODEX_HOME", ".codex") {
            copy_if_present(&user_home.join("config.toml"), &home.join("config.toml"))?;
            copy_if_present(&user_home.join("auth.json"), &home.join("auth.json"))?;
        }
        if plan.replace_system_prompt {
            write_text(&plan.dir.join("instructions.md"), &plan.instructions)?;
        }
        plan.configured_model = fs_err::read_to_string(home.join("config.toml"))
            .ok()
            .and_then(|text| configured_model(&text));
        plan.env
            .push(("CODEX_HOME".to_owned(), home.display().to_string()));
        Ok(())
    }

    fn headless_args(&self, plan: &Plan, prompt: &str, session: Option<&str>) -> Vec<String> {
        let mut args: Vec<String> = vec!["exec".into()];
        if let Some(session) = session {
            args.extend(["resume".into(), session.into()]);
        }
        args.extend(["--json".into(), "--skip-git-repo-check".into()]);
        args.extend(common_args(plan));
        args.push("--".into());
        args.push(prompt.into());
        args
    }

    fn interactive_args(&self, plan: &Plan) -> Vec<String> {
        // Without `--no-daemon` the TUI starts a shared background app-server that outlives
        // it, with the sheep's MCP server still attached.
        let mut args: Vec<String> = vec!["--no-daemon".into()];
        args.extend(common_args(plan));
        args
    }

    fn ready_text(&self) -> &'static str {
        "Ask Codex"
    }

    fn busy(&self, screen: &str) -> bool {
        screen.contains("esc to interrupt")
    }

    fn screen_error(&self, screen: &str) -> Option<String> {
        // `■ {"error":{"message":…}}`, wrapped, above the prompt (`›`).
        crate::screen_block(screen, "■ ", &["›", "■"]).map(|text| crate::provider_message(&text))
    }

    fn read_event(&self, event: &Value, turn: &mut Turn) {
        match event["type"].as_str() {
            Some("thread.started") => {
                turn.session = event["thread_id"].as_str().map(str::to_owned);
            }
            Some("item.started") => started(&event["item"], turn),
            Some("item.completed") => completed(&event["item"], turn),
            Some("turn.completed") => {
                let usage = &event["usage"];
                let count = |key: &str| usage[key].as_u64().unwrap_or(0);
                let cached = count("cached_input_tokens");
                turn.tokens(
                    count("input_tokens").saturating_sub(cached),
                    count("output_tokens"),
                    cached,
                    count("cache_write_input_tokens"),
                );
            }
            Some("turn.failed") => {
                turn.error(
                    event["error"]["message"]
                        .as_str()
                        .unwrap_or("the turn failed"),
                );
            }
            // A top-level error ends the turn (an `error` item is only a warning), except Codex's
            // notice of its own retries: `Reconnecting... 1/5 (<the error>)`.
            Some("error") => {
                let message = event["message"].as_str().unwrap_or("error");
                match reconnecting(message) {
                    Some(retry) => turn.retrying(&retry),
                    None => turn.error(message),
                }
            }
            _ => {}
        }
    }

    fn interactive_session(&self, plan: &Plan) -> Option<String> {
        // The rollout's first line is the session's `session_meta`, with its id.
        let rollout =
            crate::find_file(&codex_home(plan).join("sessions"), "rollout-", ".jsonl", 3)?;
        let text = fs_err::read_to_string(rollout).ok()?;
        let meta: Value = serde_json::from_str(text.lines().next()?).ok()?;
        meta["payload"]["id"].as_str().map(str::to_owned)
    }

    fn read_transcript(&self, lines: &str, turn: &mut Turn) {
        for line in lines.lines() {
            let Ok(record) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            let payload = &record["payload"];
            match (record["type"].as_str(), payload["type"].as_str()) {
                (Some("response_item"), Some("function_call")) => {
                    let name = payload["name"].as_str().unwrap_or("tool");
                    let name = match payload["namespace"].as_str() {
                        Some(namespace) => format!("{namespace}__{name}"),
                        None => name.to_owned(),
                    };
                    let arguments = payload["arguments"]
                        .as_str()
                        .and_then(|text| serde_json::from_str(text).ok())
                        .unwrap_or(Value::Null);
                    turn.remember_call(payload["call_id"].as_str().unwrap_or_default(), &name);
                    turn.tool_call(&name, &arguments);
                }
                (Some("response_item"), Some("function_call_output")) => {
                    let name = turn.call_name(payload["call_id"].as_str().unwrap_or_default());
                    let output = match &payload["output"] {
                        Value::String(text) => text.clone(),
                        other => other
                            .as_array()
                            .into_iter()
                            .flatten()
                            .filter_map(|part| part["text"].as_str())
                            .collect::<Vec<_>>()
                            .join("\n"),
                    };
                    turn.tool_result(&name, &output, false);
                }
                (Some("response_item"), Some("message")) if payload["role"] == "assistant" => {
                    for part in payload["content"].as_array().into_iter().flatten() {
                        turn.text(part["text"].as_str().unwrap_or_default());
                    }
                }
                (Some("event_msg"), Some("token_count")) => {
                    let usage = &payload["info"]["last_token_usage"];
                    let count = |key: &str| usage[key].as_u64().unwrap_or(0);
                    let cached = count("cached_input_tokens");
                    turn.tokens(
                        count("input_tokens").saturating_sub(cached),
                        count("output_tokens"),
                        cached,
                        count("cache_write_input_tokens"),
                    );
                }
                (Some("event_msg"), Some("error")) => {
                    turn.error(payload["message"].as_str().unwrap_or("error"));
                }
                (Some("event_msg"), Some("thread_settings_applied")) => {
                    if let Some(model) = payload["thread_settings"]["model"].as_str() {
                        turn.model = Some(model.to_owned());
                    }
                }
                _ => {}
            }
        }
    }

    fn transcript(&self, plan: &Plan, session: &str) -> Option<PathBuf> {
        crate::find_file(&codex_home(plan).join("sessions"), session, ".jsonl", 3)
    }
}

/// The name Shepherd shows for a Codex item's tool.
fn tool_name(item: &Value) -> String {
    match item["type"].as_str() {
        Some("command_execution") => "shell".to_owned(),
        Some("mcp_tool_call") => format!(
            "mcp__{}__{}",
            item["server"].as_str().unwrap_or("mcp"),
            item["tool"].as_str().unwrap_or("tool")
        ),
        Some("file_change") => "apply_patch".to_owned(),
        Some("web_search") => "web_search".to_owned(),
        Some(other) => other.to_owned(),
        None => "tool".to_owned(),
    }
}

fn is_tool(item: &Value) -> bool {
    matches!(
        item["type"].as_str(),
        Some("command_execution" | "mcp_tool_call" | "file_change" | "web_search")
    )
}

fn started(item: &Value, turn: &mut Turn) {
    if !is_tool(item) {
        return;
    }
    let id = item["id"].as_str().unwrap_or_default();
    let name = tool_name(item);
    turn.remember_call(id, &name);
    let arguments = match item["type"].as_str() {
        Some("command_execution") => item["command"].clone(),
        Some("mcp_tool_call") => item["arguments"].clone(),
        _ => Value::Null,
    };
    turn.tool_call(&name, &arguments);
}

fn completed(item: &Value, turn: &mut Turn) {
    match item["type"].as_str() {
        Some("agent_message") => turn.text(item["text"].as_str().unwrap_or_default()),
        Some(_) if is_tool(item) => {
            let id = item["id"].as_str().unwrap_or_default();
            let known = turn.call_name(id);
            let name = if known == "tool" {
                // Some items are only ever reported completed.
                let name = tool_name(item);
                turn.tool_call(&name, &Value::Null);
                name
            } else {
                known
            };
            let (output, failed) = match item["type"].as_str() {
                Some("command_execution") => (
                    item["aggregated_output"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned(),
                    item["exit_code"].as_i64().is_some_and(|code| code != 0),
                ),
                Some("mcp_tool_call") => {
                    let text = item["result"]["content"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|c| c["text"].as_str())
                        .collect::<Vec<_>>()
                        .join("\n");
                    let error = item["error"]["message"].as_str().map(str::to_owned);
                    (error.clone().unwrap_or(text), error.is_some())
                }
                _ => (
                    item["status"].as_str().unwrap_or_default().to_owned(),
                    false,
                ),
            };
            turn.tool_result(&name, &output, failed);
        }
        _ => {}
    }
}

/// The overrides every Codex command line of a sheep carries.
fn common_args(plan: &Plan) -> Vec<String> {
    let mut config: Vec<(String, String)> = vec![
        ("check_for_update_on_startup".into(), "false".into()),
        ("analytics.enabled".into(), "false".into()),
    ];
    let (program, args) = plan
        .mcp
        .split_first()
        .expect("the sheep server has a program");
    let server = format!("mcp_servers.{SERVER}");
    config.extend([
        (format!("{server}.command"), toml_string(program)),
        (format!("{server}.args"), toml_array(args)),
        (
            format!("{server}.env_vars"),
            toml_array(&crate::compose::SHEEP_VARS.map(String::from)),
        ),
        (format!("{server}.required"), "true".into()),
        (
            format!("{server}.default_tools_approval_mode"),
            toml_string("approve"),
        ),
    ]);
    if !plan.instructions.trim().is_empty() {
        if plan.replace_system_prompt {
            let file = plan.dir.join("instructions.md");
            config.push((
                "model_instructions_file".into(),
                toml_string(&file.display().to_string()),
            ));
        } else {
            config.push((
                "developer_instructions".into(),
                toml_string(&plan.instructions),
            ));
        }
    }
    if let Some(effort) = plan.thinking.map(effort) {
        config.push(("model_reasoning_effort".into(), toml_string(effort)));
    }
    let tools = plan.tool_set();
    if tools.as_ref().is_some_and(|t| !t.web) {
        config.push(("web_search".into(), toml_string("disabled")));
    }
    let mut args: Vec<String> = Vec::new();
    for (key, value) in config {
        args.extend(["-c".into(), format!("{key}={value}")]);
    }
    if let Some(model) = &plan.model {
        args.extend(["-m".into(), model.clone()]);
    }
    match tools {
        Some(tools) if tools.is_read_only() => args.extend([
            "-c".into(),
            format!("sandbox_mode={}", toml_string("read-only")),
            "-c".into(),
            format!("approval_policy={}", toml_string("never")),
        ]),
        _ => args.push("--dangerously-bypass-approvals-and-sandbox".into()),
    }
    args
}

/// Codex's reasoning effort for a thinking level.
fn effort(level: ThinkingLevel) -> &'static str {
    match level {
        ThinkingLevel::Off => "none",
        ThinkingLevel::Minimal => "minimal",
        ThinkingLevel::Low => "low",
        ThinkingLevel::Medium => "medium",
        ThinkingLevel::High => "high",
        ThinkingLevel::Xhigh | ThinkingLevel::Max => "xhigh",
    }
}

/// Codex's notice that it retries a refused request itself (`request_max_retries`,
/// `stream_max_retries`): `Reconnecting... 2/5 (unexpected status 401 Unauthorized: …)` or
/// `(exceeded retry limit, last status: 429 Too Many Requests)`, read as the retry of the
/// error in brackets with the status it names.
fn reconnecting(message: &str) -> Option<crate::AgentRetry> {
    let rest = message.strip_prefix("Reconnecting...")?.trim_start();
    let (_, error) = rest.split_once('(')?;
    let error = error.strip_suffix(')').unwrap_or(error).trim();
    let status = error
        .find("status ")
        .map(|at| &error[at + "status ".len()..])
        .and_then(|after| after.get(..3))
        .and_then(|digits| digits.parse().ok());
    Some(crate::AgentRetry {
        status,
        error: error.to_owned(),
        delay_ms: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Codex 0.171.0's notices of its own retries, against the fake provider.
    #[test]
    fn its_own_retries_are_read_as_retries() {
        let read = |lines: &[Value]| {
            let mut turn = Turn::default();
            turn.provider = Some("openai");
            for line in lines {
                Codex.read_event(line, &mut turn);
            }
            turn.finish();
            turn
        };
        let bad_key = read(&[json!({"type": "error", "message": "Reconnecting... 1/5 \
            (unexpected status 401 Unauthorized: Incorrect API key provided, url: \
            http://127.0.0.1:1/v1/responses)"})]);
        let stop = bad_key.stop_now.unwrap();
        assert!(
            stop.starts_with(
                "openai answered HTTP 401 (unexpected status 401 Unauthorized: \
                              Incorrect API key provided"
            ),
            "{stop}"
        );
        assert_eq!(
            bad_key.error, None,
            "a retry notice is not the error that ended the run"
        );
        let limited = read(&[
            json!({"type": "error", "message": "Reconnecting... 1/5 (exceeded retry limit, \
                last status: 429 Too Many Requests)"}),
            json!({"type": "error", "message": "exceeded retry limit, last status: 429 Too \
                Many Requests"}),
        ]);
        assert_eq!(limited.stop_now, None);
        assert_eq!(
            limited.error.as_deref(),
            Some("exceeded retry limit, last status: 429 Too Many Requests")
        );
    }

    #[test]
    fn a_rollout_gives_calls_tokens_and_final_words() {
        let usage = serde_json::json!({"input_tokens": 10, "cached_input_tokens": 4,
            "output_tokens": 5, "cache_write_input_tokens": 0});
        let lines = [
            serde_json::json!({"type": "event_msg", "payload": {"type": "thread_settings_applied",
                "thread_settings": {"model": "gpt-x"}}}),
            serde_json::json!({"type": "response_item", "payload": {"type": "function_call",
                "name": "exec_command", "arguments": "{\"cmd\":\"ls\"}", "call_id": "c0"}}),
            serde_json::json!({"type": "response_item", "payload": {"type": "function_call_output",
                "call_id": "c0", "output": "ok"}}),
            serde_json::json!({"type": "event_msg", "payload": {"type": "token_count",
                "info": {"last_token_usage": usage}}}),
            serde_json::json!({"type": "response_item", "payload": {"type": "function_call",
                "name": "shepherd_done", "namespace": "mcp__shepherd", "arguments": "{}",
                "call_id": "c1"}}),
            serde_json::json!({"type": "response_item", "payload": {"type": "message",
                "role": "assistant", "content": [{"type": "output_text", "text": "Done."}]}}),
        ]
        .map(|line| line.to_string())
        .join("\n");
        let mut turn = Turn::default();
        Codex.read_transcript(&lines, &mut turn);
        turn.finish();
        assert_eq!(turn.tool_calls, 2);
        assert!(turn.done_called);
        assert_eq!(
            (turn.tokens_in, turn.tokens_out, turn.cache_read),
            (6, 5, 4)
        );
        assert_eq!(turn.text.as_deref(), Some("Done."));
        assert_eq!(turn.model.as_deref(), Some("gpt-x"));
    }

    #[test]
    fn the_configured_model_is_the_top_level_one() {
        let text = "# mine\nmodel = \"gpt-5\"\n[profiles.x]\nmodel = \"o3\"\n";
        assert_eq!(configured_model(text).as_deref(), Some("gpt-5"));
        assert_eq!(configured_model("[a]\nmodel = \"x\"\n"), None);
        assert_eq!(configured_model("model_provider = \"p\"\n"), None);
    }

    #[test]
    fn edits_without_a_shell_are_refused_and_read_only_is_not() {
        let set = |names: &[&str]| {
            ToolSet::classify(&names.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>())
        };
        assert!(Codex.check_tools(&set(&["read", "edit"])).is_err());
        assert!(Codex.check_tools(&set(&["read", "grep"])).is_ok());
        assert!(Codex.check_tools(&set(&["bash", "edit"])).is_ok());
        let err = Codex.check_tools(&set(&["write"])).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("Codex cannot honour a tool list that allows edits but no shell")
        );
    }
}
