//! Deleting a note and attaching feedback to one, as the store records them: `session.json`
//! keeps a deleted note's record (marked `deletedAt`, its number never reused) and lists each
//! note's feedback; `shepherd.md` shows both.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::common;

use common::{Project, at};
use shepherd_notes::{Finalization, NoteStatus, PlannedNote};

#[test]
fn a_deleted_note_and_feedback_show_in_the_record_and_the_index() {
    let project = Project::new();
    let store = project.store();
    let session = store
        .create_or_continue_named("curated", at(0))
        .unwrap()
        .session;
    store
        .reserve(
            &session,
            vec![PlannedNote::new("scout"), PlannedNote::new("scout")],
            at(1),
        )
        .unwrap();
    for note in ["scout-01.md", "scout-02.md"] {
        store
            .finalize(
                &session,
                note,
                Finalization::new(NoteStatus::Completed),
                at(2),
            )
            .unwrap();
    }
    let dir = project.session_dir(&session);
    let record = store
        .add_feedback(&session, "scout-01.md", "shepherd", "Good map.", at(3))
        .unwrap();
    assert_eq!(record.feedback.len(), 1);
    store.delete_note(&session, "scout-02.md", at(4)).unwrap();
    assert!(!dir.join("scout-02.md").exists());
    let json = project.session_json(&session);
    assert_eq!(json["artifacts"][0]["feedback"][0]["text"], "Good map.");
    assert_eq!(json["artifacts"][0]["feedback"][0]["from"], "shepherd");
    assert_eq!(
        json["artifacts"][1]["deletedAt"],
        "2025-08-14T09:04:00.000Z"
    );
    let index = project.read(&session, "shepherd.md");
    assert!(
        index.contains("   - Feedback from shepherd (2025-08-14T09:03:00.000Z): Good map.\n"),
        "{index}"
    );
    assert!(
        index.contains("2. ~~Scout 02~~ — completed, deleted"),
        "{index}"
    );
    // A file a crash left behind after the record said deleted goes with the next delete.
    std::fs::write(dir.join("scout-02.md"), "left behind").unwrap();
    store.delete_note(&session, "scout-02.md", at(5)).unwrap();
    assert!(!dir.join("scout-02.md").exists());
    let json = project.session_json(&session);
    assert_eq!(
        json["artifacts"][1]["deletedAt"],
        "2025-08-14T09:04:00.000Z"
    );
    // The next scout note never takes the deleted one's number.
    let next = store
        .reserve(&session, vec![PlannedNote::new("scout")], at(6))
        .unwrap();
    assert_eq!(next[0].file_name, "scout-03.md");
}
