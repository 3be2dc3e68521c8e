//! The controls over MCP, through rmcp's client: `shepherd_spawn {isolate}` in a real git
//! repository and the patch `shepherd_close` reports; `maxSheep`; and the budget, stall and
//! resume arguments refused, as tool errors the model can read, where they cannot apply.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::mcp_support;

use mcp_support::{HostOptions, Mcp, World, sheep};
use serde_json::json;
use shepherd_testkit::git::git;

#[tokio::test]
async fn an_isolated_sheep_over_mcp_reports_its_patch_on_close() {
    let world = World::new();
    git(&world.project, &["init", "-q", "-b", "main"]);
    std::fs::write(world.project.join("README.md"), "# p\n").unwrap();
    git(&world.project, &["add", "README.md"]);
    git(&world.project, &["commit", "-q", "-m", "start"]);
    let script = r#"while true; do
  item=$(shepherd inbox --wait 30 --json) || continue
  case "$item" in *'"kind":"task"'*) echo new > new.txt; shepherd done --status completed --summary wrote ;; esac
done"#;
    world.define("writer", &["sh".into(), "-c".into(), script.into()]);
    let mcp = Mcp::start(&world, &[], HostOptions::default()).await;

    let spawned = mcp
        .call(
            "shepherd_spawn",
            json!({"agent": "writer", "label": "iso", "isolate": true}),
        )
        .await;
    assert!(!spawned.is_error, "{}", spawned.text);
    assert!(
        spawned.text.contains("shepherd/writer-iso-"),
        "{}",
        spawned.text
    );
    let agent = spawned.id("shepherd-agent-");
    let delegated = mcp
        .call(
            "shepherd_delegate",
            json!({"target": agent, "task": "write new.txt"}),
        )
        .await;
    let task = delegated.id("shepherd-task-");
    let waited = mcp
        .call("shepherd_watch", json!({"id": [task], "wait": 20}))
        .await;
    assert!(waited.text.contains("completed"), "{}", waited.text);

    let closed = mcp.call("shepherd_close", json!({"id": agent})).await;
    assert!(!closed.is_error, "{}", closed.text);
    assert!(
        closed.text.contains("its work stays on branch shepherd/")
            && closed.text.contains("files: new.txt")
            && closed
                .text
                .contains("uncommitted changes preserved on refs/shepherd/preserved/")
            && closed.text.contains("shepherd merge"),
        "{}",
        closed.text
    );
    assert!(!world.project.join("new.txt").exists());
    mcp.close().await;
}

#[tokio::test]
async fn controls_that_cannot_apply_are_readable_tool_errors() {
    let world = World::new();
    world.settings(r#"{"backend": "headless", "maxSheep": 1}"#);
    sheep(&world, "echo", "idle");
    let mcp = Mcp::start(&world, &[], HostOptions::default()).await;
    let spawned = mcp
        .call("shepherd_spawn", json!({"agent": "echo", "label": "one"}))
        .await;
    let agent = spawned.id("shepherd-agent-");
    let cases = [
        (
            "shepherd_spawn",
            json!({"agent": "echo", "label": "two"}),
            "max_sheep",
        ),
        (
            "shepherd_delegate",
            json!({"target": agent, "task": "t", "maxTurns": 2}),
            "budget_unsupported",
        ),
        (
            "shepherd_delegate",
            json!({"target": agent, "task": "t", "maxTokens": 0}),
            "invalid_budget",
        ),
        (
            "shepherd_delegate",
            json!({"target": agent, "task": "t", "stall": -1}),
            "invalid_stall",
        ),
        (
            "shepherd_resume",
            json!({"id": agent}),
            "resume_unsupported",
        ),
    ];
    for (tool, args, code) in cases {
        let called = mcp.call(tool, args.clone()).await;
        assert!(called.is_error, "{tool} {args}: {}", called.text);
        assert!(
            called.text.contains(&format!("    code: {code}\n"))
                && called.text.contains("    hint: "),
            "{tool} {args}:\n{}",
            called.text
        );
    }
    mcp.close().await;
}
