//! Claude Code as a sheep.
//!
//! - Configuration: its own `CLAUDE_CONFIG_DIR` under the sheep's directory, holding the user's
//!   settings and credentials (copied) and a `.claude.json` that marks onboarding done, the
//!   user's `ANTHROPIC_API_KEY` approved and the working directory trusted, so no first-run
//!   dialog shows. Non-essential traffic, the auto-updater, telemetry and error reporting are off.
//! - Sheep tools: `shepherd mcp --sheep` from `--mcp-config` with `--strict-mcp-config`, allowed
//!   by name (`mcp__shepherd`). `MCP_CONNECTION_NONBLOCKING=0` makes it wait for the server
//!   before the first request, or `shepherd_done` could be missing from the first turn.
//! - Permissions: the definition's tools become `--tools` (what exists) and `--allowedTools`
//!   (what runs unasked); without a tool list, the usual tools are allowed. The bypass modes
//!   are not used: they refuse to run as root.
//! - Instructions: `--append-system-prompt` (or `--system-prompt` with `omit-system-prompt`).
//!   Thinking: `--effort` (`off` sets `MAX_THINKING_TOKENS=0`).
//! - Headless: `-p TASK --output-format stream-json --verbose`, the first turn with
//!   `--session-id` (Shepherd picks the id), later ones `--resume` it. The output has a
//!   `system`/`init` event (session, model), the messages, and a `result` with the final text
//!   or the error, tokens and `total_cost_usd`.

use shepherd_core::limit::Classified;
use std::path::PathBuf;

use serde_json::{Value, json};
use shepherd_core::agent_def::ThinkingLevel;
use shepherd_core::harness::{Harness, ToolSet};

use crate::compose::{copy_if_present, merge, read_object, write_json};
use crate::profile::{Credentials, Login, Profile, Program, Provider};
use crate::{Adapter, HarnessError, Plan, Turn, UserEnv};

/// Claude Code's adapter.
#[derive(Debug)]
pub(crate) struct ClaudeCode;

/// The name Shepherd's sheep server has in Claude's configuration.
const SERVER: &str = "shepherd";

/// What a sheep with no tool list may run unasked.
const USUAL_TOOLS: &str = "Bash Edit Write MultiEdit NotebookEdit WebFetch WebSearch";

fn config_dir(plan: &Plan) -> PathBuf {
    plan.dir.join("claude")
}

fn mcp_config(plan: &Plan) -> PathBuf {
    plan.dir.join("claude-mcp.json")
}

/// Claude Code's names for a definition's tools (pi's names are translated, Claude's kept).
fn claude_tools(tools: &[String]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for tool in tools {
        let name = match tool.to_ascii_lowercase().as_str() {
            "read" => "Read".to_owned(),
            "grep" => "Grep".to_owned(),
            "find" | "ls" | "glob" => "Glob".to_owned(),
            "bash" => "Bash".to_owned(),
            "edit" => "Edit".to_owned(),
            "write" => "Write".to_owned(),
            _ => tool.clone(),
        };
        if !names.contains(&name) {
            names.push(name);
        }
    }
    names
}

/// A Claude Code sheep: its key variables, or the login or key helper the user's
/// configuration holds; nothing to check when the user runs it on Bedrock or Vertex.
fn credentials(_model: Option<&str>, user: &dyn UserEnv) -> Option<Credentials> {
    let set = |name: &str| user.var(name).is_some_and(|v| !v.is_empty() && v != "0");
    if set("CLAUDE_CODE_USE_BEDROCK") || set("CLAUDE_CODE_USE_VERTEX") {
        return None;
    }
    let dir = user.dir("CLAUDE_CONFIG_DIR", ".claude")?;
    Some(Credentials::own(
        &PROFILE,
        vec![
            Login::file(dir.join(".credentials.json")),
            Login {
                file: dir.join("settings.json"),
                key: Some("apiKeyHelper".to_owned()),
            },
        ],
    ))
}

