//! Codex CLI: OpenAI responses (nothing else: `wire_api = "chat"` is refused), settings in
//! `$CODEX_HOME/config.toml`.
//!
//! - The fake model is a `[model_providers.fake]` with `wire_api = "responses"`; its key is
//!   read from the variable named by `env_key`. No retries, so a provider error ends the turn.
//! - MCP servers are `[mcp_servers.<name>]` with `required = true` (else a slow server misses
//!   the first turn; a server that cannot start then fails the run at once) and
//!   `default_tools_approval_mode = "approve"` (else the TUI asks before each call). The model
//!   sees them as a `namespace` tool `mcp__<name>`.
//! - `exec` needs `--skip-git-repo-check` outside a trusted git repository and waits for an
//!   open stdin to end; `--dangerously-bypass-approvals-and-sandbox` works as root.
//! - The TUI must run with `--no-daemon`: otherwise it starts a background `app-server` that
//!   outlives it (with the MCP servers attached) and copies the package into `CODEX_HOME`. The
//!   work directory is marked trusted (`[projects."<dir>"]`), so no trust prompt.
//! - `CODEX_HOME` under `/tmp` makes it warn "Refusing to create helper binaries under temporary
//!   dir" on stderr: harmless.
//! - As a user's own installation ([`super::AgentEnvBuilder::user_setup`]) its home is
//!   `~/.codex` (no `CODEX_HOME`), where `codex mcp add` writes.
//! - Headless output (`exec --json`): `thread.started` (thread id), `item.*` (commands, MCP calls,
//!   agent messages), `turn.completed` with usage, or `turn.failed` / `error`. No cost, no model.

use std::ffi::OsString;
use std::path::PathBuf;

use serde_json::{Map, Value, json};

use super::{API_KEY, AgentEnv, AgentError, Outcome};

/// The variable that holds the fake provider's key.
const KEY_VAR: &str = "SHEPHERD_FAKE_API_KEY";

fn codex_home(env: &AgentEnv) -> PathBuf {
    if env.is_user_setup() {
        env.home().join(".codex")
    } else {
        env.root().join("codex-home")
    }
}

fn last_message(env: &AgentEnv) -> PathBuf {
    env.root().join("codex-last-message.txt")
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
                   "required": true, "default_tools_approval_mode": "approve"}),
        );
    }
    let work = env.work_dir().to_string_lossy().into_owned();
    let config = json!({
        "model": env.model(),
        "model_provider": "fake",
        "check_for_update_on_startup": false,
        "analytics": {"enabled": false},
        "model_providers": {"fake": {
            "name": "Fake model",
            "base_url": format!("{}/v1", env.base_url()),
            "env_key": KEY_VAR,
            "wire_api": "responses",
            "request_max_retries": 0,
            "stream_max_retries": 0,
        }},
        "mcp_servers": servers,
        "projects": { work: {"trust_level": "trusted"} },
    });
    let text = toml::to_string(&config).map_err(|err| AgentError::Io {
        what: "writing Codex's config.toml".to_owned(),
        source: std::io::Error::other(err),
    })?;
    env.write(&codex_home(env).join("config.toml"), &text)
}

pub(super) fn vars(env: &AgentEnv) -> Vec<(String, OsString)> {
    let mut vars = vec![(KEY_VAR.to_owned(), API_KEY.into())];
    if !env.is_user_setup() {
        vars.push(("CODEX_HOME".to_owned(), codex_home(env).into()));
    }
    vars
}

pub(super) fn headless_args(env: &AgentEnv, prompt: &str) -> Vec<OsString> {
    vec![
        "exec".into(),
        "--json".into(),
        "--skip-git-repo-check".into(),
        "--dangerously-bypass-approvals-and-sandbox".into(),
        "--output-last-message".into(),
        last_message(env).into(),
        prompt.into(),
    ]
}

pub(super) fn tui_args() -> Vec<OsString> {
    vec![
        "--no-daemon".into(),
        "--dangerously-bypass-approvals-and-sandbox".into(),
    ]
}

pub(super) fn outcome(events: &[Value], env: &AgentEnv) -> Outcome {
    let mut outcome = Outcome {
        events: events.to_vec(),
        model: Some(env.model().to_owned()),
        ..Outcome::default()
    };
    let (mut input, mut output) = (0, 0);
    let mut usage_seen = false;
    for event in events {
        match event["type"].as_str() {
            Some("thread.started") => {
                outcome.session_id = event["thread_id"].as_str().map(str::to_owned);
            }
            Some("item.completed") if event["item"]["type"] == "agent_message" => {
                outcome.final_text = event["item"]["text"].as_str().map(str::to_owned);
            }
            Some("turn.completed") => {
                usage_seen = true;
                input += event["usage"]["input_tokens"].as_u64().unwrap_or(0);
                output += event["usage"]["output_tokens"].as_u64().unwrap_or(0);
            }
            Some("turn.failed") => {
                outcome.error = event["error"]["message"].as_str().map(str::to_owned);
            }
            // A top-level error event ends the run (an `error` *item* is only a warning, e.g.
            // unknown model metadata).
            Some("error") if outcome.error.is_none() => {
                outcome.error = event["message"].as_str().map(str::to_owned);
            }
            _ => {}
        }
    }
    if usage_seen {
        outcome.input_tokens = Some(input);
        outcome.output_tokens = Some(output);
    }
    outcome
}
