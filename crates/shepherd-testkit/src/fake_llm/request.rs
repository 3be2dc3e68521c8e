//! One model request as the fake server received it, read the same way whatever wire format
//! it came in: the text the model is answering, the tool results in the conversation, the
//! tools offered, the system prompt; the credential it carries; and, when the rate limiter
//! refused it, how ([`Limited`]).
//!
//! Each coding agent speaks its own API (pi and opencode OpenAI chat completions, Claude Code
//! Anthropic messages, Codex OpenAI responses, Gemini CLI Gemini `generateContent`), and a test
//! asserts on what reached the model ("the MCP tool's result is in the next request") without
//! caring which; the accessors here hide the four shapes.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The credential of requests that carry none.
pub const ANONYMOUS: &str = "anonymous";

/// The credential a request carries: `x-api-key`, `authorization: Bearer …` (or the whole
/// `authorization` value when it is another scheme), `x-goog-api-key`, or the `key` query
/// parameter; [`ANONYMOUS`] when none. Header names are in lower case.
#[must_use]
pub fn credential(headers: &BTreeMap<String, String>, query: &str) -> String {
    let header = |name: &str| {
        headers
            .get(name)
            .map(|value| value.trim())
            .filter(|value| !value.is_empty())
    };
    let bearer = header("authorization").map(|value| {
        value
            .split_once(' ')
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map_or(value, |(_, token)| token.trim())
    });
    let key = query
        .split('&')
        .find_map(|pair| pair.strip_prefix("key="))
        .filter(|key| !key.is_empty());
    header("x-api-key")
        .or(bearer)
        .or_else(|| header("x-goog-api-key"))
        .or(key)
        .unwrap_or(ANONYMOUS)
        .to_owned()
}

/// Which policy refused a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LimitReason {
    /// [`Limits::max_in_flight`](super::Limits::max_in_flight).
    InFlight,
    /// [`Limits::requests`](super::Limits::requests) per [`Limits::window`](super::Limits::window).
    Window,
    /// A [`UsageLimit`](super::UsageLimit).
    UsageLimit,
}

/// How a refused request was answered, as its request record shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limited {
    /// The policy that refused it.
    pub reason: LimitReason,
    /// The HTTP status sent (429, or 529/503 when [`Limits::overloaded`](super::Limits::overloaded)).
    pub status: u16,
}

/// The wire format of a model request, chosen by its path.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Api {
    /// OpenAI chat completions, `POST …/chat/completions` (pi, opencode).
    #[default]
    ChatCompletions,
    /// Anthropic messages, `POST …/v1/messages` (Claude Code, pi).
    AnthropicMessages,
    /// OpenAI responses, `POST …/responses` (Codex).
    Responses,
    /// Gemini, `POST …/models/<model>:generateContent` or `:streamGenerateContent` (Gemini CLI).
    Gemini,
}

impl Api {
    /// The format a model request path speaks, or `None` for a path that is not a model request.
    #[must_use]
    pub fn from_path(path: &str) -> Option<Self> {
        if path.ends_with("/chat/completions") {
            Some(Self::ChatCompletions)
        } else if path.ends_with("/messages") {
            Some(Self::AnthropicMessages)
        } else if path.ends_with("/responses") {
            Some(Self::Responses)
        } else if path.ends_with(":generateContent") || path.ends_with(":streamGenerateContent") {
            Some(Self::Gemini)
        } else {
            None
        }
    }
}

/// The model a Gemini path names: `/v1beta/models/gemini-2.5-pro:streamGenerateContent` →
/// `gemini-2.5-pro`.
pub(crate) fn gemini_model(path: &str) -> String {
    let last = path.rsplit('/').next().unwrap_or_default();
    last.split(':').next().unwrap_or_default().to_owned()
}

/// One model request as received.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedRequest {
    /// Position in arrival order, from 0.
    pub seq: usize,
    /// The request path without its query, e.g. `/v1/chat/completions`.
    pub path: String,
    /// The query string, without `?` (e.g. `alt=sse`, `beta=true`); empty when none.
    #[serde(default)]
    pub query: String,
    /// The wire format.
    #[serde(default)]
    pub api: Api,
    /// The body's `model` (for Gemini, the model named in the path).
    pub model: String,
    /// The queue that answered it: the model id, or [`DEFAULT_QUEUE`](super::DEFAULT_QUEUE)
    /// (`toolless` for a request answered by the script's `toolless` step).
    pub queue: String,
    /// Every header, names in lower case.
    pub headers: BTreeMap<String, String>,
    /// The whole JSON body.
    pub body: Value,
    /// Set when the rate limiter refused it (see [`Limits`](super::Limits)): it was answered
    /// with a limit reply and took no script step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limited: Option<Limited>,
}

