//! Reading what a pi session recorded: tool calls and their results, chat message texts, and a
//! one-line-per-record summary for failure messages.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]
#![allow(dead_code, unreachable_pub)]

use std::path::Path;

use serde_json::{Value, json};

/// The `tool_execution_end` record of the first call to `tool` in `records`.
pub fn tool_end<'r>(records: &'r [Value], tool: &str) -> Option<&'r Value> {
    records
        .iter()
        .find(|r| r["type"] == "tool_execution_end" && r["toolName"] == tool)
}

/// The details of a successful call to `tool`.
pub fn tool_result(records: &[Value], tool: &str) -> Option<Value> {
    let end = tool_end(records, tool)?;
    (end["isError"] != json!(true)).then(|| end["result"]["details"].clone())
}

/// The text of a tool result.
pub fn result_text(result: &Value) -> String {
    result["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// One line per record type, with tool names and errors, for failure messages.
pub fn summary(records: &[Value]) -> String {
    records
        .iter()
        .filter(|r| r["type"] != "message_update")
        .map(|r| {
            let mut line = r["type"].as_str().unwrap_or("?").to_owned();
            if let Some(tool) = r["toolName"].as_str() {
                line.push_str(&format!(" {tool}"));
            }
            if r["type"] == "tool_execution_end" {
                line.push_str(&format!(": {}", result_text(&r["result"])));
            }
            if let Some(error) = r["message"]["errorMessage"].as_str() {
                line.push_str(&format!(" error: {error}"));
            }
            line
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The text of one chat message (string content or text parts).
pub fn message_text(message: &Value) -> String {
    match &message["content"] {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// Reads a file under the project.
pub fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}
