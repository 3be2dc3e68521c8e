//! Claude Code, Codex, Gemini CLI and opencode, the real programs, headless and offline against
//! the fake model, each with `shepherd-test-mcp` given for the run: the model calls the MCP
//! tool, sees its result in the next request, and ends with a text the agent prints; the model
//! thinks and calls the agent's own shell tool; and a provider error ends the run with that
//! error. Each test is skipped (one line) when
//! `scripts/setup` has not installed that agent, and fails under `SHEPHERD_REQUIRE_AGENTS=1`.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use shepherd_testkit::agents::{self, AgentBinary, AgentEnv, Host, McpServer, RunOutput};
use shepherd_testkit::fake_llm::{Exhausted, FakeLlm, Script, Step, TOOLLESS_QUEUE};
use shepherd_testkit::test_mcp::{TOOL, answer};

/// A run takes 2–10 s alone; four agents at once on two cores take longer.
const RUN: Duration = Duration::from_secs(180);
const MCP_BIN: &str = env!("CARGO_BIN_EXE_shepherd-test-mcp");
/// What the model says after the tool call.
const FINAL_WORDS: &str = "Done: the line is in the file.";

/// The fake model and an environment with the test MCP server as `test`, writing under `dir`.
fn setup(agent: &AgentBinary, script: Script, dir: &Path) -> (FakeLlm, AgentEnv) {
    // An unexpected extra request gets a plain answer: every agent retries server errors.
    let script = script
        .with_toolless(Step::text("Fake title"))
        .with_exhausted(Exhausted::Step(Box::new(Step::text(
            "fake-llm: the script is finished",
        ))));
    let fake = FakeLlm::start(script).unwrap();
    let server = McpServer::new("test", MCP_BIN).args([
        "--file".into(),
        dir.join("lines.txt").to_string_lossy().into_owned(),
        "--log".into(),
        dir.join("mcp.jsonl").to_string_lossy().into_owned(),
    ]);
    let env = AgentEnv::builder(agent.host, &fake)
        .mcp_server(server)
        .build()
        .unwrap();
    (fake, env)
}

fn describe(output: &RunOutput) -> String {
    format!(
        "{} after {:?}\nstdout:\n{}\nstderr:\n{}",
        output.status, output.elapsed, output.stdout, output.stderr
    )
}

