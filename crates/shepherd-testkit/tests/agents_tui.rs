//! Claude Code, Codex, Gemini CLI and opencode as TUIs in a private tmux server, offline: the
//! launch from `AgentEnv::tui` opens straight to the prompt (no onboarding, trust or
//! authentication dialog), a typed task makes the model call the test MCP server's tool and
//! answer, the answer shows on the screen, and when the server is killed nothing started for
//! the agent is left running (Codex runs with `--no-daemon`). Skipped (one line each) when an
//! agent or tmux is missing; a missing agent fails under `SHEPHERD_REQUIRE_AGENTS=1`.

use std::time::Duration;

use serde_json::json;
use shepherd_testkit::agents::{AgentBinary, AgentEnv, McpServer, TmuxPane};
use shepherd_testkit::fake_llm::{Exhausted, FakeLlm, Script, Step, TOOLLESS_QUEUE};
use shepherd_testkit::test_mcp::{Events, TOOL, answer};

const MCP_BIN: &str = env!("CARGO_BIN_EXE_shepherd-test-mcp");
/// opencode's first start in a fresh HOME takes 15–40 s to paint on a loaded two-core machine.
const START: Duration = Duration::from_secs(120);
const TURN: Duration = Duration::from_secs(90);
const FINAL_WORDS: &str = "Done: the TUI wrote its line.";
const PROMPT: &str = "Append a line with the test tool";

fn tui_turn_with_an_mcp_call(agent: &AgentBinary) {
    if !TmuxPane::available() {
        println!("skipping: tmux is not installed");
        return;
    }
    let host = agent.host;
    let line = format!("typed into {}", host.wrapper());
    let script = Script::new()
        .with_responses([
            Step::tool_call_suffix(TOOL, json!({ "line": line })),
            Step::text(FINAL_WORDS).expecting(answer(1, &line)),
        ])
        .with_toolless(Step::text("Fake title"))
        .with_exhausted(Exhausted::Step(Box::new(Step::text(
            "fake-llm: the script is finished",
        ))));
    let fake = FakeLlm::start(script).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("lines.txt");
    let mut events = Events::bind().unwrap();
    let server = McpServer::new("test", MCP_BIN).args([
        "--file".to_owned(),
        file.to_string_lossy().into_owned(),
        "--notify".to_owned(),
        events.path().to_string_lossy().into_owned(),
    ]);
    let env = AgentEnv::builder(host, &fake)
        .mcp_server(server)
        .build()
        .unwrap();

    let mut pane = TmuxPane::start(&env.tui(agent), 160, 45).unwrap();
    pane.wait_for(host.tui_ready_text(), START)
        .unwrap_or_else(|err| panic!("{host}: {err}"));
    // Claude Code's TUI connects MCP servers in the background: a task typed before their
    // tools are registered reaches the model without them.
    events
        .wait_for("list_tools", START)
        .unwrap_or_else(|err| panic!("{host}: {err}"));
    pane.wait_mcp_ready(host, "test", 1, START)
        .unwrap_or_else(|err| panic!("{host}: {err}"));
    pane.type_text(PROMPT).unwrap();
    // Enter only once the text is in the input box, so it is not taken as part of a paste.
    pane.wait_for(PROMPT, TURN).unwrap();
    pane.press(&["Enter"]).unwrap();
    let screen = pane
        .wait_for(FINAL_WORDS, TURN)
        .unwrap_or_else(|err| panic!("{host}: {err}"));

    assert_eq!(std::fs::read_to_string(&file).unwrap(), format!("{line}\n"));
    let turn: Vec<_> = fake
        .requests()
        .into_iter()
        .filter(|r| r.queue != TOOLLESS_QUEUE)
        .collect();
    assert_eq!(turn.len(), 2, "{host}: {screen}");
    assert!(turn[0].contains(PROMPT));
    assert!(
        turn[1]
            .tool_results()
            .iter()
            .any(|r| r.contains(&answer(1, &line)))
    );
    assert!(fake.mismatches().is_empty(), "{:?}", fake.mismatches());
    assert!(!env.processes().is_empty(), "{host}: the agent runs");

    // Closing the terminal ends the agent and everything it started.
    pane.kill();
    let stragglers = env.reap_processes(Duration::from_secs(15));
    assert!(stragglers.is_empty(), "{host} left {stragglers:?}");
}

shepherd_testkit::agent_tests!(tui_turn_with_an_mcp_call);
