//! `shepherd.md`: the session's index, regenerated from `session.json` on every change.
//!
//! Layout (the original's, plus the seed's Related files):
//!
//! - `# Session NNNN — <Display Name>` and header bullets: Status, Session name, Fieldnotes
//!   session version (`1 (name-based)` for the unversioned records of sessions bound to no
//!   parent), Parent binding (`parent-bound (identity <hash8>)`, `named` for a session found by
//!   its name, `legacy/unbound` for an unversioned record that names a parent anyway),
//!   Started, Updated, Project, Mode(s).
//! - `## Notes`: every note ever reserved, numbered, linked relatively, with its status.
//! - `## Flow`: one line per reservation group inside a `text` block, in order of first
//!   reservation. A chain's notes are joined with ` → `; a parallel group reads
//!   `parallel: [a-01](./a-01.md) · [b-01](./b-01.md)`; a group of one is its link alone. Notes
//!   without a group (written by the original) are grouped by runs of the same chain or
//!   parallel mode.
//! - `## Related files`: project files linked relative to the session directory, URLs as they
//!   are.

use super::markdown::{display_name, inline_code, link};
use super::metadata::{ArtifactRecord, Binding, SessionMetadata};
use super::ops::{TargetKind, check_related_target};
use super::status::Mode;
use crate::slug::hash8;

/// From a session directory back to the project root.
const TO_PROJECT_ROOT: &str = "../../../";

/// The full text of `shepherd.md` for `session`.
pub fn render_index(session: &SessionMetadata) -> String {
    let mut out = format!(
        "# Session {:04} — {}\n\n",
        session.ordinal,
        display_name(&session.session_name)
    );
    let version = session
        .artifact_session_version
        .map_or_else(|| "1 (name-based)".to_owned(), |v| v.to_string());
    let binding = match session.binding() {
        Binding::Parent { identity } => format!("parent-bound (identity {})", hash8(identity)),
        Binding::Named => "named".to_owned(),
        Binding::Legacy => "legacy/unbound".to_owned(),
    };
    let bullets = [
        ("Status", session.status.clone()),
        ("Session name", inline_code(&session.session_name)),
        ("Fieldnotes session version", version),
        ("Parent binding", binding),
        ("Started", session.started_at.clone()),
        ("Updated", session.updated_at.clone()),
        ("Project", ".".to_owned()),
        ("Mode(s)", modes(session)),
    ];
    for (label, value) in bullets {
        out.push_str(&format!("- **{label}:** {value}\n"));
    }
    out.push_str("\n## Notes\n\n");
    if session.artifacts.is_empty() {
        out.push_str("_No notes reserved yet._\n");
    }
    for (number, note) in session.artifacts.iter().enumerate() {
        let text = format!("{} {:02}", display_name(&note.agent), note.ordinal);
        let href = format!("./{}", note.file_name);
        out.push_str(&format!(
            "{}. {} — {}{}\n",
            number + 1,
            link(&text, &href),
            note.status,
            telemetry_summary(&note.metadata)
        ));
    }
    out.push_str("\n## Flow\n\n");
    out.push_str(&flow(&session.artifacts));
    out.push_str("\n## Related files\n\n");
    if session.related.is_empty() {
        out.push_str("_No related files yet._\n");
    }
    for related in &session.related {
        let href = match check_related_target(&related.target) {
            Ok(TargetKind::Url) => related.target.clone(),
            Ok(TargetKind::ProjectPath) => format!("{TO_PROJECT_ROOT}{}", related.target),
            Err(_) => continue,
        };
        let title = related.title.as_deref().unwrap_or(&related.target);
        out.push_str(&format!("- {}\n", link(title, &href)));
    }
    out
}

