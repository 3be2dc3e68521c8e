//! The fake model's script: which answer each request gets.
//!
//! Tests decide every model reply in advance, so a real coding agent (pi) can run offline and
//! deterministically. The JSON shape is the one of the research prototype, so scripts written
//! for it keep working:
//!
//! ```json
//! {"responses": [STEP, ...], "queues": {"<model-id>": [STEP, ...]},
//!  "exhausted": "error" | "repeat_last" | STEP}
//! ```
//!
//! A request's `model` picks the queue of that name when there is one, else `responses` (the
//! default queue). Each request takes the first step of its queue. The same script drives every
//! wire format the server speaks; two additions let one script drive any coding agent:
//!
//! - `"toolless": STEP` answers requests that offer no tools (the title and summary requests
//!   Claude Code and opencode send beside a turn) without taking a step from any queue;
//! - a tool call may name its tool by suffix (`{"name": "append_line", "match": "suffix"}`
//!   calls `mcp__test__append_line`, `mcp_test_append_line` or `test_append_line`, whichever the
//!   agent offered) or ask for the agent's shell tool (`{"match": "shell", "arguments":
//!   {"command": "echo hi"}}` becomes `Bash`, `exec_command`, `run_shell_command` or `bash`
//!   with that tool's own argument names).

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A whole script.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    /// The default queue, for requests whose model has no queue of its own.
    #[serde(default)]
    pub responses: Vec<Step>,
    /// One queue per model id.
    #[serde(default)]
    pub queues: BTreeMap<String, Vec<Step>>,
    /// What a request gets when its queue is empty.
    #[serde(default)]
    pub exhausted: Exhausted,
    /// When set, requests offering no tools get this step and leave the queues alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub toolless: Option<Step>,
}

impl Script {
    /// An empty script: every request is answered as [`Exhausted::Error`] says.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Parses the JSON form.
    ///
    /// # Errors
    /// When the text is not a script (unknown fields are refused, to catch typos).
    pub fn from_json(text: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// Appends steps to the default queue.
    #[must_use]
    pub fn with_responses(mut self, steps: impl IntoIterator<Item = Step>) -> Self {
        self.responses.extend(steps);
        self
    }

    /// Appends steps to the queue of one model id.
    #[must_use]
    pub fn with_queue(mut self, model: &str, steps: impl IntoIterator<Item = Step>) -> Self {
        self.queues
            .entry(model.to_owned())
            .or_default()
            .extend(steps);
        self
    }

    /// Sets what an empty queue answers.
    #[must_use]
    pub fn with_exhausted(mut self, exhausted: Exhausted) -> Self {
        self.exhausted = exhausted;
        self
    }

    /// Answers requests that offer no tools (titles, summaries) with `step`, outside the
    /// queues.
    #[must_use]
    pub fn with_toolless(mut self, step: Step) -> Self {
        self.toolless = Some(step);
        self
    }
}

/// What a request gets when its queue is empty.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "ExhaustedRepr", into = "ExhaustedRepr")]
pub enum Exhausted {
    /// An HTTP 500 saying the script is exhausted; also recorded as a mismatch.
    #[default]
    Error,
    /// The last step served from that queue again (an error when there was none).
    RepeatLast,
    /// This step.
    Step(Box<Step>),
}

#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum ExhaustedRepr {
    Name(String),
    Step(Box<Step>),
}

impl TryFrom<ExhaustedRepr> for Exhausted {
    type Error = String;

    fn try_from(repr: ExhaustedRepr) -> Result<Self, String> {
        match repr {
            ExhaustedRepr::Name(name) if name == "error" => Ok(Self::Error),
            ExhaustedRepr::Name(name) if name == "repeat_last" => Ok(Self::RepeatLast),
            ExhaustedRepr::Name(name) => Err(format!(
                "exhausted: `{name}` is not \"error\", \"repeat_last\" or a step"
            )),
            ExhaustedRepr::Step(step) => Ok(Self::Step(step)),
        }
    }
}

impl From<Exhausted> for ExhaustedRepr {
    fn from(exhausted: Exhausted) -> Self {
        match exhausted {
            Exhausted::Error => Self::Name("error".to_owned()),
            Exhausted::RepeatLast => Self::Name("repeat_last".to_owned()),
            Exhausted::Step(step) => Self::Step(step),
        }
    }
}

