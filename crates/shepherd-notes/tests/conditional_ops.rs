//! The operations whose effect depends on the record read under the lock: a task's note
//! reserved or started once however often it is handed over, a planned note released only
//! while pending and only for its own run, and a continuation that applies nothing more when
//! the session turns out not to be the one expected.

use crate::common;

use common::{Project, assert_consistent, at};
use serde_json::Value;
use shepherd_notes::{
    Finalization, Metadata, NoteOp, NoteOpOutcome, NoteStatus, OpError, PlannedNote, SessionKey,
};

fn planned(agent: &str, group: Option<&str>) -> PlannedNote {
    let mut note = PlannedNote::new(agent);
    note.group = group.map(str::to_owned);
    note
}

#[test]
fn a_task_handed_over_twice_keeps_one_note() {
    let project = Project::new();
    let store = project.store();
    let session = store
        .create_or_continue_named("once", at(0))
        .unwrap()
        .session;
    let reserve = || NoteOp::ReserveOnce {
        planned: planned("worker", None),
        task_id: "t-1".to_owned(),
    };
    // Twice in one commit, and again in another: one note.
    let applied = store
        .apply(&session, vec![reserve(), reserve()], at(1))
        .unwrap();
    let first = match &applied.outcomes[0] {
        Ok(NoteOpOutcome::Note(record)) => record.file_name.clone(),
        other => panic!("{other:?}"),
    };
    assert!(
        matches!(&applied.outcomes[1], Ok(NoteOpOutcome::Unchanged(r)) if r.file_name == first)
    );
    let again = store.apply(&session, vec![reserve()], at(2)).unwrap();
    assert!(matches!(&again.outcomes[0], Ok(NoteOpOutcome::Unchanged(r)) if r.file_name == first));
    let metadata = store.load(&session).unwrap();
    assert_eq!(metadata.artifacts.len(), 1);
    assert_eq!(
        metadata.artifacts[0].metadata.get("taskId"),
        Some(&Value::from("t-1"))
    );

    // A planned note started for a task, twice: started once, its task recorded once.
    let plan = store
        .reserve(&session, vec![planned("scout", Some("run-1"))], at(3))
        .unwrap()
        .remove(0);
    let start = || NoteOp::StartOnce {
        note: plan.file_name.clone(),
        task_id: "t-2".to_owned(),
        metadata: Metadata::new(),
        task: Some("the task as delivered".to_owned()),
    };
    let applied = store
        .apply(&session, vec![start(), start()], at(4))
        .unwrap();
    assert!(
        matches!(&applied.outcomes[0], Ok(NoteOpOutcome::Note(r)) if r.status == NoteStatus::Running)
    );
    assert!(matches!(
        &applied.outcomes[1],
        Ok(NoteOpOutcome::Unchanged(_))
    ));
    assert_eq!(assert_consistent(&project, &session), 2);
}

#[test]
fn a_planned_note_is_released_only_while_pending_and_only_for_its_run() {
    let project = Project::new();
    let store = project.store();
    let session = store
        .create_or_continue_named("plan", at(0))
        .unwrap()
        .session;
    let notes = store
        .reserve(
            &session,
            vec![planned("a", Some("run-1")), planned("b", Some("run-1"))],
            at(1),
        )
        .unwrap();
    let release = |file: &str, group: &str| NoteOp::Release {
        note: file.to_owned(),
        group: Some(group.to_owned()),
        result: Finalization::new(NoteStatus::Cancelled),
    };
    // Another run may not release it; its own may, once; a started note is left alone.
    let applied = store
        .apply(
            &session,
            vec![
                release(&notes[0].file_name, "run-2"),
                release(&notes[0].file_name, "run-1"),
                release(&notes[0].file_name, "run-1"),
                NoteOp::Start {
                    note: notes[1].file_name.clone(),
                    metadata: Metadata::new(),
                    task: None,
                },
                release(&notes[1].file_name, "run-1"),
            ],
            at(2),
        )
        .unwrap();
    let outcomes = applied.outcomes;
    assert!(matches!(outcomes[0], Err(OpError::NotInGroup { .. })));
    assert!(
        matches!(&outcomes[1], Ok(NoteOpOutcome::Note(r)) if r.status == NoteStatus::Cancelled)
    );
    assert!(matches!(&outcomes[2], Ok(NoteOpOutcome::Unchanged(_))));
    assert!(
        matches!(&outcomes[4], Ok(NoteOpOutcome::Unchanged(r)) if r.status == NoteStatus::Running)
    );
    let metadata = store.load(&session).unwrap();
    assert_eq!(metadata.artifacts[0].status, NoteStatus::Cancelled);
    assert_eq!(metadata.artifacts[1].status, NoteStatus::Running);
}

