//! Gemini CLI: Gemini `streamGenerateContent?alt=sse` at `GOOGLE_GEMINI_BASE_URL`, settings in
//! `$GEMINI_CLI_HOME/.gemini/settings.json`.
//!
//! - `security.auth.selectedType = "gemini-api-key"` is required: with only the variables set,
//!   the base URL makes it pick the `gateway` auth type, which its own validator rejects
//!   ("Invalid auth method selected.", exit 41). The base URL is still used.
//! - A per-run `GEMINI_CLI_HOME` is the only clean way to give it settings:
//!   `GEMINI_CLI_SYSTEM_SETTINGS_PATH` is ignored under a group- or world-writable directory
//!   such as `/tmp`.
//! - `GEMINI_CLI_TRUST_WORKSPACE=true` trusts the work directory (else project settings and MCP
//!   servers are skipped and the approval mode is forced to default); `--yolo` approves tool
//!   calls; MCP servers with `"trust": true` never ask.
//! - `GEMINI_CLI_NO_RELAUNCH=true` keeps it one process (it relaunches itself with a bigger heap
//!   otherwise).
//! - As a user's own installation ([`super::AgentEnvBuilder::user_setup`]) its settings are
//!   `~/.gemini/settings.json` (no `GEMINI_CLI_HOME`) and the work directory is not trusted:
//!   a headless run there needs `--skip-trust`, and its stdio MCP servers do not start without.
//! - Headless output (`-o stream-json`): `init` (session id, model), `message` deltas,
//!   `tool_use`, `tool_result`, and `result` with status and token stats (no cost); an error
//!   is an `error` event or a `result` whose status is `error`, and a non-zero exit.

use std::ffi::OsString;
use std::path::PathBuf;

use serde_json::{Map, Value, json};

use super::{API_KEY, AgentEnv, AgentError, Outcome};

fn gemini_home(env: &AgentEnv) -> PathBuf {
    if env.is_user_setup() {
        env.home().to_owned()
    } else {
        env.root().join("gemini-home")
    }
}

pub(super) fn configure(env: &AgentEnv) -> Result<(), AgentError> {
    let mut servers = Map::new();
    for server in env.mcp_servers() {
        let vars: Map<String, Value> = server
            .env
            .iter()
            .map(|(k, v)| (k.clone(), json!(v)))
            .collect();
        servers.insert(
            server.name.clone(),
            json!({"command": server.command_text(), "args": server.args, "env": vars,
                   "trust": true}),
        );
    }
    let settings = json!({
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "telemetry": {"enabled": false},
        "privacy": {"usageStatisticsEnabled": false},
        // One attempt per request: a 429 ends the turn for Shepherd to ride out instead of
        // being retried with backoff inside it.
        "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false,
                    "maxAttempts": 1},
        // The user's default model: without one Gemini CLI routes each turn through a
        // classifier request first, which an endpoint that is not Google's cannot answer.
        "model": {"name": env.model()},
        "mcpServers": servers,
    });
    env.write(
        &gemini_home(env).join(".gemini").join("settings.json"),
        &settings.to_string(),
    )
}

pub(super) fn vars(env: &AgentEnv) -> Vec<(String, OsString)> {
    let pairs: [(&str, OsString); 5] = [
        ("GEMINI_CLI_HOME", gemini_home(env).into()),
        ("GOOGLE_GEMINI_BASE_URL", env.base_url().into()),
        ("GEMINI_API_KEY", API_KEY.into()),
        ("GEMINI_CLI_TRUST_WORKSPACE", "true".into()),
        ("GEMINI_CLI_NO_RELAUNCH", "true".into()),
    ];
    pairs
        .into_iter()
        .filter(|(name, _)| {
            !(env.is_user_setup()
                && matches!(*name, "GEMINI_CLI_HOME" | "GEMINI_CLI_TRUST_WORKSPACE"))
        })
        .map(|(name, value)| (name.to_owned(), value))
        .collect()
}

pub(super) fn headless_args(env: &AgentEnv, prompt: &str) -> Vec<OsString> {
    vec![
        "-p".into(),
        prompt.into(),
        "--yolo".into(),
        "-o".into(),
        "stream-json".into(),
        "-m".into(),
        env.model().into(),
    ]
}

pub(super) fn tui_args(env: &AgentEnv) -> Vec<OsString> {
    vec!["--yolo".into(), "-m".into(), env.model().into()]
}

pub(super) fn outcome(events: &[Value]) -> Outcome {
    let mut outcome = Outcome {
        events: events.to_vec(),
        ..Outcome::default()
    };
    // The final text: the assistant's message deltas after the last tool result.
    let mut text = String::new();
    for event in events {
        match event["type"].as_str() {
            Some("init") => {
                outcome.session_id = event["session_id"].as_str().map(str::to_owned);
                outcome.model = event["model"].as_str().map(str::to_owned);
            }
            Some("message") if event["role"] == "assistant" => {
                text.push_str(event["content"].as_str().unwrap_or_default());
            }
            Some("tool_use" | "tool_result") => text.clear(),
            Some("error") => {
                outcome.error = event["message"]
                    .as_str()
                    .or_else(|| event["error"]["message"].as_str())
                    .map(str::to_owned);
            }
            Some("result") => {
                if event["status"] == "error" && outcome.error.is_none() {
                    outcome.error = Some(
                        event["error"]["message"]
                            .as_str()
                            .map_or_else(|| event["error"].to_string(), str::to_owned),
                    );
                }
                outcome.input_tokens = event["stats"]["input_tokens"].as_u64();
                outcome.output_tokens = event["stats"]["output_tokens"].as_u64();
            }
            _ => {}
        }
    }
    if !text.is_empty() {
        outcome.final_text = Some(text);
    }
    outcome
}
