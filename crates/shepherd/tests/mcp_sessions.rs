//! Fieldnotes sessions over MCP as the seeds put them: `shepherd_delegate` takes a
//! `sessionName` as the CLI's `delegate --session-name` does, and every result that continues
//! a session says so in the CLI's words — a delegation's (`in session `x` (continued)`) and a
//! run's (`(continued)`) — with both notes in that one session directory.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::mcp_support;

use mcp_support::{HostOptions, Mcp, World, sheep};
use serde_json::json;

#[tokio::test]
async fn a_named_session_is_created_then_continued_and_each_result_says_which() {
    let world = World::new();
    sheep(&world, "finisher", "done completed finished");
    sheep(&world, "echo", "done completed echo {task}");
    let mcp = Mcp::start(&world, &[], HostOptions::default()).await;
    let mut texts = Vec::new();
    for label in ["first", "second"] {
        let agent = mcp
            .call(
                "shepherd_spawn",
                json!({"agent": "finisher", "label": label}),
            )
            .await
            .id("shepherd-agent-");
        let delegated = mcp
            .call(
                "shepherd_delegate",
                json!({"target": agent, "task": "finish", "sessionName": "fix-login"}),
            )
            .await;
        assert!(!delegated.is_error, "{}", delegated.text);
        texts.push(delegated.text);
    }
    assert!(
        texts[0].starts_with("Delegated task to finisher: first in session `fix-login` (new)"),
        "{}",
        texts[0]
    );
    assert!(
        texts[1]
            .starts_with("Delegated task to finisher: second in session `fix-login` (continued)"),
        "{}",
        texts[1]
    );
    // Without a session name nothing about sessions is said.
    let agent = mcp
        .call(
            "shepherd_spawn",
            json!({"agent": "finisher", "label": "plain"}),
        )
        .await
        .id("shepherd-agent-");
    let plain = mcp
        .call(
            "shepherd_delegate",
            json!({"target": agent, "task": "finish"}),
        )
        .await;
    assert!(!plain.text.contains("in session"), "{}", plain.text);

    // A run into the same session continues it, and says so.
    let run = mcp
        .call(
            "shepherd_run",
            json!({"agent": "echo", "task": "hello", "sessionName": "fix-login"}),
        )
        .await;
    assert!(!run.is_error, "{}", run.text);
    assert!(
        run.text.contains("Session: fix-login (") && run.text.ends_with("(continued)"),
        "{}",
        run.text
    );

    // One session directory for the name, holding all three of its notes.
    let sessions = world.project.join(".shepherd/sessions");
    let named: Vec<_> = std::fs::read_dir(&sessions)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .ends_with("-fix-login")
        })
        .collect();
    assert_eq!(named.len(), 1, "{named:?}");
    let notes = std::fs::read_dir(&named[0])
        .unwrap()
        .flatten()
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            // The session's own files: its index and the shepherd's note.
            name.ends_with(".md") && name != "shepherd.md" && name != "shepherds-note.md"
        })
        .count();
    assert_eq!(notes, 3, "{}", named[0].display());
    mcp.close().await;
}

/// The session directories under `.shepherd/sessions/` (`NNNN-slug`), by name, sorted.
fn session_dirs(world: &World) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(world.project.join(".shepherd/sessions")) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.len() > 5 && name[..4].bytes().all(|b| b.is_ascii_digit()))
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn a_session_directory_appears_with_its_first_note_not_at_a_spawn() {
    let world = World::new();
    sheep(&world, "finisher", "done completed finished");
    let mcp = Mcp::start(&world, &[], HostOptions::default()).await;
    let mut agents = Vec::new();
    for label in ["one", "two"] {
        let spawned = mcp
            .call(
                "shepherd_spawn",
                json!({"agent": "finisher", "label": label}),
            )
            .await;
        assert!(!spawned.is_error, "{}", spawned.text);
        // No session exists yet, so none is named.
        assert!(
            spawned.text.contains("agent fieldnote: none"),
            "{}",
            spawned.text
        );
        agents.push(spawned.id("shepherd-agent-"));
    }
    assert_eq!(session_dirs(&world), Vec::<String>::new());

    // Every task goes to a named session: that is the only directory made.
    let mut tasks = Vec::new();
    for agent in &agents {
        let delegated = mcp
            .call(
                "shepherd_delegate",
                json!({"target": agent, "task": "finish", "sessionName": "named-only"}),
            )
            .await;
        assert!(!delegated.is_error, "{}", delegated.text);
        tasks.push(delegated.id("shepherd-task-"));
    }
    let watched = mcp.call("shepherd_watch", json!({"id": tasks})).await;
    assert!(watched.text.contains("completed"), "{}", watched.text);
    assert_eq!(session_dirs(&world), vec!["0001-named-only".to_owned()]);

    // A task without a name makes the host's own session, which a later spawn then names.
    let task = mcp
        .call(
            "shepherd_delegate",
            json!({"target": agents[0], "task": "finish"}),
        )
        .await
        .id("shepherd-task-");
    let watched = mcp.call("shepherd_watch", json!({"id": [task]})).await;
    assert!(watched.text.contains("completed"), "{}", watched.text);
    let dirs = session_dirs(&world);
    assert_eq!(dirs.len(), 2, "{dirs:?}");
    assert!(dirs[1].starts_with("0002-orchestrator-"), "{dirs:?}");
    let spawned = mcp
        .call(
            "shepherd_spawn",
            json!({"agent": "finisher", "label": "three"}),
        )
        .await;
    assert!(
        spawned
            .text
            .contains(&format!("agent fieldnote: .shepherd/sessions/{}", dirs[1])),
        "{}",
        spawned.text
    );
    mcp.close().await;
}
