//! Claude Code: Anthropic messages at `ANTHROPIC_BASE_URL`, settings in `CLAUDE_CONFIG_DIR`.
//!
//! - MCP servers come from `--mcp-config FILE --strict-mcp-config` (nothing else is loaded);
//!   a run given none uses what its settings hold (e.g. a server added with `claude mcp add`).
//!   In `-p` mode they connect in the background and can miss the first request unless
//!   `MCP_CONNECTION_NONBLOCKING=0`, which makes Claude wait for them.
//! - Permissions: `--allowedTools "Bash Edit Write mcp__<server> …"`. The bypass modes refuse
//!   to run as root unless `IS_SANDBOX=1`, so they are not used.
//! - `CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1` and the `DISABLE_*` variables keep it off
//!   the network (bootstrap, MCP registry, metrics, update checks).
//! - The TUI's first start would show onboarding and a connectivity check that exits offline;
//!   `.claude.json` in the config directory answers onboarding, the API key prompt and folder
//!   trust.
//! - As a user's own installation ([`super::AgentEnvBuilder::user_setup`]) its state is
//!   `~/.claude.json` (where `claude mcp add --scope user` writes) and its settings
//!   `~/.claude/settings.json`, with no `CLAUDE_CONFIG_DIR` and no MCP connection wait.
//! - Headless output (`--output-format stream-json --verbose`): a `system`/`init` event
//!   (session id, model, MCP servers and their status), the messages, and a `result` event
//!   with the final text or error, tokens and a cost computed from the model name.

use std::ffi::OsString;
use std::path::PathBuf;

use serde_json::{Map, Value, json};

use super::{AgentEnv, AgentError, Outcome};

/// The API key Claude Code is given (it only checks the `sk-ant-` shape).
pub(super) const API_KEY: &str = "sk-ant-fake-key-0000000000000000";

fn config_dir(env: &AgentEnv) -> PathBuf {
    env.home().join(".claude")
}

fn mcp_config(env: &AgentEnv) -> PathBuf {
    env.root().join("claude-mcp.json")
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
            json!({"type": "stdio", "command": server.command_text(), "args": server.args,
                   "env": vars}),
        );
    }
    env.write(
        &mcp_config(env),
        &json!({ "mcpServers": servers }).to_string(),
    )?;
    let key_suffix: String = API_KEY.chars().skip(API_KEY.len() - 20).collect();
    let work = env.work_dir().to_string_lossy().into_owned();
    let state = json!({
        "hasCompletedOnboarding": true,
        "theme": "dark",
        "autoUpdates": false,
        "customApiKeyResponses": {"approved": [key_suffix], "rejected": []},
        "projects": { work: {"hasTrustDialogAccepted": true,
                             "hasCompletedProjectOnboarding": true} },
    });
    let state_file = if env.is_user_setup() {
        env.home().join(".claude.json")
    } else {
        config_dir(env).join(".claude.json")
    };
    env.write(&state_file, &state.to_string())
}

pub(super) fn vars(env: &AgentEnv) -> Vec<(String, OsString)> {
    let pairs: [(&str, OsString); 9] = [
        ("CLAUDE_CONFIG_DIR", config_dir(env).into()),
        ("ANTHROPIC_BASE_URL", env.base_url().into()),
        ("ANTHROPIC_API_KEY", API_KEY.into()),
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".into()),
        ("DISABLE_AUTOUPDATER", "1".into()),
        ("DISABLE_TELEMETRY", "1".into()),
        ("DISABLE_ERROR_REPORTING", "1".into()),
        ("MCP_CONNECTION_NONBLOCKING", "0".into()),
        // A user who lets Shepherd ride out rate limits turns Claude Code's own retries off:
        // otherwise a 429 is retried with backoff inside the turn before Shepherd sees it.
        ("CLAUDE_CODE_MAX_RETRIES", "0".into()),
    ];
    pairs
        .into_iter()
        .filter(|(name, _)| {
            !(env.is_user_setup()
                && matches!(*name, "CLAUDE_CONFIG_DIR" | "MCP_CONNECTION_NONBLOCKING"))
        })
        .map(|(name, value)| (name.to_owned(), value))
        .collect()
}

fn common_args(env: &AgentEnv) -> Vec<OsString> {
    let mut allowed = String::from("Bash Edit Write");
    for name in env.mcp_servers().iter().map(|s| &s.name) {
        allowed.push_str(&format!(" mcp__{name}"));
    }
    let mut args: Vec<OsString> = vec!["--model".into(), env.model().into()];
    if !env.mcp_servers().is_empty() {
        args.extend([
            "--mcp-config".into(),
            mcp_config(env).into(),
            "--strict-mcp-config".into(),
        ]);
    }
    args.extend(["--allowedTools".into(), allowed.into()]);
    args
}

pub(super) fn headless_args(env: &AgentEnv, prompt: &str) -> Vec<OsString> {
    let mut args: Vec<OsString> = vec![
        "-p".into(),
        prompt.into(),
        "--output-format".into(),
        "stream-json".into(),
        "--verbose".into(),
    ];
    args.extend(common_args(env));
    args
}

pub(super) fn tui_args(env: &AgentEnv) -> Vec<OsString> {
    common_args(env)
}

pub(super) fn outcome(events: &[Value]) -> Outcome {
    let mut outcome = Outcome {
        events: events.to_vec(),
        ..Outcome::default()
    };
    for event in events {
        match event["type"].as_str() {
            Some("system") if event["subtype"] == "init" => {
                outcome.session_id = event["session_id"].as_str().map(str::to_owned);
                outcome.model = event["model"].as_str().map(str::to_owned);
            }
            Some("result") => {
                let text = event["result"].as_str().map(str::to_owned);
                if event["is_error"] == json!(true) {
                    outcome.error = text.or_else(|| Some(event["subtype"].to_string()));
                } else {
                    outcome.final_text = text;
                }
                outcome.session_id = event["session_id"].as_str().map(str::to_owned);
                outcome.input_tokens = event["usage"]["input_tokens"].as_u64();
                outcome.output_tokens = event["usage"]["output_tokens"].as_u64();
                outcome.cost_usd = event["total_cost_usd"].as_f64();
            }
            _ => {}
        }
    }
    outcome
}
