//! The herd's lifecycle through the real `shepherd` binary: spawn, delegate, watch, close, with
//! scripted test sheep and a shell-script sheep, their notes, and no processes left behind.

use crate::herd_support;
use shepherd_testkit::procs;

use std::time::Duration;

use herd_support::{World, read, wait_gone};

#[test]
fn spawn_delegate_watch_close_leaves_a_final_note_and_no_process() {
    let world = World::new();
    world.define_test_sheep(
        "worker",
        "print working on {task}; done completed listed 3 files",
        None,
    );
    let spawned = world.json(&["spawn", "worker", "--label", "code review"]);
    assert_eq!(spawned["displayName"], "worker: code review");
    assert_eq!(spawned["backend"], "headless");
    let agent = spawned["agentId"].as_str().unwrap();
    let delegated = world.delegate(agent, "list the files");
    let task = delegated["taskId"].as_str().unwrap();
    assert_eq!(delegated["state"], "running");
    assert_eq!(delegated["resumed"], false);

    let watched = world.json(&["watch", task, "--wait", "30"]);
    let settled = &watched["settled"][0];
    assert_eq!(settled["status"], "completed");
    assert_eq!(settled["returnCode"], 0);
    assert_eq!(settled["summary"], "listed 3 files");
    assert_eq!(watched["pending"].as_array().unwrap().len(), 0);

    let note = std::path::Path::new(settled["note"].as_str().unwrap());
    let text = read(note);
    assert!(text.contains("status: completed"), "{text}");
    assert!(text.contains("listed 3 files"), "{text}");
    // The sheep's label is recorded with its note, so two notes of one agent tell apart.
    assert!(text.contains("\nlabel: \"code review\"\n"), "{text}");
    let index = read(&note.with_file_name("shepherd.md"));
    assert!(
        index.contains("[Worker 01: code review](./worker-01.md) — completed"),
        "{index}"
    );
    let record: serde_json::Value =
        serde_json::from_str(&read(&note.with_file_name("session.json"))).unwrap();
    assert_eq!(record["artifacts"][0]["label"], "code review");

    let read_back = world.json(&["read", agent]);
    assert!(
        read_back["text"]
            .as_str()
            .unwrap()
            .contains("working on list the files"),
        "{read_back}"
    );

    let sheep_pids = procs::mentioning(agent);
    assert!(
        !sheep_pids.is_empty(),
        "the supervisor runs while the sheep is open"
    );
    let closed = world.json(&["close", agent]);
    assert_eq!(closed["displayName"], "worker: code review");
    for pid in sheep_pids {
        assert!(
            wait_gone(pid, Duration::from_millis(1)),
            "process {pid} outlived close"
        );
    }
    assert_eq!(world.json(&["status", agent])["state"], "closed");
}

#[test]
fn a_shell_script_sheep_takes_part_through_the_cli() {
    let world = World::new();
    let script = r#"while true; do
  item=$(shepherd inbox --wait 30 --json) || continue
  case "$item" in *'"kind":"task"'*) shepherd done --status completed --summary "script saw: $(printf %s "$item" | head -c 60 | wc -c) bytes" ;; esac
done"#;
    world.define("scripted", &["sh".into(), "-c".into(), script.into()]);
    let agent = world.spawn("scripted", "");
    let task = world.delegate(&agent, "hello from the parent")["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    let watched = world.json(&["watch", &task, "--wait", "30"]);
    assert_eq!(watched["settled"][0]["status"], "completed");
    assert_eq!(watched["settled"][0]["summary"], "script saw: 60 bytes");
}

