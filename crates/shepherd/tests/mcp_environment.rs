//! `shepherd mcp` says what the herd it would start lacks from its environment: the variables
//! the user's and the project's agent definitions need (`needs-env`, a coding agent's key) and
//! the programs their sheep run. Once, as a `warning` log message when the session starts, and
//! once as a paragraph after the first tool result — worded for the host its `clientInfo`
//! names. A server whose environment lacks nothing says nothing.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::mcp_support;

use std::time::Duration;

use mcp_support::{HostOptions, Mcp, World, sheep};
use serde_json::json;

const NOTICE: &str = "Shepherd's environment lacks what some sheep need";

fn define_needing(world: &World, name: &str, needs: &str) {
    let sheep = mcp_support::herd_support::test_sheep_bin();
    world.define_file(
        name,
        &format!(
            "---\nname: {name}\ndescription: Needs a key.\ncommand: [\"{}\"]\nneeds-env: [{needs}]\n---\nA test sheep.\n",
            sheep.display()
        ),
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_the_sheep_lack_is_said_once_as_a_log_and_after_the_first_result() {
    let world = World::new();
    define_needing(&world, "keyed", "SHEPHERD_TEST_PROVIDER_KEY");
    // A project definition counts too.
    let project_agents = world.project.join(".pi/agents");
    std::fs::create_dir_all(&project_agents).unwrap();
    std::fs::write(
        project_agents.join("builder.md"),
        "---\nname: builder\ndescription: Builds.\ncommand: [\"/nowhere/builder\"]\n---\nBuilds.\n",
    )
    .unwrap();
    let mcp = Mcp::start(&world, &[], HostOptions::default()).await;

    let log = mcp
        .wait_log(Duration::from_secs(20), |log| {
            log["data"]["text"]
                .as_str()
                .is_some_and(|t| t.starts_with(NOTICE))
        })
        .await;
    assert_eq!(log["level"], "warning", "{log}");
    assert_eq!(log["logger"], "shepherd", "{log}");
    let text = log["data"]["text"].as_str().unwrap();
    assert!(
        text.contains("SHEPHERD_TEST_PROVIDER_KEY is not set (named in the `needs-env` of keyed)")
            && text.contains("`/nowhere/builder` is not found (needed by builder)")
            && text.contains(
                "Set SHEPHERD_TEST_PROVIDER_KEY in the environment your MCP host starts `shepherd mcp` with"
            ),
        "{text}"
    );

    let first = mcp.call("shepherd", json!({"action": "agents"})).await;
    assert!(!first.is_error, "{}", first.text);
    assert!(first.text.contains("keyed"), "{}", first.text);
    assert!(first.text.ends_with(text), "{}", first.text);
    let second = mcp.call("shepherd", json!({"action": "herd"})).await;
    assert!(!second.text.contains(NOTICE), "{}", second.text);
    let logs = mcp.seen.logs.lock().unwrap().clone();
    let notices = logs
        .iter()
        .filter(|l| {
            l["data"]["text"]
                .as_str()
                .is_some_and(|t| t.starts_with(NOTICE))
        })
        .count();
    assert_eq!(notices, 1, "{logs:#?}");
    mcp.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_environment_that_has_everything_is_not_mentioned() {
    let mut world = World::new();
    define_needing(&world, "keyed", "SHEPHERD_TEST_PROVIDER_KEY");
    sheep(&world, "plain", "done completed {task}");
    world
        .extra_env
        .push(("SHEPHERD_TEST_PROVIDER_KEY".into(), "k".into()));
    let mcp = Mcp::start(&world, &[], HostOptions::default()).await;
    let first = mcp.call("shepherd", json!({"action": "agents"})).await;
    assert!(first.text.contains("keyed"), "{}", first.text);
    assert!(!first.text.contains(NOTICE), "{}", first.text);
    // Nor did a log message say anything.
    let logs = mcp.seen.logs.lock().unwrap().clone();
    assert!(
        logs.iter().all(|l| !l.to_string().contains(NOTICE)),
        "{logs:#?}"
    );
    mcp.close().await;
}

/// A host that has a base URL its sheep would use, and does not pass it on (Codex's bare
/// environment), is told so: the server reads the environment of the program that started it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_base_url_the_host_has_and_does_not_pass_is_named() {
    let world = World::new();
    // A Claude Code sheep with a key to use: only its endpoint is missing.
    world.define_file(
        "reviewer",
        "---\nname: reviewer\ndescription: Reviews.\nharness: claude-code\n---\nReview.\n",
    );
    let server = world.command(&["mcp"]);
    // The host: a shell with the endpoint and the key, starting the server without the
    // endpoint (and staying its parent: the server is not its last command).
    let mut host = std::process::Command::new("sh");
    host.arg("-c")
        .arg("env -u ANTHROPIC_BASE_URL \"$0\" mcp; exit $?")
        .arg(server.get_program())
        .current_dir(&world.project)
        .env_clear()
        .envs(
            server
                .get_envs()
                .filter_map(|(name, value)| value.map(|value| (name, value))),
        )
        .env("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
        .env("ANTHROPIC_API_KEY", "k");
    let mcp = Mcp::start_with(host, HostOptions::default()).await;
    let first = mcp.call("shepherd", json!({"action": "agents"})).await;
    assert!(
        first.text.contains(
            "ANTHROPIC_BASE_URL is set where the MCP host runs but not passed on (used by the sheep of reviewer)"
        ) && first
            .text
            .contains("Set ANTHROPIC_BASE_URL in the environment"),
        "{}",
        first.text
    );
    // The key was passed, so it is not named.
    assert!(!first.text.contains("ANTHROPIC_API_KEY"), "{}", first.text);
    mcp.close().await;
}
