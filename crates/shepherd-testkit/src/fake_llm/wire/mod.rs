//! The model APIs coding agents talk, as the fake server writes them: OpenAI chat completions
//! ([`chat`]), Anthropic messages ([`anthropic`]), OpenAI responses ([`responses`]) and Gemini
//! `generateContent` ([`gemini`]), each streamed (server-sent events) or as one JSON body.
//!
//! A scripted [`Step`] is first resolved against the request into a [`Reply`]: the exact text,
//! reasoning and tool calls to send, with tool names matched against the tools the request
//! offers (an MCP tool by suffix, the shell tool with its own argument names). Each format
//! module then only writes that reply. The streamed shapes follow what the vendors send, in
//! small pieces, because the agents' clients assemble text and tool-call arguments from deltas;
//! a test that only ever sent whole messages would miss bugs there.

pub(crate) mod anthropic;
pub(crate) mod chat;
pub(crate) mod gemini;
pub(crate) mod responses;

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use super::request::{Api, OfferedTool, RecordedRequest};
use super::script::{NameMatch, Step, ToolCall, Usage};

/// Characters per streamed text delta.
const TEXT_PIECE: usize = 12;
/// Characters per streamed tool-argument delta.
const ARGUMENT_PIECE: usize = 20;

/// Shell tool names, most specific first: Claude Code, pi and opencode, Codex (unified exec,
/// then older shapes), Gemini CLI.
const SHELL_TOOLS: &[&str] = &[
    "Bash",
    "bash",
    "exec_command",
    "shell_command",
    "shell",
    "run_shell_command",
];

/// One tool call as sent.
#[derive(Debug)]
pub(crate) struct WireCall {
    pub(crate) id: String,
    /// The name the call carries (inside its namespace, if any).
    pub(crate) name: String,
    /// The Responses namespace the tool was offered in (Codex's MCP tools).
    pub(crate) namespace: Option<String>,
    /// The arguments as JSON text.
    pub(crate) arguments: String,
}

/// A step resolved against its request: the exact content to send.
#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) model: String,
    pub(crate) seq: usize,
    pub(crate) text: String,
    pub(crate) thinking: Option<String>,
    pub(crate) calls: Vec<WireCall>,
    pub(crate) usage: Usage,
}

impl Reply {
    /// Resolves `step` against `request`. A call whose tool is not offered (by suffix, or no
    /// shell tool) turns the reply into a text saying so; its wanted names are returned, for the
    /// mismatch record.
    pub(crate) fn new(step: &Step, request: &RecordedRequest) -> (Self, Vec<String>) {
        let text = if step.echo {
            format!("ECHO: {}", request.last_input_text())
        } else {
            step.text.clone().unwrap_or_default()
        };
        let offered = request.offered_tools();
        let results = if step.tool_calls.iter().any(|c| !c.fill.is_empty()) {
            // The newest input counts too: a sheep answers a question whose id came in the
            // message itself, not in a tool result.
            let mut results = request.tool_results();
            results.push(request.last_input_text());
            results
        } else {
            Vec::new()
        };
        let mut missing = Vec::new();
        let mut calls = Vec::new();
        for (index, call) in step.tool_calls.iter().enumerate() {
            let id = call
                .id
                .clone()
                .unwrap_or_else(|| format!("call_{}_{index}", request.seq));
            match resolve(call, &offered) {
                Some((tool, arguments)) => {
                    let (arguments, unfilled) = fill(&arguments, call, &results);
                    missing.extend(unfilled);
                    calls.push(WireCall {
                        id,
                        name: tool.call_name,
                        namespace: tool.namespace,
                        arguments,
                    });
                }
                None => missing.push(match call.matching {
                    NameMatch::Shell => "shell".to_owned(),
                    _ => call.name.clone(),
                }),
            }
        }
        let mut reply = Self {
            model: request.model.clone(),
            seq: request.seq,
            text,
            thinking: step.thinking.clone(),
            calls,
            usage: step.usage.unwrap_or_default(),
        };
        if !missing.is_empty() {
            reply.calls.clear();
            reply.text = format!(
                "fake-llm: no offered tool matches {missing:?}; offered {:?}",
                request.tool_names()
            );
        }
        (reply, missing)
    }

