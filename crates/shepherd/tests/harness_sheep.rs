//! The real Claude Code, Codex, Gemini CLI and opencode as sheep, headless, offline against
//! the fake model in each agent's own wire format. Each agent is configured as its user would
//! have it (a private HOME with the test kit's settings); the bundled `worker` runs on it with
//! `--harness`. For each agent:
//!
//! 1. spawn; the sheep is ready,
//! 2. delegate: the agent runs a shell command (the file it writes is there) and calls
//!    `shepherd_done`,
//! 3. the parent's watch sees the completion with the sheep's summary,
//! 4. a question to the sheep is answered with a reply in the parent's inbox,
//! 5. close; the note is final with the agent's final words, model, turns, tool calls, tokens,
//!    its session id and transcript, and `read` shows a readable transcript,
//! 6. nothing started for the sheep is left running once the broker stops.
//!
//! And a provider error (a 400 from the model) fails the task at once with the error.
//!
//! The first scenario prints its timings (`--no-capture` shows them): delegate → the agent's
//! first model request, and the model's `shepherd_done` → the parent's watch returns.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::harness_support;

use harness_support::{
    FINAL_WORDS, REPLY, World, assert_no_mismatches, field, harness, scripted, sheep_script,
};
use serde_json::json;
use shepherd_testkit::agents::AgentBinary;
use std::time::{Duration, Instant};

use shepherd_testkit::fake_llm::{FakeLlm, RecordedRequest, Step, TOOLLESS_QUEUE};

/// Seconds a watch may wait: a turn takes seconds alone, longer with every agent at once on
/// two cores.
const WAIT: &str = "240";
/// How long the benchmark's probe waits for one model request.
const TURN: Duration = Duration::from_secs(240);

fn delegate_message_close(agent: &AgentBinary) {
    let host = agent.host;
    let fake = FakeLlm::start(sheep_script()).unwrap();
    let world = World::new(agent, &fake);
    let id = world.spawn_worker("headless", Some("t"));
    // Timed: delegate → the agent's first model request, and the model's `shepherd_done` →
    // the parent's watch returns (the request the fake answers with it, to the watch's end).
    let scripted = |count: usize| {
        move |requests: &[RecordedRequest]| {
            requests
                .iter()
                .filter(|r| r.queue != TOOLLESS_QUEUE)
                .count()
                >= count
        }
    };
    let delegated = Instant::now();
    let (watched, first_request, done_served, notified) = std::thread::scope(|scope| {
        let probe = scope.spawn(|| {
            let first = fake
                .wait_until("the first turn", TURN, scripted(1))
                .ok()
                .map(|_| Instant::now());
            let done = fake
                .wait_until("the done turn", TURN, scripted(2))
                .ok()
                .map(|_| Instant::now());
            (first, done)
        });
        let task = world.json(&[
            "delegate",
            &id,
            "Write hello into out.txt, then report.",
            "--json",
        ]);
        let task_id = task["taskId"].as_str().unwrap().to_owned();
        let watched = world.json(&["watch", &task_id, "--wait", WAIT, "--json"]);
        let notified = Instant::now();
        let (first, done) = probe.join().unwrap();
        (watched, first, done, notified)
    });
    let first_request = first_request.unwrap_or_else(|| panic!("{host}: no model request"));
    let done_served = done_served.unwrap_or_else(|| panic!("{host}: no shepherd_done turn"));
    println!(
        "bench {host}: delegate → first model request {} ms; shepherd_done → parent notified {} ms",
        first_request.duration_since(delegated).as_millis(),
        notified.duration_since(done_served).as_millis(),
    );
    let settled = &watched["settled"][0];
    assert_eq!(settled["status"], "completed", "{host}: {watched}");
    assert_eq!(settled["summary"], "wrote out.txt", "{host}: {watched}");
    let written = std::fs::read_to_string(world.project().join("out.txt"));
    assert_eq!(
        written.ok().as_deref(),
        Some("hello"),
        "{host}: the shell call ran"
    );

    // A question after the task: the sheep answers it.
    let asked = world.json(&[
        "message",
        &id,
        "Are you there? Reply with shepherd_message.",
        "--expects-reply",
        "--json",
    ]);
    let question = asked["messageId"].as_str().unwrap().to_owned();
    let mut reply = None;
    for _ in 0..10 {
        let output = world.run(&["inbox", "--wait", "30", "--json"]);
        let inbox: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap_or_default();
        reply = inbox["items"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|item| item["content"] == REPLY)
            .cloned();
        if reply.is_some() {
            break;
        }
    }
    let reply = reply.unwrap_or_else(|| panic!("{host}: no reply came"));
    assert_eq!(reply["replyTo"], question.as_str(), "{host}: {reply}");

    let read = world.run(&["read", &id, "--lines", "200"]);
    let transcript = String::from_utf8_lossy(&read.stdout);
    assert!(
        transcript.contains("» [Shepherd delegated task from Shepherd]")
            && transcript.contains("printf hello > out.txt")
            && transcript.contains(FINAL_WORDS),
        "{host}: read shows the transcript:\n{transcript}"
    );
    let closed = world.run(&["close", &id]);
    assert!(closed.status.success(), "{host}: close");

    let note = world.note("worker-");
    assert_eq!(field(&note, "status"), Some("completed"), "{host}: {note}");
    assert_eq!(
        field(&note, "harness"),
        Some(harness(host)),
        "{host}: {note}"
    );
    assert!(note.contains(FINAL_WORDS), "{host}: final words in {note}");
    assert!(
        field(&note, "model").is_some_and(|m| !m.is_empty()),
        "{host}: {note}"
    );
    let number = |key: &str| {
        field(&note, key)
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
    };
    assert!(number("turns") >= 2, "{host}: turns in {note}");
    assert!(number("toolCalls") >= 2, "{host}: tool calls in {note}");
    assert!(
        number("tokensIn") + number("tokensOut") > 0,
        "{host}: tokens in {note}"
    );
    assert!(
        field(&note, "agentSession").is_some(),
        "{host}: session in {note}"
    );
    let transcript_path = field(&note, "transcript").unwrap_or_else(|| panic!("{host}: {note}"));
    assert!(
        std::path::Path::new(transcript_path).exists(),
        "{host}: {transcript_path}"
    );
    // The second turn resumed the first one's session: the reply request carried the task.
    let requests = fake.requests();
    let reply_request = requests
        .iter()
        .find(|r| r.last_input_text().contains("Are you there?"))
        .unwrap_or_else(|| panic!("{host}: the question never reached the model"));
    assert!(
        reply_request.contains("Write hello into out.txt"),
        "{host}: the question's turn resumed the task's session"
    );
    assert_no_mismatches(&fake, host);
    world.stop_and_check_nothing_left();
}

