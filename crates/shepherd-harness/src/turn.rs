//! What one headless turn of an agent did, read from its machine-readable output, and what a
//! task's turns add up to in its note.
//!
//! Every adapter reads its own event format into the same [`Turn`]: the agent's session id,
//! model, each model response, tool call and result, tokens, cost where the agent reports one,
//! the last assistant text and an error that ended the turn. A turn also keeps a readable
//! transcript of itself, which the driver prints, so `shepherd read` on a headless sheep shows
//! what it was told, what it did and what it said. A task may take several turns (a reminder
//! after a turn that ended without `shepherd_done`); [`Telemetry`] adds them up until the turn
//! that settled it.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Map, Value, json};
use shepherd_core::harness::Harness;

/// Longest a tool call's arguments or result get in the transcript, in characters.
const EXCERPT: usize = 300;

/// One headless turn, as its output told it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Turn {
    /// The agent's session (thread) id.
    pub session: Option<String>,
    /// The model it named.
    pub model: Option<String>,
    /// Model responses.
    pub responses: u64,
    /// Tool calls.
    pub tool_calls: u64,
    /// Input tokens (not counting cache reads).
    pub tokens_in: u64,
    /// Output tokens.
    pub tokens_out: u64,
    /// Input tokens read from the cache.
    pub cache_read: u64,
    /// Input tokens written to the cache.
    pub cache_write: u64,
    /// Cost in US dollars, when the agent computes one.
    pub cost: Option<f64>,
    /// The last assistant text.
    pub text: Option<String>,
    /// The error that ended the turn (a provider error, a failed turn).
    pub error: Option<String>,
    /// Whether the agent called `shepherd_done` in this turn.
    pub done_called: bool,
    /// An error the agent is retrying that no retry will get past (a 401): the driver ends
    /// the run at once with this text instead of waiting out the agent's own retries.
    pub stop_now: Option<String>,
    /// The wait the agent's last retry announced (Claude Code's `retry_delay_ms`): the reset
    /// of the limit that ended the run, when it ended on one.
    pub retry_after_ms: Option<u64>,
    /// The provider the agent's requests go to, for the words of a failure (`anthropic`).
    pub provider: Option<&'static str>,
    /// The retries seen since the last response, not yet ridden out.
    retrying: Option<Retrying>,
    /// Limits the agent rode out with its own retries, for the driver to report.
    ridden: Vec<Ridden>,
    in_response: bool,
    streamed: String,
    lines: Vec<String>,
    call_names: HashMap<String, String>,
}

/// One retry the agent announced of a refused request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentRetry {
    /// The HTTP status, when the agent says it.
    pub status: Option<u16>,
    /// The agent's own words for the error (`rate_limit`, `authentication_failed`, the text).
    pub error: String,
    /// How long the agent waits before it tries again (ms), when it says.
    pub delay_ms: Option<u64>,
}

/// Retries in a row since the last response.
#[derive(Debug, Clone, PartialEq)]
struct Retrying {
    class: shepherd_core::limit::ErrorClass,
    count: u32,
    since: std::time::SystemTime,
}

/// A limit the agent rode out with its own retries: its class, when the first refusal was
/// seen, how long until the response that followed, and how many retries it took.
#[derive(Debug, Clone, PartialEq)]
pub struct Ridden {
    /// Rate limit, usage limit or server error.
    pub class: shepherd_core::limit::ErrorClass,
    /// When the first retry was seen.
    pub since: std::time::SystemTime,
    /// How long the agent waited in all.
    pub waited: Duration,
    /// How many retries.
    pub replies: u32,
}

impl Turn {
    /// The agent produced output of a model response (text or a tool call): a new response
    /// starts after the prompt or a tool result. Retries before it were ridden out.
    pub fn responding(&mut self) {
        if !self.in_response {
            self.responses += 1;
            self.in_response = true;
        }
        if let Some(retrying) = self.retrying.take() {
            self.ridden.push(Ridden {
                class: retrying.class,
                since: retrying.since,
                waited: retrying.since.elapsed().unwrap_or_default(),
                replies: retrying.count,
            });
        }
    }

