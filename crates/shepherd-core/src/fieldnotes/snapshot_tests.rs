//! Snapshots of what a person reads: `shepherd.md`, a note's frontmatter and a finalised
//! note, for a session that went through single, chain and parallel delegations.

use serde_json::json;

use super::metadata::{Metadata, ParentBinding, SessionMetadata};
use super::note::{Section, initial_note, render_note, render_section};
use super::ops::PlannedNote;
use super::status::{Mode, NoteStatus};
use super::{frontmatter, index};

fn at(minute: u32) -> String {
    format!("2025-08-14T09:{minute:02}:00.000Z")
}

fn planned(agent: &str, mode: Mode, group: Option<&str>) -> PlannedNote {
    PlannedNote {
        agent: agent.to_owned(),
        mode,
        task: Some(format!("{agent} task")),
        group: group.map(str::to_owned),
        metadata: Metadata::new(),
        start: false,
    }
}

fn story() -> SessionMetadata {
    let mut session = SessionMetadata::new("fix-oauth-login", "fix-oauth-login", 1, None, &at(30));
    session.shepherds_note = Some(super::ShepherdsNote::new(&at(30)));
    session.rederive_paths("/repo");
    let none = |_: &str| false;
    for (agent, mode, group) in [
        ("scout", Mode::Chain, Some("d1")),
        ("planner", Mode::Chain, Some("d1")),
        ("worker", Mode::Single, None),
        ("reviewer", Mode::Parallel, Some("d3")),
        ("Security Reviewer", Mode::Parallel, Some("d3")),
    ] {
        session
            .reserve(planned(agent, mode, group), &none, &at(31))
            .unwrap();
    }
    let metadata: Metadata = [
        ("taskId".to_owned(), json!("t-1")),
        ("pane".to_owned(), json!("w8:pY")),
    ]
    .into_iter()
    .collect();
    session.start("scout-01.md", metadata, &at(31)).unwrap();
    session
        .finalize(
            "scout-01.md",
            NoteStatus::Completed,
            None,
            Metadata::new(),
            &at(32),
        )
        .unwrap();
    session
        .start("planner-01.md", Metadata::new(), &at(32))
        .unwrap();
    session
        .finalize(
            "planner-01.md",
            NoteStatus::TimedOut,
            Some("deadline of 600 s passed".to_owned()),
            Metadata::new(),
            &at(40),
        )
        .unwrap();
    session
        .link(
            "src/auth/service.ts",
            Some("Authentication service".to_owned()),
        )
        .unwrap();
    session
        .link("https://example.com/issues/123", Some("Issue".to_owned()))
        .unwrap();
    session.summarise_status();
    session.updated_at = at(40);
    session.rederive_paths("/repo");
    session
}

#[test]
fn index_of_a_mixed_session() {
    insta::assert_snapshot!("index_mixed", index::render_index(&story()));
}

#[test]
fn index_of_an_empty_parent_bound_session() {
    let binding = ParentBinding {
        identity: "pi-session-1234".to_owned(),
        project_root: "/repo".to_owned(),
        bound_at: at(30),
        session_file: Some("/home/u/.pi/sessions/1234.jsonl".to_owned()),
    };
    let mut session = SessionMetadata::new(
        "orchestrator-1a2b3c4d",
        "orchestrator-1a2b3c4d",
        12,
        Some(binding),
        &at(30),
    );
    session.shepherds_note = Some(super::ShepherdsNote::new(&at(30)));
    insta::assert_snapshot!("index_empty_bound", index::render_index(&session));
}

#[test]
fn new_note_and_its_frontmatter() {
    let session = story();
    let note = session.artifact("scout-01.md").unwrap();
    insta::assert_snapshot!(
        "frontmatter_started",
        frontmatter::render_frontmatter(&session, note)
    );
    let pending = session.artifact("security-reviewer-01.md").unwrap();
    insta::assert_snapshot!("note_initial", initial_note(&session, pending));
}

#[test]
fn finalised_note_keeps_the_sheeps_words() {
    let session = story();
    let note = session.artifact("planner-01.md").unwrap();
    let written = format!(
        "{}\n## Plan\n\n1. Read [the service](../../../src/auth/service.ts).\n",
        initial_note(&session, note)
    );
    let section = render_section(note, Some("Partial plan: see above."));
    let text = render_note(&session, note, Some(&written), Section::Set(&section));
    insta::assert_snapshot!("note_timed_out", text);
}

#[test]
fn session_json_layout() {
    let json = story().to_json();
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    let keys: Vec<&String> = value.as_object().unwrap().keys().collect();
    insta::assert_snapshot!("session_json_keys", format!("{keys:?}"));
    let note_keys: Vec<&String> = value["artifacts"][0].as_object().unwrap().keys().collect();
    insta::assert_snapshot!("artifact_json_keys", format!("{note_keys:?}"));
}