shepherd_testkit::agent_tests!(delegate_message_close);

/// A 400 from the model fails the task at once, with the provider's message.
fn provider_error_fails_the_task(agent: &AgentBinary) {
    let host = agent.host;
    let script = scripted([Step::error(400, "the fake model refuses this request")]);
    let fake = FakeLlm::start(script).unwrap();
    let world = World::new(agent, &fake);
    let id = world.spawn_worker("headless", None);
    let task_id = world.delegate(&id, "Do anything.", &[]);
    let output = world.run(&["watch", &task_id, "--wait", WAIT, "--json"]);
    let watched: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let settled = &watched["settled"][0];
    assert_eq!(settled["status"], "failed", "{host}: {watched}");
    let error = settled["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("the fake model refuses this request"),
        "{host}: {error}"
    );
    world.stop_and_check_nothing_left();
}

shepherd_testkit::agent_tests!(provider_error_fails_the_task);

/// A closed sheep resumed on its own agent session: its next headless turn continues the
/// conversation (the model is asked with the earlier task still in it), under the same id.
fn a_closed_sheep_resumes_its_agent_session(agent: &AgentBinary) {
    let host = agent.host;
    let script = scripted([
        Step::tool_call_suffix(
            "shepherd_done",
            json!({"status": "completed", "summary": "remembered"}),
        ),
        Step::text("Remembered.").expecting("completed"),
        Step::tool_call_suffix(
            "shepherd_done",
            json!({"status": "completed", "summary": "PELICAN"}),
        ),
        Step::text("The word was PELICAN.").expecting("completed"),
    ]);
    let fake = FakeLlm::start(script).unwrap();
    let world = World::new(agent, &fake);
    let id = world.spawn_worker("headless", Some("memory"));
    let settle = |task: &str| {
        let task = world.json(&["delegate", &id, task, "--json"]);
        let task_id = task["taskId"].as_str().unwrap().to_owned();
        let watched = world.json(&["watch", &task_id, "--wait", WAIT, "--json"]);
        assert_eq!(
            watched["settled"][0]["status"], "completed",
            "{host}: {watched}"
        );
    };
    settle("First task: remember the word PELICAN.");
    world.json(&["close", &id, "--json"]);

    let resumed = world.json(&["resume", &id, "--json"]);
    assert_eq!(resumed["agentId"], id.as_str(), "{host}: {resumed}");
    assert_eq!(resumed["resumes"], 1, "{host}: {resumed}");
    settle("Second task: which word did I ask you to remember?");
    let requests = fake.requests();
    let asked = requests
        .iter()
        .find(|r| r.last_input_text().contains("Second task"))
        .unwrap_or_else(|| panic!("{host}: the second task never reached the model"));
    assert!(
        asked.contains("remember the word PELICAN"),
        "{host}: the resumed turn continued the first task's session"
    );
    assert_no_mismatches(&fake, host);
    world.stop_and_check_nothing_left();
}

