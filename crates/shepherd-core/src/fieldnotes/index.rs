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
//! - `## Branches`, when its isolated sheep left any: each branch beside the note of the sheep
//!   that made it, and what became of it (`open`, `merged at <commit>`, `conflict`,
//!   `check failed`, `discarded`).
//! - `## Shepherd's note`: a link to the shepherd's own note, a file of its own that no rewrite
//!   of this index touches ([`super::shepherds_note`]).
//!
//! In the Notes list a note shows its sheep's label (`[Reviewer 01: security](…)`), the
//! feedback attached to it (one sub-item each) and, once deleted, its name struck through
//! without a link.
//!
//! A note's metadata is an open map (the fieldnotes format's frontmatter, which the original's
//! notes and every harness extend); the index reads the known keys out of it.

use super::markdown::{display_name, inline_code, link, link_text};
use super::metadata::{ArtifactRecord, Binding, SessionMetadata};
use super::metadata::{TargetKind, check_related_target};
use super::shepherds_note::LEGACY_MARKER;
use super::status::Mode;
use crate::slug::hash8;

/// From a session directory back to the project root.
const TO_PROJECT_ROOT: &str = "../../../";

/// The full text of `shepherd.md` for `session`.
pub fn render_index(session: &SessionMetadata) -> String {
    // Nothing generated (a name, feedback) may pass for the line that opened the shepherd's
    // note in earlier versions, or what follows it would be taken for the shepherd's.
    let mut out = render_generated(session)
        .replace(LEGACY_MARKER, "<!-- Shepherd's note (quoted marker) -->");
    if let Some(note) = &session.shepherds_note {
        out.push_str("\n## Shepherd's note\n\n");
        out.push_str(&format!(
            "{} — guidance, feedback and a map for present and future sheep, from the shepherd. \
             Read it before you start.\n",
            link("Shepherd's note", &format!("./{}", note.file_name))
        ));
    }
    out
}

