//! The store under real processes: many writers into one session and into many, racing
//! allocation and binding, and writers killed while holding a lock or in the middle of a
//! commit. Every wait is on an event (a line from the worker) with a deadline; nothing sleeps.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::common;

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use common::{EVENT_TIMEOUT, Project, Worker, assert_consistent, at, temp_leftovers};
use shepherd_notes::{ListedSession, PlannedNote, SessionRef, Store, StoreOptions};

const PROCESSES: usize = 16;
const RESERVATIONS: usize = 50;

fn project_arg(project: &Project) -> String {
    project.root.to_str().unwrap().to_owned()
}

/// Starts `PROCESSES` workers with `args_for(i)`, waits until all are ready, releases them at
/// once and waits for all to finish.
fn run_together(args_for: impl Fn(usize) -> Vec<String>) {
    let mut workers: Vec<Worker> = (0..PROCESSES)
        .map(|i| {
            let args = args_for(i);
            Worker::spawn(&args.iter().map(String::as_str).collect::<Vec<_>>())
        })
        .collect();
    for worker in &workers {
        worker.expect_prefix("ready", EVENT_TIMEOUT);
    }
    for worker in &mut workers {
        worker.go();
    }
    for worker in workers {
        let lines = worker.finish();
        assert!(
            lines.iter().any(|line| line.starts_with("done")),
            "{lines:?}"
        );
    }
}

#[test]
fn sixteen_processes_reserve_into_one_session_without_losing_or_duplicating() {
    let project = Project::new();
    let session = project
        .store()
        .create_or_continue_named("stress", at(0))
        .unwrap()
        .session;
    let root = project_arg(&project);
    run_together(|i| {
        let agent = format!("agent-{}", i % 4);
        let count = RESERVATIONS.to_string();
        [
            "reserve",
            "--project",
            &root,
            "--session-name",
            "stress",
            "--agent",
            &agent,
        ]
        .into_iter()
        .map(str::to_owned)
        .chain(["--count".to_owned(), count, "--wait-go".to_owned()])
        .collect()
    });
    assert_eq!(
        assert_consistent(&project, &session),
        PROCESSES * RESERVATIONS
    );
    let json = project.session_json(&session);
    let mut ordinals: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for artifact in json["artifacts"].as_array().unwrap() {
        let agent = artifact["agent"].as_str().unwrap().to_owned();
        ordinals
            .entry(agent)
            .or_default()
            .push(artifact["ordinal"].as_u64().unwrap());
    }
    let expected: Vec<u64> = (1..=(PROCESSES * RESERVATIONS / 4) as u64).collect();
    for (agent, mut got) in ordinals {
        got.sort_unstable();
        assert_eq!(got, expected, "{agent} ordinals");
    }
    assert_eq!(project.session_dirs().len(), 1);
    assert!(temp_leftovers(&project.root).is_empty());
}

#[test]
fn sixteen_processes_reserve_into_separate_sessions() {
    let project = Project::new();
    let root = project_arg(&project);
    run_together(|i| {
        let name = format!("separate {i}");
        let count = RESERVATIONS.to_string();
        [
            "reserve",
            "--project",
            &root,
            "--session-name",
            &name,
            "--count",
            &count,
            "--wait-go",
        ]
        .into_iter()
        .map(str::to_owned)
        .collect()
    });
    let store = project.store();
    let listed = store.list_sessions().unwrap();
    assert_eq!(listed.len(), PROCESSES);
    let mut names = HashSet::new();
    for (expected_ordinal, entry) in (1..).zip(&listed) {
        let ListedSession::Valid { session, metadata } = entry else {
            panic!("invalid session {entry:?}");
        };
        assert_eq!(
            session.ordinal(),
            expected_ordinal,
            "ordinals are dense and distinct"
        );
        assert!(names.insert(metadata.session_name.clone()));
        assert_eq!(assert_consistent(&project, session), RESERVATIONS);
    }
    assert!(temp_leftovers(&project.root).is_empty());
}