shepherd_testkit::agent_tests!(a_closed_sheep_resumes_its_agent_session);

/// A task's budget counts the agent's model responses as it counts pi's turns: with
/// `--max-turns 1`, the first response is over once the second begins, the driver ends the run
/// there (the third response, held by the fake model, never gets to run its command), and the
/// task settles `blocked` naming the budget, in its result and its note.
fn a_budget_stops_the_agents_run(agent: &AgentBinary) {
    let host = agent.host;
    let script = scripted([
        Step::shell("printf one >> turns.txt"),
        Step::shell("printf two >> turns.txt"),
        Step::shell("printf three >> turns.txt").held_until("third"),
        Step::tool_call_suffix("shepherd_done", json!({"status": "completed"})),
        Step::text("Done."),
    ]);
    let fake = FakeLlm::start(script).unwrap();
    let world = World::new(agent, &fake);
    let id = world.spawn_worker("headless", None);
    let task = world.json(&[
        "delegate",
        &id,
        "Keep appending to turns.txt.",
        "--max-turns",
        "1",
        "--json",
    ]);
    let task_id = task["taskId"].as_str().unwrap().to_owned();
    // A task that settles `blocked` makes `watch` exit 2; its document says why.
    let output = world.run(&["watch", &task_id, "--wait", WAIT, "--json"]);
    fake.release("third");
    assert_eq!(output.status.code(), Some(2), "{host}: {output:?}");
    let watched: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let settled = &watched["settled"][0];
    assert_eq!(settled["status"], "blocked", "{host}: {watched}");
    let error = settled["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("budget reached: 1 of 1 turns used"),
        "{host}: {error}"
    );
    world.json(&["close", &id, "--json"]);
    let written = std::fs::read_to_string(world.project().join("turns.txt")).unwrap_or_default();
    assert!(written.starts_with("one"), "{host}: {written}");
    assert!(!written.contains("three"), "{host}: {written}");
    let note = world.note("worker-");
    assert!(note.contains("taskStatus: blocked"), "{host}: {note}");
    assert!(
        note.contains("budget reached: 1 of 1 turns used"),
        "{host}: {note}"
    );
    world.stop_and_check_nothing_left();
}

shepherd_testkit::agent_tests!(a_budget_stops_the_agents_run);

/// A Claude Code sheep started from an environment without an Anthropic key (an MCP host that
/// passes nothing) fails with Claude Code's "Not logged in", and the failure names the
/// variables to pass.
#[test]
fn a_claude_code_sheep_without_a_key_says_which_variables_to_pass() {
    let test = "harness_sheep::a_claude_code_sheep_without_a_key_says_which_variables_to_pass";
    let Some(agent) = shepherd_testkit::agents::installed_or_skip(
        shepherd_testkit::agents::Host::ClaudeCode,
        test,
    ) else {
        return;
    };
    let fake = FakeLlm::start(scripted([Step::text("never asked")])).unwrap();
    let world = World::new(&agent, &fake);
    // The spawn starts the herd's broker, whose environment every sheep inherits.
    let mut spawn = world.command(&[
        "spawn",
        "worker",
        "--harness",
        "claude-code",
        "--backend",
        "headless",
        "--json",
    ]);
    for name in [
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "CLAUDE_CODE_OAUTH_TOKEN",
    ] {
        spawn.env_remove(name);
    }
    let spawned = spawn.output().unwrap();
    assert!(
        spawned.status.success(),
        "{}",
        String::from_utf8_lossy(&spawned.stderr)
    );
    let spawned: serde_json::Value = serde_json::from_slice(&spawned.stdout).unwrap();
    let id = spawned["agentId"].as_str().unwrap();
    let task_id = world.delegate(id, "Do anything.", &[]);
    // `watch` exits with the failed task's return code.
    let output = world.run(&["watch", &task_id, "--wait", WAIT, "--json"]);
    let watched: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let settled = &watched["settled"][0];
    assert_eq!(settled["status"], "failed", "{watched}");
    let error = settled["error"].as_str().unwrap_or_default();
    assert!(error.contains("Not logged in"), "{error}");
    assert!(
        error.contains("pass ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN")
            && error.contains("ANTHROPIC_BASE_URL"),
        "{error}"
    );
    world.stop_and_check_nothing_left();
}
