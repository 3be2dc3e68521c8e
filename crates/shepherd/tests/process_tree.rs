//! No process outlives its herd: closing a sheep ends what it started (a daemon that left its
//! session, a herd of its own with its broker and sheep); a supervisor that dies takes its
//! sheep down; a broker whose project and socket are gone closes its herd, and one whose
//! socket alone is deleted binds it again; a sheep that dies
//! fails its task with its own exit status, on every backend.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::herd_support;
use shepherd_testkit::procs;

use std::time::Duration;

use herd_support::{World, kill9, wait_gone};
use serde_json::Value;

/// Reads the parent's inbox until a sheep says `text` (30 s at most).
fn wait_for_word(world: &World, text: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        assert!(!left.is_zero(), "no sheep said `{text}`");
        let (_, doc) =
            world.json_status(&["inbox", "--wait", &format!("{:.3}", left.as_secs_f64())]);
        if doc["items"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|i| i["content"] == text)
        {
            return;
        }
    }
}

fn pid_of(world: &World, agent: &str) -> u32 {
    world.json(&["status", agent])["pid"].as_u64().unwrap() as u32
}

#[test]
fn closing_a_sheep_ends_the_daemon_it_left_behind() {
    let world = World::new();
    world.define(
        "daemonizer",
        &[
            "sh".into(),
            "-c".into(),
            "setsid -f sleep 4242; shepherd tell shepherd started; sleep 60".into(),
        ],
    );
    let agent = world.spawn("daemonizer", "");
    wait_for_word(&world, "started");
    let sheep = pid_of(&world, &agent);
    let daemons: Vec<u32> = procs::mentioning("sleep 4242")
        .into_iter()
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c == b"sleep\x004242\x00")
        })
        .collect();
    assert_eq!(daemons.len(), 1, "{daemons:?}");
    let daemon = daemons[0];
    let sid = |pid: u32| {
        rustix::process::getsid(rustix::process::Pid::from_raw(pid as i32))
            .map(|p| p.as_raw_nonzero().get())
    };
    assert_ne!(
        sid(daemon).ok(),
        sid(sheep).ok(),
        "the daemon left the sheep's session"
    );
    world.json(&["close", &agent]);
    assert!(
        wait_gone(daemon, Duration::from_secs(10)),
        "the sheep's daemon outlived its close"
    );
}

#[test]
fn closing_a_sheep_closes_the_herd_it_started() {
    let world = World::new();
    world.define_test_sheep("inner", "idle", None);
    let out = world.dir.path().join("inner.json");
    world.define(
        "outer",
        &[
            "sh".into(),
            "-c".into(),
            format!(
                "shepherd spawn inner --json > {0}.part && mv {0}.part {0}; shepherd tell shepherd started; sleep 60",
                out.display()
            ),
        ],
    );
    let outer = world.spawn("outer", "");
    wait_for_word(&world, "started");
    let spawned: Value = serde_json::from_str(&herd_support::read(&out)).unwrap();
    let inner = spawned["agentId"].as_str().unwrap().to_owned();
    let inner_pid = world.json(&["status", &inner, "--parent-session", &outer])["pid"]
        .as_u64()
        .unwrap() as u32;
    // The nested herd's broker serves the outer sheep as its parent.
    let nested: Vec<u32> = procs::mentioning(&format!("--parent-session {outer}"));
    assert!(!nested.is_empty(), "no nested broker found");

    world.json(&["close", &outer]);
    assert!(
        wait_gone(inner_pid, Duration::from_secs(15)),
        "the nested herd's sheep outlived the sheep that started it"
    );
    for pid in nested {
        assert!(
            wait_gone(pid, Duration::from_secs(15)),
            "the nested broker {pid} outlived the sheep that started it"
        );
    }
    assert!(procs::mentioning(&inner).is_empty(), "{inner}");
}

