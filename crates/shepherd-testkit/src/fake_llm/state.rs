//! What the fake model server remembers: the queues left, every request received and every
//! mismatch between the script and what the agent actually sent.
//!
//! Tests assert on this record (what a sheep was told, which tool results it saw), so it keeps
//! the full request bodies in arrival order.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt;
use std::fs::File;
use std::io::Write as _;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::script::{Exhausted, Script, Step};

/// The name the default queue (`responses`) has in records and in `GET /_state`.
pub const DEFAULT_QUEUE: &str = "default";

/// One model request as received.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedRequest {
    /// Position in arrival order, from 0.
    pub seq: usize,
    /// The request path, e.g. `/v1/chat/completions`.
    pub path: String,
    /// The body's `model`.
    pub model: String,
    /// The queue that answered it: the model id, or [`DEFAULT_QUEUE`].
    pub queue: String,
    /// The `authorization`, `x-api-key` and `user-agent` headers, when sent.
    pub headers: BTreeMap<String, String>,
    /// The whole JSON body.
    pub body: Value,
}

impl RecordedRequest {
    /// The `messages` array (empty when absent).
    #[must_use]
    pub fn messages(&self) -> &[Value] {
        self.body
            .get("messages")
            .and_then(Value::as_array)
            .map_or(&[], Vec::as_slice)
    }

    /// The text of the last user or tool message: what the model is answering.
    #[must_use]
    pub fn last_input_text(&self) -> String {
        last_input_text(self.messages())
    }

    /// The system prompt: OpenAI `system`/`developer` messages, or Anthropic's `system`.
    #[must_use]
    pub fn system_prompt(&self) -> Option<String> {
        if let Some(system) = self.body.get("system") {
            return Some(content_text(system));
        }
        let parts: Vec<String> = self
            .messages()
            .iter()
            .filter(|m| matches!(role(m), "system" | "developer"))
            .map(|m| content_text(m.get("content").unwrap_or(&Value::Null)))
            .collect();
        (!parts.is_empty()).then(|| parts.join("\n"))
    }

    /// The names of the tools offered to the model.
    #[must_use]
    pub fn tool_names(&self) -> Vec<String> {
        let tools = self.body.get("tools").and_then(Value::as_array);
        tools
            .into_iter()
            .flatten()
            .filter_map(|tool| {
                tool.pointer("/function/name")
                    .or_else(|| tool.get("name"))
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            })
            .collect()
    }

