//! `shepherd_run` through `shepherd mcp`: a run goes on in the broker between calls and across
//! a server restart (hosts restart their MCP servers), is followed by its run id, answers in the
//! original `subagent` words (the last text, `Parallel: X/Y succeeded`, a chain's
//! `{previous}`), is an error when a task did not complete, and ends early only when cancelled.

use crate::mcp_support;

use mcp_support::{HostOptions, Mcp, World, sheep, word};
use serde_json::json;

#[tokio::test]
async fn a_run_outlives_its_server_and_is_followed_by_its_run_id() {
    let world = World::new();
    // The run's sheep waits for a message: the first call cannot see it finish.
    sheep(
        &world,
        "waiter",
        "await; done completed finished after {reply}",
    );
    let args = ["--herd", "runs"];
    let mcp = Mcp::start(&world, &args, HostOptions::default()).await;
    let started = mcp
        .call(
            "shepherd_run",
            json!({"agent": "waiter", "task": "wait", "sessionName": "runs", "wait": 0.3}),
        )
        .await;
    assert!(!started.is_error, "{}", started.text);
    let run_id = started.id("run-");
    let follow = format!("still running — call shepherd_run {{\"runId\":\"{run_id}\"}} again");
    assert!(started.text.starts_with(&follow), "{}", started.text);
    assert!(
        started.text.contains(&format!(
            "shepherd_run {{\"runId\":\"{run_id}\",\"cancel\":true}} to cancel it"
        )),
        "{}",
        started.text
    );
    // The host restarts the server; the run goes on in the broker.
    mcp.close().await;
    let mcp = Mcp::start(&world, &args, HostOptions::default()).await;
    let still = mcp
        .call("shepherd_run", json!({"runId": run_id, "wait": 0.3}))
        .await;
    let agent = word(&still.text, "shepherd-agent-").unwrap_or_else(|| panic!("{}", still.text));
    assert!(
        still
            .text
            .contains("- 1. waiter: running (task shepherd-task-"),
        "{}",
        still.text
    );
    let told = mcp
        .call(
            "shepherd_message",
            json!({"target": agent, "message": "the restart"}),
        )
        .await;
    assert!(!told.is_error, "{}", told.text);
    let done = mcp.call("shepherd_run", json!({"runId": run_id})).await;
    assert!(!done.is_error, "{}", done.text);
    assert!(
        done.text.starts_with("finished after the restart"),
        "{}",
        done.text
    );
    assert!(
        done.text
            .ends_with("Session: runs (.shepherd/sessions/0001-runs)"),
        "{}",
        done.text
    );
    mcp.close().await;
}

#[tokio::test]
async fn parallel_and_chain_runs_answer_in_the_original_words() {
    let world = World::new();
    sheep(&world, "echo", "done completed echo {task}");
    sheep(&world, "nope", "done failed cannot {task}");
    let mcp = Mcp::start(&world, &[], HostOptions::default()).await;
    let parallel = mcp
        .call(
            "shepherd_run",
            json!({"tasks": [{"agent": "echo", "task": "one"}, {"agent": "echo", "task": "two"}]}),
        )
        .await;
    assert!(!parallel.is_error, "{}", parallel.text);
    assert!(
        parallel.text.starts_with("Parallel: 2/2 succeeded\n\n### [echo] completed\n\necho one\n\n### [echo] completed\n\necho two"),
        "{}",
        parallel.text
    );
    let chain = mcp
        .call(
            "shepherd_run",
            json!({"chain": [{"agent": "echo", "task": "first"}, {"agent": "echo", "task": "then {previous}"}], "sessionName": "chain"}),
        )
        .await;
    assert!(
        chain
            .text
            .starts_with("echo then echo first\n\nSession: chain ("),
        "{}",
        chain.text
    );
    let failed = mcp
        .call("shepherd_run", json!({"agent": "nope", "task": "fly"}))
        .await;
    assert!(failed.is_error, "{}", failed.text);
    assert!(failed.text.starts_with("cannot fly"), "{}", failed.text);
    mcp.close().await;
}

#[tokio::test]
async fn a_run_ends_early_only_when_cancelled() {
    let world = World::new();
    sheep(&world, "idle", "idle");
    let mcp = Mcp::start(&world, &["--herd", "cancel"], HostOptions::default()).await;
    let started = mcp
        .call(
            "shepherd_run",
            json!({"agent": "idle", "task": "t", "wait": 0.2}),
        )
        .await;
    let run_id = started.id("run-");
    // Following it again waits and reports it still running: nothing ends it by itself.
    let still = mcp
        .call("shepherd_run", json!({"runId": run_id, "wait": 0.5}))
        .await;
    assert!(still.text.starts_with("still running"), "{}", still.text);
    let cancelled = mcp
        .call("shepherd_run", json!({"runId": run_id, "cancel": true}))
        .await;
    assert!(cancelled.is_error, "{}", cancelled.text);
    assert!(
        cancelled.text.contains("The run was cancelled."),
        "{}",
        cancelled.text
    );
    let herd = mcp.call("shepherd", json!({"action": "herd"})).await;
    assert!(
        herd.text.starts_with("No sheep in this herd."),
        "{}",
        herd.text
    );
    mcp.close().await;
}
