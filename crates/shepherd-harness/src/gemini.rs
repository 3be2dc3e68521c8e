//! Gemini CLI as a sheep.
//!
//! - Configuration: its own `GEMINI_CLI_HOME` under the sheep's directory; its
//!   `.gemini/settings.json` is the user's with Shepherd's laid over: the auth type (an API key
//!   in the environment means `gemini-api-key`; without a `selectedType`, a custom base URL makes
//!   it pick an auth type its own validator rejects), telemetry, usage statistics and updates
//!   off, and the sheep tools. The user's OAuth credentials are copied.
//!   `GEMINI_CLI_TRUST_WORKSPACE` trusts the working directory (else its MCP servers are
//!   skipped), `GEMINI_CLI_NO_RELAUNCH` keeps it one process.
//! - Sheep tools: `mcpServers.shepherd` running `shepherd mcp --sheep`, trusted (no approval),
//!   with the sheep's `SHEPHERD_*` variables allowed through the redaction Gemini CLI always
//!   applies to MCP servers' environments (it strips `SHEPHERD_TOKEN` by its name otherwise).
//! - Tools: a tool list becomes `tools.core`, Gemini's own allowlist of built-in tools (pi's and
//!   Claude Code's names translated), plus `mcp_shepherd_*` (the list filters MCP tools too);
//!   everything runs with `--yolo`, since what is not in the list does not exist.
//! - Instructions: the global context file `GEMINI.md` of its home (added to its prompt), or
//!   `GEMINI_SYSTEM_MD` with `omit-system-prompt`. Thinking is not mapped: Gemini CLI sets it
//!   per model, not per run.
//! - Headless: `-p TASK -o stream-json --yolo`, the first turn with `--session-id` (Shepherd
//!   picks it), later ones `--resume` it. Output: `init` (session, model), `message` deltas,
//!   `tool_use`, `tool_result`, `result` with status and tokens (no cost); an error is an
//!   `error` event or a `result` whose status is `error`.

use shepherd_core::limit::{Classified, ErrorClass};
use std::path::PathBuf;

use serde_json::{Value, json};
use shepherd_core::harness::Harness;

use crate::compose::{copy_if_present, merge, read_object, write_json, write_text};
use crate::profile::{Credentials, Login, Profile, Program, Provider};
use crate::{Adapter, HarnessError, Plan, Turn, UserEnv};

/// Gemini CLI's adapter.
#[derive(Debug)]
pub(crate) struct Gemini;

/// The name Shepherd's sheep server has in Gemini's settings.
const SERVER: &str = "shepherd";

fn gemini_home(plan: &Plan) -> PathBuf {
    plan.dir.join("gemini")
}

/// Gemini CLI's built-in tools for a definition's tool list.
fn core_tools(tools: &[String]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for tool in tools {
        let mapped: &[&str] = match tool.to_ascii_lowercase().as_str() {
            "read" => &["read_file", "read_many_files"],
            "grep" => &["grep_search"],
            "find" | "glob" => &["glob"],
            "ls" => &["list_directory"],
            "bash" => &["run_shell_command"],
            "edit" | "multiedit" => &["replace"],
            "write" => &["write_file"],
            "webfetch" => &["web_fetch"],
            "websearch" => &["google_web_search"],
            // Gemini's own names (read_file, …) pass through.
            _ => &[],
        };
        if mapped.is_empty() {
            if !names.contains(tool) {
                names.push(tool.clone());
            }
            continue;
        }
        for name in mapped {
            if !names.iter().any(|n| n == name) {
                names.push((*name).to_owned());
            }
        }
    }
    // `tools.core` filters MCP tools too: the sheep tools stay, whatever the list.
    names.push(format!("mcp_{SERVER}_*"));
    names
}

/// A Gemini CLI sheep: its key variables or the user's OAuth login, when the user's settings
/// pick one of those; nothing to check for Vertex or another kind of login.
fn credentials(_model: Option<&str>, user: &dyn UserEnv) -> Option<Credentials> {
    let dot = user.dir("GEMINI_CLI_HOME", "")?.join(".gemini");
    let settings = Value::Object(read_object(&dot.join("settings.json")));
    match settings["security"]["auth"]["selectedType"].as_str() {
        None | Some("gemini-api-key" | "oauth-personal") => Some(Credentials::own(
            &PROFILE,
            vec![Login::file(dot.join("oauth_creds.json"))],
        )),
        Some(_) => None,
    }
}