fn modes(session: &SessionMetadata) -> String {
    let mut modes: Vec<Mode> = session.modes.clone();
    if modes.is_empty() {
        for note in &session.artifacts {
            if !modes.contains(&note.mode) {
                modes.push(note.mode);
            }
        }
    }
    if modes.is_empty() {
        return "pending".to_owned();
    }
    modes
        .iter()
        .map(|m| m.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The Flow section body.
fn flow(notes: &[ArtifactRecord]) -> String {
    if notes.is_empty() {
        return "_No flow yet._\n".to_owned();
    }
    let mut lines = String::from("```text\n");
    for group in groups(notes) {
        let links: Vec<String> = group
            .iter()
            .map(|note| {
                let stem = note
                    .file_name
                    .strip_suffix(".md")
                    .unwrap_or(&note.file_name);
                link(stem, &format!("./{}", note.file_name))
            })
            .collect();
        let line = match (links.len(), group[0].mode) {
            (1, _) => links[0].clone(),
            (_, Mode::Chain) => links.join(" → "),
            _ => format!("parallel: {}", links.join(" · ")),
        };
        lines.push_str(&line);
        lines.push('\n');
    }
    lines.push_str("```\n");
    lines
}

/// Notes grouped for the Flow, groups in order of their first note.
fn groups(notes: &[ArtifactRecord]) -> Vec<Vec<&ArtifactRecord>> {
    let mut groups: Vec<(Option<&str>, Vec<&ArtifactRecord>)> = Vec::new();
    let mut previous_ungrouped: Option<Mode> = None;
    for note in notes {
        match note.group.as_deref() {
            Some(key) => {
                previous_ungrouped = None;
                match groups.iter_mut().find(|(k, _)| *k == Some(key)) {
                    Some((_, members)) => members.push(note),
                    None => groups.push((Some(key), vec![note])),
                }
            }
            None => {
                let joins_run = previous_ungrouped == Some(note.mode) && note.mode != Mode::Single;
                match groups.last_mut() {
                    Some((None, members)) if joins_run => members.push(note),
                    _ => groups.push((None, vec![note])),
                }
                previous_ungrouped = Some(note.mode);
            }
        }
    }
    groups.into_iter().map(|(_, members)| members).collect()
}

/// What a note's run cost, in one short suffix for its line in the Notes list
/// (` · fake/m1 · 3 turns · 2 tool calls · 45 tokens · $0.0100 · 1.2 s`); empty when the
/// note carries no run telemetry.
fn telemetry_summary(metadata: &super::Metadata) -> String {
    let number = |key: &str| metadata.get(key).and_then(serde_json::Value::as_f64);
    let mut parts = Vec::new();
    if let Some(model) = metadata.get("model").and_then(serde_json::Value::as_str) {
        parts.push(model.to_owned());
    }
    if let Some(turns) = number("turns") {
        parts.push(format!(
            "{turns} turn{}",
            if turns == 1.0 { "" } else { "s" }
        ));
    }
    if let Some(tools) = number("toolCalls") {
        parts.push(format!(
            "{tools} tool call{}",
            if tools == 1.0 { "" } else { "s" }
        ));
    }
    let tokens: f64 = [
        "tokensIn",
        "tokensOut",
        "tokensCacheRead",
        "tokensCacheWrite",
    ]
    .iter()
    .filter_map(|key| number(key))
    .sum();
    if tokens > 0.0 {
        parts.push(format!("{tokens} tokens"));
    }
    if let Some(cost) = number("cost").filter(|cost| *cost > 0.0) {
        parts.push(format!("${cost:.4}"));
    }
    if parts.is_empty() {
        return String::new();
    }
    if let Some(ms) = number("durationMs") {
        parts.push(format!("{:.1} s", ms / 1000.0));
    }
    format!(" · {}", parts.join(" · "))
}

#[cfg(test)]
mod telemetry_tests {
    use super::telemetry_summary;
    use crate::fieldnotes::Metadata;

    #[test]
    fn a_run_with_telemetry_gets_a_short_suffix_and_others_none() {
        let mut metadata = Metadata::new();
        assert_eq!(telemetry_summary(&metadata), "");
        metadata.insert("taskId".into(), "t".into());
        metadata.insert("durationMs".into(), 1234.into());
        assert_eq!(
            telemetry_summary(&metadata),
            "",
            "a command sheep's note has no run telemetry"
        );
        for (key, value) in [
            ("model", serde_json::json!("fake/m1")),
            ("turns", 1.into()),
            ("toolCalls", 2.into()),
            ("tokensIn", 30.into()),
            ("tokensOut", 15.into()),
            ("cost", 0.01.into()),
        ] {
            metadata.insert(key.into(), value);
        }
        assert_eq!(
            telemetry_summary(&metadata),
            " · fake/m1 · 1 turn · 2 tool calls · 45 tokens · $0.0100 · 1.2 s"
        );
    }
}
