//! A herd rides out its broker's death: its supervisors bring the broker back with nobody else
//! asking, under the environment the herd was created with and outside every sheep's process
//! tree; sheep-side commands wait across the restart and resend under the same request id; a
//! redelivered task never settles the next one; damaged state is refused or set aside loudly.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::herd_support;
use shepherd_testkit::procs;

use std::time::Duration;

use herd_support::{World, kill9, read, release};
use serde_json::Value;

/// A sheep that takes one task at a time the way the README shows, naming the task it settles
/// in its summary so the test can tell every settlement went to its own task.
const LOOP: &str = r#"while :; do t=$(shepherd inbox --wait 60 --json) || continue; id=$(printf '%s' "$t" | sed -n 's/.*"taskId":"\([^"]*\)".*/\1/p' | tail -n 1); [ -n "$id" ] || continue; shepherd done --status completed --summary "did $id"; done"#;

fn define_loop(world: &World, name: &str) {
    world.define(name, &["sh".into(), "-c".into(), LOOP.into()]);
}

fn task_of(doc: &Value) -> String {
    doc["taskId"].as_str().unwrap().to_owned()
}

/// Reads the parent's inbox until an item satisfies `wanted` (30 s at most).
fn await_item(world: &World, wanted: impl Fn(&Value) -> bool) -> Value {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        assert!(!left.is_zero(), "the expected inbox item never came");
        let (_, doc) =
            world.json_status(&["inbox", "--wait", &format!("{:.3}", left.as_secs_f64())]);
        if let Some(item) = doc["items"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|i| wanted(i))
        {
            return item.clone();
        }
    }
}

fn supervisor_pids(world: &World, agent: &str) -> (u32, u32) {
    let status = world.json(&["status", agent]);
    let sheep = status["pid"].as_u64().unwrap() as u32;
    let supervisor = shepherd_term::process::parent_of(sheep).unwrap();
    (supervisor, sheep)
}

#[test]
fn a_herd_with_no_parent_attached_brings_its_broker_back_and_loses_nothing() {
    let world = World::new();
    define_loop(&world, "echo");
    // This sheep takes exactly one task: if its `inbox --wait` failed when the broker died, it
    // would exit and never settle the task delegated after the restart.
    world.define(
        "once",
        &[
            "sh".into(),
            "-c".into(),
            r#"t=$(shepherd inbox --wait 60) || exit 9; shepherd done --status completed --summary "once: $t" >/dev/null; sleep 60"#.into(),
        ],
    );
    let echo = world.spawn("echo", "");
    let once = world.spawn("once", "");
    let before = [
        supervisor_pids(&world, &echo),
        supervisor_pids(&world, &once),
    ];
    let old = world.broker_pid().unwrap();
    kill9(old);

    // Nothing but the herd's own supervisors can bring it back now.
    let new = world.await_new_broker(old, Duration::from_secs(10));
    let ancestry = shepherd_term::process::ancestry(new, 64);
    for (supervisor, sheep) in before {
        assert!(
            !ancestry.contains(&supervisor) && !ancestry.contains(&sheep),
            "the restarted broker {new} runs inside a sheep's tree: {ancestry:?}"
        );
    }

    let first = task_of(&world.delegate(&echo, "after the crash"));
    let second = task_of(&world.delegate(&once, "only once"));
    let watched = world.json(&["watch", &first, &second, "--wait", "30"]);
    assert_eq!(watched["settled"][0]["summary"], format!("did {first}"));
    assert!(
        watched["settled"][1]["summary"]
            .as_str()
            .unwrap()
            .contains("only once"),
        "{watched}"
    );
    // The same sheep, re-adopted.
    assert_eq!(
        [
            supervisor_pids(&world, &echo),
            supervisor_pids(&world, &once)
        ],
        before
    );
}

#[test]
fn killing_a_sheeps_whole_process_group_leaves_the_broker_it_restarted_alone() {
    let world = World::new();
    define_loop(&world, "echo");
    let echo = world.spawn("echo", "");
    let (_, sheep) = supervisor_pids(&world, &echo);
    let old = world.broker_pid().unwrap();
    kill9(old);
    let new = world.await_new_broker(old, Duration::from_secs(10));
    let status = std::process::Command::new("kill")
        .args(["-9", "--", &format!("-{sheep}")])
        .status()
        .unwrap();
    assert!(status.success());
    assert!(herd_support::wait_gone(sheep, Duration::from_secs(10)));
    assert!(
        procs::running(new),
        "the broker died with the sheep's group"
    );
    assert_eq!(world.running_broker(), Some(new));
}