fn mcp_tool_call_then_text(agent: &AgentBinary) {
    let host = agent.host;
    let line = format!("hello from {}", host.wrapper());
    let script = Script::new().with_responses([
        Step::tool_call_suffix(TOOL, json!({ "line": line })),
        Step::text(FINAL_WORDS).expecting(answer(1, &line)),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let (fake, env) = setup(agent, script, dir.path());
    let prompt = "Append a line with the test tool, then say that you are done.";
    let output = agents::run(&mut env.headless(agent, prompt), RUN).unwrap();
    assert!(output.success(), "{host}: {}", describe(&output));

    // (a) The agent started the MCP server and the model's call reached it.
    let lines = std::fs::read_to_string(dir.path().join("lines.txt")).unwrap_or_default();
    assert_eq!(lines, format!("{line}\n"), "{host}: {}", describe(&output));
    let log = std::fs::read_to_string(dir.path().join("mcp.jsonl")).unwrap();
    let client: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["event"] == "initialize")
        .collect();
    assert_eq!(client[0]["client"], host.mcp_client_name(), "{log}");

    // (b) The model saw the tool under the host's name, then its result.
    let requests = fake.requests();
    let turn: Vec<_> = requests
        .iter()
        .filter(|r| r.queue != TOOLLESS_QUEUE)
        .collect();
    assert_eq!(turn.len(), 2, "{host}: {requests:#?}");
    assert!(turn.iter().all(|r| r.api == host.api()));
    assert!(
        turn[0]
            .tool_names()
            .contains(&env.mcp_tool_name("test", TOOL)),
        "{host}: {:?}",
        turn[0].tool_names()
    );
    assert!(turn[0].contains(prompt));
    assert!(
        turn[1]
            .tool_results()
            .iter()
            .any(|r| r.contains(&answer(1, &line))),
        "{host}: {:?}",
        turn[1].tool_results()
    );
    assert!(fake.mismatches().is_empty(), "{:?}", fake.mismatches());

    // (c) The agent ended with the model's text.
    let outcome = env.parse_output(&output.stdout);
    assert_eq!(
        outcome.final_text.as_deref(),
        Some(FINAL_WORDS),
        "{host}: {}",
        describe(&output)
    );
    assert_eq!(outcome.error, None);
    assert!(outcome.session_id.is_some(), "{host}: no session id");
    assert!(outcome.output_tokens.is_some_and(|n| n > 0), "{outcome:?}");
}

fn shell_call_with_thinking_then_text(agent: &AgentBinary) {
    let host = agent.host;
    let script = Script::new().with_responses([
        // No `$(…)` or `$((…))`: Gemini CLI's shell tool refuses command substitution.
        Step::shell("echo shell-ran > shell.txt && echo printed | tr a-z A-Z")
            .with_thinking("I will run the command."),
        Step::text(FINAL_WORDS).with_thinking("It ran."),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let (fake, env) = setup(agent, script, dir.path());
    let output = agents::run(&mut env.headless(agent, "Run the command."), RUN).unwrap();
    assert!(output.success(), "{host}: {}", describe(&output));

    let written = std::fs::read_to_string(env.work_dir().join("shell.txt")).unwrap_or_default();
    assert_eq!(written, "shell-ran\n", "{host}: {}", describe(&output));
    let turn: Vec<_> = fake
        .requests()
        .into_iter()
        .filter(|r| r.queue != TOOLLESS_QUEUE)
        .collect();
    assert_eq!(turn.len(), 2, "{host}");
    let results = turn[1].tool_results();
    assert!(
        results.len() == 1 && results[0].contains("PRINTED"),
        "{host}: {results:?}"
    );
    assert!(fake.mismatches().is_empty(), "{:?}", fake.mismatches());
    let outcome = env.parse_output(&output.stdout);
    assert_eq!(outcome.final_text.as_deref(), Some(FINAL_WORDS), "{host}");
    // Claude Code and Codex show the model's thinking in their JSON output (as a `thinking`
    // block, a `reasoning` item); Gemini CLI and opencode keep it to themselves.
    if matches!(host, Host::ClaudeCode | Host::Codex) {
        assert!(
            output.stdout.contains("I will run the command."),
            "{host}: {}",
            describe(&output)
        );
    }
}

fn provider_error_ends_the_run(agent: &AgentBinary) {
    let host = agent.host;
    let message = "fake-llm refuses this request";
    let script = Script::new().with_responses([Step::error(400, message)]);
    let dir = tempfile::tempdir().unwrap();
    let (fake, env) = setup(agent, script, dir.path());
    let output = agents::run(&mut env.headless(agent, "Say hello."), RUN).unwrap();
    assert!(!output.success(), "{host}: {}", describe(&output));
    let outcome = env.parse_output(&output.stdout);
    let reported = outcome.error.clone().unwrap_or_default();
    assert!(
        reported.contains(message) || output.stderr.contains(message),
        "{host}: the error is not reported: {outcome:?}\n{}",
        describe(&output)
    );
    assert_eq!(outcome.final_text, None, "{host}");
    // The error was not retried.
    let turn = fake
        .requests()
        .into_iter()
        .filter(|r| r.queue != TOOLLESS_QUEUE)
        .count();
    assert_eq!(turn, 1, "{host}");
}

shepherd_testkit::agent_tests!(
    mcp_tool_call_then_text,
    shell_call_with_thinking_then_text,
    provider_error_ends_the_run
);
