//! The real Claude Code, Codex, Gemini CLI and opencode as shepherds, through `shepherd mcp`,
//! offline against the fake model (each host's own wire format) and hermetic (a private HOME
//! per run). Each host gets Shepherd exactly as `docs/mcp.md` says to add it (the install
//! line or config block is read from that file), then its model — scripted — lists nothing
//! it does not need and:
//!
//! 1. spawns a `command` sheep (the test sheep, which waits for a message before it is done),
//! 2. delegates a task to it,
//! 3. watches the task for a second: "still running", naming the call to make,
//! 4. messages the sheep,
//! 5. watches again until the task settles with the message in its summary,
//! 6. closes the sheep, and says so.
//!
//! Every tool result is checked in the next model request (a script mismatch fails the test),
//! the ids the model passes back are the ones the tools returned, the task's note is final
//! with the sheep's summary and listed in `shepherd.md`, and nothing the run started is left
//! running afterwards. A host `scripts/setup` did not install is skipped with one line, or
//! fails the test under `SHEPHERD_REQUIRE_AGENTS=1`.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};
use shepherd_testkit::agents::{self, AgentBinary, AgentEnv, Host, RunOutput};
use shepherd_testkit::fake_llm::{Exhausted, FakeLlm, Script, Step, TOOLLESS_QUEUE};

/// Every tool `shepherd mcp` offers a parent.
const PARENT_TOOLS: [&str; 12] = [
    "shepherd",
    "shepherd_close",
    "shepherd_delegate",
    "shepherd_inbox",
    "shepherd_message",
    "shepherd_prompt",
    "shepherd_read",
    "shepherd_resume",
    "shepherd_run",
    "shepherd_spawn",
    "shepherd_status",
    "shepherd_watch",
];

const SHEPHERD: &str = env!("CARGO_BIN_EXE_shepherd");
/// A run takes 10–40 s alone; four hosts at once on two cores take longer.
const RUN: Duration = Duration::from_secs(300);
const FINAL_WORDS: &str = "The sheep heard bonjour, finished, and is closed.";

/// The install snippet `docs/mcp.md` gives for `host` (the block after its marker).
fn install_snippet(host: Host) -> String {
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/mcp.md");
    let text = std::fs::read_to_string(&docs).unwrap();
    let marker = match host {
        Host::ClaudeCode => "<!-- install: claude-code -->",
        Host::Codex => "<!-- install: codex -->",
        Host::Gemini => "<!-- install: gemini -->",
        Host::Opencode => "<!-- install: opencode -->",
    };
    let after = text
        .split(marker)
        .nth(1)
        .unwrap_or_else(|| panic!("{marker} missing in docs/mcp.md"));
    let block = after.split("```").nth(1).unwrap();
    let (_lang, body) = block.split_once('\n').unwrap();
    body.trim().to_owned()
}

/// Applies the documented install to this run's settings, with this build's `shepherd`.
fn install(host: Host, agent: &AgentBinary, env: &AgentEnv) {
    let snippet = install_snippet(host);
    if host == Host::Opencode {
        let added: Value = serde_json::from_str(&snippet).unwrap();
        let mut server = added["mcp"]["shepherd"].clone();
        assert_eq!(server["command"][0], "shepherd", "{snippet}");
        server["command"][0] = json!(SHEPHERD);
        let config = env
            .vars()
            .into_iter()
            .find(|(name, _)| name == "OPENCODE_CONFIG")
            .map(|(_, path)| PathBuf::from(path))
            .unwrap();
        let mut settings: Value =
            serde_json::from_str(&std::fs::read_to_string(&config).unwrap()).unwrap();
        settings["mcp"]["shepherd"] = server;
        std::fs::write(&config, settings.to_string()).unwrap();
        return;
    }
    let mut words: Vec<String> = snippet.split_whitespace().map(str::to_owned).collect();
    let program = words.remove(0);
    assert_eq!(program, host.wrapper(), "{snippet}");
    let at = words.len() - 2;
    assert_eq!(
        words[at..],
        ["shepherd", "mcp"],
        "the snippet ends with `shepherd mcp`: {snippet}"
    );
    words[at] = SHEPHERD.to_owned();
    let mut command = Command::new(&agent.path);
    env.apply(&mut command)
        .args(&words)
        .stdin(std::process::Stdio::null());
    let output = agents::run(&mut command, Duration::from_secs(60)).unwrap();
    assert!(output.success(), "{host}: {snippet}\n{}", describe(&output));
}

fn describe(output: &RunOutput) -> String {
    format!(
        "{} after {:?}\nstdout:\n{}\nstderr:\n{}",
        output.status, output.elapsed, output.stdout, output.stderr
    )
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
    let env = AgentEnv::builder(host, &fake)
        .allow_mcp_server("shepherd")
        .build()
        .unwrap();
    // The sheep: a `command` agent in the user's agent directory (the host's HOME).
    let agents = env.home().join(".pi/agent/agents");
    std::fs::create_dir_all(&agents).unwrap();
    let sheep = Path::new(SHEPHERD).with_file_name("shepherd-test-sheep");
    let command = json!([sheep, "--on-task", "await; done completed heard {reply}"]);
    std::fs::write(
        agents.join("waiter.md"),
        format!("---\nname: waiter\ndescription: Waits for a word.\ncommand: {command}\n---\nA test sheep.\n"),
    )
    .unwrap();
    install(host, agent, &env);

    let prompt = "Use Shepherd: spawn a waiter, give it a task, watch it, send it a word, and close it when it is done.";
    let output = agents::run(&mut env.headless(agent, prompt), RUN).unwrap();
    assert!(output.success(), "{host}: {}", describe(&output));

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
    let outcome = env.parse_output(&output.stdout);
    assert_eq!(
        outcome.final_text.as_deref(),
        Some(FINAL_WORDS),
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

shepherd_testkit::agent_tests!(shepherd_by_mcp);

/// The README's one-step install lines are the ones tested above.
#[test]
fn the_readme_gives_the_tested_install_lines() {
    let readme = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md");
    let readme = std::fs::read_to_string(readme).unwrap();
    for host in Host::ALL {
        let snippet = install_snippet(host);
        assert!(
            readme.lines().any(|line| line.starts_with(&snippet)),
            "the README lacks {host}'s install line `{snippet}`"
        );
    }
}
