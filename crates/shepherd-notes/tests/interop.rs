//! Fieldnotes shared with the original extension, both ways, in both binding modes: the
//! original's rules (`original`, encoded from its source) read and write folders Shepherd
//! wrote without ever waiting on a lock, Shepherd reads and continues folders written by those
//! rules, the two exclude each other when they write one session at once, and a writer of
//! either kind that dies holding a lock wedges no one.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::common;
use crate::original;

use std::sync::Arc;

use common::{EVENT_TIMEOUT, Project, Worker, assert_consistent, at};
use original::Original;
use serde_json::{Value, json};
use shepherd_notes::{Finalization, NoteStatus, PlannedNote, SessionRef, Store};

fn note(agent: &str) -> Vec<PlannedNote> {
    vec![PlannedNote::new(agent)]
}

fn session_ref(path: &std::path::Path) -> SessionRef {
    SessionRef::new(path.file_name().unwrap().to_str().unwrap()).unwrap()
}

fn statuses(record: &Value) -> Vec<(String, String)> {
    record["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["fileName"].as_str().unwrap().to_owned(),
                a["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// Shepherd writes `session` (two notes, one finalised); returns their file names.
fn shepherd_writes(store: &Store, session: &SessionRef) -> Vec<String> {
    let notes = store
        .reserve(
            session,
            vec![PlannedNote::new("scout"), PlannedNote::new("worker")],
            at(1),
        )
        .unwrap();
    let mut done = Finalization::new(NoteStatus::Completed);
    done.output = Some("mapped".to_owned());
    store
        .finalize(session, &notes[0].file_name, done, at(2))
        .unwrap();
    notes.into_iter().map(|n| n.file_name).collect()
}

#[test]
fn the_originals_rules_continue_a_parent_bound_session_shepherd_wrote_without_waiting() {
    let project = Project::new();
    let store = project.store();
    let ours = store
        .resolve_or_create_parent_session("pi-session-7", None, at(0))
        .unwrap();
    shepherd_writes(&store, &ours.session);

    let original = Original::new(&project.root);
    let dir = project.session_dir(&ours.session);
    assert!(
        original.read_record(&dir).is_some(),
        "the original reads it"
    );
    let theirs = original.resolve_parent("pi-session-7").unwrap();
    assert_eq!(theirs.path, dir, "the original resumes the same session");
    assert!(theirs.resumed);
    let file = original.reserve(&theirs, "reviewer", "review it").unwrap();
    original
        .finalize(&theirs, &file, "completed", "looks fine")
        .unwrap();
    assert_eq!(original.retries(), 0, "the original never waited on a lock");

    // And Shepherd goes on with everything the original added.
    let again = store
        .resolve_or_create_parent_session("pi-session-7", None, at(3))
        .unwrap();
    assert_eq!(again.session, ours.session);
    let metadata = store.load(&ours.session).unwrap();
    assert_eq!(metadata.artifacts.len(), 3);
    assert_eq!(metadata.artifacts[2].status, NoteStatus::Completed);
    store.reserve(&ours.session, note("scout"), at(4)).unwrap();
    assert_eq!(assert_consistent(&project, &ours.session), 4);
    assert_eq!(original.retries(), 0);
}

#[test]
fn the_originals_rules_see_and_continue_a_named_session_shepherd_wrote() {
    let project = Project::new();
    let store = project.store();
    let ours = store.create_or_continue_named("fix login", at(0)).unwrap();
    shepherd_writes(&store, &ours.session);
    let dir = project.session_dir(&ours.session);
    let json = project.session_json(&ours.session);
    assert!(
        json.get("artifactSessionVersion").is_none(),
        "a named session is written in the original's name-based form: {json}"
    );

    let original = Original::new(&project.root);
    let record = original
        .read_record(&dir)
        .expect("the original believes Shepherd's named session");
    assert_eq!(
        statuses(&record),
        [
            ("scout-01.md".to_owned(), "completed".to_owned()),
            ("worker-01.md".to_owned(), "pending".to_owned()),
        ]
    );
    let theirs = original.create_or_resume_named("fix login").unwrap();
    assert_eq!(theirs.path, dir, "found by its name, not made again");
    original.reserve(&theirs, "scout", "look again").unwrap();
    assert_eq!(original.retries(), 0, "the original never waited on a lock");

    let metadata = store.load(&ours.session).unwrap();
    assert_eq!(metadata.artifacts.len(), 3);
    assert_eq!(metadata.artifacts[2].file_name, "scout-02.md");
    let continued = store.create_or_continue_named("fix login", at(5)).unwrap();
    assert_eq!(continued.session, ours.session);
    assert_eq!(project.session_dirs().len(), 1);
}

#[test]
fn a_named_session_an_earlier_shepherd_wrote_as_version_2_is_rewritten_for_the_original() {
    let project = Project::new();
    let store = project.store();
    let ours = store.create_or_continue_named("old", at(0)).unwrap();
    // What Shepherd wrote before: version 2 without a parent, which the original refuses.
    let path = project.session_dir(&ours.session).join("session.json");
    let mut json = project.session_json(&ours.session);
    json.as_object_mut()
        .unwrap()
        .shift_insert(0, "artifactSessionVersion".to_owned(), json!(2));
    std::fs::write(&path, serde_json::to_string_pretty(&json).unwrap()).unwrap();
    let original = Original::new(&project.root);
    let dir = project.session_dir(&ours.session);
    assert!(original.read_record(&dir).is_none(), "the original's check");

    store.reserve(&ours.session, note("scout"), at(1)).unwrap();
    assert!(
        original.read_record(&dir).is_some(),
        "Shepherd's next write makes it readable to the original"
    );
    let theirs = original.create_or_resume_named("old").unwrap();
    assert_eq!(theirs.path, dir);
}

#[test]
fn shepherd_reads_and_continues_both_kinds_of_session_the_originals_rules_wrote() {
    let project = Project::new();
    let original = Original::new(&project.root);
    let bound = original.resolve_parent("pi-session-9").unwrap();
    let a = original.reserve(&bound, "scout", "map it").unwrap();
    original
        .finalize(&bound, &a, "completed", "mapped")
        .unwrap();
    original.reserve(&bound, "worker", "fix it").unwrap();
    let named = original.create_or_resume_named("fix login").unwrap();
    original.reserve(&named, "planner", "plan it").unwrap();

    let store = project.store();
    let resolved = store
        .resolve_or_create_parent_session("pi-session-9", None, at(10))
        .unwrap();
    assert_eq!(resolved.session, session_ref(&bound.path));
    assert!(resolved.resumed);
    assert_eq!(resolved.metadata.artifacts.len(), 2);
    let continued = store.create_or_continue_named("fix login", at(11)).unwrap();
    assert_eq!(continued.session, session_ref(&named.path));
    for session in [&resolved.session, &continued.session] {
        let added = store.reserve(session, note("worker"), at(12)).unwrap();
        store
            .finalize(
                session,
                &added[0].file_name,
                Finalization::new(NoteStatus::Failed),
                at(13),
            )
            .unwrap();
    }

    // The original still believes both records after Shepherd's rewrites, and writes on
    // without waiting.
    for (session, expected) in [(&bound, 3), (&named, 2)] {
        let record = original.read_record(&session.path).expect("still believed");
        assert_eq!(record["artifacts"].as_array().unwrap().len(), expected);
        original.reserve(session, "tester", "test it").unwrap();
    }
    assert_eq!(original.retries(), 0, "the original never waited on a lock");
    assert_eq!(
        original.resolve_parent("pi-session-9").unwrap().path,
        bound.path
    );
    assert_eq!(
        original.create_or_resume_named("fix login").unwrap().path,
        named.path
    );
    assert_eq!(project.session_dirs().len(), 2);
    assert_eq!(assert_consistent(&project, &resolved.session), 4);
    assert_eq!(assert_consistent(&project, &continued.session), 3);
}

/// Writers of both kinds into one session at once: every note of either kind is kept once.
fn both_kinds_write_one_session(binding: &str) {
    const EACH: usize = 15;
    let project = Project::new();
    let original = Arc::new(Original::new(&project.root));
    let theirs = match binding {
        "parent" => original.resolve_parent("pi-shared").unwrap(),
        _ => original.create_or_resume_named("shared").unwrap(),
    };
    let session = session_ref(&theirs.path);
    let root = project.root.to_str().unwrap().to_owned();
    let selector = match binding {
        "parent" => ["--parent", "pi-shared"],
        _ => ["--session-name", "shared"],
    };
    let mut workers: Vec<Worker> = (0..2)
        .map(|i| {
            let count = EACH.to_string();
            let agent = format!("ours-{i}");
            Worker::spawn(&[
                "reserve",
                "--project",
                &root,
                selector[0],
                selector[1],
                "--agent",
                &agent,
                "--count",
                &count,
                "--lifecycle",
                "--wait-go",
            ])
        })
        .collect();
    for worker in &workers {
        worker.expect_prefix("ready", EVENT_TIMEOUT);
    }
    let threads: Vec<_> = (0..2)
        .map(|i| {
            let original = Arc::clone(&original);
            let theirs = theirs.clone();
            std::thread::spawn(move || {
                for _ in 0..EACH {
                    let file = original
                        .reserve(&theirs, &format!("theirs-{i}"), "t")
                        .unwrap();
                    original
                        .finalize(&theirs, &file, "completed", "ok")
                        .unwrap();
                }
            })
        })
        .collect();
    for worker in &mut workers {
        worker.go();
    }
    for thread in threads {
        thread.join().unwrap();
    }
    for worker in workers {
        let lines = worker.finish();
        assert!(lines.iter().any(|l| l.starts_with("done")), "{lines:?}");
    }
    assert_eq!(assert_consistent(&project, &session), 4 * EACH);
    let metadata = project.store().load(&session).unwrap();
    for agent in ["ours-0", "ours-1", "theirs-0", "theirs-1"] {
        let mut ordinals: Vec<u32> = metadata
            .artifacts
            .iter()
            .filter(|a| a.agent == agent)
            .inspect(|a| assert_eq!(a.status, NoteStatus::Completed, "{}", a.file_name))
            .map(|a| a.ordinal)
            .collect();
        ordinals.sort_unstable();
        assert_eq!(ordinals, (1..=EACH as u32).collect::<Vec<_>>(), "{agent}");
    }
    assert!(original.read_record(&theirs.path).is_some());
}

#[test]
fn writers_of_both_kinds_exclude_each_other_in_a_parent_bound_session() {
    both_kinds_write_one_session("parent");
}

#[test]
fn writers_of_both_kinds_exclude_each_other_in_a_named_session() {
    both_kinds_write_one_session("named");
}

#[test]
fn a_lock_left_by_a_dead_writer_of_either_kind_wedges_no_one() {
    let project = Project::new();
    let store = project.store();
    let session = store
        .create_or_continue_named("crash", at(0))
        .unwrap()
        .session;
    let dir = project.session_dir(&session);
    // The original died holding both of its locks: its pid is in them, and it is gone.
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    for lock in [
        dir.join(".session.lock"),
        project.sessions_dir().join(".sessions.lock"),
    ] {
        std::fs::write(&lock, format!("{dead}\n")).unwrap();
    }
    store.reserve(&session, note("scout"), at(1)).unwrap();
    store
        .create_or_continue_named("another", at(2))
        .expect("the root lock is taken over too");

    // A Shepherd writer killed while holding the session lock: the next Shepherd writer takes
    // over, and leaves the lock free for the original.
    let root = project.root.to_str().unwrap().to_owned();
    let holder = Worker::spawn(&[
        "hold",
        "--project",
        &root,
        "--session-name",
        "crash",
        "--during",
        "reserve",
        "--stage",
        "staged",
    ]);
    holder.expect_prefix("staged", EVENT_TIMEOUT);
    holder.kill();
    store.reserve(&session, note("worker"), at(3)).unwrap();
    let original = Original::new(&project.root);
    let theirs = original.create_or_resume_named("crash").unwrap();
    original.reserve(&theirs, "tester", "t").unwrap();
    assert_eq!(original.retries(), 0);
    assert_eq!(assert_consistent(&project, &session), 3);
}
