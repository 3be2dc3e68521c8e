//! The two model APIs pi can talk to, as the fake server writes them: OpenAI chat completions
//! and Anthropic messages, each streamed (server-sent events) or as one JSON body.
//!
//! The streamed shapes follow what the vendors send, in small pieces, because pi's clients
//! assemble text and tool-call arguments from deltas; a test that only ever sent whole messages
//! would miss bugs there.

use std::io::{self, Write};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use super::http::Sse;
use super::script::{Step, Usage};
use super::state::RecordedRequest;

/// Characters per streamed text delta.
const TEXT_PIECE: usize = 12;
/// Characters per streamed tool-argument delta.
const ARGUMENT_PIECE: usize = 20;

/// One tool call as sent.
#[derive(Debug)]
struct WireCall {
    id: String,
    name: String,
    arguments: String,
}

/// A step resolved against its request: the exact content to send.
#[derive(Debug)]
pub(crate) struct Reply {
    model: String,
    seq: usize,
    text: String,
    thinking: Option<String>,
    calls: Vec<WireCall>,
    usage: Usage,
}

impl Reply {
    pub(crate) fn new(step: &Step, request: &RecordedRequest) -> Self {
        let text = if step.echo {
            format!("ECHO: {}", request.last_input_text())
        } else {
            step.text.clone().unwrap_or_default()
        };
        let calls = step
            .tool_calls
            .iter()
            .enumerate()
            .map(|(index, call)| WireCall {
                id: call
                    .id
                    .clone()
                    .unwrap_or_else(|| format!("call_{}_{index}", request.seq)),
                name: call.name.clone(),
                arguments: call.arguments_json(),
            })
            .collect();
        Self {
            model: request.model.clone(),
            seq: request.seq,
            text,
            thinking: step.thinking.clone(),
            calls,
            usage: step.usage.unwrap_or_default(),
        }
    }
}

/// `text` in pieces of `size` characters (one empty piece for empty text).
fn pieces(text: &str, size: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    if chars.is_empty() {
        return vec![String::new()];
    }
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The JSON body of an error reply in the API's own shape.
pub(crate) fn error_body(anthropic: bool, message: &str) -> Value {
    if anthropic {
        json!({"type": "error", "error": {"type": "api_error", "message": message}})
    } else {
        json!({"error": {"message": message, "type": "server_error", "code": null}})
    }
}

/// OpenAI chat completions, one JSON body.
pub(crate) fn openai_json(reply: &Reply) -> Value {
    let mut message = json!({
        "role": "assistant",
        "content": if reply.text.is_empty() { Value::Null } else { json!(reply.text) },
    });
    if !reply.calls.is_empty() {
        message["tool_calls"] = reply
            .calls
            .iter()
            .map(|c| {
                json!({"id": c.id, "type": "function",
                       "function": {"name": c.name, "arguments": c.arguments}})
            })
            .collect();
    }
    json!({
        "id": format!("chatcmpl-{}", reply.seq),
        "object": "chat.completion",
        "created": now(),
        "model": reply.model,
        "usage": openai_usage(reply.usage),
        "choices": [{"index": 0, "message": message, "finish_reason": openai_finish(reply)}],
    })
}

fn openai_usage(usage: Usage) -> Value {
    json!({"prompt_tokens": usage.input, "completion_tokens": usage.output,
           "total_tokens": usage.input + usage.output})
}

fn openai_finish(reply: &Reply) -> &'static str {
    if reply.calls.is_empty() {
        "stop"
    } else {
        "tool_calls"
    }
}