/// What Shepherd knows about Claude Code besides how its turns run.
pub(crate) const PROFILE: Profile = Profile {
    harness: Harness::ClaudeCode,
    program: Program {
        var: "SHEPHERD_CLAUDE",
        name: "claude",
        install: "npm install -g @anthropic-ai/claude-code",
        version_home: None,
    },
    provider: Provider {
        name: Some("anthropic"),
        endpoint_vars: &["ANTHROPIC_BASE_URL"],
        key_vars: &[
            "ANTHROPIC_API_KEY",
            "ANTHROPIC_AUTH_TOKEN",
            "CLAUDE_CODE_OAUTH_TOKEN",
        ],
        hosts: &["api.anthropic.com:443", "console.anthropic.com:443"],
    },
    login_with: "Claude Code",
    credentials,
    provider_config: None,
};

impl Adapter for ClaudeCode {
    fn profile(&self) -> &'static Profile {
        &PROFILE
    }

    fn classify_error(&self, error: &str, now: jiff::Timestamp) -> Classified {
        // Claude Code's own words: "API Error: Request rejected (429) · …", "API Error: 529
        // Overloaded. …", "Claude AI usage limit reached|<epoch>", "5-hour limit reached ∙
        // resets 3pm" (a time of day in the user's zone), "Invalid API key · Fix external API key".
        crate::limits::classify_with_clock(error, &["resets ", "try again at "], now)
    }

    fn missing_login(&self, error: &str, user: &dyn UserEnv) -> Option<String> {
        // Claude Code's words when it finds neither a key nor a login: "Not logged in · Please
        // run /login". A sheep cannot log in; its key comes from the environment it inherits,
        // which an MCP host may have started bare.
        if !error.to_lowercase().contains("not logged in") {
            return None;
        }
        let set = |name: &str| user.var(name).is_some_and(|value| !value.is_empty());
        let endpoint = if set("ANTHROPIC_BASE_URL") {
            " for the endpoint ANTHROPIC_BASE_URL names"
        } else {
            ", and ANTHROPIC_BASE_URL if you use another endpoint"
        };
        Some(format!(
            "the sheep's environment has no Anthropic key (none of ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN, CLAUDE_CODE_OAUTH_TOKEN is set) and there is no Claude Code login to copy; pass ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN{endpoint} to the environment Shepherd runs in (from an MCP host: its shepherd server entry; `shepherd doctor` shows how)"
        ))
    }

    fn check_tools(&self, _tools: &ToolSet) -> Result<(), crate::Unsupported> {
        // `--tools` takes any list of its built-in tools: every restriction holds.
        Ok(())
    }

    fn prepare(&self, plan: &mut Plan, user: &dyn UserEnv) -> Result<(), HarnessError> {
        let dir = config_dir(plan);
        let user_dir = user.dir("CLAUDE_CONFIG_DIR", ".claude");
        let user_state = match user.var("CLAUDE_CONFIG_DIR").filter(|v| !v.is_empty()) {
            Some(dir) => Some(PathBuf::from(dir).join(".claude.json")),
            None => user.home().map(|home| home.join(".claude.json")),
        };
        let mut settings = Value::Object(Default::default());
        if let Some(user_dir) = &user_dir {
            copy_if_present(
                &user_dir.join(".credentials.json"),
                &dir.join(".credentials.json"),
            )?;
            settings = Value::Object(read_object(&user_dir.join("settings.json")));
        }
        plan.configured_model = settings["model"].as_str().map(str::to_owned);
        write_json(&dir.join("settings.json"), &settings)?;

        let mut state = Value::Object(user_state.as_deref().map(read_object).unwrap_or_default());
        let mut approved: Vec<Value> = state["customApiKeyResponses"]["approved"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if let Some(key) = user.var("ANTHROPIC_API_KEY") {
            let key = key.to_string_lossy().into_owned();
            let suffix: String = key
                .chars()
                .skip(key.chars().count().saturating_sub(20))
                .collect();
            if !approved.contains(&json!(suffix)) {
                approved.push(json!(suffix));
            }
        }
        let cwd = plan.cwd.display().to_string();
        merge(
            &mut state,
            json!({
                "hasCompletedOnboarding": true,
                "autoUpdates": false,
                "customApiKeyResponses": {"approved": approved},
                "projects": {cwd: {"hasTrustDialogAccepted": true,
                                   "hasCompletedProjectOnboarding": true}},
            }),
        );
        if state.get("theme").is_none() {
            merge(&mut state, json!({"theme": "dark"}));
        }
        write_json(&dir.join(".claude.json"), &state)?;

        let (program, args) = plan
            .mcp
            .split_first()
            .expect("the sheep server has a program");
        write_json(
            &mcp_config(plan),
            &json!({"mcpServers": {SERVER: {"type": "stdio", "command": program, "args": args}}}),
        )?;
        plan.env.extend(
            [
                ("CLAUDE_CONFIG_DIR", dir.display().to_string()),
                ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".to_owned()),
                ("DISABLE_AUTOUPDATER", "1".to_owned()),
                ("DISABLE_TELEMETRY", "1".to_owned()),
                ("DISABLE_ERROR_REPORTING", "1".to_owned()),
                ("MCP_CONNECTION_NONBLOCKING", "0".to_owned()),
            ]
            .map(|(k, v)| (k.to_owned(), v)),
        );
        if plan.thinking == Some(ThinkingLevel::Off) {
            plan.env
                .push(("MAX_THINKING_TOKENS".to_owned(), "0".to_owned()));
        }
        plan.session = Some(uuid::Uuid::new_v4().to_string());
        Ok(())
    }

    fn headless_args(&self, plan: &Plan, prompt: &str, session: Option<&str>) -> Vec<String> {
        // The prompt goes right after `-p`: several options below take lists and would
        // swallow a prompt written after them.
        let mut args: Vec<String> = vec![
            "-p".into(),
            prompt.into(),
            "--output-format".into(),
            "stream-json".into(),
            "--verbose".into(),
        ];
        args.extend(common_args(plan));
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
        let mut args = common_args(plan);
        if let Some(id) = &plan.session {
            args.extend(["--session-id".into(), id.clone()]);
        }
        args
    }

    fn ready_text(&self) -> &'static str {
        "? for shortcuts"
    }

    fn busy(&self, screen: &str) -> bool {
        screen.contains("esc to interrupt") || screen.lines().any(working_line)
    }

    fn read_event(&self, event: &Value, turn: &mut Turn) {
        match event["type"].as_str() {
            Some("system") if event["subtype"] == "init" => {
                turn.session = event["session_id"].as_str().map(str::to_owned);
                turn.model = event["model"].as_str().map(str::to_owned);
            }
            // Claude Code retries a refused request itself (`CLAUDE_CODE_MAX_RETRIES`, 10 by
            // default) and says so before each try: the status, its word for the error and the
            // wait (the provider's `retry-after` when it sent one).
            Some("system") if event["subtype"] == "api_retry" => {
                turn.retrying(&crate::AgentRetry {
                    status: event["error_status"]
                        .as_u64()
                        .and_then(|s| u16::try_from(s).ok()),
                    error: event["error"].as_str().unwrap_or("error").to_owned(),
                    delay_ms: event["retry_delay_ms"].as_f64().map(|ms| ms.ceil() as u64),
                });
            }
            // A refused request is told as an assistant message of its own (model
            // `<synthetic>`, an `error` beside it): an error, never a response or final words.
            Some("assistant") if is_api_error(event) => {
                let text = content_text(&event["message"]["content"]);
                turn.error(if text.is_empty() { "API error" } else { &text });
            }
            Some("assistant") => {
                for block in event["message"]["content"].as_array().into_iter().flatten() {
                    match block["type"].as_str() {
                        Some("text") => turn.text(block["text"].as_str().unwrap_or_default()),
                        Some("tool_use") => {
                            let name = block["name"].as_str().unwrap_or("tool");
                            turn.remember_call(block["id"].as_str().unwrap_or_default(), name);
                            turn.tool_call(name, &block["input"]);
                        }
                        _ => {}
                    }
                }
            }
            Some("user") => {
                for block in event["message"]["content"].as_array().into_iter().flatten() {
                    if block["type"] == "tool_result" {
                        let name =
                            turn.call_name(block["tool_use_id"].as_str().unwrap_or_default());
                        let output = content_text(&block["content"]);
                        turn.tool_result(&name, &output, block["is_error"] == json!(true));
                    }
                }
            }
            Some("result") => {
                if let Some(session) = event["session_id"].as_str() {
                    turn.session = Some(session.to_owned());
                }
                let text = event["result"].as_str().unwrap_or_default();
                if event["is_error"] == json!(true) {
                    let message = if text.is_empty() {
                        event["subtype"].as_str().unwrap_or("error")
                    } else {
                        text
                    };
                    turn.error(message);
                } else if turn.text.is_none() {
                    turn.text(text);
                }
                let usage = &event["usage"];
                let count = |key: &str| usage[key].as_u64().unwrap_or(0);
                turn.tokens(
                    count("input_tokens"),
                    count("output_tokens"),
                    count("cache_read_input_tokens"),
                    count("cache_creation_input_tokens"),
                );
                turn.cost = event["total_cost_usd"].as_f64().or(turn.cost);
                if turn.model.is_none() {
                    turn.model = event["modelUsage"]
                        .as_object()
                        .and_then(|models| models.keys().next().cloned());
                }
            }
            _ => {}
        }
    }

    fn read_transcript(&self, lines: &str, turn: &mut Turn) {
        // The transcript holds the stream's `assistant` and `user` lines, one per content
        // block; each block of a response repeats the response's usage, counted once by its id.
        let mut counted = std::collections::HashSet::new();
        for line in lines.lines() {
            let Ok(event) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            if !matches!(event["type"].as_str(), Some("assistant" | "user")) {
                continue;
            }
            let message = &event["message"];
            // A provider's refusal is recorded as an assistant message marked as an API error.
            if is_api_error(&event) {
                let text = content_text(&message["content"]);
                turn.error(if text.is_empty() { "API error" } else { &text });
                continue;
            }
            self.read_event(&event, turn);
            if event["type"] == "assistant" {
                if let Some(model) = message["model"].as_str() {
                    turn.model = Some(model.to_owned());
                }
                let id = message["id"].as_str().unwrap_or_default().to_owned();
                if counted.insert(id) {
                    let usage = &message["usage"];
                    let count = |key: &str| usage[key].as_u64().unwrap_or(0);
                    turn.tokens(
                        count("input_tokens"),
                        count("output_tokens"),
                        count("cache_read_input_tokens"),
                        count("cache_creation_input_tokens"),
                    );
                }
            }
        }
    }

    fn transcript(&self, plan: &Plan, session: &str) -> Option<PathBuf> {
        crate::find_file(&config_dir(plan).join("projects"), session, ".jsonl", 1)
    }
}

