//! Crash safety: a broker killed with SIGKILL loses nothing it acknowledged. The next broker
//! for the same parent replays its journal and re-adopts the sheep that kept running; sheep
//! that died meanwhile are reported failed; sheep nobody comes back for are ended after the
//! grace, so nothing is orphaned; an idle broker exits on its own.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::herd_support;
use shepherd_testkit::procs;

use std::time::Duration;

use herd_support::{World, wait_gone};
use serde_json::Value;

fn kill9(pid: u32) {
    let status = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    assert!(
        wait_gone(pid, Duration::from_secs(10)),
        "process {pid} survived SIGKILL"
    );
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

#[test]
fn a_killed_broker_is_replaced_and_its_sheep_readopted_with_nothing_lost() {
    let world = World::new();
    world.define_test_sheep(
        "worker",
        "ask shepherd proceed?; done completed resumed after {reply}",
        None,
    );
    world.define_test_sheep("quick", "done completed quick one", None);
    let worker = world.spawn("worker", "");
    let quick = world.spawn("quick", "");
    let quick_task = world.delegate(&quick, "be quick")["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    world.json(&["watch", &quick_task, "--wait", "30"]);
    let task = world.delegate(&worker, "long job")["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    let question = await_item(&world, |i| i["expectsReply"] == true);
    let sheep_pid = world.json(&["status", &worker])["pid"].as_u64().unwrap() as u32;

    kill9(world.broker_pid().unwrap());

    // The next command starts a new broker, which replays the journal.
    let status = world.json(&["status", &worker]);
    assert_eq!(status["task"]["state"], "waiting", "{status}");
    assert_eq!(
        status["pid"].as_u64(),
        Some(u64::from(sheep_pid)),
        "the same sheep, re-adopted"
    );
    let settled_before = world.json(&["watch", &quick_task]);
    assert_eq!(
        settled_before["settled"][0]["summary"], "quick one",
        "a completion acknowledged before the crash survives"
    );

    let qid = question["messageId"].as_str().unwrap();
    world.json(&["message", &worker, "yes", "--reply-to", qid]);
    let watched = world.json(&["watch", &task, "--wait", "30"]);
    assert_eq!(watched["settled"][0]["summary"], "resumed after yes");
    assert!(
        procs::running(sheep_pid),
        "the re-adopted sheep kept running"
    );
}

#[test]
fn sheep_that_died_while_the_broker_was_down_are_reported_failed() {
    let world = World::new();
    world.define_test_sheep("sleeper", "idle", None);
    let agent = world.spawn("sleeper", "");
    let task = world.delegate(&agent, "wait")["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    let sheep_pid = world.json(&["status", &agent])["pid"].as_u64().unwrap() as u32;
    let supervisors = procs::mentioning(&agent);
    kill9(world.broker_pid().unwrap());
    kill9(sheep_pid);
    for pid in supervisors {
        let _killed = std::process::Command::new("kill")
            .args(["-9", &pid.to_string()])
            .status();
        wait_gone(pid, Duration::from_secs(10));
    }
    let (code, watched) = world.json_status(&["watch", &task, "--wait", "30"]);
    assert_eq!(code, 1, "{watched}");
    assert_eq!(watched["settled"][0]["status"], "failed");
    let state = world.json(&["status", &agent])["state"].clone();
    assert_eq!(state, "exited");
}

#[test]
fn without_a_new_broker_the_sheep_is_ended_after_the_grace() {
    let mut world = World::new();
    world
        .extra_env
        .push(("SHEPHERD_ORPHAN_GRACE_MS".into(), "300".into()));
    world.define_test_sheep("sleeper", "idle", None);
    let agent = world.spawn("sleeper", "");
    world.delegate(&agent, "wait");
    let sheep_pid = world.json(&["status", &agent])["pid"].as_u64().unwrap() as u32;
    let supervisors = procs::mentioning(&agent);
    assert!(!supervisors.is_empty());
    kill9(world.broker_pid().unwrap());
    assert!(
        wait_gone(sheep_pid, Duration::from_secs(15)),
        "the orphaned sheep was not ended"
    );
    for pid in supervisors {
        assert!(
            wait_gone(pid, Duration::from_secs(15)),
            "the supervisor {pid} outlived its grace"
        );
    }
}

#[test]
fn a_broker_with_no_sheep_and_no_clients_exits_when_idle() {
    let world = World::new();
    world.settings(r#"{"brokerIdleMinutes": 0.005}"#);
    // Reading a herd that was never started starts no broker.
    assert_eq!(world.json(&["herd"])["sheep"], serde_json::json!([]));
    let (code, status) = world.json_status(&["broker", "status"]);
    assert_eq!(
        (code, &status["running"]),
        (3, &serde_json::json!(false)),
        "{status}"
    );
    world.json(&["broker", "ensure"]);
    let pid = world
        .broker_pid()
        .expect("the broker started by `broker ensure` still runs");
    assert!(
        wait_gone(pid, Duration::from_secs(15)),
        "the idle broker kept running"
    );
}

#[test]
fn broker_stop_closes_every_sheep_and_leaves_no_process() {
    let world = World::new();
    world.define_test_sheep("sleeper", "idle", None);
    let agents: Vec<String> = (0..3)
        .map(|i| world.spawn("sleeper", &format!("s{i}")))
        .collect();
    let pids: Vec<u32> = agents
        .iter()
        .flat_map(|a| {
            let mut pids = procs::mentioning(a);
            pids.extend(world.json(&["status", a])["pid"].as_u64().map(|p| p as u32));
            pids
        })
        .collect();
    let broker = world.broker_pid().unwrap();
    let stopped = world.json(&["broker", "stop"]);
    assert_eq!(stopped["closed"], 3);
    for pid in pids.into_iter().chain([broker]) {
        assert!(
            wait_gone(pid, Duration::from_millis(1)),
            "process {pid} outlived broker stop"
        );
    }
}