#[test]
fn a_supervisor_killed_outright_takes_its_sheep_down() {
    let world = World::new();
    world.define_test_sheep("sleeper", "idle", None);
    let agent = world.spawn("sleeper", "");
    let task = world.delegate(&agent, "never ends")["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    let sheep = pid_of(&world, &agent);
    let supervisor = shepherd_term::process::parent_of(sheep).unwrap();
    kill9(supervisor);
    assert!(
        wait_gone(sheep, Duration::from_secs(10)),
        "the sheep outlived its supervisor"
    );
    let (_, watched) = world.json_status(&["watch", &task, "--wait", "30"]);
    assert_eq!(watched["settled"][0]["status"], "failed", "{watched}");
    assert_eq!(world.json(&["status", &agent])["state"], "exited");
}

#[test]
fn a_broker_whose_project_and_socket_are_gone_closes_its_herd() {
    let world = World::new();
    world.define_test_sheep("sleeper", "idle", None);
    let agent = world.spawn("sleeper", "");
    let sheep = pid_of(&world, &agent);
    let broker = world.broker_pid().unwrap();
    let socket = world.json(&["broker", "ensure"])["socket"]
        .as_str()
        .unwrap()
        .to_owned();
    std::fs::remove_dir_all(&world.project).unwrap();
    std::fs::remove_file(&socket).unwrap();
    assert!(
        wait_gone(broker, Duration::from_secs(20)),
        "the broker kept running with its project and socket gone"
    );
    assert!(
        wait_gone(sheep, Duration::from_secs(10)),
        "its sheep was left"
    );
    assert!(!procs::running(sheep));
}

#[test]
fn a_socket_deleted_under_a_live_project_is_bound_again_by_the_same_broker() {
    let world = World::new();
    world.define_test_sheep("sleeper", "idle", None);
    let agent = world.spawn("sleeper", "");
    let broker = world.broker_pid().unwrap();
    let socket = world.json(&["broker", "ensure"])["socket"]
        .as_str()
        .unwrap()
        .to_owned();
    std::fs::remove_file(&socket).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !std::path::Path::new(&socket).exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the socket was not bound again"
        );
        std::thread::yield_now();
    }
    assert_eq!(world.json(&["status", &agent])["state"], "idle");
    assert_eq!(world.broker_pid(), Some(broker), "a new broker was started");
}

#[test]
fn a_sheep_that_dies_fails_its_task_with_its_exit_status_or_128_plus_its_signal() {
    let world = World::new();
    for (name, script, expected) in [
        ("three", "shepherd inbox --wait 30 >/dev/null; exit 3", 3),
        ("zero", "shepherd inbox --wait 30 >/dev/null; exit 0", 1),
        (
            "killed",
            "shepherd inbox --wait 30 >/dev/null; kill -TERM $$",
            143,
        ),
    ] {
        world.define(name, &["sh".into(), "-c".into(), script.into()]);
        let agent = world.spawn(name, "");
        let task = world.delegate(&agent, "go")["taskId"]
            .as_str()
            .unwrap()
            .to_owned();
        let (code, watched) = world.json_status(&["watch", &task, "--wait", "30"]);
        assert_eq!(
            watched["settled"][0]["returnCode"], expected,
            "{name}: {watched}"
        );
        assert_eq!(code, expected, "{name}");
    }
}

#[test]
fn in_tmux_a_sheep_that_dies_fails_its_task_with_its_exit_status() {
    let world = World::new().with_private_tmux();
    for (name, script, expected) in [
        ("three", "shepherd inbox --wait 30 >/dev/null; exit 3", 3),
        (
            "killed",
            "shepherd inbox --wait 30 >/dev/null; kill -TERM $$",
            143,
        ),
    ] {
        world.define(name, &["sh".into(), "-c".into(), script.into()]);
        let agent = world.json(&["spawn", name, "--backend", "tmux"])["agentId"]
            .as_str()
            .unwrap()
            .to_owned();
        let task = world.delegate(&agent, "go")["taskId"]
            .as_str()
            .unwrap()
            .to_owned();
        let (_, watched) = world.json_status(&["watch", &task, "--wait", "30"]);
        assert_eq!(
            watched["settled"][0]["returnCode"], expected,
            "{name}: {watched}"
        );
    }
}