#[test]
fn racing_processes_allocate_one_session_per_parent_and_per_name() {
    let project = Project::new();
    let root = project_arg(&project);
    run_together(|i| {
        let mut args: Vec<String> = ["reserve", "--project", &root, "--race-resolve"]
            .map(str::to_owned)
            .to_vec();
        if i % 2 == 0 {
            args.extend(["--parent".to_owned(), format!("parent-{}", i % 4)]);
        } else {
            args.extend(["--session-name".to_owned(), format!("name {}", i % 3)]);
        }
        args
    });
    let store = project.store();
    let listed = store.list_sessions().unwrap();
    let mut notes = 0;
    for entry in &listed {
        let ListedSession::Valid { session, .. } = entry else {
            panic!("invalid session {entry:?}");
        };
        notes += assert_consistent(&project, session);
    }
    assert_eq!(notes, PROCESSES);
    assert_eq!(listed.len(), 2 + 3, "two parents (0 and 2) and three names");
    let tokens = std::fs::read_dir(project.sessions_dir().join(".alloc"))
        .unwrap()
        .count();
    assert_eq!(
        tokens,
        listed.len(),
        "every claimed number became a session"
    );
}

/// Starts a `hold` worker and waits until it reports `stage`.
fn hold(project: &Project, during: &str, stage: &str, name: &str) -> Worker {
    let root = project_arg(project);
    let worker = Worker::spawn(&[
        "hold",
        "--project",
        &root,
        "--session-name",
        name,
        "--during",
        during,
        "--stage",
        stage,
    ]);
    assert_eq!(worker.expect_line(EVENT_TIMEOUT), stage);
    worker
}

fn generous_store(project: &Project) -> Store {
    let options = StoreOptions {
        lock_timeout: Duration::from_secs(10),
        ..StoreOptions::default()
    };
    Store::with_options(&project.root, options).unwrap()
}

#[test]
fn a_killed_lock_holder_does_not_block_the_next_writer() {
    let project = Project::new();
    let session = project
        .store()
        .create_or_continue_named("crash", at(0))
        .unwrap()
        .session;
    let holder = hold(&project, "reserve", "locked", "crash");
    holder.kill();
    // The lock died with its holder: the next writer gets it well within the deadline.
    let notes = generous_store(&project)
        .reserve(&session, vec![PlannedNote::new("next")], at(1))
        .unwrap();
    assert_eq!(notes[0].file_name, "next-01.md");
    assert_eq!(assert_consistent(&project, &session), 1);
}

#[test]
fn a_writer_killed_mid_commit_leaves_no_partial_or_temp_files() {
    let project = Project::new();
    let store = project.store();
    let session = store
        .create_or_continue_named("torn", at(0))
        .unwrap()
        .session;
    store
        .reserve(&session, vec![PlannedNote::new("first")], at(1))
        .unwrap();
    let dir = project.session_dir(&session);
    let visible = |dir: &std::path::Path| {
        let mut files: Vec<(String, String)> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap())
            .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
            .map(|e| {
                let text = std::fs::read_to_string(e.path()).unwrap();
                (e.file_name().to_string_lossy().into_owned(), text)
            })
            .collect();
        files.sort();
        files
    };
    let writer = hold(&project, "reserve", "staged", "torn");
    // Taken while the writer is stopped between staging and renaming (its earlier resume
    // commit is complete by then).
    let before = visible(&dir);
    assert!(
        !temp_leftovers(&dir).is_empty(),
        "the commit was staged under temp names"
    );
    writer.kill();
    assert_eq!(
        visible(&dir),
        before,
        "a killed commit changed visible files"
    );
    assert_eq!(store.load(&session).unwrap().artifacts.len(), 1);
    let next = generous_store(&project)
        .reserve(&session, vec![PlannedNote::new("after")], at(2))
        .unwrap();
    assert_eq!(next[0].file_name, "after-01.md");
    assert!(
        temp_leftovers(&project.root).is_empty(),
        "{:?}",
        temp_leftovers(&project.root)
    );
    assert_eq!(assert_consistent(&project, &session), 2);
}

#[test]
fn a_creator_killed_mid_creation_leaves_no_half_made_session() {
    let project = Project::new();
    let creator = hold(&project, "create", "staged", "half made");
    creator.kill();
    assert!(
        project.session_dirs().is_empty(),
        "a half-made session became visible"
    );
    let store = generous_store(&project);
    assert!(store.list_sessions().unwrap().is_empty());
    let made = store.create_or_continue_named("half made", at(1)).unwrap();
    assert!(!made.resumed);
    assert_eq!(
        made.session.ordinal(),
        2,
        "the dead creator's number stays burned"
    );
    assert!(
        temp_leftovers(&project.root).is_empty(),
        "{:?}",
        temp_leftovers(&project.root)
    );
}

