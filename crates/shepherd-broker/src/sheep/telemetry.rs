//! What a pi sheep's run cost, read from its session file: model, turns, tool calls, tokens
//! (input, output, cache) and cost, and how long it took.
//!
//! pi appends one JSON entry per line and only ever appends, so a task's share starts at the
//! byte offset recorded when the task started. It ends where the task's own turns end: at the
//! first message that arrives after the sheep called `shepherd_done` — a message the parent sent the
//! moment the completion reached it runs in the same pi run, and neither its answer nor its
//! cost belongs to the task. The task's final words are the last assistant text within that
//! span, and its run time runs from its first message to its last entry (pi writes its header
//! when the session starts, which may be long before the first task). The file is read only once
//! the sheep's run has settled (or its process ended): nothing reads a session while it can
//! still be written.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use serde_json::{Map, Value, json};

/// Totals over a span of a session file.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Telemetry {
    model: Option<String>,
    turns: u64,
    tool_calls: u64,
    input: u64,
    output: u64,
    cache_read: u64,
    cache_write: u64,
    cost: f64,
    first: Option<jiff::Timestamp>,
    last: Option<jiff::Timestamp>,
    /// The last assistant text of the task's own turns.
    final_text: Option<String>,
}

impl Telemetry {
    /// Reads the entries after byte `cursor` of `path`.
    pub(crate) fn from_session(path: &Path, cursor: u64) -> std::io::Result<Self> {
        // The session file is the sheep's own to write: never read through a link it left.
        let mut file = shepherd_fs::open_nofollow(path)?;
        file.seek(SeekFrom::Start(cursor))?;
        let mut text = String::new();
        file.read_to_string(&mut text)?;
        let mut telemetry = Self::default();
        let mut done_called = false;
        for line in text.lines() {
            let Ok(entry) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            let message = &entry["message"];
            let arrived = (entry["type"] == "message" && message["role"] == "user")
                || entry["type"] == "custom_message";
            if arrived && done_called {
                // Whatever arrives after the task was settled (a user message, or a message
                // pi keeps as a custom entry) is not the task's.
                break;
            }
            telemetry.add(&entry);
            if entry["type"] == "message" && message["role"] == "assistant" {
                done_called |= message["content"].as_array().is_some_and(|parts| {
                    parts
                        .iter()
                        .any(|p| p["type"] == "toolCall" && p["name"] == "shepherd_done")
                });
            }
        }
        Ok(telemetry)
    }

    /// The last assistant text of the task's own turns, when it had any.
    pub(crate) fn final_text(&self) -> Option<&str> {
        self.final_text.as_deref()
    }

    fn add(&mut self, entry: &Value) {
        if entry["type"] == "message"
            && let Some(at) = entry["timestamp"]
                .as_str()
                .and_then(|t| t.parse::<jiff::Timestamp>().ok())
        {
            self.first = Some(self.first.map_or(at, |first| first.min(at)));
            self.last = Some(self.last.map_or(at, |last| last.max(at)));
        }
        match entry["type"].as_str() {
            Some("model_change") => {
                if let (Some(provider), Some(model)) =
                    (entry["provider"].as_str(), entry["modelId"].as_str())
                {
                    self.model = Some(format!("{provider}/{model}"));
                }
            }
            Some("message") if entry["message"]["role"] == "assistant" => {
                let message = &entry["message"];
                self.turns += 1;
                if let (Some(provider), Some(model)) =
                    (message["provider"].as_str(), message["model"].as_str())
                {
                    self.model = Some(format!("{provider}/{model}"));
                }
                let parts = message["content"]
                    .as_array()
                    .map(Vec::as_slice)
                    .unwrap_or_default();
                self.tool_calls += parts.iter().filter(|p| p["type"] == "toolCall").count() as u64;
                let text: Vec<&str> = parts
                    .iter()
                    .filter(|p| p["type"] == "text")
                    .filter_map(|p| p["text"].as_str())
                    .collect();
                if !text.is_empty() {
                    self.final_text = Some(text.join("\n"));
                }
                let usage = &message["usage"];
                let count = |key: &str| usage[key].as_u64().unwrap_or(0);
                self.input += count("input");
                self.output += count("output");
                self.cache_read += count("cacheRead");
                self.cache_write += count("cacheWrite");
                self.cost += usage["cost"]["total"].as_f64().unwrap_or(0.0);
            }
            _ => {}
        }
    }

