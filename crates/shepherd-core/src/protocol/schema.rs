//! The protocol as a JSON Schema, so that front ends in other languages type their messages
//! from the same source as the broker.
//!
//! [`protocol_schema`] describes every method (its parameters and its result) and every pushed
//! event (its data) with the Rust types the broker reads and writes, through `schemars`, which
//! honours their serde attributes (`rename_all`, `tag`, `untagged`, `flatten`, defaults). The
//! document is checked in at [`SCHEMA_PATH`]; the pi extension's TypeScript types are generated
//! from it (`scripts/gen-protocol-types` regenerates both), and tests fail when either file no
//! longer matches the code.

use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, SchemaGenerator};
use serde_json::{Map, Value, json};

use super::*;

/// Where the checked-in schema lives, relative to the repository root.
pub const SCHEMA_PATH: &str = "docs/protocol.schema.json";

/// The schema for one value: a reference into the definitions for named types.
fn schema<T: JsonSchema>(generator: &mut SchemaGenerator) -> Value {
    generator.subschema_for::<T>().to_value()
}

/// An object schema with every property required and nothing else allowed.
fn closed(properties: Map<String, Value>) -> Value {
    let required: Vec<Value> = properties.keys().cloned().map(Value::String).collect();
    let mut object = Map::new();
    object.insert("type".into(), "object".into());
    object.insert("properties".into(), Value::Object(properties));
    object.insert("required".into(), Value::Array(required));
    object.insert("additionalProperties".into(), false.into());
    Value::Object(object)
}

/// A method's entry: `{params, result}`.
pub(super) fn method_entry<P: JsonSchema, R: JsonSchema>(generator: &mut SchemaGenerator) -> Value {
    let mut entry = Map::new();
    entry.insert("params".into(), schema::<P>(generator));
    entry.insert("result".into(), schema::<R>(generator));
    closed(entry)
}

/// The protocol's JSON Schema (draft 7): `methods` maps each method name to its `params` and
/// `result`, `events` maps each push event to its `data`, and `definitions` holds every type,
/// the envelope of the lines themselves (`Request`, `ServerLine`, `WireError`) included.
pub fn protocol_schema() -> Value {
    let mut generator = SchemaSettings::draft07().into_generator();
    let g = &mut generator;
    let methods = methods::schema_entries(g);
    let events: Vec<(&str, Value)> = vec![
        (event::INBOX, schema::<InboxResult>(g)),
        (event::HERD, schema::<HerdResult>(g)),
        (event::TERMINATE, schema::<TerminateData>(g)),
        (event::SHUTDOWN, json!({ "type": "null" })),
        (event::RUN, schema::<RunView>(g)),
        (event::MERGE, schema::<MergeView>(g)),
    ];
    // The lines themselves, which no method names.
    schema::<Request>(g);
    schema::<ServerLine>(g);
    let methods: Map<String, Value> = methods
        .into_iter()
        .map(|(name, entry)| (name.to_owned(), entry))
        .collect();
    let events: Map<String, Value> = events
        .into_iter()
        .map(|(name, data)| (name.to_owned(), data))
        .collect();
    let mut root = Map::new();
    root.insert("methods".into(), closed(methods));
    root.insert("events".into(), closed(events));
    let mut definitions: Map<String, Value> =
        generator.take_definitions(true).into_iter().collect();
    definitions.sort_keys();
    json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": "ShepherdProtocol",
        "description": format!(
            "The Shepherd broker protocol, version {PROTOCOL_VERSION}: every method's params and result, every pushed event's data. Generated from crates/shepherd-core/src/protocol by scripts/gen-protocol-types; do not edit."
        ),
        "type": "object",
        "properties": root,
        "required": ["methods", "events"],
        "additionalProperties": false,
        "definitions": definitions,
    })
}

/// The schema as the checked-in file holds it: pretty JSON with a final newline.
pub fn protocol_schema_text() -> String {
    let mut text = serde_json::to_string_pretty(&protocol_schema()).expect("schemas serialise");
    text.push('\n');
    text
}
