//! Seed 001's closing assertion, made through every front end: one parent session, two child
//! invocations (two sheep of two agents, one task each) ⇒ one `.shepherd/sessions/NNNN-*`
//! directory ⇒ two distinct note files ⇒ one `shepherd.md` whose Notes list links both, each
//! exactly once. From the CLI (scripted test sheep, through the broker), through `shepherd mcp`
//! (a real MCP client, test sheep) and through a real pi parent (pi sheep on the fake model,
//! the newest pi).

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::mcp_support;
use crate::pi_support;

use mcp_support::{HostOptions, Mcp, World, sheep};
use serde_json::json;
use shepherd_testkit::fake_llm::Step;
use shepherd_testkit::fieldnotes::assert_one_session;
use shepherd_testkit::pi::PiBinary;

#[test]
fn from_the_cli() {
    let world = World::new();
    world.define_test_sheep("scout", "done completed mapped the repo", None);
    world.define_test_sheep("worker", "done completed fixed the bug", None);
    let scout = world.spawn("scout", "map");
    let worker = world.spawn("worker", "fix");
    let tasks: Vec<String> = [(&scout, "map the repo"), (&worker, "fix the bug")]
        .into_iter()
        .map(|(agent, task)| {
            world.delegate(agent, task)["taskId"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    let watched = world.json(&["watch", &tasks[0], &tasks[1], "--wait", "30"]);
    let settled = watched["settled"].as_array().unwrap();
    assert_eq!(settled.len(), 2, "{watched}");
    let session = assert_one_session(&world.project, &["scout", "worker"]);
    for (report, note) in settled.iter().zip(&session.notes) {
        assert_eq!(report["status"], "completed", "{report}");
        let path = report["note"].as_str().unwrap();
        assert!(path.ends_with(&format!("/{note}")), "{path}");
    }
}

#[tokio::test]
async fn through_shepherd_mcp() {
    let world = World::new();
    sheep(&world, "scout", "done completed mapped the repo");
    sheep(&world, "worker", "done completed fixed the bug");
    let mcp = Mcp::start(&world, &[], HostOptions::default()).await;
    let mut tasks = Vec::new();
    for (agent, label, task) in [
        ("scout", "map", "map the repo"),
        ("worker", "fix", "fix the bug"),
    ] {
        let spawned = mcp
            .call("shepherd_spawn", json!({"agent": agent, "label": label}))
            .await;
        assert!(!spawned.is_error, "{}", spawned.text);
        let id = spawned.id("shepherd-agent-");
        let delegated = mcp
            .call("shepherd_delegate", json!({"target": id, "task": task}))
            .await;
        assert!(!delegated.is_error, "{}", delegated.text);
        tasks.push(delegated.id("shepherd-task-"));
    }
    let settled = mcp
        .call("shepherd_watch", json!({"id": tasks, "wait": 30}))
        .await;
    assert!(
        settled.text.starts_with("all 2 watched tasks settled\n"),
        "{}",
        settled.text
    );
    mcp.close().await;
    let session = assert_one_session(&world.project, &["scout", "worker"]);
    for note in &session.notes {
        assert!(
            settled.text.contains(&format!("/{note}")),
            "the watch names {note}: {}",
            settled.text
        );
    }
}

fn through_pi(pi: &PiBinary) {
    let options = pi_support::Options {
        agents: vec![("scout", "scout-model"), ("worker", "worker-model")],
        ..pi_support::Options::default()
    };
    let mut s = pi_support::Shepherd::start(pi, pi_support::Backend::Headless, &options);
    let mut tasks = Vec::new();
    for (agent, model, task) in [
        ("scout", "scout-model", "Map the repo."),
        ("worker", "worker-model", "Fix the bug."),
    ] {
        let id = s.spawn(agent, task);
        s.fake.append(
            model,
            [
                Step::tool_call(
                    "shepherd_done",
                    json!({"status": "completed", "summary": format!("{agent} done")}),
                )
                .held_until("done"),
                Step::text("Done."),
            ],
        );
        tasks.push(
            s.delegate(&id, task, None)["taskId"]
                .as_str()
                .unwrap()
                .to_owned(),
        );
    }
    let ids: Vec<&str> = tasks.iter().map(String::as_str).collect();
    s.watch(&ids);
    s.parent_says([Step::text("Both done."), Step::text("Noted.")]);
    s.fake.release("done");
    s.wait_parent_input("worker: Fix the bug. completed");
    let session = assert_one_session(&s.project(), &["scout", "worker"]);
    assert_eq!(session.notes, ["scout-01.md", "worker-01.md"]);
    // Both sheep were told where the shepherd's note is, and to read it first.
    let note = session.dir.join("shepherds-note.md");
    assert!(note.is_file());
    for model in ["scout-model", "worker-model"] {
        let told = s.requests(model).remove(0).last_input_text();
        assert!(
            told.contains(&format!("- The shepherd's note: {}\n", note.display())),
            "{told}"
        );
        assert!(
            told.contains("Read shepherd.md and the shepherd's note first."),
            "{told}"
        );
    }
}

shepherd_testkit::pi_1_tests!(through_pi);