/// The part of `shepherd.md` Shepherd writes: header, Notes, Flow and Related files.
fn render_generated(session: &SessionMetadata) -> String {
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
    if let Some(limits) = limits_line(session) {
        out.push_str(&format!("- **Rate limits:** {limits}\n"));
    }
    out.push_str("\n## Notes\n\n");
    if session.artifacts.is_empty() {
        out.push_str("_No notes reserved yet._\n");
    }
    for (number, note) in session.artifacts.iter().enumerate() {
        out.push_str(&note_line(number + 1, note));
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
    if !session.branches.is_empty() {
        out.push_str("\n## Branches\n\n");
        // In the order of their notes (a run reserves its notes in input order), whatever the
        // order their worktrees were released in; a branch without a note comes last.
        let place = |file: &Option<String>| {
            file.as_ref()
                .and_then(|file| session.artifacts.iter().position(|a| &a.file_name == file))
                .unwrap_or(usize::MAX)
        };
        let mut branches: Vec<_> = session.branches.iter().collect();
        branches.sort_by_key(|branch| place(&branch.note));
        for branch in branches {
            let note = branch
                .note
                .as_ref()
                .and_then(|file| session.artifacts.iter().find(|a| &a.file_name == file))
                .map(|note| {
                    let name = format!("{} {:02}", display_name(&note.agent), note.ordinal);
                    format!(" — {}", link(&name, &format!("./{}", note.file_name)))
                })
                .unwrap_or_default();
            out.push_str(&format!(
                "- {}{note} — {}\n",
                inline_code(&branch.branch),
                branch.state_words()
            ));
        }
    }
    out
}

/// One note's entry in the Notes list, with its feedback as sub-items.
fn note_line(number: usize, note: &ArtifactRecord) -> String {
    let mut text = format!("{} {:02}", display_name(&note.agent), note.ordinal);
    if let Some(label) = note.label() {
        text.push_str(": ");
        text.push_str(label);
    }
    let mut out = match &note.deleted_at {
        Some(deleted) => format!(
            "{number}. ~~{}~~ — {}, deleted {deleted}\n",
            link_text(&text),
            note.status
        ),
        None => format!(
            "{number}. {} — {}{}\n",
            link(&text, &format!("./{}", note.file_name)),
            note.status,
            telemetry_summary(&note.metadata)
        ),
    };
    let indent = " ".repeat(number.to_string().len() + 2);
    for feedback in &note.feedback {
        let words = feedback
            .text
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        out.push_str(&format!(
            "{indent}- Feedback from {} ({}): {words}\n",
            link_text(&feedback.from),
            feedback.at
        ));
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
                if note.deleted_at.is_some() {
                    return format!("{} (deleted)", link_text(stem));
                }
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

/// The session's provider-limit episodes and how long its tasks waited them out in all
/// (`3 episodes in 2 notes, waited 14.2 s`); `None` when no task met one.
fn limits_line(session: &SessionMetadata) -> Option<String> {
    let number = |note: &ArtifactRecord, key: &str| {
        note.metadata
            .get(key)
            .and_then(serde_json::Value::as_f64)
            .unwrap_or(0.0)
    };
    let limited: Vec<&ArtifactRecord> = session
        .artifacts
        .iter()
        .filter(|note| number(note, "rateLimits") > 0.0)
        .collect();
    if limited.is_empty() {
        return None;
    }
    let episodes: f64 = limited.iter().map(|note| number(note, "rateLimits")).sum();
    let waited: f64 = limited
        .iter()
        .map(|note| number(note, "rateLimitWaitMs"))
        .sum();
    Some(format!(
        "{episodes} episode{} in {} note{}, waited {:.1} s",
        if episodes == 1.0 { "" } else { "s" },
        limited.len(),
        if limited.len() == 1 { "" } else { "s" },
        waited / 1000.0
    ))
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
    if let Some(limits) = number("rateLimits").filter(|n| *n > 0.0) {
        let waited = number("rateLimitWaitMs").unwrap_or(0.0) / 1000.0;
        parts.push(format!("rate-limited {limits}× ({waited:.1} s)"));
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

#[cfg(test)]
mod curation_tests {
    use super::*;
    use crate::fieldnotes::metadata::{LABEL_KEY, Metadata};
    use crate::fieldnotes::status::NoteStatus;
    use crate::fieldnotes::{OpError, PlannedNote};

    fn session() -> SessionMetadata {
        let mut session = SessionMetadata::new("fix", "fix", 1, None, "t0");
        let none = |_: &str| false;
        let mut labelled = PlannedNote::new("reviewer");
        labelled.metadata = Metadata::from_iter([(LABEL_KEY.to_owned(), "security".into())]);
        session.reserve(labelled, &none, "t0").unwrap();
        session
            .reserve(PlannedNote::new("reviewer"), &none, "t0")
            .unwrap();
        session
    }

    #[test]
    fn the_index_counts_the_sessions_rate_limits_and_each_note_its_own() {
        let mut session = session();
        let plain = render_index(&session);
        assert!(!plain.contains("Rate limits"), "{plain}");
        let limited = Metadata::from_iter([
            ("model".to_owned(), "fake/m1".into()),
            ("rateLimits".to_owned(), 2.into()),
            ("rateLimitWaitMs".to_owned(), 4200.into()),
        ]);
        session
            .finalize("reviewer-01.md", NoteStatus::Completed, None, limited, "t1")
            .unwrap();
        let text = render_index(&session);
        assert!(
            text.contains("- **Rate limits:** 2 episodes in 1 note, waited 4.2 s\n"),
            "{text}"
        );
        assert!(text.contains("rate-limited 2× (4.2 s)"), "{text}");
    }

    #[test]
    fn the_index_links_the_shepherds_note_and_no_generated_text_passes_for_the_shepherds() {
        use crate::fieldnotes::ShepherdsNote;
        use crate::fieldnotes::shepherds_note::index_leftovers;
        let mut session = session();
        assert!(!render_index(&session).contains("Shepherd's note"));
        session.shepherds_note = Some(ShepherdsNote::new("t0"));
        let text = render_index(&session);
        assert!(
            text.ends_with(
                "\n## Shepherd's note\n\n[Shepherd's note](./shepherds-note.md) — guidance, feedback and a map for present and future sheep, from the shepherd. Read it before you start.\n"
            ),
            "{text}"
        );
        session
            .add_feedback("reviewer-01.md", "shepherd", LEGACY_MARKER, "t1")
            .unwrap();
        let text = render_index(&session);
        assert!(!text.contains(LEGACY_MARKER), "{text}");
        assert_eq!(index_leftovers(&text), "");
    }

    #[test]
    fn labels_feedback_and_deletions_show_in_the_notes_list() {
        let mut session = session();
        session
            .finalize(
                "reviewer-02.md",
                NoteStatus::Completed,
                None,
                Metadata::new(),
                "t1",
            )
            .unwrap();
        session
            .add_feedback(
                "reviewer-01.md",
                "shepherd",
                "Check the\ntoken expiry too.",
                "t2",
            )
            .unwrap();
        assert!(session.delete("reviewer-02.md", "t3").unwrap());
        let text = render_index(&session);
        assert!(
            text.contains(
                "1. [Reviewer 01: security](./reviewer-01.md) — pending\n   - Feedback from shepherd (t2): Check the token expiry too.\n"
            ),
            "{text}"
        );
        assert!(
            text.contains("2. ~~Reviewer 02~~ — completed, deleted t3\n"),
            "{text}"
        );
        assert!(text.contains("reviewer-02 (deleted)"), "{text}");
        assert!(!text.contains("](./reviewer-02.md)"), "{text}");
    }

    #[test]
    fn only_final_notes_are_deleted_and_deleted_notes_never_change() {
        let mut session = session();
        assert!(matches!(
            session.delete("reviewer-01.md", "t1"),
            Err(OpError::NotFinal { .. })
        ));
        session
            .finalize(
                "reviewer-01.md",
                NoteStatus::Failed,
                None,
                Metadata::new(),
                "t1",
            )
            .unwrap();
        assert!(session.delete("reviewer-01.md", "t2").unwrap());
        assert!(!session.delete("reviewer-01.md", "t3").unwrap());
        let note = session.artifact("reviewer-01.md").unwrap();
        assert_eq!(note.deleted_at.as_deref(), Some("t2"));
        assert!(matches!(
            session.add_feedback("reviewer-01.md", "shepherd", "late", "t4"),
            Err(OpError::Deleted { .. })
        ));
        assert!(matches!(
            session.update("reviewer-01.md", Metadata::new()),
            Err(OpError::Deleted { .. })
        ));
        let refused = session.add_feedback("reviewer-02.md", "shepherd", "  ", "t4");
        assert!(matches!(refused, Err(OpError::InvalidFeedback { .. })));
        // A reservation never takes a deleted note's ordinal or file name.
        let next = session
            .reserve(PlannedNote::new("reviewer"), &|_: &str| false, "t5")
            .unwrap();
        assert_eq!(next.file_name, "reviewer-03.md");
    }
}
