//! `shepherd mcp --sheep`: a sheep's own tools over MCP, acting with the credential Shepherd
//! put in the sheep's environment. The test plays an MCP-capable agent running as a sheep: it
//! takes a real sheep's capability from its environment, starts the server with it, fetches
//! the task, messages the parent, is pushed the parent's message, and settles the task, while
//! the parent works through the CLI. Outside a sheep every tool says so.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::mcp_support;

use std::io::Read as _;
use std::time::Duration;

use mcp_support::{HostOptions, Mcp, World, flat};
use serde_json::{Value, json};

/// The capability of a sheep that writes its environment into a named pipe, then idles.
fn capability(world: &World) -> (String, Vec<(String, String)>) {
    let fifo = world.fifo("env");
    let script = format!("env > {}; exec sleep 600", fifo.display());
    world.define("bare", &["sh".into(), "-c".into(), script]);
    let (sender, received) = std::sync::mpsc::channel();
    let reader = fifo.clone();
    std::thread::spawn(move || {
        let mut text = String::new();
        let _read = std::fs::File::open(reader).and_then(|mut f| f.read_to_string(&mut text));
        let _sent = sender.send(text);
    });
    let agent = world.spawn("bare", "mcp sheep");
    let env = received
        .recv_timeout(Duration::from_secs(30))
        .expect("the sheep wrote its environment");
    let vars = env
        .lines()
        .filter_map(|line| line.split_once('='))
        .filter(|(name, _)| name.starts_with("SHEPHERD_"))
        .map(|(name, value)| (name.to_owned(), value.to_owned()))
        .collect();
    (agent, vars)
}