#[test]
fn a_redelivered_task_never_settles_the_next_one_with_the_wrong_summary() {
    let world = World::new();
    let gate = world.fifo("gate");
    let again = world.dir.path().join("again.json");
    // The sheep settles task A, then — as if `inbox` had handed A over again after a lost
    // acknowledgement — settles "it" again with a stale summary, after the parent gave it B.
    let script = format!(
        r#"shepherd inbox --wait 30 >/dev/null; shepherd done --status completed --summary "A done";
           read _ < {gate}; shepherd done --status completed --summary "stale A again" --json > {again};
           t=$(shepherd inbox --wait 30); shepherd done --status completed --summary "B done"; sleep 60"#,
        gate = gate.display(),
        again = again.display()
    );
    world.define("worker", &["sh".into(), "-c".into(), script]);
    let agent = world.spawn("worker", "");
    let a = task_of(&world.delegate(&agent, "task A"));
    world.json(&["watch", &a, "--wait", "30"]);
    let b = task_of(&world.delegate(&agent, "task B"));
    release(&gate);
    let watched = world.json(&["watch", &b, "--wait", "30"]);
    assert_eq!(watched["settled"][0]["summary"], "B done", "{watched}");
    let again: Value = serde_json::from_str(&read(&again)).unwrap();
    assert_eq!(
        again["taskId"],
        a.as_str(),
        "the stale done named A: {again}"
    );
    assert_eq!(again["duplicate"], true, "{again}");
    assert_eq!(
        world.json(&["watch", &a])["settled"][0]["summary"],
        "A done",
        "A's first result stands"
    );
}

#[test]
fn a_restarted_broker_launches_with_the_environment_the_herd_was_created_with() {
    let mut world = World::new();
    world
        .extra_env
        .push(("SHEPHERD_TEST_MARK".into(), "first".into()));
    world.define(
        "marker",
        &[
            "sh".into(),
            "-c".into(),
            r#"shepherd tell shepherd "mark=$SHEPHERD_TEST_MARK"; sleep 60"#.into(),
        ],
    );
    let one = world.spawn("marker", "one");
    await_item(&world, |i| i["content"] == "mark=first");
    world.json(&["close", &one]);
    // No sheep is left to bring the broker back: the next command with another environment
    // starts it, and the herd's recorded environment still wins.
    kill9(world.broker_pid().unwrap());
    world.extra_env.retain(|(k, _)| k != "SHEPHERD_TEST_MARK");
    world
        .extra_env
        .push(("SHEPHERD_TEST_MARK".into(), "second".into()));
    world.spawn("marker", "two");
    let item = await_item(&world, |i| {
        i["content"]
            .as_str()
            .is_some_and(|c| c.starts_with("mark="))
    });
    assert_eq!(item["content"], "mark=first");
}

#[test]
fn a_corrupt_line_inside_the_journal_refuses_to_start_and_keeps_the_journal() {
    let world = World::new();
    world.define_test_sheep("quick", "done completed ok", None);
    let agent = world.spawn("quick", "");
    let task = task_of(&world.delegate(&agent, "work"));
    world.json(&["watch", &task, "--wait", "30"]);
    world.json(&["close", &agent]);
    kill9(world.broker_pid().unwrap());
    let journal = std::fs::read_dir(world.state_dir().join("brokers"))
        .unwrap()
        .flatten()
        .map(|e| e.path().join("journal.jsonl"))
        .find(|p| p.exists())
        .unwrap();
    let text = read(&journal);
    let mut lines: Vec<&str> = text.lines().collect();
    assert!(lines.len() > 3, "{text}");
    lines.insert(2, "{damaged");
    let damaged = format!("{}\n", lines.join("\n"));
    std::fs::write(&journal, &damaged).unwrap();

    let (code, error, message) = world.error(&["status", &agent]);
    assert_eq!(code, 69, "{message}");
    assert_eq!(error, "broker_unavailable");
    assert!(message.contains("line 3 is unreadable"), "{message}");
    assert_eq!(read(&journal), damaged, "the journal is kept as it is");
}

#[test]
fn a_damaged_snapshot_is_set_aside_and_the_parent_told() {
    let world = World::new();
    world.define_test_sheep("quick", "done completed ok", None);
    let agent = world.spawn("quick", "");
    let task = task_of(&world.delegate(&agent, "work"));
    world.json(&["watch", &task, "--wait", "30"]);
    world.json(&["close", &agent]);
    kill9(world.broker_pid().unwrap());
    let snapshot = std::fs::read_dir(world.state_dir().join("brokers"))
        .unwrap()
        .flatten()
        .map(|e| e.path().join("snapshot.json"))
        .find(|p| p.exists())
        .unwrap();
    std::fs::write(&snapshot, b"{ damaged").unwrap();
    let watched = world.json(&["watch", &task, "--wait", "10"]);
    assert_eq!(
        watched["settled"][0]["status"], "completed",
        "rebuilt: {watched}"
    );
    let notice = await_item(&world, |i| i["notice"] == "broker_recovered");
    assert!(
        notice["text"].as_str().unwrap().contains("set aside"),
        "{notice}"
    );
}