#[test]
fn a_killed_root_lock_holder_does_not_block_session_creation() {
    let project = Project::new();
    let holder = hold(&project, "create", "root-locked", "blocked");
    holder.kill();
    let made = generous_store(&project)
        .create_or_continue_named("blocked", at(1))
        .unwrap();
    assert_eq!(made.session, SessionRef::new("0001-blocked").unwrap());
}

/// A lock holder that stops once it holds the lock, a second writer that queues behind it,
/// then the holder goes on (claiming the queued request) and is killed at `stage`. Returns the
/// waiting writer, which must then finish on its own.
fn kill_combiner_at(project: &Project, stage: &str) -> Worker {
    let root = project_arg(project);
    let mut holder = Worker::spawn(&[
        "hold",
        "--project",
        &root,
        "--session-name",
        "queue",
        "--during",
        "reserve",
        "--pause-at-lock",
        "--stage",
        stage,
        "--agent",
        "holder",
    ]);
    assert_eq!(holder.expect_line(EVENT_TIMEOUT), "locked");
    let waiter = Worker::spawn(&[
        "reserve",
        "--project",
        &root,
        "--session-name",
        "queue",
        "--agent",
        "waiter",
        "--announce-queue",
    ]);
    waiter.expect_prefix("queued", EVENT_TIMEOUT);
    holder.go();
    assert_eq!(holder.expect_line(EVENT_TIMEOUT), stage);
    holder.kill();
    waiter
}

#[test]
fn a_queued_request_committed_by_a_killed_holder_is_answered_once() {
    let project = Project::new();
    let session = project
        .store()
        .create_or_continue_named("queue", at(0))
        .unwrap()
        .session;
    let waiter = kill_combiner_at(&project, "committed");
    let lines = waiter.finish();
    assert!(lines.iter().any(|line| line == "done 1"), "{lines:?}");
    let metadata = project.store().load(&session).unwrap();
    let agents: Vec<&str> = metadata
        .artifacts
        .iter()
        .map(|a| a.agent.as_str())
        .collect();
    assert_eq!(
        agents,
        ["holder", "waiter"],
        "the waiter's note was applied exactly once"
    );
    assert_consistent(&project, &session);
}

#[test]
fn a_queued_request_claimed_by_a_holder_killed_before_committing_is_applied_once() {
    let project = Project::new();
    let session = project
        .store()
        .create_or_continue_named("queue", at(0))
        .unwrap()
        .session;
    let waiter = kill_combiner_at(&project, "staged");
    let lines = waiter.finish();
    assert!(lines.iter().any(|line| line == "done 1"), "{lines:?}");
    let metadata = project.store().load(&session).unwrap();
    let agents: Vec<&str> = metadata
        .artifacts
        .iter()
        .map(|a| a.agent.as_str())
        .collect();
    assert_eq!(
        agents,
        ["waiter"],
        "the killed holder's own note never happened"
    );
    assert_consistent(&project, &session);
    assert!(temp_leftovers(&project.root).is_empty());
    let queue = project.session_dir(&session).join(".queue");
    let left: Vec<_> = std::fs::read_dir(&queue)
        .unwrap()
        .chain(std::fs::read_dir(queue.join("answers")).unwrap())
        .map(|entry| entry.unwrap().file_name())
        .filter(|name| name != "answers")
        .collect();
    assert!(left.is_empty(), "the queue is empty: {left:?}");
}

#[test]
fn requests_of_dead_writers_are_dropped() {
    let project = Project::new();
    let store = project.store();
    let session = store
        .create_or_continue_named("dead", at(0))
        .unwrap()
        .session;
    // A process that has exited: its pid names no live process (until reused).
    let mut gone = std::process::Command::new("true").spawn().unwrap();
    let pid = gone.id();
    gone.wait().unwrap();
    let queue = project.session_dir(&session).join(".queue");
    std::fs::create_dir_all(&queue).unwrap();
    let request = r#"{"now":"2025-08-14T09:00:00.000Z","ops":[{"reserve":{"agent":"ghost"}}]}"#;
    std::fs::write(
        queue.join(format!("00000000000000000001-{pid}-0.req")),
        request,
    )
    .unwrap();
    store
        .reserve(&session, vec![PlannedNote::new("alive")], at(1))
        .unwrap();
    let agents: Vec<String> = store
        .load(&session)
        .unwrap()
        .artifacts
        .into_iter()
        .map(|a| a.agent)
        .collect();
    assert_eq!(agents, ["alive"]);
    assert_eq!(std::fs::read_dir(&queue).unwrap().count(), 0);
}