    /// Whether the reply ends in tool calls.
    pub(crate) fn has_calls(&self) -> bool {
        !self.calls.is_empty()
    }

    /// A call's arguments as a JSON value (an object when they are not valid JSON).
    pub(crate) fn arguments_value(call: &WireCall) -> Value {
        serde_json::from_str(&call.arguments).unwrap_or_else(|_| json!({}))
    }
}

/// The offered tool a scripted call means and its arguments as JSON text; `None` when a
/// suffix or shell call finds no such tool. An exact name is sent as written, offered or not.
fn resolve(call: &ToolCall, offered: &[OfferedTool]) -> Option<(OfferedTool, String)> {
    match call.matching {
        NameMatch::Exact => {
            let tool = offered
                .iter()
                .find(|tool| tool.name == call.name)
                .cloned()
                .unwrap_or_else(|| OfferedTool {
                    name: call.name.clone(),
                    namespace: None,
                    call_name: call.name.clone(),
                    schema: Value::Null,
                    description: String::new(),
                });
            Some((tool, call.arguments_json()))
        }
        NameMatch::Suffix => {
            let tool = offered
                .iter()
                .find(|tool| ends_with_name(&tool.name, &call.name))?;
            Some((tool.clone(), call.arguments_json()))
        }
        NameMatch::Shell => {
            let tool = SHELL_TOOLS
                .iter()
                .find_map(|name| offered.iter().find(|tool| tool.name == *name))?;
            let command = match &call.arguments {
                Value::String(command) => command.clone(),
                other => other
                    .get("command")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
            };
            Some((
                tool.clone(),
                shell_arguments(&tool.schema, &command).to_string(),
            ))
        }
    }
}