#[tokio::test]
async fn a_sheep_fetches_its_task_talks_and_finishes_through_its_own_tools() {
    let world = World::new();
    let (agent, vars) = capability(&world);
    assert!(
        vars.iter().any(|(name, _)| name == "SHEPHERD_TOKEN"),
        "{vars:?}"
    );
    let mut command = world.command(&["mcp", "--sheep"]);
    command.envs(vars.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    let mcp = Mcp::start_with(command, HostOptions::default()).await;
    let tools = mcp.client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(
        names,
        [
            "shepherd_done",
            "shepherd_herd",
            "shepherd_inbox",
            "shepherd_message",
            "shepherd_status"
        ]
    );

    let task = world.delegate(&agent, "Count the files")["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    let inbox = mcp.call("shepherd_inbox", json!({"wait": 10})).await;
    assert!(
        inbox.text.starts_with("1 new item since you last asked"),
        "{}",
        inbox.text
    );
    assert!(
        inbox
            .text
            .contains("[Shepherd delegated task from Shepherd]"),
        "{}",
        inbox.text
    );
    assert!(
        inbox.text.contains(&format!("Task ID: {task}")),
        "{}",
        inbox.text
    );
    assert!(inbox.text.contains("Count the files"), "{}", inbox.text);

    let told = mcp
        .call(
            "shepherd_message",
            json!({"target": "shepherd", "message": "counting now"}),
        )
        .await;
    let message = told.id("shepherd-message-");
    assert_eq!(
        told.text,
        format!(
            "Shepherd message accepted for asynchronous delivery ({message}). shepherd_status {{messageId: \"{message}\"}} shows whether it was delivered and read."
        )
    );
    let parent = world.run(&["inbox", "--json"]);
    let parent = String::from_utf8_lossy(&parent.stdout);
    assert!(parent.contains("counting now"), "{parent}");

    // A message from the parent is pushed as it arrives, and read once from the inbox.
    let sent = world.json(&["message", &agent, "use ls"]);
    let sent = sent["messageId"].as_str().unwrap().to_owned();
    let pushed = mcp
        .wait_log(Duration::from_secs(20), |log| {
            log["data"]["item"]["envelope"]["messageId"] == json!(sent)
        })
        .await;
    assert!(
        pushed["data"]["text"].as_str().unwrap().contains("use ls"),
        "{pushed}"
    );
    let inbox = mcp.call("shepherd_inbox", json!({})).await;
    assert!(
        inbox.text.contains("[Shepherd message from Shepherd]") && inbox.text.contains("use ls"),
        "{}",
        inbox.text
    );
    let empty = mcp.call("shepherd_inbox", json!({})).await;
    assert_eq!(empty.text, "Nothing new since you last asked.");

    let bad = mcp.call("shepherd_done", json!({"status": "maybe"})).await;
    assert!(bad.is_error, "{}", bad.text);
    assert!(bad.text.starts_with("Shepherd done failed (invalid_arguments): status `maybe` is not one of completed, blocked, failed"), "{}", bad.text);
    let done = mcp
        .call(
            "shepherd_done",
            json!({"status": "completed", "summary": "3 files"}),
        )
        .await;
    assert_eq!(done.text, format!("Task {task} completed."));
    let (code, watched) = world.json_status(&["watch", &task, "--wait", "10"]);
    assert_eq!(code, 0, "{watched}");
    assert_eq!(watched["settled"][0]["summary"], "3 files");
    mcp.close().await;
}

#[tokio::test]
async fn outside_a_sheep_every_sheep_tool_says_so() {
    let world = World::new();
    let mcp = Mcp::start(&world, &["--sheep"], HostOptions::default()).await;
    let tools = mcp.client.list_all_tools().await.unwrap();
    for tool in &tools {
        let schema = Value::Object((*tool.input_schema).clone());
        assert_eq!(flat(&schema), Ok(()), "{}: {schema}", tool.name);
    }
    for (tool, args) in [
        ("shepherd_done", json!({"status": "completed"})),
        (
            "shepherd_message",
            json!({"target": "shepherd", "message": "hi"}),
        ),
        ("shepherd_inbox", json!({})),
        ("shepherd_herd", json!({})),
        ("shepherd_status", json!({})),
    ] {
        let called = mcp.call(tool, args).await;
        assert!(called.is_error, "{tool}: {}", called.text);
        assert!(
            called.text.contains("(not_a_sheep): "),
            "{tool}: {}",
            called.text
        );
        assert!(
            called
                .text
                .contains("Hint: These tools work inside a sheep"),
            "{}",
            called.text
        );
        assert!(
            called.text.contains("SHEPHERD_TOKEN are not set"),
            "{}",
            called.text
        );
    }
    mcp.close().await;
}

/// An idle sheep for a herd-mate: it never reads its inbox, so what is sent to it stays queued.
fn idle_mate(world: &World) -> String {
    world.define("idle", &["sh".into(), "-c".into(), "exec sleep 600".into()]);
    world.spawn("idle", "mate")
}

#[tokio::test]
async fn a_sheep_sees_its_herd_mates_messages_one_by_name_and_follows_receipts() {
    let world = World::new();
    let mate = idle_mate(&world);
    world.delegate(&mate, "the mate's private task");
    let (agent, vars) = capability(&world);
    let mut command = world.command(&["mcp", "--sheep"]);
    command.envs(vars.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    let mcp = Mcp::start_with(command, HostOptions::default()).await;

    let herd = mcp.call("shepherd_herd", json!({})).await;
    assert!(!herd.is_error, "{}", herd.text);
    assert!(
        herd.text
            .contains(&format!("- idle: mate ({mate}): working, command\n")),
        "{}",
        herd.text
    );
    assert!(
        herd.text
            .ends_with(&format!("- bare: mcp sheep ({agent}): idle, command (you)")),
        "{}",
        herd.text
    );
    assert!(!herd.text.contains("private task"), "{}", herd.text);

    // To a herd-mate by its display name: queued while the mate has not fetched it.
    let told = mcp
        .call(
            "shepherd_message",
            json!({"target": "idle: mate", "message": "can you share the list?"}),
        )
        .await;
    assert!(!told.is_error, "{}", told.text);
    let to_mate = told.id("shepherd-message-");
    let receipt = mcp
        .call("shepherd_status", json!({"messageId": to_mate}))
        .await;
    assert!(
        receipt.text.starts_with(&format!(
            "Message {to_mate} from bare: mcp sheep to idle: mate is queued (not yet fetched by its recipient): sent "
        )),
        "{}",
        receipt.text
    );

    // From the parent: pushed to this server as it arrives (delivered), read once fetched.
    let sent = world.json(&["message", &agent, "use ls"]);
    let sent = sent["messageId"].as_str().unwrap().to_owned();
    mcp.wait_log(Duration::from_secs(20), |log| {
        log["data"]["item"]["envelope"]["messageId"] == json!(sent)
    })
    .await;
    let delivered = world.json(&["status", &sent]);
    assert_eq!(delivered["state"], "delivered", "{delivered}");
    assert!(delivered["readAt"].is_null(), "{delivered}");
    let inbox = mcp.call("shepherd_inbox", json!({})).await;
    assert!(inbox.text.contains("use ls"), "{}", inbox.text);
    let read = world.json(&["status", &sent]);
    assert_eq!(read["state"], "read", "{read}");
    assert_eq!(read["deliveredAt"], delivered["deliveredAt"], "{read}");

    // The sheep's own status lists it; a message between others is not the sheep's to see.
    let own = mcp.call("shepherd_status", json!({})).await;
    assert!(
        own.text
            .contains(&format!("- {sent} from shepherd: read \"use ls\"")),
        "{}",
        own.text
    );
    let other = world.json(&["message", &mate, "between us"]);
    let other = other["messageId"].as_str().unwrap().to_owned();
    let refused = mcp
        .call("shepherd_status", json!({"messageId": other}))
        .await;
    assert!(refused.is_error, "{}", refused.text);
    assert!(
        refused.text.contains("(unknown_message)"),
        "{}",
        refused.text
    );
    mcp.close().await;
}