/// Whether an assistant event is Claude Code's report of a refused request rather than a model
/// response.
fn is_api_error(event: &Value) -> bool {
    event["error"].is_string()
        || event["isApiErrorMessage"] == json!(true)
        || event["message"]["model"] == "<synthetic>"
}

/// What both the headless turns and the interactive program get: model, effort, sheep tools,
/// permissions and instructions.
fn common_args(plan: &Plan) -> Vec<String> {
    let mut args: Vec<String> = Vec::new();
    if let Some(model) = &plan.model {
        args.extend(["--model".into(), model.clone()]);
    }
    if let Some(effort) = plan.thinking.and_then(effort) {
        args.extend(["--effort".into(), effort.into()]);
    }
    let sheep_tools = format!("mcp__{SERVER}");
    let allowed = match &plan.tools {
        Some(tools) => {
            let names = claude_tools(tools);
            args.extend(["--tools".into(), names.join(",")]);
            let mut allowed = names;
            allowed.push(sheep_tools);
            allowed.join(" ")
        }
        None => format!("{USUAL_TOOLS} {sheep_tools}"),
    };
    args.extend([
        "--mcp-config".into(),
        mcp_config(plan).display().to_string(),
        "--strict-mcp-config".into(),
        "--allowedTools".into(),
        allowed,
    ]);
    if !plan.instructions.trim().is_empty() {
        let flag = if plan.replace_system_prompt {
            "--system-prompt"
        } else {
            "--append-system-prompt"
        };
        args.extend([flag.into(), plan.instructions.clone()]);
    }
    args
}

