//! Runs belong to the broker: a `shepherd run` killed outright leaves a run the broker cancels
//! within seconds (sheep closed, notes final); a broker killed mid-chain comes back and the
//! chain completes; a detached run goes on without its client and can be followed again.

use crate::herd_support;
use shepherd_testkit::procs;

use std::path::Path;

use herd_support::{Background, World, kill9, read, release};

/// The task id in a plain progress line `[1/2] agent: running (task ID)`.
fn task_in(line: &str) -> String {
    line.rsplit("(task ")
        .next()
        .unwrap()
        .trim_end_matches(')')
        .to_owned()
}

fn note_status(note: &str) -> String {
    read(Path::new(note))
        .lines()
        .find_map(|line| line.strip_prefix("status: "))
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn a_run_whose_client_is_killed_is_cancelled_by_the_broker_with_everything_closed() {
    let world = World::new();
    world.define_test_sheep("sleeper", "idle", None);
    let mut run = Background::start(&world, &["--parallel", "sleeper=one", "sleeper=two"]);
    let run_id = run.wait_for("run ").trim_start_matches("run ").to_owned();
    let one = task_in(&run.wait_for("[1/2] sleeper: running"));
    let two = task_in(&run.wait_for("[2/2] sleeper: running"));
    run.kill9();

    // The broker notices its client is gone and cancels the run: both tasks end cancelled.
    let (status, watched) = world.json_status(&["watch", &one, &two, "--wait", "30"]);
    assert_eq!(status, 130, "{watched}");
    for settled in watched["settled"].as_array().unwrap() {
        assert_eq!(settled["status"], "cancelled", "{settled}");
        assert_eq!(note_status(settled["note"].as_str().unwrap()), "cancelled");
        let agent = settled["agentId"].as_str().unwrap();
        assert_eq!(world.json(&["status", agent])["state"], "closed");
        assert!(procs::mentioning(agent).is_empty(), "{agent} left running");
    }
    let (code, report) = world.json_status(&["run", "--attach", &run_id]);
    assert_eq!(code, 130, "{report}");
    assert_eq!(report["interrupted"], true);
    assert_eq!(report["cancelled"], "its client went away");
}

#[test]
fn a_broker_killed_mid_chain_comes_back_and_the_chain_completes() {
    let world = World::new();
    let gate = world.fifo("gate");
    world.define(
        "first",
        &[
            "sh".into(),
            "-c".into(),
            format!(
                "shepherd inbox --wait 60 >/dev/null; read _ < {}; shepherd done --status completed --summary 'first result'; sleep 60",
                gate.display()
            ),
        ],
    );
    world.define_test_sheep("second", "done completed second saw {task}", None);
    let mut run = Background::start(
        &world,
        &["--chain", "first=start", "second=after: {previous}"],
    );
    run.wait_for("[1/2] first: running");
    kill9(world.broker_pid().unwrap());
    release(&gate);
    let (code, report) = run.finish();
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["results"][0]["status"], "completed");
    assert_eq!(report["results"][1]["status"], "completed");
    assert!(
        report["results"][1]["text"]
            .as_str()
            .unwrap()
            .contains("after: first result"),
        "{report}"
    );
    for result in report["results"].as_array().unwrap() {
        assert_eq!(note_status(result["note"].as_str().unwrap()), "completed");
    }
}

#[test]
fn a_detached_run_goes_on_without_its_client_and_can_be_followed_again() {
    let world = World::new();
    let gate = world.fifo("gate");
    world.define(
        "waiter",
        &[
            "sh".into(),
            "-c".into(),
            format!(
                "shepherd inbox --wait 60 >/dev/null; read _ < {}; shepherd done --status completed --summary 'waited'; sleep 60",
                gate.display()
            ),
        ],
    );
    world.define_test_sheep("sleeper", "idle", None);
    let detached = world.json(&["run", "waiter", "wait for the gate", "--detach"]);
    let run_id = detached["runId"].as_str().unwrap().to_owned();
    // A run that is not detached, orphaned after it: once the broker has cancelled that one,
    // the detached run has outlived the same grace.
    let mut other = Background::start(&world, &["sleeper", "orphan"]);
    let task = task_in(&other.wait_for("[1/1] sleeper: running"));
    other.kill9();
    let (_, watched) = world.json_status(&["watch", &task, "--wait", "30"]);
    assert_eq!(watched["settled"][0]["status"], "cancelled");

    release(&gate);
    let (code, report) = world.json_status(&["run", "--attach", &run_id]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["results"][0]["text"], "waited");
    assert_eq!(report["interrupted"], false);
}

#[test]
fn attaching_to_an_unknown_run_is_a_clear_error() {
    let world = World::new();
    world.json(&["broker", "ensure"]);
    let (_, code, message) = world.error(&["run", "--attach", "run-00000000"]);
    assert_eq!(code, "unknown_run");
    assert!(message.contains("run-00000000"), "{message}");
}
