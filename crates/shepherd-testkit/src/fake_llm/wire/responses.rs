//! OpenAI responses (Codex, which speaks nothing else): one response object, or streamed as
//! typed events — `response.created`, `response.in_progress`, then per output item (a
//! reasoning summary, the assistant message, each function call) `response.output_item.added`,
//! its deltas and `response.output_item.done`, and `response.completed` with the usage.
//!
//! A call to a tool offered inside a `namespace` (how Codex offers MCP tools: namespace
//! `mcp__<server>`) carries that `namespace` beside the tool's own `name`.

use std::io::{self, Write};

use serde_json::{Value, json};

use super::super::http::Sse;
use super::{ARGUMENT_PIECE, Reply, TEXT_PIECE, now, pieces};

fn response_id(reply: &Reply) -> String {
    format!("resp_{}", reply.seq)
}

/// The output items, complete.
fn items(reply: &Reply) -> Vec<Value> {
    let mut items = Vec::new();
    if let Some(thinking) = &reply.thinking {
        items.push(
            json!({"type": "reasoning", "id": format!("rs_{}", reply.seq),
                          "summary": [{"type": "summary_text", "text": thinking}]}),
        );
    }
    if !reply.text.is_empty() || !reply.has_calls() {
        items.push(json!({
            "type": "message", "id": format!("msg_{}", reply.seq), "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": reply.text, "annotations": []}],
        }));
    }
    for (index, call) in reply.calls.iter().enumerate() {
        let mut item = json!({
            "type": "function_call", "id": format!("fc_{}_{index}", reply.seq),
            "call_id": call.id, "name": call.name, "arguments": call.arguments,
            "status": "completed",
        });
        if let Some(namespace) = &call.namespace {
            item["namespace"] = json!(namespace);
        }
        items.push(item);
    }
    items
}

fn usage(reply: &Reply) -> Value {
    let usage = reply.usage;
    json!({"input_tokens": usage.input, "input_tokens_details": {"cached_tokens": 0},
           "output_tokens": usage.output, "output_tokens_details": {"reasoning_tokens": 0},
           "total_tokens": usage.input + usage.output})
}

/// The whole response object.
pub(crate) fn whole(reply: &Reply) -> Value {
    json!({
        "id": response_id(reply), "object": "response", "created_at": now(),
        "model": reply.model, "status": "completed", "output": items(reply),
        "usage": usage(reply),
    })
}

/// Streamed.
pub(crate) fn stream<W: Write>(sse: &mut Sse<'_, W>, reply: &Reply) -> io::Result<()> {
    let mut sequence = 0_u64;
    let mut send = |mut event: Value| {
        event["sequence_number"] = json!(sequence);
        sequence += 1;
        let kind = event["type"].as_str().unwrap_or_default().to_owned();
        sse.send(Some(&kind), &event.to_string())
    };
    let complete = whole(reply);
    let mut started = complete.clone();
    started["status"] = json!("in_progress");
    started["output"] = json!([]);
    started["usage"] = Value::Null;
    send(json!({"type": "response.created", "response": started}))?;
    send(json!({"type": "response.in_progress", "response": started}))?;
    for (index, item) in items(reply).into_iter().enumerate() {
        let id = item["id"].clone();
        let mut added = item.clone();
        match item["type"].as_str() {
            Some("reasoning") => {
                added["summary"] = json!([]);
                send(
                    json!({"type": "response.output_item.added", "output_index": index,
                            "item": added}),
                )?;
                let text = item["summary"][0]["text"].as_str().unwrap_or_default();
                let at = json!({"item_id": id, "output_index": index, "summary_index": 0});
                let event = |kind: &str, extra: Value| {
                    let mut event = at.clone();
                    event["type"] = json!(kind);
                    if let (Some(event), Some(extra)) = (event.as_object_mut(), extra.as_object()) {
                        event.extend(extra.clone());
                    }
                    event
                };
                send(event(
                    "response.reasoning_summary_part.added",
                    json!({"part": {"type": "summary_text", "text": ""}}),
                ))?;
                for piece in pieces(text, TEXT_PIECE) {
                    send(event(
                        "response.reasoning_summary_text.delta",
                        json!({ "delta": piece }),
                    ))?;
                }
                send(event(
                    "response.reasoning_summary_text.done",
                    json!({ "text": text }),
                ))?;
                send(event(
                    "response.reasoning_summary_part.done",
                    json!({"part": {"type": "summary_text", "text": text}}),
                ))?;
            }
            Some("message") => {
                added["content"] = json!([]);
                added["status"] = json!("in_progress");
                send(
                    json!({"type": "response.output_item.added", "output_index": index,
                            "item": added}),
                )?;
                let part = &item["content"][0];
                let text = part["text"].as_str().unwrap_or_default();
                let at = |kind: &str| {
                    json!({"type": kind, "item_id": id, "output_index": index,
                           "content_index": 0})
                };
                let mut event = at("response.content_part.added");
                event["part"] = json!({"type": "output_text", "text": "", "annotations": []});
                send(event)?;
                for piece in pieces(text, TEXT_PIECE) {
                    let mut event = at("response.output_text.delta");
                    event["delta"] = json!(piece);
                    send(event)?;
                }
                let mut event = at("response.output_text.done");
                event["text"] = json!(text);
                send(event)?;
                let mut event = at("response.content_part.done");
                event["part"] = part.clone();
                send(event)?;
            }
            _ => {
                added["arguments"] = json!("");
                added["status"] = json!("in_progress");
                send(
                    json!({"type": "response.output_item.added", "output_index": index,
                            "item": added}),
                )?;
                let arguments = item["arguments"].as_str().unwrap_or_default();
                for piece in pieces(arguments, ARGUMENT_PIECE) {
                    send(json!({"type": "response.function_call_arguments.delta",
                                "item_id": id, "output_index": index, "delta": piece}))?;
                }
                send(json!({"type": "response.function_call_arguments.done",
                            "item_id": id, "output_index": index, "arguments": arguments}))?;
            }
        }
        send(json!({"type": "response.output_item.done", "output_index": index, "item": item}))?;
    }
    let completed = json!({"type": "response.completed", "response": complete,
                           "sequence_number": sequence});
    sse.send_last(Some("response.completed"), &completed.to_string())
}
