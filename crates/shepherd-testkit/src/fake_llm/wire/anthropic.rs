//! Anthropic messages (Claude Code, pi's Anthropic provider): one JSON body, or streamed —
//! `message_start`, each content block (start, deltas, stop; thinking first, then text, then
//! each `tool_use`), `message_delta` with the stop reason and usage, `message_stop`.

use std::io::{self, Write};

use serde_json::{Value, json};

use super::super::http::Sse;
use super::{ARGUMENT_PIECE, Reply, TEXT_PIECE, pieces};

/// The signature sent with a thinking block (Claude Code sends it back; nobody checks it).
const SIGNATURE: &str = "fake-llm-signature";

fn blocks(reply: &Reply) -> Vec<Value> {
    let mut blocks = Vec::new();
    if let Some(thinking) = &reply.thinking {
        blocks.push(json!({"type": "thinking", "thinking": thinking, "signature": SIGNATURE}));
    }
    if !reply.text.is_empty() {
        blocks.push(json!({"type": "text", "text": reply.text}));
    }
    for call in &reply.calls {
        blocks.push(
            json!({"type": "tool_use", "id": tool_use_id(&call.id), "name": call.name,
                           "input": Reply::arguments_value(call)}),
        );
    }
    blocks
}

fn tool_use_id(id: &str) -> String {
    match id.strip_prefix("call_") {
        Some(rest) => format!("toolu_{rest}"),
        None => id.to_owned(),
    }
}

fn stop(reply: &Reply) -> &'static str {
    if reply.has_calls() {
        "tool_use"
    } else {
        "end_turn"
    }
}

/// One JSON body.
pub(crate) fn whole(reply: &Reply) -> Value {
    json!({
        "id": format!("msg_{}", reply.seq),
        "type": "message",
        "role": "assistant",
        "model": reply.model,
        "content": blocks(reply),
        "stop_reason": stop(reply),
        "stop_sequence": null,
        "usage": {"input_tokens": reply.usage.input, "output_tokens": reply.usage.output},
    })
}

/// Streamed.
pub(crate) fn stream<W: Write>(sse: &mut Sse<'_, W>, reply: &Reply) -> io::Result<()> {
    let mut send = |event: &str, data: Value| sse.send(Some(event), &data.to_string());
    send(
        "message_start",
        json!({"type": "message_start", "message": {
            "id": format!("msg_{}", reply.seq), "type": "message", "role": "assistant",
            "model": reply.model, "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": reply.usage.input, "output_tokens": 1}}}),
    )?;
    for (index, block) in blocks(reply).into_iter().enumerate() {
        let (start, deltas) = match block["type"].as_str() {
            Some("thinking") => {
                let text = block["thinking"].as_str().unwrap_or_default();
                let mut deltas: Vec<Value> = pieces(text, TEXT_PIECE)
                    .into_iter()
                    .map(|piece| json!({"type": "thinking_delta", "thinking": piece}))
                    .collect();
                deltas.push(json!({"type": "signature_delta", "signature": SIGNATURE}));
                (
                    json!({"type": "thinking", "thinking": "", "signature": ""}),
                    deltas,
                )
            }
            Some("text") => {
                let text = block["text"].as_str().unwrap_or_default();
                let deltas = pieces(text, TEXT_PIECE)
                    .into_iter()
                    .map(|piece| json!({"type": "text_delta", "text": piece}))
                    .collect();
                (json!({"type": "text", "text": ""}), deltas)
            }
            _ => {
                let deltas = pieces(&block["input"].to_string(), ARGUMENT_PIECE)
                    .into_iter()
                    .map(|piece| json!({"type": "input_json_delta", "partial_json": piece}))
                    .collect();
                let start = json!({"type": "tool_use", "id": block["id"], "name": block["name"],
                                   "input": {}});
                (start, deltas)
            }
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
               "delta": {"stop_reason": stop(reply), "stop_sequence": null},
               "usage": {"output_tokens": reply.usage.output}}),
    )?;
    let stop = json!({"type": "message_stop"});
    sse.send_last(Some("message_stop"), &stop.to_string())
}
