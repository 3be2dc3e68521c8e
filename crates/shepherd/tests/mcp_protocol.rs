//! `shepherd mcp` through rmcp's MCP client, at the protocol level: the tools and their flat
//! schemas under both protocol versions hosts use (2025-11-25 and 2025-06-18), every tool's
//! error path as a readable tool error (code, message, hint; never a protocol error), a whole
//! herd's life through the parent tools (with progress and `notifications/message` pushes),
//! the project taken from the host's roots, and the server's end on stdin EOF.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::mcp_support;
use shepherd_testkit::procs;

use std::time::Duration;

use mcp_support::{HostOptions, Mcp, PARENT_TOOLS, World, flat, sheep};
use rmcp::model::ProtocolVersion;
use serde_json::{Value, json};
use shepherd_mcp::catalogue::{self, Front, Tool};

/// Checks that `served` are exactly the catalogue's MCP `tools`, in its words and schemas.
fn catalogue_tools(served: &[rmcp::model::Tool], tools: &[Tool]) {
    let mut names: Vec<&str> = served.iter().map(|t| t.name.as_ref()).collect();
    names.sort_unstable();
    let mut written: Vec<&str> = catalogue::offered(tools, Front::Mcp)
        .map(|t| t.name)
        .collect();
    written.sort_unstable();
    assert_eq!(names, written);
    for tool in served {
        let entry = tools.iter().find(|t| t.name == tool.name).unwrap();
        assert_eq!(
            tool.description.as_deref(),
            Some(entry.description),
            "{}",
            tool.name
        );
        let schema = Value::Object((*tool.input_schema).clone());
        assert_eq!(schema, entry.mcp_schema(), "{}", tool.name);
    }
}

#[tokio::test]
async fn every_tool_has_a_flat_schema_under_both_protocol_versions() {
    for version in [ProtocolVersion::V_2025_11_25, ProtocolVersion::V_2025_06_18] {
        let world = World::new();
        let mcp = Mcp::start(
            &world,
            &[],
            HostOptions {
                version: version.clone(),
                roots: None,
            },
        )
        .await;
        let info = mcp.client.peer_info().unwrap();
        assert_eq!(info.protocol_version, version);
        assert_eq!(info.server_info.as_ref().unwrap().name, "shepherd");
        assert!(info.capabilities.tools.is_some() && info.capabilities.logging.is_some());
        let tools = mcp.client.list_all_tools().await.unwrap();
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        assert_eq!(names, PARENT_TOOLS, "{version:?}");
        catalogue_tools(&tools, catalogue::PARENT);
        for tool in &tools {
            let schema = Value::Object((*tool.input_schema).clone());
            assert_eq!(flat(&schema), Ok(()), "{}: {schema}", tool.name);
            assert!(
                tool.description.as_ref().is_some_and(|d| d.len() > 40),
                "{}",
                tool.name
            );
        }
        let watch = tools.iter().find(|t| t.name == "shepherd_watch").unwrap();
        assert_eq!(watch.input_schema["required"], json!(["id"]));
        assert_eq!(
            watch.input_schema["properties"]["id"]["items"]["type"],
            "string"
        );
        mcp.close().await;
    }
}

