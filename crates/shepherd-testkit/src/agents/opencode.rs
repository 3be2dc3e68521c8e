//! opencode: OpenAI chat completions through its bundled `@ai-sdk/openai-compatible`
//! provider, settings in the file `OPENCODE_CONFIG` names.
//!
//! - The fake model is a provider `fake` (`baseURL` …`/v1`); the model is `fake/<id>`, priced
//!   like a real one so that opencode computes a cost from the tokens it reports.
//! - MCP servers are `mcp.<name>` (`type: "local"`, `command` as an argv list, `environment`);
//!   their tools are allowed by default and reach the model as `<name>_<tool>`. After a call
//!   it sends the server `notifications/cancelled` for that request: ignore it.
//! - `run` waits for an open stdin to end. Besides the turn it asks the model for a title in a
//!   request without tools (answer it with the script's `toolless` step).
//! - On start it installs `@opencode-ai/plugin` into its config directory with npm in the
//!   background: `npm_config_registry` points at a closed local port so that nothing leaves
//!   the machine (the failure is only logged). `OPENCODE_DISABLE_MODELS_FETCH`,
//!   `OPENCODE_DISABLE_AUTOUPDATE` and `OPENCODE_DISABLE_LSP_DOWNLOAD` stop the other downloads.
//! - Its first start in a fresh HOME migrates a database (a few seconds, ~15 s for the TUI's
//!   first paint); later starts are faster.
//! - As a user's own installation ([`super::AgentEnvBuilder::user_setup`]) its configuration
//!   is `~/.config/opencode/opencode.json` (no `OPENCODE_CONFIG`) and grants no permission.
//! - Headless output (`run --format json`): one JSON object per event (`step_start`,
//!   `tool_use`, `text`, `step_finish` with tokens and cost, `error`), each with the
//!   `sessionID`.

use std::ffi::OsString;
use std::path::PathBuf;

use serde_json::{Map, Value, json};

use super::{API_KEY, AgentEnv, AgentError, Outcome};

fn config(env: &AgentEnv) -> PathBuf {
    if env.is_user_setup() {
        env.home().join(".config/opencode/opencode.json")
    } else {
        env.root().join("opencode.json")
    }
}

pub(super) fn configure(env: &AgentEnv) -> Result<(), AgentError> {
    let mut servers = Map::new();
    for server in env.mcp_servers() {
        let mut command = vec![server.command_text()];
        command.extend(server.args.iter().cloned());
        let vars: Map<String, Value> = server
            .env
            .iter()
            .map(|(k, v)| (k.clone(), json!(v)))
            .collect();
        servers.insert(
            server.name.clone(),
            json!({"type": "local", "command": command, "enabled": true, "environment": vars}),
        );
    }
    let model = env.model();
    let mut settings = json!({
        "$schema": "https://opencode.ai/config.json",
        "model": format!("fake/{model}"),
        "small_model": format!("fake/{model}"),
        "autoupdate": false,
        "share": "disabled",
        "provider": {"fake": {
            "npm": "@ai-sdk/openai-compatible",
            "name": "Fake model",
            "options": {"baseURL": format!("{}/v1", env.base_url()), "apiKey": API_KEY},
            // A price (dollars per million tokens), so that opencode reports a cost.
            "models": { model: {"name": "Fake model", "cost": {"input": 3, "output": 15}} },
        }},
        "mcp": servers,
        "permission": {"bash": "allow", "edit": "allow", "webfetch": "deny"},
    });
    if env.is_user_setup()
        && let Some(map) = settings.as_object_mut()
    {
        map.remove("permission");
    }
    env.write(&config(env), &settings.to_string())
}

pub(super) fn vars(env: &AgentEnv) -> Vec<(String, OsString)> {
    let pairs: [(&str, OsString); 5] = [
        ("OPENCODE_CONFIG", config(env).into()),
        ("OPENCODE_DISABLE_MODELS_FETCH", "1".into()),
        ("OPENCODE_DISABLE_AUTOUPDATE", "1".into()),
        ("OPENCODE_DISABLE_LSP_DOWNLOAD", "1".into()),
        ("npm_config_registry", "http://127.0.0.1:9/".into()),
    ];
    pairs
        .into_iter()
        .filter(|(name, _)| !(env.is_user_setup() && *name == "OPENCODE_CONFIG"))
        .map(|(name, value)| (name.to_owned(), value))
        .collect()
}

pub(super) fn headless_args(_env: &AgentEnv, prompt: &str) -> Vec<OsString> {
    vec![
        "run".into(),
        "--format".into(),
        "json".into(),
        prompt.into(),
    ]
}

pub(super) fn outcome(events: &[Value]) -> Outcome {
    let mut outcome = Outcome {
        events: events.to_vec(),
        ..Outcome::default()
    };
    let (mut input, mut output, mut cost) = (0, 0, 0.0);
    let mut steps = false;
    for event in events {
        if let Some(session) = event["sessionID"].as_str() {
            outcome.session_id = Some(session.to_owned());
        }
        match event["type"].as_str() {
            Some("text") => {
                outcome.final_text = event["part"]["text"].as_str().map(str::to_owned);
            }
            Some("step_finish") => {
                steps = true;
                let part = &event["part"];
                input += part["tokens"]["input"].as_u64().unwrap_or(0);
                output += part["tokens"]["output"].as_u64().unwrap_or(0);
                cost += part["cost"].as_f64().unwrap_or(0.0);
            }
            Some("error") => {
                let error = &event["error"];
                outcome.error = error["data"]["message"]
                    .as_str()
                    .or_else(|| error["message"].as_str())
                    .map_or_else(|| error.to_string(), str::to_owned)
                    .into();
            }
            _ => {}
        }
    }
    if steps {
        outcome.input_tokens = Some(input);
        outcome.output_tokens = Some(output);
        outcome.cost_usd = Some(cost);
    }
    outcome
}
