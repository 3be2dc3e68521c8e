//! The shepherd's own note: what the shepherd writes at the end of `shepherd.md` survives
//! every rewrite of the index (reservations, finalisations, a continued session, and a write
//! that lands while a commit is on its way).

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

mod common;

use std::sync::Arc;

use common::{Project, assert_consistent, at};
use shepherd_notes::{CommitStage, Finalization, NoteStatus, PlannedNote, Store, StoreOptions};

const GUIDANCE: &str = "## Shepherd guidance\n\nAll sheep: keep the public API stable.\n";

/// Appends `text` to the session's `shepherd.md`, as a shepherd editing the file would.
fn append(path: &std::path::Path, text: &str) {
    let mut index = std::fs::read_to_string(path).unwrap();
    index.push_str(text);
    std::fs::write(path, index).unwrap();
}

#[test]
fn the_shepherds_note_survives_every_rewrite_of_the_index() {
    let project = Project::new();
    let store = project.store();
    let session = store
        .create_or_continue_named("guided", at(0))
        .unwrap()
        .session;
    let index = project.session_dir(&session).join("shepherd.md");
    append(&index, GUIDANCE);
    let kept = |when: &str| {
        let text = std::fs::read_to_string(&index).unwrap();
        assert_eq!(text.matches(GUIDANCE).count(), 1, "after {when}: {text}");
        assert!(text.ends_with(GUIDANCE), "after {when}: {text}");
    };
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
    let continued = store.create_or_continue_named("guided", at(3)).unwrap();
    assert!(continued.resumed);
    kept("continuing the finished session");
    // The shepherd writes more while a commit is on its way: both survive.
    let path = index.clone();
    let racing = StoreOptions {
        commit_hook: Some(Arc::new(move |stage: CommitStage<'_>| {
            if let CommitStage::Staged(_) = stage {
                append(&path, "\nWritten mid-commit.\n");
            }
        })),
        ..StoreOptions::default()
    };
    let racing = Store::with_options(&project.root, racing).unwrap();
    racing
        .reserve(&session, vec![PlannedNote::new("worker")], at(4))
        .unwrap();
    let text = std::fs::read_to_string(&index).unwrap();
    assert!(
        text.ends_with(&format!("{GUIDANCE}\nWritten mid-commit.\n")),
        "{text}"
    );
    assert!(text.contains("[Worker 01](./worker-01.md)"), "{text}");
    assert_consistent(&project, &session);
}