/// OpenAI chat completions, streamed: a role chunk, reasoning and content deltas, tool calls
/// (name first, then argument fragments), the finish chunk, usage when asked, `[DONE]`.
pub(crate) fn openai_stream<W: Write>(
    sse: &mut Sse<'_, W>,
    reply: &Reply,
    include_usage: bool,
) -> io::Result<()> {
    let id = format!("chatcmpl-{}", reply.seq);
    let created = now();
    let chunk = |delta: Value, finish: Option<&str>| {
        json!({"id": id, "object": "chat.completion.chunk", "created": created,
               "model": reply.model,
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        .to_string()
    };
    sse.send(
        None,
        &chunk(json!({"role": "assistant", "content": ""}), None),
    )?;
    if let Some(thinking) = &reply.thinking {
        for piece in pieces(thinking, TEXT_PIECE) {
            sse.send(None, &chunk(json!({"reasoning_content": piece}), None))?;
        }
    }
    if !reply.text.is_empty() {
        for piece in pieces(&reply.text, TEXT_PIECE) {
            sse.send(None, &chunk(json!({"content": piece}), None))?;
        }
    }
    for (index, call) in reply.calls.iter().enumerate() {
        let head = json!({"tool_calls": [{"index": index, "id": call.id, "type": "function",
                                          "function": {"name": call.name, "arguments": ""}}]});
        sse.send(None, &chunk(head, None))?;
        for piece in pieces(&call.arguments, ARGUMENT_PIECE) {
            let delta = json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]});
            sse.send(None, &chunk(delta, None))?;
        }
    }
    sse.send(None, &chunk(json!({}), Some(openai_finish(reply))))?;
    if include_usage {
        let usage = json!({"id": id, "object": "chat.completion.chunk", "created": created,
                           "model": reply.model, "choices": [],
                           "usage": openai_usage(reply.usage)});
        sse.send(None, &usage.to_string())?;
    }
    sse.send(None, "[DONE]")
}

fn anthropic_blocks(reply: &Reply) -> Vec<Value> {
    let mut blocks = Vec::new();
    if !reply.text.is_empty() {
        blocks.push(json!({"type": "text", "text": reply.text}));
    }
    for call in &reply.calls {
        let input: Value = serde_json::from_str(&call.arguments).unwrap_or_else(|_| json!({}));
        blocks.push(
            json!({"type": "tool_use", "id": anthropic_id(&call.id), "name": call.name,
                           "input": input}),
        );
    }
    blocks
}

fn anthropic_id(id: &str) -> String {
    match id.strip_prefix("call_") {
        Some(rest) => format!("toolu_{rest}"),
        None => id.to_owned(),
    }
}

fn anthropic_stop(reply: &Reply) -> &'static str {
    if reply.calls.is_empty() {
        "end_turn"
    } else {
        "tool_use"
    }
}

/// Anthropic messages, one JSON body.
pub(crate) fn anthropic_json(reply: &Reply) -> Value {
    json!({
        "id": format!("msg_{}", reply.seq),
        "type": "message",
        "role": "assistant",
        "model": reply.model,
        "content": anthropic_blocks(reply),
        "stop_reason": anthropic_stop(reply),
        "stop_sequence": null,
        "usage": {"input_tokens": reply.usage.input, "output_tokens": reply.usage.output},
    })
}

/// Anthropic messages, streamed: `message_start`, each content block (start, deltas, stop),
/// `message_delta` with the stop reason, `message_stop`.
pub(crate) fn anthropic_stream<W: Write>(sse: &mut Sse<'_, W>, reply: &Reply) -> io::Result<()> {
    let mut send = |event: &str, data: Value| sse.send(Some(event), &data.to_string());
    send(
        "message_start",
        json!({"type": "message_start", "message": {
            "id": format!("msg_{}", reply.seq), "type": "message", "role": "assistant",
            "model": reply.model, "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": reply.usage.input, "output_tokens": 1}}}),
    )?;
    for (index, block) in anthropic_blocks(reply).into_iter().enumerate() {
        let (start, deltas) = if block["type"] == "text" {
            let text = block["text"].as_str().unwrap_or_default();
            let deltas: Vec<Value> = pieces(text, TEXT_PIECE)
                .into_iter()
                .map(|piece| json!({"type": "text_delta", "text": piece}))
                .collect();
            (json!({"type": "text", "text": ""}), deltas)
        } else {
            let deltas = pieces(&block["input"].to_string(), ARGUMENT_PIECE)
                .into_iter()
                .map(|piece| json!({"type": "input_json_delta", "partial_json": piece}))
                .collect();
            let start = json!({"type": "tool_use", "id": block["id"], "name": block["name"],
                               "input": {}});
            (start, deltas)
        };
        send(
            "content_block_start",
            json!({"type": "content_block_start", "index": index, "content_block": start}),
        )?;
        for delta in deltas {
            send(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index, "delta": delta}),
            )?;
        }
        send(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        )?;
    }
    send(
        "message_delta",
        json!({"type": "message_delta",
               "delta": {"stop_reason": anthropic_stop(reply), "stop_sequence": null},
               "usage": {"output_tokens": reply.usage.output}}),
    )?;
    send("message_stop", json!({"type": "message_stop"}))
}