/// `(tool, arguments, code)`: each a domain error the model must be able to read.
fn error_cases() -> Vec<(&'static str, Value, &'static str)> {
    let agent = "shepherd-agent-00000000-0000";
    let task = "shepherd-task-00000000-0000";
    vec![
        ("shepherd", json!({"action": "fly"}), "invalid_arguments"),
        ("shepherd", json!({}), "invalid_arguments"),
        (
            "shepherd_spawn",
            json!({"agent": "nope", "label": "x"}),
            "unknown_agent",
        ),
        (
            "shepherd_spawn",
            json!({"agent": "echo"}),
            "invalid_arguments",
        ),
        (
            "shepherd_spawn",
            json!({"agent": "echo", "label": "a:b"}),
            "invalid_label",
        ),
        (
            "shepherd_spawn",
            json!({"agent": "echo", "label": "x", "placement": "left"}),
            "invalid_arguments",
        ),
        (
            "shepherd_delegate",
            json!({"target": agent, "task": "t"}),
            "invalid_target",
        ),
        (
            "shepherd_delegate",
            json!({"target": agent, "task": "t", "timeout": 0}),
            "invalid_timeout",
        ),
        (
            "shepherd_message",
            json!({"target": "planner", "message": "m"}),
            "invalid_target",
        ),
        (
            "shepherd_message",
            json!({"target": agent, "message": "m", "delivery": "now"}),
            "invalid_arguments",
        ),
        (
            "shepherd_prompt",
            json!({"id": agent, "message": "m"}),
            "invalid_target",
        ),
        ("shepherd_watch", json!({"id": [task]}), "unknown_task"),
        ("shepherd_watch", json!({"id": []}), "invalid_handle"),
        (
            "shepherd_watch",
            json!({"id": [task], "wait": -1}),
            "invalid_arguments",
        ),
        ("shepherd_status", json!({"id": agent}), "invalid_target"),
        ("shepherd_close", json!({"id": agent}), "invalid_target"),
        ("shepherd_read", json!({"name": "nobody"}), "invalid_target"),
        (
            "shepherd_read",
            json!({"name": "nobody", "lines": 0}),
            "invalid_arguments",
        ),
        ("shepherd_resume", json!({"id": agent}), "invalid_target"),
        ("shepherd_run", json!({}), "invalid_run"),
        ("shepherd_run", json!({"agent": "echo"}), "invalid_run"),
        (
            "shepherd_run",
            json!({"agent": "nope", "task": "t"}),
            "unknown_agent",
        ),
        (
            "shepherd_run",
            json!({"runId": "run-00000000"}),
            "unknown_run",
        ),
        ("shepherd_run", json!({"cancel": true}), "invalid_run"),
        ("shepherd_merge", json!({}), "nothing_to_land"),
        (
            "shepherd_merge",
            json!({"mergeId": "merge-00000000"}),
            "unknown_merge",
        ),
        (
            "shepherd_inbox",
            json!({"wait": "soon"}),
            "invalid_arguments",
        ),
    ]
}

#[tokio::test]
async fn every_tool_reports_domain_errors_as_readable_tool_errors() {
    let world = World::new();
    sheep(&world, "echo", "done completed {task}");
    let mcp = Mcp::start(&world, &[], HostOptions::default()).await;
    let mut tools_covered = std::collections::BTreeSet::new();
    for (tool, args, code) in error_cases() {
        let called = mcp.call(tool, args.clone()).await;
        assert!(
            called.is_error,
            "{tool} {args}: not an error:\n{}",
            called.text
        );
        assert!(
            called.text.contains(&format!("    code: {code}\n")),
            "{tool} {args}: expected code {code}:\n{}",
            called.text
        );
        assert!(
            called.text.contains("failed (return code 1): "),
            "{}",
            called.text
        );
        assert!(called.text.contains("\n\ncall:\n    "), "{}", called.text);
        assert!(
            called.text.contains("    hint: "),
            "{tool} {args}: no hint:\n{}",
            called.text
        );
        tools_covered.insert(tool);
    }
    assert_eq!(tools_covered.len(), PARENT_TOOLS.len(), "{tools_covered:?}");
    // An unknown tool is not a tool call: that is the one protocol error.
    let params = rmcp::model::CallToolRequestParams::new("shepherd_fly");
    assert!(mcp.client.call_tool(params).await.is_err());
    mcp.close().await;
}

