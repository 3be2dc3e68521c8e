//! A delegation's reservation may put its session's `shepherd.md` off for a moment; the
//! settlement never does. Through a real broker: the index catches up on its own while the task
//! runs, lists the note final the moment the task has settled, and a broker killed while it
//! owed the index has it written by the next broker.

use crate::herd_support;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use herd_support::{World, kill9, read};

/// The sheep waits for a message before it settles its task, so the test decides when.
fn world_with_waiting_sheep(lag_ms: &str) -> World {
    let mut world = World::new();
    world
        .extra_env
        .push(("SHEPHERD_INDEX_LAG_MS".into(), lag_ms.into()));
    world.define_test_sheep("waiter", "await; done completed finished", None);
    world
}

/// The session directory and file name of a delegation's note, and the task.
fn reserved_note(world: &World, agent: &str) -> (PathBuf, String, String) {
    let delegated = world.delegate(agent, "wait for the word");
    let note = PathBuf::from(delegated["note"].as_str().expect("the delegation's note"));
    let file = note.file_name().unwrap().to_string_lossy().into_owned();
    let task = delegated["taskId"].as_str().unwrap().to_owned();
    (note.parent().unwrap().to_owned(), file, task)
}

fn lists(session: &Path, file: &str, status: &str) -> bool {
    read(&session.join("shepherd.md")).contains(&format!("](./{file}) — {status}"))
}

/// Waits (up to `within`) until `shepherd.md` lists the note with `status`.
fn await_listed(session: &Path, file: &str, status: &str, within: Duration) {
    let deadline = Instant::now() + within;
    while !lists(session, file, status) {
        assert!(
            Instant::now() < deadline,
            "shepherd.md did not list {file} as {status} within {within:?}:\n{}",
            read(&session.join("shepherd.md"))
        );
        // Each read is the event waited for; nothing else here would tell us sooner.
        std::thread::yield_now();
    }
}

#[test]
fn a_reservations_index_catches_up_alone_and_a_settlement_lists_the_note_final_at_once() {
    let world = world_with_waiting_sheep("200");
    let agent = world.spawn("waiter", "");
    let (session, file, task) = reserved_note(&world, &agent);
    // No other commit comes: the broker catches the index up by itself.
    await_listed(&session, &file, "running", Duration::from_secs(10));
    world.json(&["message", &agent, "go"]);
    let watched = world.json(&["watch", &task, "--wait", "30"]);
    assert_eq!(watched["settled"][0]["status"], "completed", "{watched}");
    // The moment the task has settled, its final note is listed final.
    assert!(
        lists(&session, &file, "completed"),
        "{}",
        read(&session.join("shepherd.md"))
    );
}

#[test]
fn an_index_owed_by_a_killed_broker_is_written_by_the_next() {
    // A lag far longer than the test: only the next broker's catch-up can write the index.
    let world = world_with_waiting_sheep("600000");
    let agent = world.spawn("waiter", "");
    let (session, file, _task) = reserved_note(&world, &agent);
    assert!(
        !read(&session.join("shepherd.md")).contains(&file),
        "the reservation put the index off"
    );
    let pid = world.broker_pid().expect("a broker runs");
    kill9(pid);
    // Any command brings the next broker up; its recovery catches the session up.
    world.json(&["status"]);
    await_listed(&session, &file, "running", Duration::from_secs(10));
}
