//! Reading a headless pi sheep. Its log holds pi's RPC event stream, one JSON object per line,
//! which is exact but unreadable; `read` shows it as a transcript instead: what the sheep was
//! told, what it said, which tools it ran and what they returned. Anything that is not an RPC
//! event (pi's own stderr) is kept as it is.

use serde_json::Value;
use shepherd_harness::content_text;

/// Longest a rendered user message or tool result gets, in characters.
const EXCERPT: usize = 400;
/// Longest a tool call's arguments get, in characters.
const ARGUMENTS: usize = 200;

/// Renders a pi RPC event log as a transcript, one entry per line group.
pub(crate) fn transcript(log: &str) -> String {
    let mut out: Vec<String> = Vec::new();
    for line in log.lines() {
        match serde_json::from_str::<Value>(line) {
            Ok(event) if event.get("type").is_some() => out.extend(render(&event)),
            Ok(_) | Err(_) if line.trim().is_empty() => {}
            _ => out.push(line.to_owned()),
        }
    }
    out.join("\n")
}

fn render(event: &Value) -> Vec<String> {
    match event["type"].as_str().unwrap_or_default() {
        "message_end" => message(&event["message"]),
        "tool_execution_end" => {
            let mark = if event["isError"].as_bool() == Some(true) {
                "✗"
            } else {
                "←"
            };
            let name = event["toolName"].as_str().unwrap_or("tool");
            vec![format!(
                "{mark} {name}: {}",
                excerpt(&content_text(&event["result"]["content"]), EXCERPT)
            )]
        }
        _ => Vec::new(),
    }
}

fn message(message: &Value) -> Vec<String> {
    match message["role"].as_str().unwrap_or_default() {
        "user" => vec![format!(
            "» {}",
            excerpt(&content_text(&message["content"]), EXCERPT)
        )],
        "assistant" => {
            let mut lines = Vec::new();
            for block in message["content"].as_array().into_iter().flatten() {
                match block["type"].as_str().unwrap_or_default() {
                    "text" => {
                        let text = block["text"].as_str().unwrap_or_default().trim();
                        if !text.is_empty() {
                            lines.push(text.to_owned());
                        }
                    }
                    "toolCall" => lines.push(format!(
                        "→ {} {}",
                        block["name"].as_str().unwrap_or("tool"),
                        excerpt(&block["arguments"].to_string(), ARGUMENTS)
                    )),
                    _ => {}
                }
            }
            if message["stopReason"] == "error" {
                lines.push(format!(
                    "! the model call failed: {}",
                    message["errorMessage"].as_str().unwrap_or("unknown error")
                ));
            }
            lines
        }
        _ => Vec::new(),
    }
}

/// At most `max` characters of `text`, marked when cut.
fn excerpt(text: &str, max: usize) -> String {
    let text = text.trim();
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rpc_events_become_a_transcript_and_other_lines_stay() {
        let log = [
            r#"{"type":"agent_start"}"#,
            r#"{"type":"message_end","message":{"role":"system","content":""}}"#,
            r#"{"type":"message_end","message":{"role":"user","content":[{"type":"text","text":"Fix the bug."}]}}"#,
            r#"{"type":"message_update","assistantMessageEvent":{"type":"text_delta","delta":"Lo"}}"#,
            r#"{"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"Looking."},{"type":"toolCall","name":"bash","arguments":{"command":"ls"}}]}}"#,
            r#"{"type":"tool_execution_end","toolName":"bash","result":{"content":[{"type":"text","text":"src\nCargo.toml"}]},"isError":false}"#,
            r#"{"type":"tool_execution_end","toolName":"read","result":{"content":[{"type":"text","text":"no such file"}]},"isError":true}"#,
            "a warning pi printed on stderr",
            r#"{"type":"message_end","message":{"role":"assistant","content":[],"stopReason":"error","errorMessage":"401 invalid key"}}"#,
        ]
        .join("\n");
        assert_eq!(
            transcript(&log),
            [
                "» Fix the bug.",
                "Looking.",
                r#"→ bash {"command":"ls"}"#,
                "← bash: src\nCargo.toml",
                "✗ read: no such file",
                "a warning pi printed on stderr",
                "! the model call failed: 401 invalid key",
            ]
            .join("\n")
        );
    }

    #[test]
    fn long_text_is_cut_on_a_character_boundary() {
        let long = "é".repeat(EXCERPT + 10);
        let cut = excerpt(&long, EXCERPT);
        assert_eq!(cut.chars().count(), EXCERPT + 1);
        assert!(cut.ends_with('…'));
    }
}
