//! The shepherd's own note, `shepherds-note.md`: every session has one, listed in
//! `session.json` and linked from `shepherd.md`; no rewrite of the index ever changes it
//! (reservations, finalisations, a continued session, a write racing a commit); what a shepherd
//! wrote into `shepherd.md` itself (the `## Shepherd's note` section of earlier versions, or a
//! section of its own) is moved into it, never lost; and a session someone else made gets one
//! on Shepherd's first write there.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::common;

use std::sync::Arc;

use common::{Project, assert_consistent, at};
use shepherd_core::fieldnotes::shepherds_note::LEGACY_MARKER;
use shepherd_notes::{CommitStage, Finalization, NoteStatus, PlannedNote, Store, StoreOptions};

const GUIDANCE: &str = "## Guidance\n\nAll sheep: keep the public API stable.\n";
const LINK: &str = "[Shepherd's note](./shepherds-note.md) — ";

fn append(path: &std::path::Path, text: &str) {
    let mut existing = std::fs::read_to_string(path).unwrap();
    existing.push_str(text);
    std::fs::write(path, existing).unwrap();
}

#[test]
fn every_session_has_the_shepherds_note_and_no_rewrite_of_the_index_touches_it() {
    let project = Project::new();
    let store = project.store();
    let session = store
        .create_or_continue_named("guided", at(0))
        .unwrap()
        .session;
    let dir = project.session_dir(&session);
    let json = project.session_json(&session);
    assert_eq!(
        json["shepherdsNote"]["fileName"], "shepherds-note.md",
        "{json}"
    );
    assert_eq!(
        json["shepherdsNote"]["relativePath"],
        format!(
            ".shepherd/sessions/{}/shepherds-note.md",
            dir.file_name().unwrap().to_str().unwrap()
        ),
        "{json}"
    );
    let note = dir.join("shepherds-note.md");
    let created = std::fs::read_to_string(&note).unwrap();
    assert!(
        created.starts_with("# Shepherd's note — Session 0001 — Guided\n"),
        "{created}"
    );
    append(&note, GUIDANCE);
    let written = std::fs::read_to_string(&note).unwrap();
    let index = dir.join("shepherd.md");
    let kept = |when: &str| {
        assert_eq!(
            std::fs::read_to_string(&note).unwrap(),
            written,
            "after {when}"
        );
        let text = std::fs::read_to_string(&index).unwrap();
        assert_eq!(text.matches(LINK).count(), 1, "after {when}: {text}");
        assert!(!text.contains("All sheep"), "after {when}: {text}");
    };
    kept("creating the session");
    store
        .reserve(&session, vec![PlannedNote::new("scout")], at(1))
        .unwrap();
    kept("a reservation");
    store
        .finalize(
            &session,
            "scout-01.md",
            Finalization::new(NoteStatus::Completed),
            at(2),
        )
        .unwrap();
    kept("a finalisation");
    assert!(
        store
            .create_or_continue_named("guided", at(3))
            .unwrap()
            .resumed
    );
    kept("continuing the finished session");
    assert_eq!(assert_consistent(&project, &session), 1);

    // Deleted, it comes back (empty) with the next write, so the index never links nothing.
    std::fs::remove_file(&note).unwrap();
    store
        .reserve(&session, vec![PlannedNote::new("worker")], at(4))
        .unwrap();
    assert_eq!(std::fs::read_to_string(&note).unwrap(), created);
}

#[test]
fn what_the_shepherd_wrote_into_shepherd_md_moves_into_its_note() {
    let project = Project::new();
    let store = project.store();
    let session = store
        .create_or_continue_named("moved", at(0))
        .unwrap()
        .session;
    let dir = project.session_dir(&session);
    let index = dir.join("shepherd.md");
    let note = dir.join("shepherds-note.md");
    // An index as an earlier Shepherd left it: its note below the marker, and a section the
    // shepherd added.
    append(
        &index,
        &format!("\n{GUIDANCE}\n## Shepherd's note\n\n{LEGACY_MARKER}\nAuth lives in src/auth.\n"),
    );
    store
        .reserve(&session, vec![PlannedNote::new("scout")], at(1))
        .unwrap();
    let text = std::fs::read_to_string(&index).unwrap();
    assert!(
        !text.contains("All sheep") && !text.contains("Auth lives"),
        "{text}"
    );
    assert!(!text.contains(LEGACY_MARKER), "{text}");
    let moved = std::fs::read_to_string(&note).unwrap();
    assert_eq!(
        moved
            .matches("All sheep: keep the public API stable.")
            .count(),
        1,
        "{moved}"
    );
    assert!(moved.ends_with("Auth lives in src/auth.\n"), "{moved}");
    // Nothing is moved twice.
    store
        .finalize(
            &session,
            "scout-01.md",
            Finalization::new(NoteStatus::Completed),
            at(2),
        )
        .unwrap();
    assert_eq!(std::fs::read_to_string(&note).unwrap(), moved);

    // The shepherd writes into shepherd.md and into its note while a commit is on its way:
    // both writes are kept.
    let (racing_index, racing_note) = (index.clone(), note.clone());
    let racing = StoreOptions {
        commit_hook: Some(Arc::new(move |stage: CommitStage<'_>| {
            if let CommitStage::Staged(_) = stage {
                append(&racing_index, "\n## Late\n\nWritten mid-commit.\n");
                append(&racing_note, "\nAlso mid-commit.\n");
            }
        })),
        ..StoreOptions::default()
    };
    Store::with_options(&project.root, racing)
        .unwrap()
        .reserve(&session, vec![PlannedNote::new("worker")], at(3))
        .unwrap();
    let text = std::fs::read_to_string(&index).unwrap();
    assert!(!text.contains("Written mid-commit."), "{text}");
    assert!(text.contains("[Worker 01](./worker-01.md)"), "{text}");
    let note_text = std::fs::read_to_string(&note).unwrap();
    assert!(note_text.starts_with(&moved), "{note_text}");
    assert!(note_text.contains("\nAlso mid-commit.\n"), "{note_text}");
    assert!(
        note_text.ends_with("## Late\n\nWritten mid-commit.\n"),
        "{note_text}"
    );
    assert_consistent(&project, &session);
}

#[test]
fn a_session_someone_else_made_gets_the_shepherds_note_on_shepherds_first_write() {
    let project = Project::new();
    let store = project.store();
    let session = store
        .create_or_continue_named("theirs", at(0))
        .unwrap()
        .session;
    let dir = project.session_dir(&session);
    // As the original (or an earlier Shepherd) made it: no note, not listed.
    std::fs::remove_file(dir.join("shepherds-note.md")).unwrap();
    let mut json = project.session_json(&session);
    json.as_object_mut().unwrap().shift_remove("shepherdsNote");
    std::fs::write(
        dir.join("session.json"),
        serde_json::to_string_pretty(&json).unwrap(),
    )
    .unwrap();
    assert!(store.load(&session).unwrap().shepherds_note.is_none());
    store
        .reserve(&session, vec![PlannedNote::new("scout")], at(1))
        .unwrap();
    assert!(dir.join("shepherds-note.md").is_file());
    let json = project.session_json(&session);
    assert_eq!(
        json["shepherdsNote"]["createdAt"],
        shepherd_core::time::iso(at(1)),
        "{json}"
    );
    let text = std::fs::read_to_string(dir.join("shepherd.md")).unwrap();
    assert_eq!(text.matches(LINK).count(), 1, "{text}");
}
