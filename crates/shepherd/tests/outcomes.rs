//! Outcomes that say exactly what happened: fieldnotes on or off for a herd's whole life, a
//! closed sheep that reads as closed (and closes twice as a no-op), a failed spawn that leaves
//! nothing listed, and a status that says the task ended the moment the parent was told.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::herd_support;

use herd_support::World;
use serde_json::Value;

fn sessions(world: &World) -> usize {
    std::fs::read_dir(world.project.join(".shepherd/sessions"))
        .map(|dir| {
            dir.flatten()
                .filter(|e| {
                    e.file_name()
                        .to_string_lossy()
                        .starts_with(char::is_numeric)
                })
                .count()
        })
        .unwrap_or(0)
}

#[test]
fn with_fieldnotes_off_runs_and_delegations_write_no_notes() {
    let world = World::new();
    world.settings(r#"{"fieldnotes": false}"#);
    world.define_test_sheep("quick", "done completed ok", None);
    let (code, report) = world.json_status(&["run", "quick", "a task"]);
    assert_eq!(code, 0, "{report}");
    assert!(report["results"][0]["note"].is_null(), "{report}");
    assert!(report["sessionName"].is_null(), "{report}");
    let agent = world.spawn("quick", "");
    let delegated = world.delegate(&agent, "another");
    assert!(delegated["note"].is_null(), "{delegated}");
    assert_eq!(sessions(&world), 0, "no fieldnotes were written");
    // A run that names a session asks for notes, and gets them.
    let (code, named) = world.json_status(&["run", "quick", "noted", "--session-name", "kept"]);
    assert_eq!(code, 0, "{named}");
    assert!(named["results"][0]["note"].is_string(), "{named}");
}

#[test]
fn the_fieldnotes_setting_is_fixed_for_the_herds_life() {
    let world = World::new();
    world.settings(r#"{"fieldnotes": false}"#);
    world.define_test_sheep("quick", "done completed ok", None);
    let agent = world.spawn("quick", "");
    world.settings(r#"{"fieldnotes": true}"#);
    let delegated = world.delegate(&agent, "while the herd lives");
    assert!(delegated["note"].is_null(), "{delegated}");
    assert_eq!(sessions(&world), 0);
}

#[test]
fn a_sheep_closed_on_purpose_reads_as_closed_and_closing_twice_is_a_no_op() {
    for backend in ["headless", "tmux"] {
        let world = World::new().with_private_tmux();
        world.define_test_sheep("sleeper", "idle", None);
        let agent = world.json(&["spawn", "sleeper", "--backend", backend])["agentId"]
            .as_str()
            .unwrap()
            .to_owned();
        let first = world.json(&["close", &agent]);
        assert_eq!(first["agentId"], agent.as_str(), "{backend}: {first}");
        let status = world.json(&["status", &agent]);
        assert_eq!(status["state"], "closed", "{backend}: {status}");
        assert!(
            status["error"].is_null(),
            "{backend}: closing is no failure: {status}"
        );
        let second = world.json(&["close", &agent]);
        assert_eq!(second["agentId"], agent.as_str(), "{backend}: {second}");
        assert!(second["cancelled"].is_null(), "{backend}: {second}");
    }
}

#[test]
fn a_spawn_that_fails_leaves_nothing_listed() {
    let world = World::new();
    world.define("missing", &["/nonexistent/program".into()]);
    let (_, code, _) = world.error(&["spawn", "missing"]);
    assert_eq!(code, "agent_not_ready");
    let herd: Value = world.json(&["herd"]);
    assert_eq!(herd["sheep"], serde_json::json!([]), "{herd}");
}

#[test]
fn status_says_the_task_ended_while_the_sheep_still_writes_its_last_words() {
    let world = World::new();
    let gate = world.fifo("gate");
    let script = format!(
        "shepherd inbox --wait 30 >/dev/null; shepherd done --status completed --summary ok; \
         shepherd report agent_start; shepherd tell shepherd writing; read _ < {}; sleep 60",
        gate.display()
    );
    world.define("writer", &["sh".into(), "-c".into(), script]);
    let agent = world.spawn("writer", "");
    let task = world.delegate(&agent, "write")["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    world.json(&["watch", &task, "--wait", "30"]);
    // The sheep reported a new run after its done (it is writing its last words); the parent
    // was told the task completed, and status says the same.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        assert!(!left.is_zero(), "the sheep never said it was writing");
        let (_, doc) =
            world.json_status(&["inbox", "--wait", &format!("{:.3}", left.as_secs_f64())]);
        if doc["items"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|i| i["content"] == "writing")
        {
            break;
        }
    }
    let status = world.json(&["status", &agent]);
    assert_eq!(status["state"], "done", "{status}");
    herd_support::release(&gate);
}