/// Claude Code's `--effort` for a thinking level (`off` is an environment variable instead).
fn effort(level: ThinkingLevel) -> Option<&'static str> {
    match level {
        ThinkingLevel::Minimal | ThinkingLevel::Low => Some("low"),
        ThinkingLevel::Medium => Some("medium"),
        ThinkingLevel::High => Some("high"),
        ThinkingLevel::Xhigh => Some("xhigh"),
        ThinkingLevel::Max => Some("max"),
        ThinkingLevel::Off => None,
    }
}

/// Claude Code's working line, shown for the whole of a turn: a spinner glyph and a verb
/// ending in `…` (`✻ Transmuting… (0s · ↓ 8 tokens)`). Once the turn is over it reads
/// `✻ Sautéed for 0s`. Tool rows (`● Calling shepherd…`, `⎿  Running…`) and the prompt (`❯`)
/// are not it.
fn working_line(line: &str) -> bool {
    let mut words = line.split_whitespace();
    let (Some(glyph), Some(verb)) = (words.next(), words.next()) else {
        return false;
    };
    let mut chars = glyph.chars();
    let single = chars.next().filter(|_| chars.next().is_none());
    single.is_some_and(|c| !c.is_alphanumeric() && !matches!(c, '●' | '⎿' | '❯' | '│'))
        && verb.ends_with('…')
}

