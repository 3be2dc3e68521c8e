//! Folders the original extension's own fieldnotes store wrote, read, continued and rewritten by
//! Shepherd. `tests/fixtures/original-fieldnotes/` holds six sessions written by the original
//! at its pinned commit (its README says how and what each shows): unlike `original_node.rs`,
//! which needs the original's source and a Node that strips types, these need nothing but the
//! repository, so CI checks every time that a folder written by the original reads the same to
//! Shepherd and keeps what the original wrote once Shepherd writes to it.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::{Project, assert_consistent, at};
use shepherd_notes::{ListedSession, NoteStatus, PlannedNote, SessionRef, Store};

/// The project root the original wrote in, recorded in every `session.json`.
const FIXTURE_ROOT: &str = "/fixture-project";

fn fixture_sessions() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/original-fieldnotes/project/.shepherd/sessions")
}

/// A project holding a copy of the original's sessions, each record's project root made this
/// project's (the original only believes a record of the project it is found in, and so does
/// Shepherd).
fn project_with_the_originals_sessions() -> Project {
    let project = Project::new();
    copy_tree(&fixture_sessions(), &project.sessions_dir());
    let root = project.root.to_str().unwrap();
    for entry in std::fs::read_dir(project.sessions_dir()).unwrap() {
        let record = entry.unwrap().path().join("session.json");
        if record.is_file() {
            let text = std::fs::read_to_string(&record).unwrap();
            std::fs::write(&record, text.replace(FIXTURE_ROOT, root)).unwrap();
        }
    }
    project
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else if entry.file_name() != ".keep" {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Every note file of every session, by `session/file`, as the original wrote it.
fn note_files(project: &Project) -> BTreeMap<String, String> {
    let mut notes = BTreeMap::new();
    for session in std::fs::read_dir(project.sessions_dir()).unwrap() {
        let session = session.unwrap().path();
        let name = session.file_name().unwrap().to_str().unwrap().to_owned();
        if name.starts_with('.') {
            continue;
        }
        for file in std::fs::read_dir(&session).unwrap() {
            let file = file.unwrap().path();
            let file_name = file.file_name().unwrap().to_str().unwrap().to_owned();
            if file_name.ends_with(".md") && file_name != "shepherd.md" {
                let text = std::fs::read_to_string(&file).unwrap();
                notes.insert(format!("{name}/{file_name}"), text);
            }
        }
    }
    notes
}

fn session(store: &Store, directory: &str) -> SessionRef {
    store.find_session(directory).unwrap()
}

fn statuses(store: &Store, directory: &str) -> Vec<(String, NoteStatus)> {
    store
        .load(&session(store, directory))
        .unwrap()
        .artifacts
        .into_iter()
        .map(|note| (note.file_name, note.status))
        .collect()
}

#[test]
fn every_session_the_original_wrote_is_listed_with_its_name_status_and_notes() {
    let project = project_with_the_originals_sessions();
    let store = project.store();
    let listed: Vec<(String, String, String, usize)> = store
        .list_sessions()
        .unwrap()
        .into_iter()
        .map(|listed| match listed {
            ListedSession::Valid { session, metadata } => (
                session.directory_name().to_owned(),
                metadata.session_name.clone(),
                metadata.status.clone(),
                metadata.artifacts.len(),
            ),
            ListedSession::Invalid { session, reason } => {
                panic!("{} is not used: {reason}", session.directory_name())
            }
        })
        .collect();
    let expected = [
        ("0001-fix-oauth-login", "fix-oauth-login", "running", 2),
        ("0002-map-the-code", "map-the-code", "failed", 3),
        ("0003-plan-and-build", "plan-and-build", "completed", 3),
        (
            "0004-orchestrator-892149f0",
            "orchestrator-892149f0",
            "running",
            2,
        ),
        (
            "0005-fix-oauth-login-020834f2",
            "Fix OAuth Login",
            "running",
            1,
        ),
        ("0006-odd-names", "odd-names", "running", 2),
    ]
    .map(|(dir, name, status, notes)| (dir.to_owned(), name.to_owned(), status.to_owned(), notes));
    assert_eq!(listed, expected);

    assert_eq!(
        statuses(&store, "0002-map-the-code"),
        [
            ("scout-01.md".to_owned(), NoteStatus::Completed),
            ("scout-02.md".to_owned(), NoteStatus::Failed),
            ("scout-03.md".to_owned(), NoteStatus::TimedOut),
        ]
    );
    // The note left running by a crash, under a name that needed a safe file name.
    let odd = session(&store, "0006-odd-names");
    let note = store.read_note(&odd, "code-reviewer-strict-01.md").unwrap();
    assert_eq!(note.record.agent, "Code Reviewer (strict)");
    assert_eq!(note.record.status, NoteStatus::Running);
    assert!(note.text.is_some_and(|text| text.contains("Code Reviewer")));
    // Every note reads, with its record, and the text an agent wrote before its finalisation.
    let worker = store
        .read_note(&session(&store, "0001-fix-oauth-login"), "worker-01.md")
        .unwrap();
    assert_eq!(worker.record.status, NoteStatus::Completed);
    let written = note_files(&project);
    assert_eq!(
        worker.text.as_deref(),
        Some(written["0001-fix-oauth-login/worker-01.md"].as_str())
    );
    assert_eq!(written.len(), 13, "{:?}", written.keys());
}

#[test]
fn a_named_session_of_the_originals_is_continued_by_its_exact_name() {
    let project = project_with_the_originals_sessions();
    let store = project.store();
    let before = note_files(&project);

    let continued = store
        .create_or_continue_named("fix-oauth-login", at(10))
        .unwrap();
    assert!(continued.resumed);
    assert_eq!(continued.session.directory_name(), "0001-fix-oauth-login");
    // The colliding second name is its own session, the one with the original's hash suffix.
    let other = store
        .create_or_continue_named("Fix OAuth Login", at(11))
        .unwrap();
    assert!(other.resumed);
    assert_eq!(
        other.session.directory_name(),
        "0005-fix-oauth-login-020834f2"
    );

    let reserved = store
        .reserve(&continued.session, vec![PlannedNote::new("worker")], at(12))
        .unwrap();
    assert_eq!(reserved[0].file_name, "worker-02.md");
    assert_eq!(
        statuses(&store, "0001-fix-oauth-login"),
        [
            ("worker-01.md".to_owned(), NoteStatus::Completed),
            ("reviewer-01.md".to_owned(), NoteStatus::Cancelled),
            ("worker-02.md".to_owned(), NoteStatus::Pending),
        ]
    );
    assert_originals_notes_kept(&project, &before);
    assert_consistent(&project, &continued.session);
}

#[test]
fn the_originals_parent_bound_session_is_continued_by_its_parent() {
    let project = project_with_the_originals_sessions();
    let store = project.store();
    let before = note_files(&project);

    let resolved = store
        .resolve_or_create_parent_session("parent-session-0001", None, at(10))
        .unwrap();
    assert!(resolved.resumed);
    assert_eq!(
        resolved.session.directory_name(),
        "0004-orchestrator-892149f0"
    );
    let binding = resolved.metadata.parent_pi_session.as_ref().unwrap();
    assert_eq!(binding.identity, "parent-session-0001");
    // Its recorded session file is the original's, kept.
    assert_eq!(
        binding.session_file.as_deref(),
        Some("/fixture-home/.pi/agent/sessions/parent.jsonl")
    );
    let reserved = store
        .reserve(&resolved.session, vec![PlannedNote::new("scout")], at(11))
        .unwrap();
    assert_eq!(reserved[0].file_name, "scout-02.md");
    assert_eq!(statuses(&store, "0004-orchestrator-892149f0").len(), 3);

    // Another parent gets a session of its own, not the original's.
    let stranger = store
        .resolve_or_create_parent_session("parent-session-0002", None, at(12))
        .unwrap();
    assert!(!stranger.resumed);
    assert_eq!(stranger.session.ordinal(), 7);
    assert_originals_notes_kept(&project, &before);
}

#[test]
fn a_new_session_takes_the_ordinal_after_the_originals() {
    let project = project_with_the_originals_sessions();
    let store = project.store();
    let created = store
        .create_or_continue_named("a new name", at(10))
        .unwrap();
    assert!(!created.resumed);
    assert_eq!(created.session.ordinal(), 7);
    assert!(created.session.directory_name().starts_with("0007-"));
    let next = store
        .create_or_continue_named("another name", at(11))
        .unwrap();
    assert_eq!(next.session.ordinal(), 8);
}

#[test]
fn shepherds_rewrite_of_the_index_keeps_every_entry_the_original_wrote() {
    let project = project_with_the_originals_sessions();
    let store = project.store();
    let before = note_files(&project);
    for directory in [
        "0001-fix-oauth-login",
        "0002-map-the-code",
        "0003-plan-and-build",
        "0004-orchestrator-892149f0",
        "0005-fix-oauth-login-020834f2",
        "0006-odd-names",
    ] {
        let session = session(&store, directory);
        let original_index = store.read_index(&session).unwrap().unwrap();
        let notes_before = statuses(&store, directory);
        store.refresh_index(&session, at(20)).unwrap();
        let index = store.read_index(&session).unwrap().unwrap();
        assert_ne!(
            index, original_index,
            "{directory}: the index was not rewritten"
        );
        for (file_name, status) in &notes_before {
            let line = index
                .lines()
                .find(|line| line.contains(&format!("(./{file_name})")))
                .unwrap_or_else(|| panic!("{directory}: {file_name} is gone from\n{index}"));
            assert!(
                line.contains(status.as_str()),
                "{directory}: {file_name} is no longer {}: {line}",
                status.as_str()
            );
        }
        assert_eq!(statuses(&store, directory), notes_before, "{directory}");
    }
    assert_originals_notes_kept(&project, &before);
}

/// Every note the original wrote is still there, byte for byte.
fn assert_originals_notes_kept(project: &Project, before: &BTreeMap<String, String>) {
    let after = note_files(project);
    for (path, text) in before {
        assert_eq!(after.get(path), Some(text), "{path} changed or went");
    }
}
