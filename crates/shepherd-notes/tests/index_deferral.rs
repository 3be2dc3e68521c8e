//! `shepherd.md` put off and caught up: a commit that makes no note final may leave the index
//! as it was, one that makes a note final never does, and catching up writes the index only
//! when it lags the record.

use crate::common;

use std::os::unix::fs::MetadataExt;

use common::{Project, assert_consistent, at};
use shepherd_notes::{Finalization, NoteOp, NoteOpOutcome, NoteStatus, PlannedNote, SessionRef};

fn index_inode(project: &Project, session: &SessionRef) -> u64 {
    fs_err::metadata(project.session_dir(session).join("shepherd.md"))
        .unwrap()
        .ino()
}

/// Reserves one note in `session` with `apply_deferring_index`: its file name, and whether
/// the index was put off.
fn reserve_deferring(project: &Project, session: &SessionRef) -> (String, bool) {
    let applied = project
        .store()
        .apply_deferring_index(
            session,
            vec![NoteOp::Reserve(PlannedNote::new("scout"))],
            at(1),
        )
        .unwrap();
    let note = match &applied.outcomes[0] {
        Ok(NoteOpOutcome::Note(record)) => record.file_name.clone(),
        other => panic!("a reservation yields a note, not {other:?}"),
    };
    (note, applied.index_deferred)
}

#[test]
fn a_reservation_may_put_the_index_off_and_a_catch_up_writes_it_once() {
    let project = Project::new();
    let store = project.store();
    let session = store
        .create_or_continue_named("later", at(0))
        .unwrap()
        .session;
    let before = project.read(&session, "shepherd.md");
    let (note, deferred) = reserve_deferring(&project, &session);
    assert!(deferred);
    // The note and its record are there; the index is as it was.
    assert!(project.session_dir(&session).join(&note).is_file());
    assert_eq!(
        project.session_json(&session)["artifacts"][0]["fileName"],
        note
    );
    assert_eq!(project.read(&session, "shepherd.md"), before);

    store.refresh_index(&session, at(2)).unwrap();
    assert_eq!(assert_consistent(&project, &session), 1);
    // Caught up already: a second catch-up writes nothing (the file is the same file).
    let inode = index_inode(&project, &session);
    store.refresh_index(&session, at(3)).unwrap();
    assert_eq!(index_inode(&project, &session), inode);
}

#[test]
fn a_commit_that_makes_a_note_final_writes_the_index_even_when_it_may_defer() {
    let project = Project::new();
    let store = project.store();
    let session = store
        .create_or_continue_named("now", at(0))
        .unwrap()
        .session;
    let (note, _) = reserve_deferring(&project, &session);
    let applied = store
        .apply_deferring_index(
            &session,
            vec![NoteOp::Finalize {
                note: note.clone(),
                result: Finalization::new(NoteStatus::Completed),
            }],
            at(2),
        )
        .unwrap();
    assert!(!applied.index_deferred);
    // The index lists the note, final, the moment the note is final.
    assert_eq!(assert_consistent(&project, &session), 1);
    let index = project.read(&session, "shepherd.md");
    assert!(
        index.contains(&format!("](./{note}) — completed")),
        "{index}"
    );
}

#[test]
fn a_plain_commit_never_puts_the_index_off() {
    let project = Project::new();
    let store = project.store();
    let session = store
        .create_or_continue_named("plain", at(0))
        .unwrap()
        .session;
    let applied = store
        .apply(
            &session,
            vec![NoteOp::Reserve(PlannedNote::new("scout"))],
            at(1),
        )
        .unwrap();
    assert!(!applied.index_deferred);
    assert_eq!(assert_consistent(&project, &session), 1);
}
