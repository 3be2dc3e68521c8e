//! The tools' input schemas, written out by hand so that every MCP host accepts them.
//!
//! Hosts pass these schemas on to very different model APIs (Anthropic, OpenAI Responses and
//! Chat Completions, Gemini), and the strictest of them refuse `$ref`, `anyOf`/`oneOf`, type
//! arrays (`["string", "null"]`) and unknown `format`s. So each schema here is one flat object:
//! properties of a single type each (`string`, `number`, `integer`, `boolean`, or an `array`
//! of strings or of flat objects), a plain `enum` for choices, and `required` for what must be
//! given. `is_flat` states that rule, and the tests hold every tool to it. What a value must
//! look like beyond its type (a positive timeout, an existing directory) is checked when the
//! call arrives and refused with a readable tool error.

use std::sync::Arc;

use rmcp::model::JsonObject;
use serde_json::{Map, Value, json};

/// A string property.
pub(crate) fn string(description: &str) -> Value {
    json!({ "type": "string", "description": description })
}

/// A string property with a fixed set of values.
pub(crate) fn choice(values: &[&str], description: &str) -> Value {
    json!({ "type": "string", "enum": values, "description": description })
}

/// A number property.
pub(crate) fn number(description: &str) -> Value {
    json!({ "type": "number", "description": description })
}

/// An integer property with a lower bound.
pub(crate) fn integer(minimum: i64, description: &str) -> Value {
    json!({ "type": "integer", "minimum": minimum, "description": description })
}

/// A boolean property.
pub(crate) fn boolean(description: &str) -> Value {
    json!({ "type": "boolean", "description": description })
}

/// An array of strings.
pub(crate) fn strings(description: &str) -> Value {
    json!({ "type": "array", "items": { "type": "string" }, "description": description })
}

/// An array of flat objects.
pub(crate) fn objects(item: &Value, description: &str) -> Value {
    json!({ "type": "array", "items": item, "description": description })
}

/// A flat object: `properties` in order, `required` by name.
pub(crate) fn object(properties: &[(&str, Value)], required: &[&str]) -> Value {
    let properties: Map<String, Value> = properties
        .iter()
        .map(|(name, schema)| ((*name).to_owned(), schema.clone()))
        .collect();
    json!({ "type": "object", "properties": properties, "required": required })
}

/// A tool's input schema as rmcp takes it.
pub(crate) fn input(schema: &Value) -> Arc<JsonObject> {
    match schema {
        Value::Object(map) => Arc::new(map.clone()),
        _ => unreachable!("tool schemas are objects"),
    }
}

/// Whether `schema` keeps the rule above: an object whose properties (and array items) are
/// flat, with no references, combinators, type lists or formats anywhere.
#[cfg(test)]
pub(crate) fn is_flat(schema: &Value) -> Result<(), String> {
    fn check(path: &str, schema: &Value, top: bool) -> Result<(), String> {
        let Some(map) = schema.as_object() else {
            return Err(format!("{path}: not an object"));
        };
        for banned in [
            "$ref",
            "$defs",
            "definitions",
            "$schema",
            "anyOf",
            "oneOf",
            "allOf",
            "not",
            "format",
            "nullable",
        ] {
            if map.contains_key(banned) {
                return Err(format!("{path}: uses `{banned}`"));
            }
        }
        let kind = map
            .get("type")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("{path}: `type` must be one string"))?;
        if top && kind != "object" {
            return Err(format!("{path}: the top level must be an object"));
        }
        match kind {
            "object" => {
                let properties = map
                    .get("properties")
                    .and_then(Value::as_object)
                    .ok_or_else(|| format!("{path}: an object needs `properties`"))?;
                for (name, property) in properties {
                    if property
                        .get("description")
                        .and_then(Value::as_str)
                        .is_none()
                        && top
                    {
                        return Err(format!("{path}.{name}: no description"));
                    }
                    check(&format!("{path}.{name}"), property, false)?;
                }
                if let Some(required) = map.get("required") {
                    let names = required
                        .as_array()
                        .ok_or_else(|| format!("{path}: `required` must be a list"))?;
                    for name in names {
                        let name = name.as_str().unwrap_or_default();
                        if !properties.contains_key(name) {
                            return Err(format!("{path}: requires unknown `{name}`"));
                        }
                    }
                }
                Ok(())
            }
            "array" => {
                let items = map
                    .get("items")
                    .ok_or_else(|| format!("{path}: an array needs `items`"))?;
                check(&format!("{path}[]"), items, false)
            }
            "string" | "number" | "integer" | "boolean" => Ok(()),
            other => Err(format!("{path}: unknown type `{other}`")),
        }
    }
    check("input", schema, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flat_schemas_pass_and_nested_tricks_do_not() {
        let ok = object(
            &[
                ("id", strings("ids")),
                ("kind", choice(&["a", "b"], "one")),
                (
                    "steps",
                    objects(&object(&[("x", string("x"))], &["x"]), "steps"),
                ),
            ],
            &["id"],
        );
        assert_eq!(is_flat(&ok), Ok(()));
        let typed_list = json!({"type": "object", "properties": {"a": {"type": ["string", "null"], "description": "a"}}});
        assert!(is_flat(&typed_list).unwrap_err().contains("one string"));
        let any = json!({"type": "object", "properties": {"a": {"anyOf": [], "description": "a"}}});
        assert!(is_flat(&any).unwrap_err().contains("anyOf"));
        let unknown = object(&[("a", string("a"))], &["b"]);
        assert!(is_flat(&unknown).unwrap_err().contains("unknown `b`"));
    }
}
