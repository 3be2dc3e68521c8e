//! OpenAI chat completions (pi, opencode): one JSON body, or streamed as `data:` chunks — a
//! role chunk, reasoning and content deltas, tool calls (name first, then argument fragments),
//! the finish chunk, a usage chunk when asked, `[DONE]`.

use std::io::{self, Write};

use serde_json::{Value, json};

use super::super::http::Sse;
use super::super::script::Usage;
use super::{ARGUMENT_PIECE, Reply, TEXT_PIECE, now, pieces};

/// One JSON body.
pub(crate) fn whole(reply: &Reply) -> Value {
    let mut message = json!({
        "role": "assistant",
        "content": if reply.text.is_empty() { Value::Null } else { json!(reply.text) },
    });
    if let Some(thinking) = &reply.thinking {
        message["reasoning_content"] = json!(thinking);
    }
    if reply.has_calls() {
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
        "usage": usage(reply.usage),
        "choices": [{"index": 0, "message": message, "finish_reason": finish(reply)}],
    })
}

fn usage(usage: Usage) -> Value {
    json!({"prompt_tokens": usage.input, "completion_tokens": usage.output,
           "total_tokens": usage.input + usage.output})
}

fn finish(reply: &Reply) -> &'static str {
    if reply.has_calls() {
        "tool_calls"
    } else {
        "stop"
    }
}

/// Streamed.
pub(crate) fn stream<W: Write>(
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
    sse.send(None, &chunk(json!({}), Some(finish(reply))))?;
    if include_usage {
        let usage = json!({"id": id, "object": "chat.completion.chunk", "created": created,
                           "model": reply.model, "choices": [],
                           "usage": usage(reply.usage)});
        sse.send(None, &usage.to_string())?;
    }
    sse.send_last(None, "[DONE]")
}
