//! A note's frontmatter: the provenance block at the top of every note.
//!
//! Keys come in the original's order: the note's lifecycle metadata first, then
//! `artifactSessionVersion`, `session`, `sessionName`, `parentPiSession` (the first eight hex
//! digits of the SHA-256 of the parent identity, never the identity itself; only for
//! parent-bound sessions), `agent`, `ordinal`, `mode`, `status`, `reservedAt`, `started`,
//! `completed`. A string made only of `[A-Za-z0-9._-]` is written bare, any other string as a
//! JSON string, and every other value as compact JSON, so each value is one line of valid YAML.
//! `session.json` stays the authority; the frontmatter is what a person or an agent sees.
//!
//! Values are open JSON because note metadata is an open map (see [`super::metadata`]).

use indexmap::IndexMap;
use serde_json::Value;

use super::metadata::{ArtifactRecord, Binding, SessionMetadata};
use crate::slug::hash8;

/// Keys the frontmatter writes itself; metadata under these names is not repeated.
const OWN_KEYS: [&str; 12] = [
    "artifactSessionVersion",
    "session",
    "sessionName",
    "parentPiSession",
    "agent",
    "ordinal",
    "mode",
    "status",
    "reservedAt",
    "started",
    "completed",
    "---",
];

/// The frontmatter block of `note` in `session`, fences included, ending in a newline.
pub fn render_frontmatter(session: &SessionMetadata, note: &ArtifactRecord) -> String {
    let mut out = String::from("---\n");
    let mut line = |key: &str, value: &Value| {
        out.push_str(key);
        out.push_str(": ");
        out.push_str(&render_value(value));
        out.push('\n');
    };
    for (key, value) in &note.metadata {
        if is_bare(key) && !OWN_KEYS.contains(&key.as_str()) {
            line(key, value);
        }
    }
    let version = session.artifact_session_version.unwrap_or(1);
    line("artifactSessionVersion", &Value::from(version));
    line("session", &Value::from(session.directory_name.as_str()));
    line("sessionName", &Value::from(session.session_name.as_str()));
    if let Binding::Parent { identity } = session.binding() {
        line("parentPiSession", &Value::from(hash8(identity)));
    }
    line("agent", &Value::from(note.agent.as_str()));
    line("ordinal", &Value::from(note.ordinal));
    line("mode", &Value::from(note.mode.as_str()));
    line("status", &Value::from(note.status.as_str()));
    line("reservedAt", &Value::from(note.reserved_at.as_str()));
    if let Some(started) = &note.started_at {
        line("started", &Value::from(started.as_str()));
    }
    if let Some(completed) = &note.completed_at {
        line("completed", &Value::from(completed.as_str()));
    }
    out.push_str("---\n");
    out
}

/// One value as the frontmatter writes it.
pub fn render_value(value: &Value) -> String {
    match value {
        Value::String(text) if is_bare(text) => text.clone(),
        other => serde_json::to_string(other).expect("JSON values serialise"),
    }
}

fn is_bare(text: &str) -> bool {
    !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// Splits a note into its frontmatter lines (without fences) and everything after the closing
/// fence line; `None` when the text does not start with a frontmatter block.
pub fn split_frontmatter(text: &str) -> Option<(&str, &str)> {
    let inner = text.strip_prefix("---\n")?;
    if let Some(rest) = inner.strip_prefix("---\n") {
        return Some(("", rest));
    }
    if inner == "---" {
        return Some(("", ""));
    }
    if let Some(end) = inner.find("\n---\n") {
        return Some((&inner[..end], &inner[end + 5..]));
    }
    inner.strip_suffix("\n---").map(|fields| (fields, ""))
}

/// Reads the frontmatter of a note written by either program: each `key: value` line, with
/// JSON values decoded and bare words kept as strings.
pub fn parse_frontmatter(text: &str) -> Option<IndexMap<String, Value>> {
    let (fields, _) = split_frontmatter(text)?;
    let mut map = IndexMap::new();
    for line in fields.lines() {
        let Some((key, raw)) = line.split_once(':') else {
            continue;
        };
        let raw = raw.trim();
        let value = serde_json::from_str(raw).unwrap_or_else(|_| Value::from(raw));
        map.insert(key.trim().to_owned(), value);
    }
    Some(map)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_bare_or_json() {
        assert_eq!(render_value(&Value::from("w8:pY")), "\"w8:pY\"");
        assert_eq!(render_value(&Value::from("0001-fix")), "0001-fix");
        assert_eq!(render_value(&Value::from("two words")), "\"two words\"");
        assert_eq!(render_value(&Value::from("a\nb")), "\"a\\nb\"");
        assert_eq!(render_value(&Value::from(3)), "3");
        assert_eq!(render_value(&serde_json::json!({"k": [1]})), "{\"k\":[1]}");
    }

    #[test]
    fn frontmatter_splits_and_parses() {
        let note = "---\nagent: scout\nordinal: 2\npane: \"w8:pY\"\n---\n\n# Scout 02\n";
        let (fields, rest) = split_frontmatter(note).unwrap();
        assert_eq!(fields, "agent: scout\nordinal: 2\npane: \"w8:pY\"");
        assert_eq!(rest, "\n# Scout 02\n");
        let map = parse_frontmatter(note).unwrap();
        assert_eq!(map["agent"], "scout");
        assert_eq!(map["ordinal"], 2);
        assert_eq!(map["pane"], "w8:pY");
        assert_eq!(split_frontmatter("# no frontmatter"), None);
        assert_eq!(split_frontmatter("---\n---\nbody"), Some(("", "body")));
    }
}