    /// The agent retries a refused request by itself. An error no retry gets past (a bad key)
    /// stops the run at once ([`Turn::stop_now`]), naming the provider, the status and the
    /// agent's words; a limit or server error is counted, to be recorded as ridden out when a
    /// response follows, and its announced wait kept as the reset should the agent give up.
    pub fn retrying(&mut self, retry: &AgentRetry) {
        use shepherd_core::limit::{ErrorClass, classify};
        let status = retry
            .status
            .map(|s| format!("HTTP {s} "))
            .unwrap_or_default();
        let seen = classify(&format!("{status}{}", retry.error));
        let provider = self.provider.unwrap_or("the provider");
        if seen.class == ErrorClass::Fatal {
            if self.stop_now.is_none() {
                let text = format!(
                    "{provider} answered {status}({}); that does not pass with retrying, so the \
                     agent's own retries were stopped at the first",
                    retry.error.trim()
                );
                self.note(format!("✗ {text}"));
                self.stop_now = Some(text);
            }
            return;
        }
        self.retry_after_ms = retry.delay_ms.or(self.retry_after_ms);
        let retrying = self.retrying.get_or_insert(Retrying {
            class: seen.class,
            count: 0,
            since: std::time::SystemTime::now(),
        });
        retrying.count += 1;
        self.lines.push(format!(
            "↻ {provider} refused: {status}{} (the agent retries{})",
            retry.error.trim(),
            retry
                .delay_ms
                .map(|ms| format!(" in {:.1} s", ms as f64 / 1000.0))
                .unwrap_or_default()
        ));
    }

    /// The limits ridden out since the last call.
    pub fn take_ridden(&mut self) -> Vec<Ridden> {
        std::mem::take(&mut self.ridden)
    }

    /// A new model response begins, for agents whose records mark where each one starts: what
    /// follows counts as another response even without a tool result in between.
    pub fn next_response(&mut self) {
        self.flush_streamed();
        self.in_response = false;
    }

    /// A tool call.
    pub fn tool_call(&mut self, name: &str, arguments: &Value) {
        self.flush_streamed();
        self.responding();
        self.tool_calls += 1;
        if name.ends_with("shepherd_done") {
            self.done_called = true;
        }
        let arguments = match arguments {
            Value::Null => String::new(),
            Value::String(text) => text.clone(),
            other => other.to_string(),
        };
        self.lines.push(
            format!("→ {name} {}", excerpt(&arguments))
                .trim_end()
                .to_owned(),
        );
    }

    /// Remembers which tool a call id belongs to, for its result.
    pub fn remember_call(&mut self, id: &str, name: &str) {
        self.call_names.insert(id.to_owned(), name.to_owned());
    }

    /// The tool a call id belongs to (`tool` when unknown).
    pub fn call_name(&self, id: &str) -> String {
        self.call_names
            .get(id)
            .cloned()
            .unwrap_or_else(|| "tool".to_owned())
    }

    /// A tool's result.
    pub fn tool_result(&mut self, name: &str, output: &str, failed: bool) {
        self.flush_streamed();
        self.in_response = false;
        let mark = if failed { "✗" } else { "←" };
        self.lines
            .push(format!("{mark} {name}: {}", excerpt(output.trim())));
    }

    /// A whole assistant text.
    pub fn text(&mut self, text: &str) {
        self.flush_streamed();
        if text.trim().is_empty() {
            return;
        }
        self.responding();
        self.text = Some(text.to_owned());
        self.lines.push(text.trim().to_owned());
    }

    /// A piece of assistant text streamed in deltas; it becomes one text at the next event
    /// that is not a delta, or at the end.
    pub fn text_delta(&mut self, delta: &str) {
        self.responding();
        self.streamed.push_str(delta);
    }

    /// The turn ended in an error.
    pub fn error(&mut self, message: &str) {
        self.flush_streamed();
        let message = message.trim();
        if self.error.is_none() && !message.is_empty() {
            self.error = Some(message.to_owned());
            self.lines.push(format!("✗ error: {message}"));
        }
    }

    /// Adds token counts.
    pub fn tokens(&mut self, input: u64, output: u64, cache_read: u64, cache_write: u64) {
        self.tokens_in += input;
        self.tokens_out += output;
        self.cache_read += cache_read;
        self.cache_write += cache_write;
    }

    /// A line of the readable transcript that is none of the above (a note about the turn).
    pub fn note(&mut self, line: String) {
        self.flush_streamed();
        self.lines.push(line);
    }

    /// Ends the turn's reading: streamed text becomes the last text.
    pub fn finish(&mut self) {
        self.flush_streamed();
    }

    /// The transcript lines read since the last call.
    pub fn take_lines(&mut self) -> Vec<String> {
        std::mem::take(&mut self.lines)
    }

    fn flush_streamed(&mut self) {
        if self.streamed.is_empty() {
            return;
        }
        let text = std::mem::take(&mut self.streamed);
        if !text.trim().is_empty() {
            self.text = Some(text.clone());
            self.lines.push(text.trim().to_owned());
        }
    }
}

fn excerpt(text: &str) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if flat.chars().count() <= EXCERPT {
        flat
    } else {
        let cut: String = flat.chars().take(EXCERPT).collect();
        format!("{cut}…")
    }
}

