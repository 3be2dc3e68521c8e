//! Every wait has a deadline: with the broker stopped (`kill -STOP`, so its socket still
//! accepts connections but nothing answers), every command — a parent's, a sheep's, a run —
//! gives up with a clear error and exit status 69 instead of hanging.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::herd_support;

use std::process::Output;
use std::time::{Duration, Instant};

use herd_support::World;
use rustix::process::{Pid, Signal, kill_process};
use serde_json::Value;

/// How long the broker may stay silent before a command gives up, for this test.
const TIMEOUT_SECS: &str = "1";

/// Runs a command to its end, failing the test if it is still running after `bound` (a hang).
fn finish(mut command: std::process::Command, bound: Duration) -> Output {
    let mut child = command
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    if !shepherd_term::process::wait_gone(pid, Instant::now() + bound) {
        let _killed = child.kill();
        panic!("{command:?} was still waiting after {bound:?}");
    }
    child.wait_with_output().unwrap()
}

fn assert_gives_up(output: &Output, what: &str) {
    assert_eq!(
        output.status.code(),
        Some(69),
        "{what}: {}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let doc: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|_| panic!("{what}: {}", String::from_utf8_lossy(&output.stdout)));
    let code = doc["error"]["code"].as_str().unwrap_or_default();
    assert!(
        code == "broker_unresponsive" || code == "broker_unavailable",
        "{what}: {doc}"
    );
    let message = doc["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("did not answer"), "{what}: {message}");
}

struct Stopped(u32);

impl Drop for Stopped {
    fn drop(&mut self) {
        if let Some(pid) = Pid::from_raw(self.0 as i32) {
            let _resumed = kill_process(pid, Signal::CONT);
        }
    }
}

#[test]
fn every_command_gives_up_on_a_stopped_broker_with_exit_69() {
    let world = World::new();
    let cap = world.dir.path().join("cap");
    world.define(
        "capable",
        &[
            "sh".into(),
            "-c".into(),
            format!(
                "printf '%s %s %s' \"$SHEPHERD_SOCKET\" \"$SHEPHERD_AGENT_ID\" \"$SHEPHERD_TOKEN\" > {}.part; mv {0}.part {0}; sleep 120",
                cap.display()
            ),
        ],
    );
    let agent = world.spawn("capable", "");
    let task = world.delegate(&agent, "hold this")["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    // The sheep wrote its capability before it was ready (spawn waits for it to run).
    let deadline = Instant::now() + Duration::from_secs(10);
    while !cap.exists() {
        assert!(
            Instant::now() < deadline,
            "the sheep never wrote its capability"
        );
        std::thread::yield_now();
    }
    let capability = std::fs::read_to_string(&cap).unwrap();
    let mut parts = capability.split(' ');
    let (socket, id, token) = (
        parts.next().unwrap().to_owned(),
        parts.next().unwrap().to_owned(),
        parts.next().unwrap().to_owned(),
    );
    let broker = world.broker_pid().unwrap();
    let _stopped = Stopped(broker);
    kill_process(Pid::from_raw(broker as i32).unwrap(), Signal::STOP).unwrap();

    // Each command's own wait is short; anything past a few seconds more is a hang.
    let bound = Duration::from_secs(20);
    let parent_commands: Vec<Vec<&str>> = vec![
        vec!["status"],
        vec!["status", &agent],
        vec!["spawn", "capable"],
        vec!["delegate", &agent, "another"],
        vec!["message", &agent, "hello"],
        vec!["watch", &task, "--wait", "1"],
        vec!["read", &agent],
        vec!["herd"],
        vec!["herd", "--follow"],
        vec!["prune"],
        vec!["close", &agent],
        vec!["inbox", "--wait", "1"],
        vec!["run", "capable", "a task"],
        vec!["broker", "status"],
        vec!["broker", "stop"],
        vec!["broker", "ensure"],
    ];
    for args in &parent_commands {
        let mut all = args.clone();
        all.push("--json");
        let mut command = world.command(&all);
        command.env("SHEPHERD_BROKER_TIMEOUT", TIMEOUT_SECS);
        assert_gives_up(&finish(command, bound), &args.join(" "));
    }
    let sheep_commands: Vec<Vec<&str>> = vec![
        vec!["inbox", "--wait", "1"],
        vec!["tell", "shepherd", "hello"],
        vec!["done", "--status", "completed"],
        vec!["report", "agent_start"],
    ];
    for args in &sheep_commands {
        let mut all = args.clone();
        all.push("--json");
        let mut command = world.command(&all);
        command
            .env("SHEPHERD_BROKER_TIMEOUT", TIMEOUT_SECS)
            .env("SHEPHERD_SOCKET", &socket)
            .env("SHEPHERD_AGENT_ID", &id)
            .env("SHEPHERD_TOKEN", &token);
        assert_gives_up(
            &finish(command, bound),
            &format!("sheep {}", args.join(" ")),
        );
    }
}