/// What Shepherd knows about Gemini CLI besides how its turns run.
pub(crate) const PROFILE: Profile = Profile {
    harness: Harness::Gemini,
    program: Program {
        var: "SHEPHERD_GEMINI",
        name: "gemini",
        install: "npm install -g @google/gemini-cli",
        version_home: Some("GEMINI_CLI_HOME"),
    },
    provider: Provider {
        name: Some("google"),
        endpoint_vars: &["GOOGLE_GEMINI_BASE_URL", "GEMINI_BASE_URL"],
        key_vars: &["GEMINI_API_KEY", "GOOGLE_API_KEY"],
        hosts: &[
            "generativelanguage.googleapis.com:443",
            "cloudcode-pa.googleapis.com:443",
            "oauth2.googleapis.com:443",
        ],
    },
    login_with: "Gemini CLI",
    credentials,
    provider_config: None,
};

impl Adapter for Gemini {
    fn profile(&self) -> &'static Profile {
        &PROFILE
    }

    fn classify_error(&self, error: &str, now: jiff::Timestamp) -> Classified {
        // Gemini CLI: "[API Error: Resource has been exhausted (e.g. check quota).\nSuggested
        // retry after 2s.]" for a 429, "You have exhausted your daily quota on this model." when
        // the day's allowance is spent, "The model is overloaded." for a 503.
        let _ = now;
        let shared = shepherd_core::limit::classify(error);
        if error.contains("exhausted your daily quota") {
            return Classified {
                class: ErrorClass::UsageLimit,
                ..shared
            };
        }
        shared
    }

    fn prepare(&self, plan: &mut Plan, user: &dyn UserEnv) -> Result<(), HarnessError> {
        let home = gemini_home(plan);
        let dot = home.join(".gemini");
        let mut settings = Value::Object(Default::default());
        if let Some(user_dot) = user.dir("GEMINI_CLI_HOME", "").map(|d| d.join(".gemini")) {
            settings = Value::Object(read_object(&user_dot.join("settings.json")));
            for file in ["oauth_creds.json", "google_accounts.json"] {
                copy_if_present(&user_dot.join(file), &dot.join(file))?;
            }
        }
        if settings["security"]["auth"]["selectedType"].is_null()
            && user.var("GEMINI_API_KEY").is_some()
        {
            merge(
                &mut settings,
                json!({"security": {"auth": {"selectedType": "gemini-api-key"}}}),
            );
        }
        let (program, args) = plan
            .mcp
            .split_first()
            .expect("the sheep server has a program");
        merge(
            &mut settings,
            json!({
                "telemetry": {"enabled": false},
                "privacy": {"usageStatisticsEnabled": false},
                "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
                "mcpServers": {SERVER: {"command": program, "args": args, "trust": true}},
                // Gemini CLI always strips variables named like secrets (`SHEPHERD_TOKEN`)
                // from an MCP server's environment, unless they are allowed by name.
                "security": {"environmentVariableRedaction": {
                    "allowed": crate::compose::SHEEP_VARS,
                }},
            }),
        );
        if let Some(tools) = &plan.tools {
            merge(&mut settings, json!({"tools": {"core": core_tools(tools)}}));
        }
        plan.configured_model = settings["model"]["name"]
            .as_str()
            .or(settings["model"].as_str())
            .map(str::to_owned);
        write_json(&dot.join("settings.json"), &settings)?;
        if !plan.instructions.trim().is_empty() {
            if plan.replace_system_prompt {
                let file = plan.dir.join("system.md");
                write_text(&file, &plan.instructions)?;
                plan.env
                    .push(("GEMINI_SYSTEM_MD".to_owned(), file.display().to_string()));
            } else {
                write_text(&dot.join("GEMINI.md"), &plan.instructions)?;
            }
        }
        plan.env.extend(
            [
                ("GEMINI_CLI_HOME", home.display().to_string()),
                ("GEMINI_CLI_TRUST_WORKSPACE", "true".to_owned()),
                ("GEMINI_CLI_NO_RELAUNCH", "true".to_owned()),
            ]
            .map(|(k, v)| (k.to_owned(), v)),
        );
        plan.session = Some(uuid::Uuid::new_v4().to_string());
        Ok(())
    }

    fn headless_args(&self, plan: &Plan, prompt: &str, session: Option<&str>) -> Vec<String> {
        let mut args: Vec<String> = vec![
            "-p".into(),
            prompt.into(),
            "-o".into(),
            "stream-json".into(),
            "--yolo".into(),
        ];
        if let Some(model) = &plan.model {
            args.extend(["-m".into(), model.clone()]);
        }
        match session {
            Some(session) => args.extend(["--resume".into(), session.into()]),
            None => {
                if let Some(id) = &plan.session {
                    args.extend(["--session-id".into(), id.clone()]);
                }
            }
        }
        args
    }

    fn interactive_args(&self, plan: &Plan) -> Vec<String> {
        let mut args: Vec<String> = vec!["--yolo".into()];
        if let Some(model) = &plan.model {
            args.extend(["-m".into(), model.clone()]);
        }
        if let Some(id) = &plan.session {
            args.extend(["--session-id".into(), id.clone()]);
        }
        args
    }

    fn ready_text(&self) -> &'static str {
        "Type your message"
    }

    fn busy(&self, screen: &str) -> bool {
        screen.contains("esc to cancel")
    }

    fn screen_error(&self, screen: &str) -> Option<String> {
        // `✕ [API Error: {"error":{"code":400,"message":…}}]`, wrapped, then an `ℹ` hint.
        crate::screen_block(screen, "✕ [API Error:", &["ℹ", ">", "✕"])
            .map(|text| crate::provider_message(text.strip_suffix(']').unwrap_or(&text).trim()))
    }

    fn read_event(&self, event: &Value, turn: &mut Turn) {
        match event["type"].as_str() {
            Some("init") => {
                turn.session = event["session_id"].as_str().map(str::to_owned);
                turn.model = event["model"].as_str().map(str::to_owned);
            }
            Some("message") if event["role"] == "assistant" => {
                let content = event["content"].as_str().unwrap_or_default();
                if event["delta"] == json!(true) {
                    turn.text_delta(content);
                } else {
                    turn.text(content);
                }
            }
            Some("tool_use") => {
                let name = event["tool_name"].as_str().unwrap_or("tool");
                turn.remember_call(event["tool_id"].as_str().unwrap_or_default(), name);
                turn.tool_call(name, &event["parameters"]);
            }
            Some("tool_result") => {
                let name = turn.call_name(event["tool_id"].as_str().unwrap_or_default());
                let output = match &event["output"] {
                    Value::String(text) => text.clone(),
                    Value::Null => event["error"]["message"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned(),
                    other => other.to_string(),
                };
                turn.tool_result(&name, &output, event["status"] == "error");
            }
            Some("error") if event["severity"] != "warning" => {
                let message = event["message"]
                    .as_str()
                    .or_else(|| event["error"]["message"].as_str())
                    .unwrap_or("error");
                turn.error(message);
            }
            Some("result") => {
                if event["status"] == "error" {
                    let message = event["error"]["message"]
                        .as_str()
                        .map_or_else(|| event["error"].to_string(), str::to_owned);
                    turn.error(&message);
                }
                let stats = &event["stats"];
                let count = |key: &str| stats[key].as_u64().unwrap_or(0);
                let cached = count("cached");
                turn.tokens(
                    count("input_tokens").saturating_sub(cached),
                    count("output_tokens"),
                    cached,
                    0,
                );
            }
            _ => {}
        }
    }

    fn read_transcript(&self, lines: &str, turn: &mut Turn) {
        // The chat file is a log of records: a model response is written when it starts and
        // again as it grows (its tool calls), under one id, so the last version of each counts,
        // in the order the records first appeared.
        let mut order: Vec<String> = Vec::new();
        let mut records: std::collections::HashMap<String, Value> =
            std::collections::HashMap::new();
        for line in lines.lines() {
            let Ok(record) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            let Some(id) = record["id"].as_str().map(str::to_owned) else {
                continue;
            };
            if records.insert(id.clone(), record).is_none() {
                order.push(id);
            }
        }
        for record in order.iter().filter_map(|id| records.get(id)) {
            match record["type"].as_str() {
                Some("gemini") => {
                    if let Some(model) = record["model"].as_str() {
                        turn.model = Some(model.to_owned());
                    }
                    let tokens = &record["tokens"];
                    let count = |key: &str| tokens[key].as_u64().unwrap_or(0);
                    let cached = count("cached");
                    turn.tokens(
                        count("input").saturating_sub(cached),
                        count("output"),
                        cached,
                        0,
                    );
                    turn.text(record["content"].as_str().unwrap_or_default());
                    for call in record["toolCalls"].as_array().into_iter().flatten() {
                        turn.tool_call(call["name"].as_str().unwrap_or("tool"), &call["args"]);
                    }
                }
                Some("user") => {
                    for part in record["content"].as_array().into_iter().flatten() {
                        let response = &part["functionResponse"];
                        if let Some(name) = response["name"].as_str() {
                            let output = response["response"]["output"].as_str();
                            turn.tool_result(name, output.unwrap_or_default(), false);
                        }
                    }
                }
                Some("error") => {
                    turn.error(record["content"].as_str().unwrap_or("error"));
                }
                _ => {}
            }
        }
    }

    fn session_saved(&self, plan: &Plan, session: &str) -> bool {
        // Gemini CLI resumes only a session with a conversation in it; a first request the
        // provider refused leaves its setup message alone, and `--resume` then finds nothing.
        self.transcript(plan, session)
            .and_then(|path| fs_err::read_to_string(path).ok())
            .is_some_and(|text| text.contains("\"type\":\"gemini\""))
    }

    fn new_session(&self, plan: &mut Plan) {
        plan.session = Some(uuid::Uuid::new_v4().to_string());
    }

    fn transcript(&self, plan: &Plan, session: &str) -> Option<PathBuf> {
        let short: String = session.chars().take(8).collect();
        crate::find_file(
            &gemini_home(plan).join(".gemini").join("tmp"),
            &short,
            ".jsonl",
            3,
        )
        .or_else(|| {
            crate::find_file(
                &gemini_home(plan).join(".gemini").join("tmp"),
                &short,
                ".json",
                3,
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chat_file_counts_the_last_version_of_each_response() {
        let tokens = json!({"input": 10, "output": 5, "cached": 4});
        let call = json!([{"id": "c1", "name": "run_shell_command", "args": {"command": "ls"}}]);
        let lines = [
            json!({"sessionId": "s", "kind": "main"}),
            json!({"id": "u1", "type": "user", "content": [{"text": "task"}]}),
            json!({"id": "g1", "type": "gemini", "content": "", "tokens": tokens, "model": "m"}),
            json!({"$set": {"lastUpdated": "now"}}),
            json!({"id": "g1", "type": "gemini", "content": "", "tokens": tokens, "model": "m",
                "toolCalls": call}),
            json!({"id": "u2", "type": "user", "content": [{"functionResponse":
                {"id": "c1", "name": "run_shell_command", "response": {"output": "ok"}}}]}),
            json!({"id": "g2", "type": "gemini", "content": "Done.", "tokens": tokens, "model": "m"}),
        ]
        .map(|line| line.to_string())
        .join("\n");
        let mut turn = Turn::default();
        Gemini.read_transcript(&lines, &mut turn);
        turn.finish();
        assert_eq!(turn.tool_calls, 1);
        assert_eq!(turn.responses, 2);
        assert_eq!(
            (turn.tokens_in, turn.tokens_out, turn.cache_read),
            (12, 10, 8)
        );
        assert_eq!(turn.text.as_deref(), Some("Done."));
        assert_eq!(turn.model.as_deref(), Some("m"));
    }

    #[test]
    fn tool_names_become_geminis_built_ins() {
        let tools = ["read", "grep", "ls", "Bash", "write_file"].map(String::from);
        assert_eq!(
            core_tools(&tools),
            [
                "read_file",
                "read_many_files",
                "grep_search",
                "list_directory",
                "run_shell_command",
                "write_file",
                "mcp_shepherd_*"
            ]
        );
    }
}
