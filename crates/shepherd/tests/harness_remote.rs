//! Claude Code, Codex, Gemini CLI and opencode as sheep on another machine: a loopback sshd
//! host whose user has the agent installed and configured (offline, against the fake model);
//! `spawn --harness … --host` composes the sheep on the host from that user's configuration,
//! the agent does its task there (the file it writes is in the host's project) and calls
//! `shepherd_done` through the forwarded socket, and the note on the parent's machine has the
//! agent's final words and figures.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::harness_support;

use harness_support::{FINAL_WORDS, World, field, harness, sheep_script};
use shepherd_testkit::agents::AgentBinary;
use shepherd_testkit::fake_llm::FakeLlm;
use shepherd_testkit::sshd::{LoopbackHost, required};

fn a_sheep_runs_on_a_host(agent: &AgentBinary) {
    if !required() {
        return;
    }
    let fake = FakeLlm::start(sheep_script()).unwrap();
    let world = World::new(agent, &fake);
    // The host's user: the agent's configuration, the agent itself, and a PATH with node.
    let mut vars: Vec<(String, String)> = world
        .env
        .vars()
        .into_iter()
        .map(|(name, value)| (name, value.to_string_lossy().into_owned()))
        .collect();
    vars.push((
        agent.host.env_var().to_owned(),
        agent.path.display().to_string(),
    ));
    vars.push(("PATH".to_owned(), std::env::var("PATH").unwrap_or_default()));
    let devbox = LoopbackHost::start_with_env("devbox", &vars).unwrap();
    let settings = serde_json::json!({ "hosts": { "devbox": {
        "destination": "devbox",
        "projectPath": devbox.project,
        "shepherd": harness_support::SHEPHERD,
        "sshArgs": ["-F", devbox.ssh_config().unwrap()],
    }}});
    let config = world.env.home().join(".pi/agent/pi-shepherd");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(config.join("config.json"), settings.to_string()).unwrap();

    let spawned = world.json(&[
        "spawn",
        "worker",
        "--harness",
        harness(agent.host),
        "--host",
        "devbox",
        "--json",
    ]);
    let id = spawned["agentId"].as_str().unwrap().to_owned();
    let task = world.delegate(&id, "write hello into out.txt", &[]);
    let watched = world.json(&["watch", &task, "--wait", "240", "--json"]);
    let done = &watched["settled"][0];
    assert_eq!(done["status"], "completed", "{watched}");
    assert_eq!(done["summary"], "wrote out.txt", "{watched}");
    assert_eq!(
        std::fs::read_to_string(devbox.project.join("out.txt")).unwrap(),
        "hello",
        "the agent worked in the host's project"
    );
    world.json(&["close", &id, "--json"]);
    let note = std::fs::read_to_string(done["note"].as_str().unwrap()).unwrap();
    assert!(note.contains(FINAL_WORDS), "{note}");
    assert!(
        field(&note, "toolCalls").is_some_and(|n| n.parse::<u32>().unwrap_or(0) >= 2),
        "the driver on the host reported the figures: {note}"
    );
}

shepherd_testkit::agent_tests!(a_sheep_runs_on_a_host);