/// The arguments with each of the call's placeholders replaced by the newest word in the tool
/// results starting with its prefix; the placeholders that found none, described.
fn fill(arguments: &str, call: &ToolCall, results: &[String]) -> (String, Vec<String>) {
    let mut filled = arguments.to_owned();
    let mut unfilled = Vec::new();
    for (placeholder, prefix) in &call.fill {
        let word = results.iter().rev().find_map(|result| {
            result.rmatch_indices(prefix.as_str()).find_map(|(at, _)| {
                let starts_word = result[..at]
                    .chars()
                    .next_back()
                    .is_none_or(|c| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'));
                let word: String = result[at..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
                    .collect();
                (starts_word && word.len() > prefix.len()).then_some(word)
            })
        });
        match word {
            Some(word) => filled = filled.replace(placeholder.as_str(), &word),
            None => unfilled.push(format!(
                "fill {placeholder}: no word starting with {prefix} in the tool results"
            )),
        }
    }
    (filled, unfilled)
}

/// `name` is `suffix`, or ends with it right after a `_`, `/`, `.` or `-`.
fn ends_with_name(name: &str, suffix: &str) -> bool {
    name == suffix
        || name
            .strip_suffix(suffix)
            .is_some_and(|head| head.ends_with(['_', '/', '.', '-']))
}

/// The arguments of a shell call in the shape the tool's schema asks for: the command under
/// `command` or `cmd` (an argv `["bash", "-lc", command]` when the schema wants an array), and
/// a `description` when the schema has one.
fn shell_arguments(schema: &Value, command: &str) -> Value {
    let properties = schema.get("properties");
    let has = |key: &str| properties.and_then(|p| p.get(key)).is_some();
    let key = if !has("command") && has("cmd") {
        "cmd"
    } else {
        "command"
    };
    let is_array = properties
        .and_then(|p| p.get(key))
        .and_then(|p| p.get("type"))
        .and_then(Value::as_str)
        == Some("array");
    let mut arguments = serde_json::Map::new();
    arguments.insert(
        key.to_owned(),
        if is_array {
            json!(["bash", "-lc", command])
        } else {
            json!(command)
        },
    );
    if has("description") {
        arguments.insert("description".to_owned(), json!("Run a shell command"));
    }
    Value::Object(arguments)
}

/// `text` in pieces of `size` characters (one empty piece for empty text).
pub(crate) fn pieces(text: &str, size: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    if chars.is_empty() {
        return vec![String::new()];
    }
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}

/// Seconds since the epoch.
pub(crate) fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The JSON body of an error reply in the API's own shape, for an HTTP `status`. An empty
/// `message` becomes the provider's own for a 401 (a bad key), 429 and 529.
pub(crate) fn error_body(api: Api, status: u16, message: &str) -> Value {
    let message = if message.is_empty() {
        default_message(api, status)
    } else {
        message
    };
    match api {
        Api::AnthropicMessages => {
            let kind = match status {
                400 | 413 => "invalid_request_error",
                401 => "authentication_error",
                403 => "permission_error",
                404 => "not_found_error",
                429 => "rate_limit_error",
                529 => "overloaded_error",
                _ => "api_error",
            };
            json!({"type": "error", "error": {"type": kind, "message": message}})
        }
        Api::ChatCompletions | Api::Responses => {
            let (kind, code) = match status {
                401 => ("invalid_request_error", json!("invalid_api_key")),
                429 => ("requests", json!("rate_limit_exceeded")),
                400..=499 => ("invalid_request_error", Value::Null),
                _ => ("server_error", Value::Null),
            };
            json!({"error": {"message": message, "type": kind, "param": null, "code": code}})
        }
        Api::Gemini => {
            let kind = match status {
                400 => "INVALID_ARGUMENT",
                401 => "UNAUTHENTICATED",
                403 => "PERMISSION_DENIED",
                404 => "NOT_FOUND",
                429 => "RESOURCE_EXHAUSTED",
                503 => "UNAVAILABLE",
                _ => "INTERNAL",
            };
            json!({"error": {"code": status, "message": message, "status": kind}})
        }
    }
}

/// What each provider says for a bad key (401), a rate limit (429) and an overload (529).
fn default_message(api: Api, status: u16) -> &'static str {
    match (api, status) {
        (Api::AnthropicMessages, 401) => "invalid x-api-key",
        (Api::ChatCompletions | Api::Responses, 401) => {
            "Incorrect API key provided: fake-key. You can find your API key at \
             https://platform.openai.com/account/api-keys."
        }
        (Api::Gemini, 401) => {
            "Request had invalid authentication credentials. Expected OAuth 2 access token, \
             login cookie or other valid authentication credential."
        }
        (Api::AnthropicMessages, 429) => "Number of requests has exceeded your rate limit.",
        (Api::ChatCompletions | Api::Responses, 429) => "Rate limit reached for requests.",
        (Api::Gemini, 429) => "Resource has been exhausted (e.g. check quota).",
        (_, 529) => "Overloaded",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_take_the_newest_matching_word_from_the_tool_results() {
        let call = ToolCall::suffix(
            "shepherd_delegate",
            json!({"target": "{{agent}}", "note": "for {{agent}}"}),
        )
        .filling("{{agent}}", "shepherd-agent-");
        let results = vec![
            "spawned shepherd-agent-1111aaaa-x".to_owned(),
            "id: shepherd-agent-2222bbbb-y, again xshepherd-agent-9999".to_owned(),
        ];
        let (filled, unfilled) = fill(&call.arguments_json(), &call, &results);
        assert!(unfilled.is_empty());
        assert_eq!(
            serde_json::from_str::<Value>(&filled).unwrap(),
            json!({"target": "shepherd-agent-2222bbbb-y", "note": "for shepherd-agent-2222bbbb-y"})
        );
        let (_, unfilled) = fill(&call.arguments_json(), &call, &[]);
        assert_eq!(
            unfilled,
            ["fill {{agent}}: no word starting with shepherd-agent- in the tool results"]
        );
    }
}