#[tokio::test]
async fn a_herd_lives_through_the_parent_tools_with_progress_and_pushes() {
    let world = World::new();
    // The sheep waits for a message, then reports it: the first watch must return "still running".
    sheep(&world, "waiter", "await; done completed got {reply}");
    let mcp = Mcp::start(&world, &[], HostOptions::default()).await;

    let agents = mcp.call("shepherd", json!({"action": "agents"})).await;
    assert!(
        agents.text.contains("waiter (user): Test sheep waiter."),
        "{}",
        agents.text
    );
    let spawned = mcp
        .call(
            "shepherd_spawn",
            json!({"agent": "waiter", "label": "mcp test"}),
        )
        .await;
    assert!(!spawned.is_error, "{}", spawned.text);
    assert!(
        spawned
            .text
            .starts_with("shepherd_spawn spawned waiter: mcp test\n"),
        "{}",
        spawned.text
    );
    let agent = spawned.id("shepherd-agent-");
    let delegated = mcp
        .call(
            "shepherd_delegate",
            json!({"target": agent, "task": "wait for a word"}),
        )
        .await;
    assert!(
        delegated
            .text
            .starts_with("Delegated task to waiter: mcp test\n"),
        "{}",
        delegated.text
    );
    let task = delegated.id("shepherd-task-");

    let (first, progress) = mcp
        .call_tracked(
            "shepherd_watch",
            json!({"id": [task], "wait": 1}),
            "settled; waiting for",
        )
        .await;
    assert!(!first.is_error, "{}", first.text);
    let again = format!("call shepherd_watch {{\"id\":[\"{task}\"]}} again");
    assert!(
        first.text.starts_with(&format!("still running — {again}")),
        "{}",
        first.text
    );
    assert!(
        first
            .text
            .contains(&format!("- waiter: mcp test task {task} running")),
        "{}",
        first.text
    );
    assert!(!progress.is_empty(), "no progress during a 1 s watch");

    let status = mcp.call("shepherd_status", json!({"id": agent})).await;
    assert!(
        status
            .text
            .starts_with(&format!("waiter: mcp test working; task {task} running.")),
        "{}",
        status.text
    );
    let herd = mcp.call("shepherd", json!({"action": "herd"})).await;
    assert!(
        herd.text.contains(&format!(
            "• waiter: mcp test [working] id={agent} task {task} running"
        )),
        "{}",
        herd.text
    );

    let message = mcp
        .call(
            "shepherd_message",
            json!({"target": agent, "message": "bonjour"}),
        )
        .await;
    assert!(
        message
            .text
            .starts_with("Message queued to waiter: mcp test"),
        "{}",
        message.text
    );
    let settled = mcp.call("shepherd_watch", json!({"id": task})).await;
    assert!(
        settled.text.starts_with("all 1 watched task settled\n"),
        "{}",
        settled.text
    );
    // The sheep read the message before it settled: its receipt says so, by the message's id
    // and in the sheep's status.
    let message_id = message.id("shepherd-message-");
    assert!(
        message.text.contains(&format!(
            "shepherd_status {{id: \"{message_id}\"}} shows whether it was delivered and read"
        )),
        "{}",
        message.text
    );
    let receipt = mcp.call("shepherd_status", json!({"id": message_id})).await;
    assert!(
        receipt.text.contains(&format!(
            "Message {message_id} from shepherd to waiter: mcp test is read (acknowledged by its recipient): sent "
        )),
        "{}",
        receipt.text
    );
    let status = mcp.call("shepherd_status", json!({"id": agent})).await;
    assert!(
        status
            .text
            .contains(&format!("\n- {message_id} from shepherd: read \"bonjour\"")),
        "{}",
        status.text
    );
    assert!(
        settled.text.contains(&format!(
            "- waiter: mcp test task {task} completed (rc 0): got bonjour Note: .shepherd/sessions/"
        )),
        "{}",
        settled.text
    );
    // The watcher's completion was pushed as a log message …
    let pushed = mcp
        .wait_log(Duration::from_secs(20), |log| {
            log["data"]["item"]["type"] == "completion"
        })
        .await;
    assert_eq!(pushed["level"], "notice");
    assert!(
        pushed["data"]["text"]
            .as_str()
            .unwrap()
            .contains("got bonjour"),
        "{pushed}"
    );
    // … and the inbox, having been told by the watch, has nothing new.
    let inbox = mcp.call("shepherd_inbox", json!({})).await;
    assert!(
        inbox.text.starts_with("Nothing new since you last asked."),
        "{}",
        inbox.text
    );

    let read = mcp
        .call("shepherd_read", json!({"name": agent, "lines": 20}))
        .await;
    assert!(!read.is_error, "{}", read.text);
    let closed = mcp.call("shepherd_close", json!({"id": agent})).await;
    assert!(
        closed.text.starts_with("closed waiter: mcp test\n"),
        "{}",
        closed.text
    );
    let pruned = mcp.call("shepherd", json!({"action": "prune"})).await;
    assert!(!pruned.is_error, "{}", pruned.text);
    mcp.close().await;
    // The task's note is final, and the session's index lists it.
    let note = settled
        .text
        .split(" Note: ")
        .nth(1)
        .unwrap()
        .lines()
        .next()
        .unwrap();
    let text = std::fs::read_to_string(world.project.join(note)).unwrap();
    assert!(
        text.contains("completed") && text.contains("got bonjour"),
        "{text}"
    );
    let index = std::path::Path::new(note)
        .parent()
        .unwrap()
        .join("shepherd.md");
    let index = std::fs::read_to_string(world.project.join(index)).unwrap();
    let file = std::path::Path::new(note)
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    assert!(index.contains(&file), "{index}");
}

