//! The real Claude Code, Codex, Gemini CLI and opencode as confined sheep: each runs headless
//! in the real bubblewrap with `sandbox: workspace` and `network: model`, offline against the
//! fake model in its own wire format. The model is reached through the allow-listing proxy, the
//! agent's shell call writes the project, `shepherd_done` goes through the broker socket, and
//! the task completes; nothing is left running once the broker stops. And an agent installed
//! behind a wrapper under `/tmp`, which runs it from a directory beside its own (as version
//! managers' shims and `scripts/setup`'s `.tools/bin` do), still runs confined.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::harness_support;

use harness_support::{World, harness, sheep_script};
use shepherd_testkit::agents::{AgentBinary, Host};
use shepherd_testkit::fake_llm::FakeLlm;

fn confined_round_trip(agent: &AgentBinary) {
    let fake = FakeLlm::start(sheep_script()).unwrap();
    let world = World::new(agent, &fake);
    round_trip(&world);
}

/// Codex installed as a tool directory under `/tmp`: `bin/codex` runs `libexec/codex` beside
/// its own directory, which runs the agent. Only the wrapper's directory is named anywhere.
#[test]
fn an_agent_behind_a_wrapper_under_tmp_runs_confined() {
    use std::os::unix::fs::PermissionsExt;
    let Some(agent) = shepherd_testkit::agents::installed_or_skip(
        Host::Codex,
        "an_agent_behind_a_wrapper_under_tmp_runs_confined",
    ) else {
        return;
    };
    let fake = FakeLlm::start(sheep_script()).unwrap();
    let mut world = World::new(&agent, &fake);
    let tools = world.env.root().join("tools");
    let write = |path: &std::path::Path, text: String| {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    };
    write(
        &tools.join("bin/codex"),
        "#!/bin/sh\ntools=$(CDPATH= cd -- \"$(dirname -- \"$0\")/..\" && pwd)\nexec \"$tools/libexec/codex\" \"$@\"\n"
            .to_owned(),
    );
    write(
        &tools.join("libexec/codex"),
        format!("#!/bin/sh\nexec {} \"$@\"\n", agent.path.display()),
    );
    world.agent.path = tools.join("bin/codex");
    round_trip(&world);
}

/// A confined worker on `world`'s agent writes a file with its shell tool and completes.
fn round_trip(world: &World) {
    let host = world.agent.host;
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