#[test]
fn continuing_the_wrong_session_applies_nothing_after_it() {
    let project = Project::new();
    let store = project.store();
    let named = store.create_or_continue_named("x", at(0)).unwrap().session;
    let applied = store
        .apply(
            &named,
            vec![
                NoteOp::Continue {
                    key: SessionKey::Parent("someone".to_owned()),
                    session_file: None,
                    guards: None,
                },
                NoteOp::Reserve(planned("a", None)),
                NoteOp::Reserve(planned("b", None)),
            ],
            at(1),
        )
        .unwrap();
    assert!(
        applied
            .outcomes
            .iter()
            .all(|o| matches!(o, Err(OpError::OtherSession { .. }))),
        "{:?}",
        applied.outcomes
    );
    assert_eq!(assert_consistent(&project, &named), 0);
    let applied = store
        .apply(
            &named,
            vec![
                NoteOp::Continue {
                    key: SessionKey::Name("x".to_owned()),
                    session_file: None,
                    guards: None,
                },
                NoteOp::Reserve(planned("a", None)),
            ],
            at(2),
        )
        .unwrap();
    assert!(
        matches!(&applied.outcomes[0], Ok(NoteOpOutcome::Continued { session_name }) if session_name == "x")
    );
    assert!(store.load(&named).unwrap().resumed);
    assert_eq!(assert_consistent(&project, &named), 1);
}

#[test]
fn a_refused_continue_refuses_only_the_operations_it_guards() {
    // A broker groups several writers' operations into one request: one writer continuing the
    // wrong session must not take the next writer's operations down with it.
    let project = Project::new();
    let store = project.store();
    let named = store.create_or_continue_named("x", at(0)).unwrap().session;
    let applied = store
        .apply(
            &named,
            vec![
                NoteOp::Reserve(planned("before", None)),
                NoteOp::Continue {
                    key: SessionKey::Parent("someone".to_owned()),
                    session_file: None,
                    guards: Some(1),
                },
                NoteOp::Reserve(planned("guarded", None)),
                NoteOp::Reserve(planned("after", None)),
            ],
            at(1),
        )
        .unwrap();
    let outcomes = &applied.outcomes;
    assert!(matches!(&outcomes[0], Ok(NoteOpOutcome::Note(r)) if r.agent == "before"));
    assert!(matches!(outcomes[1], Err(OpError::OtherSession { .. })));
    assert!(matches!(outcomes[2], Err(OpError::OtherSession { .. })));
    assert!(
        matches!(&outcomes[3], Ok(NoteOpOutcome::Note(r)) if r.agent == "after"),
        "{outcomes:?}"
    );
    assert_eq!(assert_consistent(&project, &named), 2);
}

#[test]
fn finalising_again_with_the_result_the_note_holds_changes_nothing_and_another_is_refused() {
    let project = Project::new();
    let store = project.store();
    let session = store
        .create_or_continue_named("again", at(0))
        .unwrap()
        .session;
    let note = store
        .reserve(&session, vec![planned("worker", None)], at(1))
        .unwrap()
        .remove(0)
        .file_name;
    let result = || {
        let mut result = Finalization::new(NoteStatus::Completed);
        result.output = Some("did it".to_owned());
        result.metadata = [
            ("returnCode".to_owned(), Value::from(0)),
            ("summary".to_owned(), Value::from("did it")),
        ]
        .into();
        result
    };
    let finalize = |result| NoteOp::Finalize {
        note: note.clone(),
        result,
    };
    let first = store
        .apply(&session, vec![finalize(result())], at(2))
        .unwrap();
    let Ok(NoteOpOutcome::Note(first)) = &first.outcomes[0] else {
        panic!("{:?}", first.outcomes)
    };
    let files = || ["session.json", "shepherd.md", &note].map(|file| project.read(&session, file));
    let before = files();

    // The same result again (a finaliser that did not learn it had finished, say after a
    // restart): answered with the note as it is, and nothing is written.
    let again = store
        .apply(&session, vec![finalize(result())], at(3))
        .unwrap();
    assert!(
        matches!(&again.outcomes[0], Ok(NoteOpOutcome::Unchanged(record)) if record == first),
        "{:?}",
        again.outcomes
    );
    let record = store.finalize(&session, &note, result(), at(4)).unwrap();
    assert_eq!(&record, &**first);
    assert_eq!(files(), before);

    // Another status, error, return code or summary is another result: refused.
    let mut failed = result();
    failed.status = NoteStatus::Failed;
    let mut with_error = result();
    with_error.error = Some("it broke".to_owned());
    let mut other_code = result();
    other_code
        .metadata
        .insert("returnCode".to_owned(), Value::from(1));
    let mut other_summary = result();
    other_summary
        .metadata
        .insert("summary".to_owned(), Value::from("did something else"));
    for other in [failed, with_error, other_code, other_summary] {
        let applied = store
            .apply(&session, vec![finalize(other.clone())], at(5))
            .unwrap();
        assert!(
            matches!(
                applied.outcomes[0],
                Err(OpError::AlreadyFinal {
                    status: NoteStatus::Completed,
                    ..
                })
            ),
            "{other:?}: {:?}",
            applied.outcomes
        );
    }
    assert_eq!(files(), before);
    assert_consistent(&project, &session);
}