#[tokio::test]
async fn questions_and_messages_reach_the_inbox_once_and_are_pushed() {
    let world = World::new();
    sheep(
        &world,
        "asker",
        "tell shepherd hello there; ask shepherd which file?; done completed answered {reply}",
    );
    let mcp = Mcp::start(&world, &[], HostOptions::default()).await;
    let agent = mcp
        .call("shepherd_spawn", json!({"agent": "asker", "label": "q"}))
        .await
        .id("shepherd-agent-");
    let task = mcp
        .call("shepherd_delegate", json!({"target": agent, "task": "ask"}))
        .await
        .id("shepherd-task-");
    // The question is pushed as a warning …
    let question = mcp
        .wait_log(Duration::from_secs(20), |log| {
            log["data"]["item"]["envelope"]["expectsReply"] == true
        })
        .await;
    assert_eq!(question["level"], "warning");
    // … and the inbox reports the message and the question once, with how to answer.
    let inbox = mcp.call("shepherd_inbox", json!({"wait": 5})).await;
    assert!(
        inbox.text.starts_with("2 new items since you last asked"),
        "{}",
        inbox.text
    );
    assert!(
        inbox.text.contains("Shepherd message from asker: q"),
        "{}",
        inbox.text
    );
    assert!(inbox.text.contains("hello there"), "{}", inbox.text);
    let question_id = inbox
        .text
        .split("Expects reply: yes (answer with shepherd_message target ")
        .nth(1)
        .and_then(|rest| mcp_support::word(rest, "shepherd-message-"))
        .unwrap_or_else(|| panic!("no question in {}", inbox.text));
    let empty = mcp.call("shepherd_inbox", json!({})).await;
    assert!(empty.text.starts_with("Nothing new"), "{}", empty.text);
    let watching = mcp
        .call("shepherd_watch", json!({"id": [task], "wait": 0.5}))
        .await;
    assert!(
        watching
            .text
            .contains(&format!("task {task} waiting, waiting on shepherd")),
        "{}",
        watching.text
    );
    let answer = mcp
        .call(
            "shepherd_message",
            json!({"target": agent, "message": "main.rs", "replyTo": question_id, "taskId": task}),
        )
        .await;
    assert!(!answer.is_error, "{}", answer.text);
    let settled = mcp.call("shepherd_watch", json!({"id": [task]})).await;
    assert!(
        settled.text.contains("completed (rc 0): answered main.rs"),
        "{}",
        settled.text
    );
    mcp.close().await;
}

