//! The real Claude Code, Codex, Gemini CLI and opencode as confined sheep: each runs headless
//! in the real bubblewrap with `sandbox: workspace` and `network: model`, offline against the
//! fake model in its own wire format. The model is reached through the allow-listing proxy, the
//! agent's shell call writes the project, `shepherd_done` goes through the broker socket, and
//! the task completes; nothing is left running once the broker stops.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::harness_support;

use harness_support::{World, harness, sheep_script};
use shepherd_testkit::agents::AgentBinary;
use shepherd_testkit::fake_llm::FakeLlm;

fn confined_round_trip(agent: &AgentBinary) {
    let host = agent.host;
    let fake = FakeLlm::start(sheep_script()).unwrap();
    let world = World::new(agent, &fake);
    let agents = world.env.home().join(".agents/agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        agents.join("confined.md"),
        format!(
            "---\nname: confined\ndescription: A confined worker.\nharness: {}\nsandbox: workspace\nnetwork: model\n---\nYou are a worker.\n",
            harness(host)
        ),
    )
    .unwrap();
    let spawned = world.json(&["spawn", "confined", "--backend", "headless", "--json"]);
    let id = spawned["agentId"].as_str().unwrap().to_owned();
    let status = world.json(&["status", &id, "--json"]);
    assert_eq!(status["sandbox"], "workspace", "{host}: {status}");
    let task = world.delegate(&id, "Write hello into out.txt, then report.", &[]);
    let watched = world.json(&["watch", &task, "--wait", "240", "--json"]);
    let settled = &watched["settled"][0];
    assert_eq!(settled["status"], "completed", "{host}: {watched}");
    assert_eq!(settled["summary"], "wrote out.txt", "{host}: {watched}");
    let written = std::fs::read_to_string(world.project().join("out.txt"));
    assert_eq!(
        written.ok().as_deref(),
        Some("hello"),
        "{host}: the shell call ran"
    );
    world.stop_and_check_nothing_left();
}

shepherd_testkit::agent_tests!(confined_round_trip);