    /// The figures as note metadata (flat keys, in a stable order).
    pub(crate) fn to_metadata(&self) -> Value {
        let mut map = Map::new();
        if let Some(model) = &self.model {
            map.insert("model".into(), json!(model));
        }
        map.insert("turns".into(), json!(self.turns));
        map.insert("toolCalls".into(), json!(self.tool_calls));
        map.insert("tokensIn".into(), json!(self.input));
        map.insert("tokensOut".into(), json!(self.output));
        map.insert("tokensCacheRead".into(), json!(self.cache_read));
        map.insert("tokensCacheWrite".into(), json!(self.cache_write));
        map.insert(
            "cost".into(),
            json!((self.cost * 1_000_000.0).round() / 1_000_000.0),
        );
        if let (Some(first), Some(last)) = (self.first, self.last) {
            map.insert(
                "runMs".into(),
                json!(last.duration_since(first).as_millis()),
            );
        }
        Value::Object(map)
    }
}

/// The size of a session file now (0 when pi has not created it yet).
pub(crate) fn session_size(path: &Path) -> u64 {
    fs_err::symlink_metadata(path).map_or(0, |m| if m.is_file() { m.len() } else { 0 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_after_done_and_its_answer_are_not_the_tasks() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let lines = [
            r#"{"type":"session","timestamp":"2026-01-01T00:00:00Z"}"#,
            r#"{"type":"message","timestamp":"2026-01-01T00:00:15Z","message":{"role":"user","content":[{"type":"text","text":"the task"}]}}"#,
            r#"{"type":"message","timestamp":"2026-01-01T00:00:16Z","message":{"role":"assistant","usage":{"input":10},"content":[{"type":"toolCall","name":"bash"}]}}"#,
            r#"{"type":"message","timestamp":"2026-01-01T00:00:17Z","message":{"role":"toolResult","content":[]}}"#,
            r#"{"type":"message","timestamp":"2026-01-01T00:00:18Z","message":{"role":"assistant","usage":{"input":10},"content":[{"type":"toolCall","name":"shepherd_done"}]}}"#,
            r#"{"type":"message","timestamp":"2026-01-01T00:00:19Z","message":{"role":"toolResult","content":[]}}"#,
            r#"{"type":"message","timestamp":"2026-01-01T00:00:20Z","message":{"role":"assistant","usage":{"input":10},"content":[{"type":"text","text":"Done: wrote the file."}]}}"#,
            r#"{"type":"message","timestamp":"2026-01-01T00:00:21Z","message":{"role":"user","content":[{"type":"text","text":"[Shepherd message] ping"}]}}"#,
            r#"{"type":"message","timestamp":"2026-01-01T00:00:22Z","message":{"role":"assistant","usage":{"input":99},"content":[{"type":"toolCall","name":"shepherd_message"}]}}"#,
            r#"{"type":"message","timestamp":"2026-01-01T00:00:23Z","message":{"role":"assistant","usage":{"input":99},"content":[{"type":"text","text":"Replied pong."}]}}"#,
        ];
        std::fs::write(&path, format!("{}\n", lines.join("\n"))).unwrap();
        let telemetry = Telemetry::from_session(&path, 0).unwrap();
        assert_eq!(telemetry.final_text(), Some("Done: wrote the file."));
        let metadata = telemetry.to_metadata();
        assert_eq!(metadata["turns"], 3);
        assert_eq!(metadata["toolCalls"], 2);
        assert_eq!(metadata["tokensIn"], 30);
        // From the task's first message, not from when pi started the session.
        assert_eq!(metadata["runMs"], 5000);
    }

    #[test]
    fn sums_the_span_after_the_cursor() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let earlier = r#"{"type":"message","timestamp":"2026-01-01T00:00:00Z","message":{"role":"assistant","provider":"old","model":"x","usage":{"input":1000},"content":[]}}"#;
        let lines = [
            r#"{"type":"model_change","timestamp":"2026-01-01T00:01:00Z","provider":"fake","modelId":"m1"}"#,
            r#"{"type":"message","timestamp":"2026-01-01T00:01:01Z","message":{"role":"user","content":[]}}"#,
            r#"{"type":"message","timestamp":"2026-01-01T00:01:02Z","message":{"role":"assistant","provider":"fake","model":"m1","usage":{"input":10,"output":5,"cacheRead":3,"cacheWrite":1,"cost":{"total":0.25}},"content":[{"type":"toolCall"},{"type":"text"}]}}"#,
            "not json",
            r#"{"type":"message","timestamp":"2026-01-01T00:01:04Z","message":{"role":"assistant","provider":"fake","model":"m1","usage":{"input":20,"output":7},"content":[{"type":"text"}]}}"#,
        ];
        std::fs::write(&path, format!("{earlier}\n{}\n", lines.join("\n"))).unwrap();
        let cursor = earlier.len() as u64 + 1;
        let metadata = Telemetry::from_session(&path, cursor)
            .unwrap()
            .to_metadata();
        assert_eq!(
            metadata,
            json!({"model":"fake/m1","turns":2,"toolCalls":1,"tokensIn":30,"tokensOut":12,"tokensCacheRead":3,"tokensCacheWrite":1,"cost":0.25,"runMs":3000})
        );
    }
}
