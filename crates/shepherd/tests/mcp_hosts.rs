//! The real Claude Code, Codex, Gemini CLI and opencode as shepherds, through `shepherd mcp`,
//! offline against the fake model (each host's own wire format) and hermetic (a private HOME
//! per run). Each host is installed as a user has it, with nothing granted, then set up
//! exactly as `docs/mcp.md` says (`host_setup` reads the blocks from that file: the install
//! line or configuration block, and the headless command line, run with `sh -c` as written).
//! The sheep is a `command` agent that fails its task unless the user's provider key
//! (`ANTHROPIC_API_KEY`, set in the host's environment as a user's shell would) reaches it, so
//! a host that keeps the key from Shepherd fails the test. Its model — scripted — lists
//! nothing it does not need and:
//!
//! 1. spawns the sheep,
//! 2. delegates a task to it,
//! 3. watches the task for a second: "still running", naming the call to make,
//! 4. messages the sheep,
//! 5. watches again until the task settles with the message in its summary,
//! 6. closes the sheep, and says so.
//!
//! Every tool result is checked in the next model request (a script mismatch fails the test),
//! the ids the model passes back are the ones the tools returned, the task's note is final
//! with the sheep's summary and listed in `shepherd.md`, and nothing the run started is left
//! running afterwards. Claude Code runs twice: allowed per run (`--allowedTools`) and allowed
//! in its settings. A Codex host given only `codex mcp add` (a bare environment) is told in
//! its first tool result which variable to pass and where. A host `scripts/setup` did not
//! install is skipped with one line, or fails the test under `SHEPHERD_REQUIRE_AGENTS=1`.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::host_setup;

use std::path::Path;
use std::time::Duration;

use host_setup::{SHEPHERD, UserWorld, describe, required};
use serde_json::json;
use shepherd_testkit::agents::{self, AgentBinary, AgentEnv, Host};
use shepherd_testkit::fake_llm::{Exhausted, FakeLlm, Script, Step, TOOLLESS_QUEUE};

/// Every tool `shepherd mcp` offers a parent.
const PARENT_TOOLS: [&str; 13] = [
    "shepherd",
    "shepherd_close",
    "shepherd_delegate",
    "shepherd_inbox",
    "shepherd_merge",
    "shepherd_message",
    "shepherd_prompt",
    "shepherd_read",
    "shepherd_resume",
    "shepherd_run",
    "shepherd_spawn",
    "shepherd_status",
    "shepherd_watch",
];

/// A run takes 10–40 s alone; four hosts at once on two cores take longer.
const RUN: Duration = Duration::from_secs(300);
const FINAL_WORDS: &str = "The sheep heard bonjour, finished, and is closed.";
/// The provider key in the user's shell, which the sheep needs.
const KEY_VAR: &str = "ANTHROPIC_API_KEY";
const USER_KEY: &str = "sk-ant-the-users-own-key-0000000000";

/// A user's machine with `agent` installed (nothing granted) and the sheep defined: a
/// `command` agent that needs [`KEY_VAR`].
fn user_world(agent: &AgentBinary, fake: &FakeLlm) -> UserWorld {
    let mut builder = AgentEnv::builder(agent.host, fake).user_setup();
    // Claude Code's own key is the user's provider key; the others get it beside theirs.
    if agent.host != Host::ClaudeCode {
        builder = builder.var(KEY_VAR, USER_KEY);
    }
    let env = builder.build().unwrap();
    // The user's project is a git repository (`codex exec` refuses to run outside one).
    let git = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(env.work_dir())
        .status()
        .unwrap();
    assert!(git.success());
    let agents_dir = env.home().join(".pi/agent/agents");
    std::fs::create_dir_all(&agents_dir).unwrap();
    let sheep = Path::new(SHEPHERD).with_file_name("shepherd-test-sheep");
    let command = json!([
        sheep,
        "--on-task",
        format!("need {KEY_VAR}; await; done completed heard {{reply}}")
    ]);
    std::fs::write(
        agents_dir.join("waiter.md"),
        format!(
            "---\nname: waiter\ndescription: Waits for a word.\ncommand: {command}\nneeds-env: [{KEY_VAR}]\n---\nA test sheep.\n"
        ),
    )
    .unwrap();
    UserWorld::new(env, agent)
}