#[test]
fn watch_exit_codes_follow_the_task_and_pending_gives_75() {
    let world = World::new();
    world.define_test_sheep("blocker", "done blocked need credentials", None);
    world.define_test_sheep("sleeper", "idle", None);
    let blocker = world.spawn("blocker", "");
    let sleeper = world.spawn("sleeper", "");
    let blocked = world.delegate(&blocker, "deploy")["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    let open = world.delegate(&sleeper, "wait forever")["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    let output = world.run(&["watch", &blocked, "--wait", "30"]);
    assert_eq!(
        output.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
    let output = world.run(&["watch", &open, "--wait", "0.2"]);
    assert_eq!(output.status.code(), Some(75));
    assert!(String::from_utf8_lossy(&output.stdout).contains("still open"));
}

#[test]
fn a_crashing_sheep_fails_its_task_with_status_and_tail() {
    let world = World::new();
    world.define_test_sheep("crasher", "print about to fail loudly; crash 3", None);
    let agent = world.spawn("crasher", "");
    let task = world.delegate(&agent, "go")["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    let (code, watched) = world.json_status(&["watch", &task, "--wait", "30"]);
    // A sheep that dies with an open task fails it with its own exit status.
    assert_eq!(code, 3);
    let settled = &watched["settled"][0];
    assert_eq!(settled["status"], "failed");
    assert_eq!(settled["returnCode"], 3);
    let error = settled["error"].as_str().unwrap();
    assert!(error.contains("exited with status 3"), "{error}");
    assert!(error.contains("about to fail loudly"), "{error}");
    assert_eq!(world.json(&["status", &agent])["state"], "exited");
    let late = world.error(&["delegate", &agent, "again"]);
    assert_eq!(late.1, "closed_handle");
}

#[test]
fn close_cancels_the_open_task_with_130_and_finalises_its_note() {
    let world = World::new();
    world.define_test_sheep("sleeper", "idle", None);
    let agent = world.spawn("sleeper", "");
    let delegated = world.delegate(&agent, "never finishes");
    let task = delegated["taskId"].as_str().unwrap();
    let closed = world.json(&["close", &agent]);
    assert_eq!(closed["cancelled"]["status"], "cancelled");
    let (code, watched) = world.json_status(&["watch", task, "--wait", "30"]);
    assert_eq!(code, 130);
    assert_eq!(watched["settled"][0]["returnCode"], 130);
    let note = read(std::path::Path::new(delegated["note"].as_str().unwrap()));
    assert!(note.contains("status: cancelled"), "{note}");
}

#[test]
fn a_sheep_that_never_starts_fails_spawn_with_its_output() {
    let world = World::new();
    world.define(
        "broken",
        &["sh".into(), "-c".into(), "echo cannot start; exit 4".into()],
    );
    let ok = world.spawn("broken", "");
    // The program runs (so spawn is ready), then exits: the sheep is reported exited.
    let status = world.json(&["status", &ok]);
    assert!(
        matches!(status["state"].as_str(), Some("idle" | "exited")),
        "{status}"
    );
    world.define("missing", &["/nonexistent/program".into()]);
    let (_, code, message) = world.error(&["spawn", "missing"]);
    assert_eq!(code, "agent_not_ready");
    assert!(
        message.contains("could not run `/nonexistent/program`"),
        "{message}"
    );
}

/// `herd --follow` prints the herd, then each change the broker pushes — including one the
/// parent did not cause (a sheep asking a question) — and ends cleanly on Ctrl-C.
#[test]
fn herd_follow_prints_every_pushed_change_until_interrupted() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    use std::sync::mpsc;

    let world = World::new();
    world.define_test_sheep("asker", "ask shepherd which file?; idle", None);
    let mut follower = world
        .command(&["herd", "--follow", "--json"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let (lines, seen) = mpsc::channel::<serde_json::Value>();
    let stdout = follower.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if lines.send(serde_json::from_str(&line).unwrap()).is_err() {
                return;
            }
        }
    });
    let wait_for = |what: &str, matches: &dyn Fn(&serde_json::Value) -> bool| {
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match seen.recv_timeout(left) {
                Ok(view) if matches(&view) => return view,
                Ok(_) => {}
                Err(err) => panic!("no herd line showed {what}: {err}"),
            }
        }
    };

    wait_for("the empty herd", &|v| v["sheep"] == serde_json::json!([]));
    let agent = world.spawn("asker", "curious");
    wait_for("the idle sheep", &|v| {
        v["sheep"][0]["agentId"] == agent.as_str() && v["sheep"][0]["state"] == "idle"
    });
    world.delegate(&agent, "pick a file");
    let waiting = wait_for("the task waiting on the parent", &|v| {
        v["sheep"][0]["task"]["state"] == "waiting"
    });
    assert_eq!(waiting["sheep"][0]["displayName"], "asker: curious");
    assert_eq!(
        waiting["sheep"][0]["task"]["waitingOn"], "shepherd",
        "{waiting}"
    );
    world.json(&["close", &agent]);
    wait_for("the herd without the closed sheep", &|v| {
        v["sheep"] == serde_json::json!([])
    });

    let pid = rustix::process::Pid::from_raw(i32::try_from(follower.id()).unwrap()).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
    assert!(follower.wait().unwrap().success());
}