#[tokio::test]
async fn the_project_is_the_hosts_first_root() {
    let world = World::new();
    sheep(&world, "echo", "done completed {task}");
    let root = world.dir.path().join("elsewhere");
    std::fs::create_dir_all(&root).unwrap();
    let root = root.canonicalize().unwrap();
    let uri = format!("file://{}", root.display().to_string().replace(' ', "%20"));
    let options = HostOptions {
        roots: Some(vec![uri]),
        ..HostOptions::default()
    };
    let mcp = Mcp::start(&world, &[], options).await;
    let agent = mcp
        .call("shepherd_spawn", json!({"agent": "echo", "label": "r"}))
        .await
        .id("shepherd-agent-");
    let task = mcp
        .call("shepherd_delegate", json!({"target": agent, "task": "hi"}))
        .await
        .id("shepherd-task-");
    let settled = mcp.call("shepherd_watch", json!({"id": [task]})).await;
    assert!(settled.text.contains("completed"), "{}", settled.text);
    assert_eq!(*mcp.seen.roots_asked.lock().unwrap(), 1);
    mcp.close().await;
    assert!(
        root.join(".shepherd/sessions").is_dir(),
        "no fieldnotes under the root"
    );
    assert!(
        !world.project.join(".shepherd").exists(),
        "fieldnotes in the cwd instead of the root"
    );
}

#[tokio::test]
async fn a_herd_of_the_server_alone_ends_with_it_and_a_named_herd_does_not() {
    let world = World::new();
    sheep(&world, "idle", "idle");
    // Without --herd: the sheep is closed when the host closes stdin.
    let mcp = Mcp::start(&world, &[], HostOptions::default()).await;
    let spawned = mcp
        .call("shepherd_spawn", json!({"agent": "idle", "label": "one"}))
        .await;
    assert!(!spawned.is_error, "{}", spawned.text);
    assert!(!procs::with_home(&world.home).is_empty());
    mcp.close().await;
    let left = procs::with_home(&world.home);
    assert!(
        left.iter()
            .all(|pid| mcp_support::herd_support::wait_gone(*pid, Duration::from_secs(10))),
        "processes left after the server ended: {left:?}"
    );
    // With --herd: a second server (a host restart) finds the sheep the first one spawned.
    let mcp = Mcp::start(&world, &["--herd", "named"], HostOptions::default()).await;
    let agent = mcp
        .call("shepherd_spawn", json!({"agent": "idle", "label": "kept"}))
        .await
        .id("shepherd-agent-");
    mcp.close().await;
    let mcp = Mcp::start(&world, &["--herd", "named"], HostOptions::default()).await;
    let herd = mcp.call("shepherd", json!({"action": "herd"})).await;
    assert!(herd.text.contains(&format!("id={agent}")), "{}", herd.text);
    let closed = mcp.call("shepherd_close", json!({"id": agent})).await;
    assert!(!closed.is_error, "{}", closed.text);
    mcp.close().await;
    let status = world.json(&["herd", "--parent-session", "named"]);
    assert_eq!(status["sheep"], json!([]), "{status}");
}

/// A definition file that was skipped is listed by `shepherd {action: "agents"}` with its file
/// and reason, as the refused spawn of it tells the model to look there.
#[tokio::test]
async fn the_agents_action_lists_skipped_definition_files_with_why() {
    let world = World::new();
    sheep(&world, "echo", "done completed {task}");
    world.define_file(
        "h-bogus",
        "---\nname: h-bogus\ndescription: d\nharness: nosuch\n---\n",
    );
    let mcp = Mcp::start(&world, &[], HostOptions::default()).await;
    let refused = mcp
        .call("shepherd_spawn", json!({"agent": "h-bogus", "label": "x"}))
        .await;
    assert!(refused.is_error, "{}", refused.text);
    assert!(
        refused.text.contains("was skipped") && refused.text.contains("action \"agents\""),
        "{}",
        refused.text
    );
    let agents = mcp.call("shepherd", json!({"action": "agents"})).await;
    assert!(!agents.is_error, "{}", agents.text);
    let file = world.home.join(".pi/agent/agents/h-bogus.md");
    let line = format!(
        "h-bogus: {}: invalid harness \"nosuch\": expected one of",
        file.display()
    );
    assert!(
        agents.text.contains("Skipped 1 definition file") && agents.text.contains(&line),
        "{}",
        agents.text
    );
    // The names a spawn accepts are still listed, and the skipped one is not among them.
    assert!(agents.text.contains("echo (user)"), "{}", agents.text);
    assert!(!agents.text.contains("h-bogus (user)"), "{}", agents.text);
    mcp.close().await;
}