/// The model's side of the scenario.
fn script() -> Script {
    let agent = ("{{agent}}", "shepherd-agent-");
    let task = ("{{task}}", "shepherd-task-");
    Script::new()
        .with_responses([
            Step::tool_call_suffix(
                "shepherd_spawn",
                json!({"agent": "waiter", "label": "mcp host"}),
            ),
            Step::tool_call_suffix(
                "shepherd_delegate",
                json!({"target": agent.0, "task": "Wait for a word, then report it."}),
            )
            .filling(agent.0, agent.1)
            .expecting("shepherd_spawn spawned waiter: mcp host"),
            Step::tool_call_suffix("shepherd_watch", json!({"id": [task.0], "wait": 1}))
                .filling(task.0, task.1)
                .expecting("Delegated task to waiter: mcp host"),
            Step::tool_call_suffix(
                "shepherd_message",
                json!({"target": agent.0, "message": "bonjour"}),
            )
            .filling(agent.0, agent.1)
            .expecting("still running — call shepherd_watch"),
            Step::tool_call_suffix("shepherd_watch", json!({"id": [task.0]}))
                .filling(task.0, task.1)
                .expecting("Message queued to waiter: mcp host"),
            Step::tool_call_suffix("shepherd_close", json!({"id": agent.0}))
                .filling(agent.0, agent.1)
                .expecting("completed (rc 0): heard bonjour"),
            Step::text(FINAL_WORDS).expecting("closed waiter: mcp host"),
        ])
        .with_toolless(Step::text("Fake title"))
        .with_exhausted(Exhausted::Step(Box::new(Step::text(
            "fake-llm: the script is finished",
        ))))
}

fn shepherd_by_mcp(agent: &AgentBinary) {
    let host = agent.host;
    let fake = FakeLlm::start(script()).unwrap();
    let world = user_world(agent, &fake);
    world.apply("install", host);
    // The documented headless line; for Claude Code the one that allows the tools itself.
    let run = required("run", host).lines().pop().unwrap();
    scenario(&world, &fake, &run);
}

shepherd_testkit::agent_tests!(shepherd_by_mcp);

/// Claude Code with its tools allowed in its settings, and the plain `claude -p` line.
#[test]
fn claude_code_allowed_in_its_settings() {
    let Some(agent) = agents::installed_or_skip(
        Host::ClaudeCode,
        "mcp_hosts::claude_code_allowed_in_its_settings",
    ) else {
        return;
    };
    let fake = FakeLlm::start(script()).unwrap();
    let world = user_world(&agent, &fake);
    world.apply("install", Host::ClaudeCode);
    world.apply("allow", Host::ClaudeCode);
    let run = required("run", Host::ClaudeCode).lines()[0].clone();
    assert!(!run.contains("--allowedTools"), "{run}");
    scenario(&world, &fake, &run);
}

/// Runs the documented `run` line and checks what the scripted scenario left.
fn scenario(world: &UserWorld, fake: &FakeLlm, run: &str) {
    let host = world.agent.host;
    let env = &world.env;
    let output = world.sh(run, RUN);
    assert!(output.success(), "{host}: `{run}`\n{}", describe(&output));

    // Every tool result was what the next step expected, and every id was filled.
    let mismatches = fake.mismatches();
    assert!(
        mismatches.is_empty(),
        "{host}: {mismatches:#?}\n{}",
        describe(&output)
    );
    let turn: Vec<_> = fake
        .requests()
        .into_iter()
        .filter(|r| r.queue != TOOLLESS_QUEUE)
        .collect();
    assert_eq!(
        turn.len(),
        7,
        "{host}: {} model requests\n{}",
        turn.len(),
        describe(&output)
    );
    let offered = turn[0].tool_names();
    // Every tool reached the model: no host dropped one for its schema.
    for tool in PARENT_TOOLS {
        let name = host.mcp_tool_name("shepherd", tool);
        assert!(
            offered.contains(&name),
            "{host}: {name} not offered: {offered:?}"
        );
    }
    // The documented line prints the host's final words as plain text.
    assert!(
        output.stdout.contains(FINAL_WORDS),
        "{host}: {}",
        describe(&output)
    );

    // The fieldnotes: one session in the host's project, the note final with the summary.
    let sessions = env.work_dir().join(".shepherd/sessions");
    let session = std::fs::read_dir(&sessions)
        .unwrap_or_else(|e| panic!("{host}: {}: {e}", sessions.display()))
        .flatten()
        .map(|e| e.path())
        .find(|p| p.is_dir() && !p.file_name().unwrap().to_string_lossy().starts_with('.'))
        .unwrap_or_else(|| panic!("{host}: no session in {}", sessions.display()));
    let index = std::fs::read_to_string(session.join("shepherd.md")).unwrap();
    let note = std::fs::read_dir(&session)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("waiter-"))
        })
        .unwrap_or_else(|| panic!("{host}: no waiter note in {}", session.display()));
    let text = std::fs::read_to_string(&note).unwrap();
    assert!(
        text.contains("completed") && text.contains("heard bonjour"),
        "{host}: {text}"
    );
    assert!(
        text.contains("Wait for a word, then report it."),
        "{host}: {text}"
    );
    let file = note.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        index.contains(&file) && index.contains("completed"),
        "{host}: {index}"
    );

    // The host stopped its server; the server closed its herd: nothing is left running.
    let left = env.reap_processes(Duration::from_secs(30));
    assert!(left.is_empty(), "{host}: left running: {left:?}");
}

