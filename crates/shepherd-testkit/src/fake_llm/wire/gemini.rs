//! Gemini `generateContent` (Gemini CLI): one response for `:generateContent`, and for
//! `:streamGenerateContent` a series of responses — as server-sent events with `?alt=sse`
//! (what the Gemini SDK asks for), else as one JSON array.
//!
//! Thinking streams as `thought` parts, text in small pieces, function calls whole (Gemini
//! never splits a call's arguments); the last response carries `finishReason` and
//! `usageMetadata`. Calls carry no `id`: the real API sends none and Gemini CLI makes its own.

use std::io::{self, Write};

use serde_json::{Value, json};

use super::super::http::Sse;
use super::{Reply, TEXT_PIECE, pieces};

/// The parts of each streamed response, in order (never empty).
fn chunks(reply: &Reply) -> Vec<Vec<Value>> {
    let mut chunks: Vec<Vec<Value>> = Vec::new();
    if let Some(thinking) = &reply.thinking {
        for piece in pieces(thinking, TEXT_PIECE) {
            chunks.push(vec![json!({"text": piece, "thought": true})]);
        }
    }
    if !reply.text.is_empty() {
        for piece in pieces(&reply.text, TEXT_PIECE) {
            chunks.push(vec![json!({ "text": piece })]);
        }
    }
    if reply.has_calls() {
        chunks.push(calls(reply));
    }
    if chunks.is_empty() {
        chunks.push(vec![json!({"text": ""})]);
    }
    chunks
}

fn calls(reply: &Reply) -> Vec<Value> {
    reply
        .calls
        .iter()
        .map(|call| {
            json!({"functionCall": {"name": call.name, "args": Reply::arguments_value(call)}})
        })
        .collect()
}

/// One response holding `parts`; the last one of a reply also finishes it.
fn response(reply: &Reply, parts: &[Value], last: bool) -> Value {
    let mut response = json!({
        "candidates": [{"content": {"role": "model", "parts": parts}, "index": 0}],
        "modelVersion": reply.model,
        "responseId": format!("fake-{}", reply.seq),
    });
    if last {
        response["candidates"][0]["finishReason"] = json!("STOP");
        let usage = reply.usage;
        response["usageMetadata"] = json!({"promptTokenCount": usage.input,
                                           "candidatesTokenCount": usage.output,
                                           "totalTokenCount": usage.input + usage.output});
    }
    response
}

fn responses(reply: &Reply) -> Vec<Value> {
    let chunks = chunks(reply);
    let count = chunks.len();
    chunks
        .into_iter()
        .enumerate()
        .map(|(index, parts)| response(reply, &parts, index + 1 == count))
        .collect()
}

/// `:generateContent`: one response with every part.
pub(crate) fn whole(reply: &Reply) -> Value {
    let parts: Vec<Value> = chunks(reply).into_iter().flatten().collect();
    let mut merged: Vec<Value> = Vec::new();
    for part in parts {
        // Streamed pieces of the same kind join into one part.
        let joins = |prev: &Value| {
            prev.get("text").is_some()
                && part.get("text").is_some()
                && prev.get("thought") == part.get("thought")
        };
        match merged.last_mut() {
            Some(prev) if joins(prev) => {
                let text = format!(
                    "{}{}",
                    prev["text"].as_str().unwrap_or_default(),
                    part["text"].as_str().unwrap_or_default()
                );
                prev["text"] = json!(text);
            }
            _ => merged.push(part),
        }
    }
    response(reply, &merged, true)
}

/// `:streamGenerateContent` without `alt=sse`: the responses as one JSON array.
pub(crate) fn array(reply: &Reply) -> Value {
    Value::Array(responses(reply))
}

/// `:streamGenerateContent?alt=sse`.
pub(crate) fn stream<W: Write>(sse: &mut Sse<'_, W>, reply: &Reply) -> io::Result<()> {
    let mut responses = responses(reply).into_iter().peekable();
    while let Some(response) = responses.next() {
        if responses.peek().is_some() {
            sse.send(None, &response.to_string())?;
        } else {
            sse.send_last(None, &response.to_string())?;
        }
    }
    Ok(())
}
