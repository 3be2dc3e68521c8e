//! What the model reads: the result text of every tool, in the same words as the pi tools.
//!
//! A parent tool's result is one block the model can rely on — a one-line service message,
//! then `call:` (the tool and its arguments), `return:` (the value) and `details:` (everything
//! else, one `key in words: value` line each) — built by [`success`] and [`failure`] exactly as
//! the pi extension's `protocol.ts` builds it, so a model that learnt Shepherd in pi reads the
//! same thing here. A failure carries the broker's stable code, its one-line message and a hint
//! saying what to do instead, and is marked as a tool error (never a protocol error). What goes
//! inside the block — sheep, tasks, runs, inbox items in words — is in [`super::words`].

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{Map, Value, json};

use super::error::ToolError;

use super::catalogue::HIDDEN_DETAILS;

/// `returnCode` → `return code`.
fn words(key: &str) -> String {
    let mut out = String::with_capacity(key.len() + 4);
    let mut previous: Option<char> = None;
    for c in key.chars() {
        if c.is_ascii_uppercase()
            && previous.is_some_and(|p| p.is_ascii_lowercase() || p.is_ascii_digit())
        {
            out.push(' ');
        }
        out.push(c.to_ascii_lowercase());
        previous = Some(c);
    }
    out
}

fn indent(text: &str) -> String {
    text.split('\n')
        .map(|line| {
            if line.is_empty() {
                String::new()
            } else {
                format!("    {line}")
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn render_value(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Array(items) => items
            .iter()
            .map(|item| match item {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        other => other.to_string(),
    }
}

/// The arguments as the call echoes them: what the host sent, without nulls.
pub(crate) fn call_arguments(args: &Map<String, Value>) -> Value {
    Value::Object(
        args.iter()
            .filter(|(_, value)| !value.is_null())
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect(),
    )
}

/// The `call:` / `return:` / `details:` block. `details` holds `(key, value)` in order; a
/// `None` value is left out, a JSON null shows as `none`.
pub(crate) fn protocol_text(
    service: &str,
    tool: &str,
    args: &Value,
    return_value: &Value,
    details: &[(&str, Option<Value>)],
    key_names: &[(&str, &str)],
) -> String {
    let mut lines: Vec<(bool, String)> = details
        .iter()
        .filter(|(key, value)| !HIDDEN_DETAILS.contains(key) && value.is_some())
        .map(|(key, value)| {
            let shown = match value.as_ref().expect("filtered") {
                Value::Null => "none".to_owned(),
                Value::String(text) => text.clone(),
                other => other.to_string(),
            };
            let name = key_names
                .iter()
                .find(|(k, _)| k == key)
                .map_or_else(|| words(key), |(_, name)| (*name).to_owned());
            (*key == "returnCode", format!("    {name}: {shown}"))
        })
        .collect();
    // The return code goes last.
    lines.sort_by_key(|(last, _)| *last);
    let mut text = format!(
        "{service}\n\ncall:\n{}\n\nreturn:\n{}",
        indent(&format!("{tool} {args}")),
        indent(&render_value(return_value))
    );
    if !lines.is_empty() {
        text.push_str("\n\ndetails:\n");
        text.push_str(
            &lines
                .into_iter()
                .map(|(_, line)| line)
                .collect::<Vec<_>>()
                .join("\n"),
        );
    }
    text
}

/// A successful tool result.
pub(crate) fn success(
    tool: &str,
    args: &Map<String, Value>,
    service: &str,
    return_value: &Value,
    extra: &[(&str, Option<Value>)],
    key_names: &[(&str, &str)],
) -> CallToolResult {
    let mut details: Vec<(&str, Option<Value>)> = extra.to_vec();
    details.push(("returnCode", Some(json!(0))));
    let text = protocol_text(
        service,
        tool,
        &call_arguments(args),
        return_value,
        &details,
        key_names,
    );
    CallToolResult::success(vec![ContentBlock::text(text)])
}

/// A failed tool call, as a tool error the model reads: code, message, hint and return code.
pub(crate) fn failure(
    tool: &str,
    action: &str,
    args: &Map<String, Value>,
    error: &ToolError,
) -> CallToolResult {
    let hint = error.hint();
    let mut return_value = json!({ "code": error.code, "error": error.message });
    if let Some(hint) = &hint {
        return_value["hint"] = json!(hint);
    }
    return_value["returnCode"] = json!(error.return_code);
    let details = [
        ("action", Some(json!(action))),
        ("code", Some(json!(error.code))),
        ("error", Some(json!(error.message))),
        ("hint", hint.map(Value::String)),
        ("returnCode", Some(json!(error.return_code))),
    ];
    let service = format!(
        "Herd {action} failed (return code {}): {}",
        error.return_code, error.message
    );
    let text = protocol_text(
        &service,
        tool,
        &call_arguments(args),
        &return_value,
        &details,
        &[],
    );
    CallToolResult::error(vec![ContentBlock::text(text)])
}

/// A plain text result (the sheep's tools, runs), marked as an error when `is_error`.
pub(crate) fn plain(text: impl Into<String>, is_error: bool) -> CallToolResult {
    let content = vec![ContentBlock::text(text.into())];
    if is_error {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    }
}

/// `n thing` or `n things`.
pub(crate) fn plural(n: usize, one: &str) -> String {
    format!("{n} {one}{}", if n == 1 { "" } else { "s" })
}

/// `text` trimmed and cut to `max` characters, the last one an ellipsis.
pub(crate) fn clip(text: &str, max: usize) -> String {
    let flat = text.trim();
    if flat.chars().count() > max {
        let mut cut: String = flat.chars().take(max.saturating_sub(1)).collect();
        cut.push('…');
        cut
    } else {
        flat.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_block_reads_like_pi() {
        let args = json!({"agent": "worker", "label": "x", "cwd": null});
        let result = success(
            "shepherd_spawn",
            args.as_object().unwrap(),
            "shepherd_spawn spawned worker: x",
            &json!({"id": "a1", "agent": "worker", "label": "x"}),
            &[
                ("id", Some(json!("a1"))),
                ("agent", Some(json!("worker"))),
                ("displayName", Some(json!("worker: x"))),
                ("fieldnote", Some(Value::Null)),
                ("skipped", None),
            ],
            &[("id", "agent id"), ("fieldnote", "agent fieldnote")],
        );
        let text = result.content[0].as_text().unwrap().text.clone();
        assert_eq!(
            text,
            "shepherd_spawn spawned worker: x\n\ncall:\n    shepherd_spawn {\"agent\":\"worker\",\"label\":\"x\"}\n\nreturn:\n    {\"id\":\"a1\",\"agent\":\"worker\",\"label\":\"x\"}\n\ndetails:\n    agent id: a1\n    display name: worker: x\n    agent fieldnote: none\n    return code: 0"
        );
    }

    #[test]
    fn a_failure_names_code_message_and_hint() {
        let error = ToolError::new(
            shepherd_core::error_code::ErrorCode::UnknownAgent,
            "no agent named `wrker`",
        );
        let result = failure("shepherd_spawn", "spawn", &Map::new(), &error);
        assert_eq!(result.is_error, Some(true));
        let text = result.content[0].as_text().unwrap().text.clone();
        assert!(
            text.starts_with("Herd spawn failed (return code 1): no agent named `wrker`"),
            "{text}"
        );
        assert!(text.contains("    code: unknown_agent\n"), "{text}");
        assert!(
            text.contains("    hint: Agent names are case-sensitive"),
            "{text}"
        );
    }

    #[test]
    fn words_and_clips() {
        assert_eq!(words("returnCode"), "return code");
        assert_eq!(clip("abcdef", 4), "abc…");
    }
}