/// The text of a message's or tool result's content: a string, or a list of blocks whose `text`
/// fields are joined by newlines. Claude Code's transcript and pi's session files share this
/// shape.
pub fn content_text(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_transcript_counts_each_response_once_and_reads_api_errors() {
        let usage = json!({"input_tokens": 10, "output_tokens": 2});
        let lines = [
            json!({"type": "user", "message": {"content": "task"}}),
            json!({"type": "assistant", "message": {"id": "m1", "model": "opus", "usage": usage,
                "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}]}}),
            json!({"type": "assistant", "message": {"id": "m1", "usage": usage,
                "content": [{"type": "text", "text": "and more"}]}}),
            json!({"type": "user", "message": {"content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]}}),
            json!({"type": "assistant", "message": {"id": "m2", "usage": usage,
                "content": [{"type": "text", "text": "Done."}]}}),
        ]
        .map(|line| line.to_string())
        .join("\n");
        let mut turn = Turn::default();
        ClaudeCode.read_transcript(&lines, &mut turn);
        turn.finish();
        assert_eq!((turn.tokens_in, turn.tokens_out), (20, 4));
        assert_eq!(turn.tool_calls, 1);
        assert_eq!(turn.model.as_deref(), Some("opus"));
        assert_eq!(turn.text.as_deref(), Some("Done."));
        assert_eq!(turn.error, None);

        let refused = json!({"type": "assistant", "isApiErrorMessage": true, "message": {"id": "m3",
            "content": [{"type": "text", "text": "API Error: 400 no"}]}});
        let mut turn = Turn::default();
        ClaudeCode.read_transcript(&refused.to_string(), &mut turn);
        assert_eq!(turn.error.as_deref(), Some("API Error: 400 no"));
    }

    /// Claude Code 2.1.197's stream-json against the fake provider: a 401 with its default
    /// retries, a 429 it rode out, and a 429 it gave up on (`CLAUDE_CODE_MAX_RETRIES=0`).
    #[test]
    fn retries_errors_and_refusals_in_the_stream_are_told_apart() {
        let read = |lines: &[Value]| {
            let mut turn = Turn::default();
            turn.provider = Some("anthropic");
            for line in lines {
                ClaudeCode.read_event(line, &mut turn);
            }
            turn.finish();
            turn
        };
        let bad_key = read(&[
            json!({"type": "system", "subtype": "api_retry", "attempt": 1,
            "max_retries": 10, "retry_delay_ms": 563.92, "error_status": 401,
            "error": "authentication_failed"}),
        ]);
        assert_eq!(
            bad_key.stop_now.as_deref(),
            Some(
                "anthropic answered HTTP 401 (authentication_failed); that does not pass with \
                 retrying, so the agent's own retries were stopped at the first"
            )
        );
        let limited = |attempt: u64| {
            json!({"type": "system", "subtype": "api_retry", "attempt": attempt,
                "max_retries": 10, "retry_delay_ms": 2000, "error_status": 429,
                "error": "rate_limit"})
        };
        let mut ridden = read(&[
            limited(1),
            limited(2),
            json!({"type": "assistant", "message": {"id": "m1", "model": "m",
                "content": [{"type": "text", "text": "Done."}]}}),
        ]);
        assert_eq!(ridden.stop_now, None);
        let episodes = ridden.take_ridden();
        assert_eq!(episodes.len(), 1);
        assert_eq!(episodes[0].replies, 2);
        assert_eq!(
            episodes[0].class,
            shepherd_core::limit::ErrorClass::RateLimit
        );
        assert_eq!(ridden.text.as_deref(), Some("Done."));
        let refused = "API Error: Request rejected (429) · This request would exceed your \
                       organization's rate limit of 0 concurrent requests.";
        let mut gave_up = read(&[
            limited(1),
            json!({"type": "assistant", "error": "rate_limit", "message": {"id": "x",
                "model": "<synthetic>", "content": [{"type": "text", "text": refused}]}}),
            json!({"type": "result", "subtype": "success", "is_error": true,
                "api_error_status": 429, "result": refused}),
        ]);
        assert_eq!(gave_up.error.as_deref(), Some(refused));
        assert_eq!(gave_up.text, None, "a refusal is never final words");
        assert_eq!(gave_up.responses, 0, "nor a model response");
        assert_eq!(
            gave_up.retry_after_ms,
            Some(2000),
            "the reset it waited for"
        );
        assert!(gave_up.take_ridden().is_empty());
    }

    #[test]
    fn the_working_line_shows_a_turn_running() {
        for line in [
            "✢ Transmuting…",
            "* Transmuting… (0s · ↓ 4 tokens)",
            "✽ Contemplating…",
        ] {
            assert!(working_line(line), "{line}");
        }
        for line in [
            "✻ Sautéed for 0s",
            "● Calling shepherd… (ctrl+o to expand)",
            "  ⎿  Running…",
            "❯ Wait…",
            "  ? for shortcuts · ← for agents",
        ] {
            assert!(!working_line(line), "{line}");
        }
    }

    #[test]
    fn pi_tool_names_become_claude_codes() {
        let tools = ["read", "grep", "find", "ls", "Bash", "TodoWrite"].map(String::from);
        assert_eq!(
            claude_tools(&tools),
            ["Read", "Grep", "Glob", "Bash", "TodoWrite"]
        );
    }
}