/// One scripted model reply.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Step {
    /// Assistant text (sent before any tool calls).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Tool calls; the reply then finishes with `tool_calls` instead of `stop`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// Reply `ECHO: <text of the last user or tool message>` instead of `text`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub echo: bool,
    /// Reasoning text streamed before the content (OpenAI `reasoning_content`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thinking: Option<String>,
    /// Wait this long before answering (for abort and steering tests).
    #[serde(skip_serializing_if = "is_zero")]
    pub delay_ms: u64,
    /// Wait this long between streamed chunks.
    #[serde(skip_serializing_if = "is_zero")]
    pub chunk_delay_ms: u64,
    /// Hold the reply until this gate is released (`FakeLlm::release`, `POST /_release`), so
    /// a test can act while the agent is mid-run without guessing a delay.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hold: Option<String>,
    /// Reported token usage (default 10 in, 5 out). Large values make pi compact.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// The last user or tool message must contain this; otherwise a mismatch is recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expect: Option<String>,
    /// Answer with this HTTP error instead.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorReply>,
}

#[expect(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde's skip_serializing_if passes a reference"
)]
fn is_zero(value: &u64) -> bool {
    *value == 0
}

impl Step {
    /// A plain text answer.
    #[must_use]
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: Some(text.into()),
            ..Self::default()
        }
    }

    /// An answer that echoes the last user or tool message: `ECHO: <text>`.
    #[must_use]
    pub fn echo() -> Self {
        Self {
            echo: true,
            ..Self::default()
        }
    }

    /// One tool call, e.g. `Step::tool_call("bash", json!({"command": "ls"}))`.
    #[must_use]
    pub fn tool_call(name: impl Into<String>, arguments: Value) -> Self {
        Self::default().with_tool_call(ToolCall::new(name, arguments))
    }

    /// One call to the offered tool whose name ends with `suffix` (see
    /// [`ToolCall::suffix`]): the way to call an MCP tool whatever prefix the agent gives it.
    #[must_use]
    pub fn tool_call_suffix(suffix: impl Into<String>, arguments: Value) -> Self {
        Self::default().with_tool_call(ToolCall::suffix(suffix, arguments))
    }

    /// One call to the agent's shell tool running `command` (see [`ToolCall::shell`]).
    #[must_use]
    pub fn shell(command: impl Into<String>) -> Self {
        Self::default().with_tool_call(ToolCall::shell(command))
    }

    /// An HTTP error reply.
    #[must_use]
    pub fn error(status: u16, message: impl Into<String>) -> Self {
        Self {
            error: Some(ErrorReply {
                status,
                message: message.into(),
            }),
            ..Self::default()
        }
    }

    /// A fatal 401 for a bad key, in each API's own shape and words (Anthropic
    /// `authentication_error`, OpenAI `invalid_api_key`, Gemini `UNAUTHENTICATED`); the
    /// same as `{"error": {"status": 401}}`.
    #[must_use]
    pub fn unauthorized() -> Self {
        Self::error(401, "")
    }

    /// Fills `placeholder` in the last tool call's arguments from the request's tool results
    /// (see [`ToolCall::fill`]).
    #[must_use]
    pub fn filling(mut self, placeholder: impl Into<String>, prefix: impl Into<String>) -> Self {
        if let Some(call) = self.tool_calls.pop() {
            self.tool_calls.push(call.filling(placeholder, prefix));
        }
        self
    }

    /// Adds text (sent before the tool calls).
    #[must_use]
    pub fn with_text(mut self, text: impl Into<String>) -> Self {
        self.text = Some(text.into());
        self
    }

    /// Adds a tool call.
    #[must_use]
    pub fn with_tool_call(mut self, call: ToolCall) -> Self {
        self.tool_calls.push(call);
        self
    }

    /// Records a mismatch unless the last user or tool message contains `needle`.
    #[must_use]
    pub fn expecting(mut self, needle: impl Into<String>) -> Self {
        self.expect = Some(needle.into());
        self
    }

    /// Streams reasoning text first.
    #[must_use]
    pub fn with_thinking(mut self, thinking: impl Into<String>) -> Self {
        self.thinking = Some(thinking.into());
        self
    }

    /// Waits before answering.
    #[must_use]
    pub fn with_delay(mut self, delay: Duration) -> Self {
        self.delay_ms = millis(delay);
        self
    }

    /// Holds the reply until `gate` is released.
    #[must_use]
    pub fn held_until(mut self, gate: impl Into<String>) -> Self {
        self.hold = Some(gate.into());
        self
    }

    /// Waits between streamed chunks.
    #[must_use]
    pub fn with_chunk_delay(mut self, delay: Duration) -> Self {
        self.chunk_delay_ms = millis(delay);
        self
    }

    /// Reports this token usage.
    #[must_use]
    pub fn with_usage(mut self, input: u64, output: u64) -> Self {
        self.usage = Some(Usage { input, output });
        self
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// A tool call the model makes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolCall {
    /// The tool's name, e.g. `bash` (with [`NameMatch::Suffix`], the end of the name; with
    /// [`NameMatch::Shell`], ignored).
    #[serde(default)]
    pub name: String,
    /// Its arguments: an object, or a string sent verbatim (to test malformed arguments). For
    /// [`NameMatch::Shell`], `{"command": "..."}`, rewritten to the shell tool's own shape.
    #[serde(default = "empty_object")]
    pub arguments: Value,
    /// The call id; generated (`call_<request>_<index>`) when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// How `name` is matched against the tools the request offers.
    #[serde(default, rename = "match", skip_serializing_if = "NameMatch::is_exact")]
    pub matching: NameMatch,
    /// Placeholders filled from the request's tool results, so a script can pass back ids the
    /// agent was given (an agent id, a task id): each key found in the arguments (e.g.
    /// `{{agent}}`) is replaced by the newest word in the tool results that starts with its
    /// value (e.g. `shepherd-agent-`); a word is letters, digits, `-` and `_`. A placeholder
    /// with no such word makes the call a script mismatch.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub fill: BTreeMap<String, String>,
}

