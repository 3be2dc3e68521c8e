//! No MCP tool call blocks longer than its bound. A task that runs 60 s is watched with
//! `shepherd_watch`, and the same task run with `shepherd_run`, both with the default bound
//! (25 s), while `shepherd_inbox` waits for something that never comes: every call answers
//! within the bound (plus the round trip to the test's client), the long ones say "still
//! running" and name the call to make, progress arrives every ~5 s while they wait, and
//! calling again as told reaches the completion. This test takes about a minute by design.

use crate::mcp_support;

use std::time::Duration;

use mcp_support::{Called, HostOptions, Mcp, World, sheep};
use serde_json::json;

/// The server's default bound.
const BOUND: Duration = Duration::from_secs(25);
/// What the client-side measurement may add: the MCP round trip on a loaded 2-core machine.
const SLACK: Duration = Duration::from_millis(1500);

fn within_bound(tool: &str, called: &Called) {
    assert!(
        called.elapsed <= BOUND + SLACK,
        "{tool} took {:?}, over its bound of {BOUND:?}:\n{}",
        called.elapsed,
        called.text
    );
    assert!(!called.is_error, "{tool}: {}", called.text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_tool_call_outlasts_its_bound_while_a_task_runs_60_s() {
    let world = World::new();
    sheep(&world, "slow", "sleep 60000; done completed slept a minute");
    let mcp = std::sync::Arc::new(Mcp::start(&world, &[], HostOptions::default()).await);
    let agent = mcp
        .call(
            "shepherd_spawn",
            json!({"agent": "slow", "label": "watched"}),
        )
        .await
        .id("shepherd-agent-");
    let task = mcp
        .call(
            "shepherd_delegate",
            json!({"target": agent, "task": "sleep"}),
        )
        .await
        .id("shepherd-task-");

    let watching = {
        let mcp = mcp.clone();
        tokio::spawn(async move {
            let mut still = 0;
            loop {
                let (called, progress) = mcp
                    .call_tracked(
                        "shepherd_watch",
                        json!({"id": [task]}),
                        "settled; waiting for",
                    )
                    .await;
                within_bound("shepherd_watch", &called);
                if called.text.starts_with("all 1 watched task settled") {
                    assert!(
                        called.text.contains("completed (rc 0): slept a minute"),
                        "{}",
                        called.text
                    );
                    return still;
                }
                let again =
                    format!("still running — call shepherd_watch {{\"id\":[\"{task}\"]}} again");
                assert!(called.text.starts_with(&again), "{}", called.text);
                // A whole-bound wait reports progress about every 5 s.
                assert!(
                    progress.len() >= 3,
                    "{} progress notifications in {:?}",
                    progress.len(),
                    called.elapsed
                );
                assert!(
                    progress.windows(2).all(|p| p[1].progress > p[0].progress),
                    "{progress:?}"
                );
                still += 1;
            }
        })
    };
    let running = {
        let mcp = mcp.clone();
        tokio::spawn(async move {
            let mut still = 0;
            let mut called = mcp
                .call(
                    "shepherd_run",
                    json!({"agent": "slow", "task": "sleep too"}),
                )
                .await;
            loop {
                within_bound("shepherd_run", &called);
                if !called.text.starts_with("still running") {
                    assert_eq!(
                        called.text.lines().next(),
                        Some("slept a minute"),
                        "{}",
                        called.text
                    );
                    return still;
                }
                still += 1;
                let run_id = called.id("run-");
                called = mcp.call("shepherd_run", json!({"runId": run_id})).await;
            }
        })
    };
    // Nothing is ever sent to the parent: the inbox waits out the bound, twice.
    for _ in 0..2 {
        let called = mcp.call("shepherd_inbox", json!({"wait": 600})).await;
        within_bound("shepherd_inbox", &called);
        assert!(called.text.starts_with("Nothing new"), "{}", called.text);
        assert!(
            called.elapsed >= BOUND - Duration::from_secs(2),
            "{:?}",
            called.elapsed
        );
    }
    let watched_still = watching.await.unwrap();
    let run_still = running.await.unwrap();
    assert!(
        watched_still >= 2,
        "shepherd_watch said still running {watched_still} times"
    );
    assert!(
        run_still >= 2,
        "shepherd_run said still running {run_still} times"
    );
    std::sync::Arc::into_inner(mcp)
        .expect("one owner left")
        .close()
        .await;
}