/// What a task's turns add up to: the figures its note records.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Telemetry {
    /// The harness.
    pub harness: Option<Harness>,
    /// The model.
    pub model: Option<String>,
    /// Model responses.
    pub turns: u64,
    /// Tool calls.
    pub tool_calls: u64,
    /// Input tokens.
    pub tokens_in: u64,
    /// Output tokens.
    pub tokens_out: u64,
    /// Cache reads.
    pub cache_read: u64,
    /// Cache writes.
    pub cache_write: u64,
    /// Cost, when the agent reports one.
    pub cost: Option<f64>,
    /// Time spent in the task's turns.
    pub run: Duration,
    /// The agent's session id.
    pub session: Option<String>,
    /// Where the agent keeps the session's transcript.
    pub transcript: Option<PathBuf>,
    /// The task's final words: the last assistant text of its turns.
    pub final_text: Option<String>,
}

impl Telemetry {
    /// Adds one turn that took `elapsed`.
    pub fn add(&mut self, turn: &Turn, elapsed: Duration) {
        if let Some(model) = &turn.model {
            self.model = Some(model.clone());
        }
        self.turns += turn.responses;
        self.tool_calls += turn.tool_calls;
        self.tokens_in += turn.tokens_in;
        self.tokens_out += turn.tokens_out;
        self.cache_read += turn.cache_read;
        self.cache_write += turn.cache_write;
        if let Some(cost) = turn.cost {
            self.cost = Some(self.cost.unwrap_or(0.0) + cost);
        }
        self.run += elapsed;
        if let Some(session) = &turn.session {
            self.session = Some(session.clone());
        }
        if let Some(text) = &turn.text {
            self.final_text = Some(text.clone());
        }
    }

    /// The figures as note metadata (flat keys, in a stable order; cost only when reported).
    pub fn to_metadata(&self) -> Value {
        let mut map = Map::new();
        if let Some(harness) = self.harness {
            map.insert("harness".into(), json!(harness.as_str()));
        }
        if let Some(model) = &self.model {
            map.insert("model".into(), json!(model));
        }
        map.insert("turns".into(), json!(self.turns));
        map.insert("toolCalls".into(), json!(self.tool_calls));
        map.insert("tokensIn".into(), json!(self.tokens_in));
        map.insert("tokensOut".into(), json!(self.tokens_out));
        map.insert("tokensCacheRead".into(), json!(self.cache_read));
        map.insert("tokensCacheWrite".into(), json!(self.cache_write));
        if let Some(cost) = self.cost {
            map.insert(
                "cost".into(),
                json!((cost * 1_000_000.0).round() / 1_000_000.0),
            );
        }
        map.insert("runMs".into(), json!(self.run.as_millis()));
        if let Some(session) = &self.session {
            map.insert("agentSession".into(), json!(session));
        }
        if let Some(path) = &self.transcript {
            map.insert("transcript".into(), json!(path.display().to_string()));
        }
        Value::Object(map)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn responses_are_counted_between_tool_results_and_deltas_become_one_text() {
        let mut turn = Turn::default();
        turn.text_delta("Let me ");
        turn.text_delta("look.");
        turn.tool_call("bash", &json!({"command": "ls"}));
        turn.tool_result("bash", "a\nb", false);
        turn.tool_call(
            "mcp__shepherd__shepherd_done",
            &json!({"status": "completed"}),
        );
        turn.tool_result("shepherd_done", "Task t completed.", false);
        turn.text_delta("Done.");
        turn.finish();
        assert_eq!(turn.responses, 3);
        assert_eq!(turn.tool_calls, 2);
        assert!(turn.done_called);
        assert_eq!(turn.text.as_deref(), Some("Done."));
        let lines = turn.take_lines();
        assert_eq!(lines[0], "Let me look.");
        assert_eq!(lines[1], r#"→ bash {"command":"ls"}"#);
        assert_eq!(lines[2], "← bash: a b");
        assert_eq!(lines.last().map(String::as_str), Some("Done."));
    }

    #[test]
    fn a_tasks_turns_add_up_and_cost_appears_only_when_reported() {
        let mut telemetry = Telemetry {
            harness: Some(Harness::Codex),
            ..Telemetry::default()
        };
        let mut first = Turn {
            session: Some("s1".into()),
            ..Turn::default()
        };
        first.tokens(10, 5, 2, 0);
        first.text("first");
        let mut second = Turn::default();
        second.tokens(20, 7, 0, 1);
        second.tool_call("x", &Value::Null);
        telemetry.add(&first, Duration::from_millis(1500));
        telemetry.add(&second, Duration::from_millis(500));
        let metadata = telemetry.to_metadata();
        assert_eq!(
            metadata,
            json!({"harness": "codex", "turns": 2, "toolCalls": 1, "tokensIn": 30,
                   "tokensOut": 12, "tokensCacheRead": 2, "tokensCacheWrite": 1,
                   "runMs": 2000, "agentSession": "s1"})
        );
        assert_eq!(telemetry.final_text.as_deref(), Some("first"));
        second.cost = Some(0.25);
        telemetry.add(&second, Duration::ZERO);
        assert_eq!(telemetry.to_metadata()["cost"], json!(0.25));
    }
}