/// How a scripted tool call finds its tool among those a request offers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NameMatch {
    /// Call `name` as written, offered or not (to test unknown tools too).
    #[default]
    Exact,
    /// Call the offered tool named `name` or ending with `name` after a `_`, `/`, `.` or `-`:
    /// MCP tools are prefixed differently by every agent. No such tool is a script mismatch.
    Suffix,
    /// Call the offered shell tool (`Bash`, `bash`, `exec_command`, `shell_command`,
    /// `run_shell_command`, `shell`), its arguments shaped from its schema. No shell tool is a
    /// script mismatch.
    Shell,
}

impl NameMatch {
    fn is_exact(&self) -> bool {
        *self == Self::Exact
    }
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

impl ToolCall {
    /// A call with a generated id.
    #[must_use]
    pub fn new(name: impl Into<String>, arguments: Value) -> Self {
        Self {
            name: name.into(),
            arguments,
            id: None,
            matching: NameMatch::Exact,
            fill: BTreeMap::new(),
        }
    }

    /// Fills `placeholder` in the arguments with the newest word starting with `prefix` in
    /// the request's tool results (see [`ToolCall::fill`]).
    #[must_use]
    pub fn filling(mut self, placeholder: impl Into<String>, prefix: impl Into<String>) -> Self {
        self.fill.insert(placeholder.into(), prefix.into());
        self
    }

    /// A call to the offered tool whose name is or ends with `suffix` ([`NameMatch::Suffix`]).
    #[must_use]
    pub fn suffix(suffix: impl Into<String>, arguments: Value) -> Self {
        Self {
            matching: NameMatch::Suffix,
            ..Self::new(suffix, arguments)
        }
    }

    /// A call to the agent's shell tool running `command` ([`NameMatch::Shell`]).
    #[must_use]
    pub fn shell(command: impl Into<String>) -> Self {
        let command: String = command.into();
        Self {
            matching: NameMatch::Shell,
            ..Self::new("shell", serde_json::json!({ "command": command }))
        }
    }

    /// Sets the call id.
    #[must_use]
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }

    /// The arguments as the JSON text sent on the wire.
    #[must_use]
    pub fn arguments_json(&self) -> String {
        match &self.arguments {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        }
    }
}

/// Reported token usage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Usage {
    /// Prompt tokens.
    #[serde(default)]
    pub input: u64,
    /// Completion tokens.
    #[serde(default)]
    pub output: u64,
}

impl Default for Usage {
    fn default() -> Self {
        Self {
            input: 10,
            output: 5,
        }
    }
}

/// An HTTP error reply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ErrorReply {
    /// The HTTP status (default 500).
    #[serde(default = "default_status")]
    pub status: u16,
    /// The error message; when empty, the provider's own for a 401, 429 or 529.
    #[serde(default)]
    pub message: String,
}

fn default_status() -> u16 {
    500
}
