//! The record's transitions on small in-memory sessions: the lifecycle, refused input that
//! changes nothing, and continuing a finished session.

use super::*;
use serde_json::json;

fn session() -> SessionMetadata {
    SessionMetadata::new("s", "s", 1, None, "t0")
}

fn meta(pairs: &[(&str, serde_json::Value)]) -> Metadata {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect()
}

#[test]
fn lifecycle_runs_once() {
    let mut s = session();
    let none = |_: &str| false;
    let file = s
        .reserve(PlannedNote::new("scout"), &none, "t0")
        .unwrap()
        .file_name
        .clone();
    s.start(&file, meta(&[("taskId", json!("t1"))]), "t1")
        .unwrap();
    s.finalize(&file, NoteStatus::Completed, None, Metadata::new(), "t2")
        .unwrap();
    let again = s.finalize(&file, NoteStatus::Failed, None, Metadata::new(), "t3");
    assert!(matches!(again, Err(OpError::AlreadyFinal { .. })));
    assert!(matches!(
        s.start(&file, Metadata::new(), "t3"),
        Err(OpError::AlreadyFinal { .. })
    ));
    let note = s.artifact(&file).unwrap();
    assert_eq!(note.status, NoteStatus::Completed);
    assert_eq!(note.completed_at.as_deref(), Some("t2"));
    s.update_final_output(&file, meta(&[("tokens", json!(12))]))
        .unwrap();
    assert_eq!(s.artifact(&file).unwrap().metadata["tokens"], 12);
}

#[test]
fn a_note_can_be_reserved_running() {
    let mut s = session();
    let planned = PlannedNote {
        start: true,
        ..PlannedNote::new("scout")
    };
    let note = s.reserve(planned, &|_: &str| false, "t1").unwrap();
    assert_eq!(note.status, NoteStatus::Running);
    assert_eq!(note.started_at.as_deref(), Some("t1"));
}

#[test]
fn bad_input_changes_nothing() {
    let mut s = session();
    let none = |_: &str| false;
    let before = s.clone();
    assert!(s.reserve(PlannedNote::new(" "), &none, "t").is_err());
    let mut bad = PlannedNote::new("scout");
    bad.metadata = meta(&[("status", json!("x"))]);
    assert!(s.reserve(bad, &none, "t").is_err());
    assert!(
        s.finalize("x.md", NoteStatus::Running, None, Metadata::new(), "t")
            .is_err()
    );
    assert!(s.link("../etc/passwd", None).is_err());
    assert!(s.link("/abs", None).is_err());
    assert!(s.set_status(NoteStatus::Pending).is_err());
    assert_eq!(s, before);
    s.link("https://example.com/issues/1", Some("Issue".to_owned()))
        .unwrap();
    s.link("src/lib.rs", None).unwrap();
    s.link("https://example.com/issues/1", None).unwrap();
    assert_eq!(s.related.len(), 2);
}

#[test]
fn resume_reopens_finished_sessions() {
    let mut s = session();
    assert!(s.resume(None));
    assert!(!s.resume(None));
    s.status = "completed".to_owned();
    assert!(s.resume(None));
    assert_eq!(s.status, "running");
}

#[test]
fn finalising_again_with_the_same_result_changes_nothing() {
    let mut s = session();
    let file = s
        .reserve(PlannedNote::new("scout"), &|_: &str| false, "t0")
        .unwrap()
        .file_name
        .clone();
    let result = meta(&[("returnCode", json!(0)), ("summary", json!("did it"))]);
    let blank = Some(" ".to_owned());
    let first = s.finalize(&file, NoteStatus::Completed, blank, result.clone(), "t1");
    assert_eq!(first, Ok(true));
    let before = s.clone();
    // The error as recorded (a blank one is none), and metadata the note holds: the same.
    let again = s.finalize(&file, NoteStatus::Completed, None, result.clone(), "t2");
    assert_eq!(again, Ok(false));
    let part = meta(&[("summary", json!("did it")), ("absent", json!(null))]);
    let again = s.finalize(&file, NoteStatus::Completed, None, part, "t2");
    assert_eq!(again, Ok(false));
    assert_eq!(s, before);
    let others = [
        (NoteStatus::Failed, None, result.clone()),
        (
            NoteStatus::Completed,
            Some("broke".to_owned()),
            result.clone(),
        ),
        (
            NoteStatus::Completed,
            None,
            meta(&[("returnCode", json!(1))]),
        ),
        (
            NoteStatus::Completed,
            None,
            meta(&[("summary", json!("other"))]),
        ),
        (
            NoteStatus::Completed,
            None,
            meta(&[("summary", json!(null))]),
        ),
        (NoteStatus::Completed, None, meta(&[("tokens", json!(12))])),
    ];
    for (status, error, metadata) in others {
        let refused = s.finalize(&file, status, error, metadata, "t3");
        assert!(
            matches!(refused, Err(OpError::AlreadyFinal { .. })),
            "{refused:?}"
        );
    }
    assert_eq!(s, before);
}
