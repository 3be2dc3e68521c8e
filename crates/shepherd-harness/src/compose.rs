//! The small file chores every adapter shares when it composes a sheep's configuration: copy
//! one of the user's files when it exists, read the user's JSON settings leniently, lay
//! Shepherd's settings over them, and write the result privately. The user's files are only
//! ever read.

use std::path::Path;

use serde_json::{Map, Value};

use crate::HarnessError;

/// Copies `from` to `to` (private) when `from` exists.
pub(crate) fn copy_if_present(from: &Path, to: &Path) -> Result<(), HarnessError> {
    match fs_err::read(from) {
        Ok(bytes) => shepherd_fs::write_atomic(to, &bytes, Some(0o600))
            .map_err(HarnessError::io(format!("writing {}", to.display()))),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(err) => Err(HarnessError::Io {
            context: format!("reading {}", from.display()),
            source: err,
        }),
    }
}

/// The user's JSON settings object at `path`; an absent, unreadable or malformed file reads
/// as empty (the agent itself would complain about a malformed one, not Shepherd).
pub(crate) fn read_object(path: &Path) -> Map<String, Value> {
    fs_err::read_to_string(path)
        .ok()
        .and_then(|text| serde_json::from_str::<Value>(&text).ok())
        .and_then(|value| match value {
            Value::Object(map) => Some(map),
            _ => None,
        })
        .unwrap_or_default()
}

/// Lays `over` onto `base`: objects merge key by key, anything else replaces.
pub(crate) fn merge(base: &mut Value, over: Value) {
    match (base, over) {
        (Value::Object(base), Value::Object(over)) => {
            for (key, value) in over {
                match base.get_mut(&key) {
                    Some(slot) => merge(slot, value),
                    None => {
                        base.insert(key, value);
                    }
                }
            }
        }
        (slot, value) => *slot = value,
    }
}

/// Writes `value` as JSON (private).
pub(crate) fn write_json(path: &Path, value: &Value) -> Result<(), HarnessError> {
    let text = serde_json::to_vec_pretty(value).expect("JSON values serialise");
    shepherd_fs::write_atomic(path, &text, Some(0o600))
        .map_err(HarnessError::io(format!("writing {}", path.display())))
}

/// Writes a text file (private).
pub(crate) fn write_text(path: &Path, text: &str) -> Result<(), HarnessError> {
    shepherd_fs::write_atomic(path, text.as_bytes(), Some(0o600))
        .map_err(HarnessError::io(format!("writing {}", path.display())))
}

/// `text` as a TOML basic string.
pub(crate) fn toml_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A list of strings as a TOML array.
pub(crate) fn toml_array(items: &[String]) -> String {
    let items: Vec<String> = items.iter().map(|item| toml_string(item)).collect();
    format!("[{}]", items.join(", "))
}

/// The variables the sheep server needs from the sheep's environment (an agent that
/// gives its MCP servers a filtered environment must let these through).
pub(crate) const SHEEP_VARS: [&str; 7] = [
    "SHEPHERD_SOCKET",
    "SHEPHERD_AGENT_ID",
    "SHEPHERD_TOKEN",
    "SHEPHERD_DEPTH",
    "SHEPHERD_PROJECT",
    "SHEPHERD_BIN",
    "SHEPHERD_BROKER_TIMEOUT",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merging_keeps_the_users_keys_and_lays_ours_over() {
        let mut base = serde_json::json!({"a": 1, "b": {"c": 2, "d": 3}});
        merge(&mut base, serde_json::json!({"b": {"d": 4}, "e": 5}));
        assert_eq!(
            base,
            serde_json::json!({"a": 1, "b": {"c": 2, "d": 4}, "e": 5})
        );
    }

    #[test]
    fn toml_strings_escape_what_toml_needs() {
        assert_eq!(toml_string("a \"b\"\\\n"), r#""a \"b\"\\\n""#);
        assert_eq!(toml_array(&["x".into(), "y".into()]), r#"["x", "y"]"#);
    }
}