/// A tool a request offers the model.
#[derive(Debug, Clone, PartialEq)]
pub struct OfferedTool {
    /// The name as tests see it. A tool inside a Responses `namespace` (Codex's MCP tools) is
    /// `<namespace>__<name>`, e.g. `mcp__test__append_line`, as Claude Code names its own.
    pub name: String,
    /// The namespace a call must carry (Responses only).
    pub namespace: Option<String>,
    /// The name a call must carry.
    pub call_name: String,
    /// Its JSON schema for the arguments (`Null` when none was sent).
    pub schema: Value,
    /// What the model is told it does (empty when none was sent).
    pub description: String,
}

impl RecordedRequest {
    /// The `messages` array of chat completions and Anthropic messages (empty otherwise).
    #[must_use]
    pub fn messages(&self) -> &[Value] {
        array(&self.body, "messages")
    }

    /// Whether the reply is streamed: `"stream": true`, or Gemini's `:streamGenerateContent`.
    #[must_use]
    pub fn is_stream(&self) -> bool {
        match self.api {
            Api::Gemini => self.path.ends_with(":streamGenerateContent"),
            _ => self.body.get("stream").and_then(Value::as_bool) == Some(true),
        }
    }

    /// A header's value (`name` in lower case).
    #[must_use]
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(String::as_str)
    }

    /// The credential the rate limiter counts it under (see [`credential`]).
    #[must_use]
    pub fn credential(&self) -> String {
        credential(&self.headers, &self.query)
    }

    /// The text of the last user message or tool result: what the model is answering.
    #[must_use]
    pub fn last_input_text(&self) -> String {
        match self.api {
            Api::ChatCompletions | Api::AnthropicMessages => last_input_text(self.messages()),
            Api::Responses => responses_input(&self.body)
                .iter()
                .rev()
                .find_map(|item| {
                    let kind = item
                        .get("type")
                        .and_then(Value::as_str)
                        .unwrap_or("message");
                    if kind.ends_with("_output") {
                        Some(content_text(item.get("output").unwrap_or(&Value::Null)))
                    } else if kind == "message" && role(item) == "user" {
                        Some(content_text(item.get("content").unwrap_or(&Value::Null)))
                    } else {
                        None
                    }
                })
                .unwrap_or_default(),
            Api::Gemini => array(&self.body, "contents")
                .iter()
                .rev()
                .find(|content| matches!(role(content), "user" | ""))
                .map(|content| gemini_parts_text(content, true))
                .unwrap_or_default(),
        }
    }

    /// The system prompt: chat `system`/`developer` messages, Anthropic's `system`, Responses
    /// `instructions` and developer messages, Gemini's `systemInstruction`.
    #[must_use]
    pub fn system_prompt(&self) -> Option<String> {
        let parts: Vec<String> = match self.api {
            Api::AnthropicMessages if self.body.get("system").is_some() => {
                vec![content_text(&self.body["system"])]
            }
            Api::ChatCompletions | Api::AnthropicMessages => self
                .messages()
                .iter()
                .filter(|m| matches!(role(m), "system" | "developer"))
                .map(|m| content_text(m.get("content").unwrap_or(&Value::Null)))
                .collect(),
            Api::Responses => {
                let instructions = self.body.get("instructions").map(content_text);
                let input = responses_input(&self.body);
                let developer = input
                    .iter()
                    .filter(|item| matches!(role(item), "system" | "developer"))
                    .map(|item| content_text(item.get("content").unwrap_or(&Value::Null)));
                instructions.into_iter().chain(developer).collect()
            }
            Api::Gemini => self
                .body
                .get("systemInstruction")
                .map(|instruction| gemini_parts_text(instruction, false))
                .into_iter()
                .collect(),
        };
        (!parts.is_empty()).then(|| parts.join("\n"))
    }

    /// The tools offered to the model, in order.
    #[must_use]
    pub fn offered_tools(&self) -> Vec<OfferedTool> {
        let described = |tool: &Value| {
            tool.get("description")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let plain = |name: &str, schema: Option<&Value>, description: String| OfferedTool {
            name: name.to_owned(),
            namespace: None,
            call_name: name.to_owned(),
            schema: schema.cloned().unwrap_or(Value::Null),
            description,
        };
        let mut out = Vec::new();
        if self.api == Api::Gemini {
            for group in array(&self.body, "tools") {
                let declarations = group
                    .get("functionDeclarations")
                    .or_else(|| group.get("function_declarations"));
                for declaration in declarations.and_then(Value::as_array).into_iter().flatten() {
                    if let Some(name) = declaration.get("name").and_then(Value::as_str) {
                        let schema = declaration
                            .get("parametersJsonSchema")
                            .or_else(|| declaration.get("parameters"));
                        out.push(plain(name, schema, described(declaration)));
                    }
                }
            }
            return out;
        }
        for tool in array(&self.body, "tools") {
            if let Some(function) = tool.get("function") {
                if let Some(name) = function.get("name").and_then(Value::as_str) {
                    out.push(plain(name, function.get("parameters"), described(function)));
                }
            } else if tool.get("type").and_then(Value::as_str) == Some("namespace") {
                let namespace = tool.get("name").and_then(Value::as_str).unwrap_or_default();
                for inner in array(tool, "tools") {
                    if let Some(name) = inner.get("name").and_then(Value::as_str) {
                        out.push(OfferedTool {
                            name: format!("{namespace}__{name}"),
                            namespace: Some(namespace.to_owned()),
                            call_name: name.to_owned(),
                            schema: inner.get("parameters").cloned().unwrap_or(Value::Null),
                            description: described(inner),
                        });
                    }
                }
            } else if let Some(name) = tool.get("name").and_then(Value::as_str) {
                let schema = tool.get("input_schema").or_else(|| tool.get("parameters"));
                out.push(plain(name, schema, described(tool)));
            }
        }
        out
    }

    /// The names of the tools offered to the model (see [`OfferedTool::name`]).
    #[must_use]
    pub fn tool_names(&self) -> Vec<String> {
        self.offered_tools().into_iter().map(|t| t.name).collect()
    }

    /// The texts of all tool results in the conversation, in order: chat `tool` messages,
    /// Anthropic `tool_result` blocks, Responses `*_output` items, Gemini `functionResponse`
    /// parts.
    #[must_use]
    pub fn tool_results(&self) -> Vec<String> {
        let mut out = Vec::new();
        match self.api {
            Api::ChatCompletions | Api::AnthropicMessages => {
                for message in self.messages() {
                    if role(message) == "tool" {
                        out.push(content_text(message.get("content").unwrap_or(&Value::Null)));
                    } else if let Some(blocks) = message.get("content").and_then(Value::as_array) {
                        out.extend(
                            blocks
                                .iter()
                                .filter(|b| {
                                    b.get("type").and_then(Value::as_str) == Some("tool_result")
                                })
                                .map(|b| content_text(b.get("content").unwrap_or(&Value::Null))),
                        );
                    }
                }
            }
            Api::Responses => {
                for item in responses_input(&self.body) {
                    let kind = item.get("type").and_then(Value::as_str).unwrap_or_default();
                    if kind.ends_with("_output") {
                        out.push(content_text(item.get("output").unwrap_or(&Value::Null)));
                    }
                }
            }
            Api::Gemini => {
                for content in array(&self.body, "contents") {
                    for part in array(content, "parts") {
                        if let Some(response) = part.get("functionResponse") {
                            out.push(strings(response.get("response").unwrap_or(response)));
                        }
                    }
                }
            }
        }
        out
    }

    /// Whether any string in the body (a message, the system prompt, a tool schema, ...)
    /// contains `needle`.
    #[must_use]
    pub fn contains(&self, needle: &str) -> bool {
        collect_strings(&self.body)
            .iter()
            .any(|s| s.contains(needle))
    }
}