    /// The texts of all tool results in the conversation, in order.
    #[must_use]
    pub fn tool_results(&self) -> Vec<String> {
        let mut out = Vec::new();
        for message in self.messages() {
            if role(message) == "tool" {
                out.push(content_text(message.get("content").unwrap_or(&Value::Null)));
            } else if let Some(blocks) = message.get("content").and_then(Value::as_array) {
                out.extend(
                    blocks
                        .iter()
                        .filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
                        .map(|b| content_text(b.get("content").unwrap_or(&Value::Null))),
                );
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
                Some("text" | "input_text") => {
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

/// A difference between the script and what arrived.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mismatch {
    /// The request's [`RecordedRequest::seq`].
    pub request: usize,
    /// The queue it was answered from.
    pub queue: String,
    /// What went wrong.
    #[serde(flatten)]
    pub kind: MismatchKind,
}

/// What went wrong.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum MismatchKind {
    /// A step's `expect` was not in the last user or tool message.
    Expect {
        /// The expected substring.
        expect: String,
        /// The end of the text that arrived instead.
        got: String,
    },
    /// The queue was empty and `exhausted` is `error` (or `repeat_last` with nothing to repeat).
    Exhausted,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self { request, queue, .. } = self;
        match &self.kind {
            MismatchKind::Expect { expect, got } => write!(
                f,
                "request {request} (queue {queue}): expected {expect:?} in the last message, got {got:?}"
            ),
            MismatchKind::Exhausted => {
                write!(f, "request {request} (queue {queue}): script exhausted")
            }
        }
    }
}

/// The mutable state behind the server's lock.
#[derive(Debug, Default)]
pub(crate) struct State {
    default_queue: VecDeque<Step>,
    queues: BTreeMap<String, VecDeque<Step>>,
    last: BTreeMap<String, Step>,
    exhausted: Exhausted,
    pub(crate) requests: Vec<RecordedRequest>,
    pub(crate) mismatches: Vec<Mismatch>,
    /// Gates released so far (they stay open).
    pub(crate) released: BTreeSet<String>,
    pub(crate) log: Option<File>,
}

/// What to do with one model request.
#[derive(Debug)]
pub(crate) enum Answer {
    /// Reply as this step says.
    Step(Step),
    /// The script has nothing for this queue.
    Exhausted { queue: String },
}

impl State {
    /// Replaces the queues (the request record and mismatches stay).
    pub(crate) fn load(&mut self, script: Script) {
        self.default_queue = script.responses.into();
        self.queues = script
            .queues
            .into_iter()
            .map(|(model, steps)| (model, steps.into()))
            .collect();
        self.last.clear();
        self.exhausted = script.exhausted;
    }

    /// Appends steps to a model's queue, or to the default queue when `model` is `None`.
    pub(crate) fn append(&mut self, model: Option<&str>, steps: impl IntoIterator<Item = Step>) {
        match model {
            Some(model) => self
                .queues
                .entry(model.to_owned())
                .or_default()
                .extend(steps),
            None => self.default_queue.extend(steps),
        }
    }

    /// Steps left per queue.
    pub(crate) fn pending(&self) -> BTreeMap<String, usize> {
        let mut out: BTreeMap<String, usize> = self
            .queues
            .iter()
            .map(|(name, queue)| (name.clone(), queue.len()))
            .collect();
        out.insert(DEFAULT_QUEUE.to_owned(), self.default_queue.len());
        out
    }

    /// The model ids that have queues.
    pub(crate) fn models(&self) -> Vec<String> {
        self.queues.keys().cloned().collect()
    }

    /// The body of `GET /_state`.
    pub(crate) fn snapshot(&self) -> Value {
        json!({
            "served": self.requests.len(),
            "pending": self.pending(),
            "mismatches": self.mismatches,
        })
    }

    /// Records a request and picks its answer.
    pub(crate) fn take(
        &mut self,
        path: &str,
        headers: BTreeMap<String, String>,
        body: Value,
    ) -> (RecordedRequest, Answer) {
        let model = body
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let (queue_name, queue) = match self.queues.get_mut(&model) {
            Some(queue) => (model.clone(), queue),
            None => (DEFAULT_QUEUE.to_owned(), &mut self.default_queue),
        };
        let seq = self.requests.len();
        let step = match queue.pop_front() {
            Some(step) => {
                self.last.insert(queue_name.clone(), step.clone());
                Some(step)
            }
            None => match &self.exhausted {
                Exhausted::Error => None,
                Exhausted::RepeatLast => self.last.get(&queue_name).cloned(),
                Exhausted::Step(step) => Some((**step).clone()),
            },
        };
        let request = RecordedRequest {
            seq,
            path: path.to_owned(),
            model,
            queue: queue_name.clone(),
            headers,
            body,
        };
        if let Some(log) = &mut self.log {
            // The log is a debugging aid; a full disk must not fail the request.
            drop(writeln!(log, "{}", json!(request)).and_then(|()| log.flush()));
        }
        let answer = match step {
            Some(step) => {
                if let Some(expect) = &step.expect {
                    let got = request.last_input_text();
                    if !got.contains(expect.as_str()) {
                        self.mismatches.push(Mismatch {
                            request: seq,
                            queue: queue_name,
                            kind: MismatchKind::Expect {
                                expect: expect.clone(),
                                got: tail(&got, 500),
                            },
                        });
                    }
                }
                Answer::Step(step)
            }
            None => {
                self.mismatches.push(Mismatch {
                    request: seq,
                    queue: queue_name.clone(),
                    kind: MismatchKind::Exhausted,
                });
                Answer::Exhausted { queue: queue_name }
            }
        };
        self.requests.push(request.clone());
        (request, answer)
    }
}

/// The last `max` characters of `text`.
fn tail(text: &str, max: usize) -> String {
    let count = text.chars().count();
    text.chars().skip(count.saturating_sub(max)).collect()
}