/// The README gives the tested lines: every line of every host's blocks.
#[test]
fn the_readme_gives_the_tested_lines() {
    let readme = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md");
    let readme = std::fs::read_to_string(readme).unwrap();
    for host in Host::ALL {
        for kind in ["install", "allow", "run"] {
            let Some(block) = host_setup::block(kind, host) else {
                continue;
            };
            for line in block.commands() {
                assert!(
                    readme.contains(&line),
                    "the README lacks {host}'s {kind} line `{line}`"
                );
            }
        }
    }
}

/// Codex given only `codex mcp add` and the approval (no `env_vars`): its server gets a bare
/// environment, so its first tool result says which variable to pass and where, and its herd's
/// sockets are still in the user's own runtime directory (found in Codex's environment), where
/// the user's `shepherd` looks.
#[test]
fn codex_with_a_bare_environment_is_told_what_to_pass() {
    let Some(agent) = agents::installed_or_skip(
        Host::Codex,
        "mcp_hosts::codex_with_a_bare_environment_is_told_what_to_pass",
    ) else {
        return;
    };
    let script = Script::new()
        .with_responses([
            Step::tool_call_suffix("shepherd", json!({"action": "herd"})),
            Step::text("Noted.")
                .expecting(format!(
                    "env_vars = [\"{KEY_VAR}\"] under [mcp_servers.shepherd] in ~/.codex/config.toml"
                ))
                .held_until("looked"),
        ])
        .with_toolless(Step::text("Fake title"))
        .with_exhausted(Exhausted::Step(Box::new(Step::text(
            "fake-llm: the script is finished",
        ))));
    let fake = FakeLlm::start(script).unwrap();
    let world = user_world(&agent, &fake);
    let added = world.sh(
        "codex mcp add shepherd -- shepherd mcp",
        Duration::from_secs(60),
    );
    assert!(added.success(), "{}", describe(&added));
    let config = world.env.home().join(".codex/config.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    let added = "args = [\"mcp\"]\n";
    assert!(text.contains(added), "{text}");
    let text = text.replacen(
        added,
        &format!("{added}default_tools_approval_mode = \"approve\"\n"),
        1,
    );
    std::fs::write(&config, text).unwrap();

    let mut exec = world.command("codex");
    exec.args(["exec", "Use Shepherd."]);
    let run = std::thread::spawn(move || agents::run(&mut exec, RUN).unwrap());
    let requests = fake
        .wait_until("the request after the first tool call", RUN, |requests| {
            requests
                .iter()
                .filter(|r| r.queue != TOOLLESS_QUEUE)
                .count()
                >= 2
        })
        .unwrap();
    // The first tool result names the variable, the agent and Codex's setting.
    let result = requests
        .iter()
        .filter(|r| r.queue != TOOLLESS_QUEUE)
        .nth(1)
        .unwrap()
        .last_input_text();
    assert!(
        result.contains(&format!(
            "{KEY_VAR} is not set (named in the `needs-env` of waiter)"
        )),
        "{result}"
    );
    // The herd's broker listens in the user's runtime directory.
    let sockets: Vec<String> = std::fs::read_dir(world.env.runtime_dir().join("shepherd"))
        .map(|dir| {
            dir.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|name| name.starts_with("b-") && name.ends_with(".sock"))
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(sockets.len(), 1, "{sockets:?}");
    fake.release("looked");
    let output = run.join().unwrap();
    assert!(output.success(), "{}", describe(&output));
    assert!(fake.mismatches().is_empty(), "{:#?}", fake.mismatches());
    let left = world.env.reap_processes(Duration::from_secs(30));
    assert!(left.is_empty(), "left running: {left:?}");
}