fn array<'v>(value: &'v Value, key: &str) -> &'v [Value] {
    value
        .get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// A Responses `input`: a list of items, or one user message given as a string.
fn responses_input(body: &Value) -> Vec<Value> {
    match body.get("input") {
        Some(Value::Array(items)) => items.clone(),
        Some(Value::String(text)) => {
            vec![serde_json::json!({"type": "message", "role": "user", "content": text})]
        }
        _ => Vec::new(),
    }
}

/// The text of a Gemini content's parts; `responses` includes `functionResponse` parts.
fn gemini_parts_text(content: &Value, responses: bool) -> String {
    array(content, "parts")
        .iter()
        .filter_map(|part| {
            if let Some(text) = part.get("text").and_then(Value::as_str) {
                Some(text.to_owned())
            } else if responses {
                let response = part.get("functionResponse")?;
                Some(strings(response.get("response").unwrap_or(response)))
            } else {
                None
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every string in `value`, one per line.
fn strings(value: &Value) -> String {
    collect_strings(value).join("\n")
}

fn collect_strings(value: &Value) -> Vec<&str> {
    match value {
        Value::String(s) => vec![s.as_str()],
        Value::Array(items) => items.iter().flat_map(collect_strings).collect(),
        Value::Object(map) => map.values().flat_map(collect_strings).collect(),
        _ => Vec::new(),
    }
}

fn role(message: &Value) -> &str {
    message.get("role").and_then(Value::as_str).unwrap_or("")
}

/// Flattens message content (a string, or a list of text / tool-result blocks) into text.
pub(crate) fn content_text(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|block| match block.get("type").and_then(Value::as_str) {
                Some("text" | "input_text" | "output_text") => {
                    block.get("text").and_then(Value::as_str).map(str::to_owned)
                }
                Some("tool_result") => Some(content_text(block.get("content")?)),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The text of the last user or tool message.
pub(crate) fn last_input_text(messages: &[Value]) -> String {
    messages
        .iter()
        .rev()
        .find(|m| matches!(role(m), "user" | "tool"))
        .map(|m| content_text(m.get("content").unwrap_or(&Value::Null)))
        .unwrap_or_default()
}
