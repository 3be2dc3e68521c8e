//! The real Claude Code, Codex, Gemini CLI and opencode as visible sheep, offline against the
//! fake model: each runs its own TUI in a pane of a private tmux server (and one in a private
//! real Herdr), driven by `shepherd harness`, which types its tasks and messages into it. For
//! each agent:
//!
//! 1. spawn on tmux; the pane shows the agent's TUI,
//! 2. delegate: the task is typed in, the agent runs a shell command (the file it writes is
//!    there) and calls `shepherd_done`,
//! 3. the parent's watch sees the completion with the sheep's summary,
//! 4. a question typed in after the task is answered with a reply in the parent's inbox,
//! 5. the pane resized, the agent draws to its new width; keys typed in the pane reach the
//!    agent (its input box shows them),
//! 6. close; the note is final (completed, the harness named; the session and transcript where
//!    Shepherd or the agent's files tell the session; turns, tool calls, tokens, final words
//!    and, where the agent records one, cost, from the transcript or the agent's export),
//! 7. nothing started for the sheep is left running once the broker stops.
//!
//! And a turn that ends without `shepherd_done` gets the reminder typed in, after which the
//! agent's `shepherd_done` settles the task.
//!
//! Skipped with one line when tmux (or Herdr) is missing; a missing agent skips too, and fails
//! under `SHEPHERD_REQUIRE_AGENTS=1`.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::harness_support;

use harness_support::{
    FINAL_WORDS, REPLY, World, assert_no_mismatches, field, harness, scripted, sheep_script,
};
use serde_json::json;
use shepherd_testkit::agents::{AgentBinary, Host, TmuxPane};
use shepherd_testkit::fake_herdr::RealHerdr;
use shepherd_testkit::fake_herdr::real::RealOptions;
use shepherd_testkit::fake_llm::{FakeLlm, Step, TOOLLESS_QUEUE};

/// Seconds a watch may wait: the TUI starts (opencode's first start alone takes ~15 s), then
/// the turn runs.
const WAIT: &str = "180";

/// What the sheep's pane shows, for a failure's message.
fn pane(world: &World, id: &str) -> String {
    let read = world.run(&["read", id, "--lines", "60"]);
    String::from_utf8_lossy(&read.stdout).into_owned()
}

/// Spawn on `backend`, delegate a shell task, see it complete, ask a question and get the
/// reply, close with the note complete, and leave nothing running.
fn visible_round_trip(agent: &AgentBinary, world: &World, fake: &FakeLlm, backend: &str) {
    let host = agent.host;
    let spawned = world.json(&[
        "spawn",
        "worker",
        "--harness",
        harness(host),
        "--label",
        "t",
        "--backend",
        backend,
        "--json",
    ]);
    assert_eq!(spawned["backend"], backend, "{host}: {spawned}");
    let id = spawned["agentId"].as_str().unwrap().to_owned();

    let task = world.json(&[
        "delegate",
        &id,
        "Write hello into out.txt, then report.",
        "--json",
    ]);
    let task_id = task["taskId"].as_str().unwrap().to_owned();
    let output = world.run(&["watch", &task_id, "--wait", WAIT, "--json"]);
    let watched: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap_or_default();
    let settled = &watched["settled"][0];
    assert_eq!(
        settled["status"],
        "completed",
        "{host}: {watched}\n{}",
        pane(world, &id)
    );
    assert_eq!(settled["summary"], "wrote out.txt", "{host}: {watched}");
    let written = std::fs::read_to_string(world.project().join("out.txt"));
    assert_eq!(
        written.ok().as_deref(),
        Some("hello"),
        "{host}: the shell call ran"
    );

    let asked = world.json(&[
        "message",
        &id,
        "Are you there? Reply with shepherd_message.",
        "--expects-reply",
        "--json",
    ]);
    let question = asked["messageId"].as_str().unwrap().to_owned();
    let mut reply = None;
    for _ in 0..6 {
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
    let reply = reply.unwrap_or_else(|| panic!("{host}: no reply came\n{}", pane(world, &id)));
    assert_eq!(reply["replyTo"], question.as_str(), "{host}: {reply}");
    // The question was typed into the same TUI: its request carried the task's conversation.
    let requests = fake.requests();
    let reply_request = requests
        .iter()
        .find(|r| r.queue != TOOLLESS_QUEUE && r.last_input_text().contains("Are you there?"))
        .unwrap_or_else(|| panic!("{host}: the question never reached the model"));
    assert!(
        reply_request.contains("Write hello into out.txt"),
        "{host}: the question's turn continued the task's session"
    );

    // The pane shows the agent's own TUI with what was typed into it, not the headless
    // driver's transcript lines (`» [Shepherd …`). A TUI redraws its whole screen at times: a
    // read in the middle of one is read again.
    let shows_tui = |screen: &str| {
        (screen.contains("Are you there?") || screen.contains("[Shepherd message from"))
            && !screen.contains("» [Shepherd")
    };
    let mut screen = pane(world, &id);
    for _ in 0..20 {
        if shows_tui(&screen) {
            break;
        }
        screen = pane(world, &id);
    }
    assert!(
        shows_tui(&screen),
        "{host}: the pane shows the TUI:\n{screen}"
    );
    if backend == "tmux" {
        typed_in_the_pane_reaches_the_agent(world, &id, spawned["displayName"].as_str().unwrap());
    }
    let closed = world.run(&["close", &id]);
    assert!(closed.status.success(), "{host}: close");
    let note = world.note("worker-");
    assert_eq!(field(&note, "status"), Some("completed"), "{host}: {note}");
    assert_eq!(
        field(&note, "harness"),
        Some(harness(host)),
        "{host}: {note}"
    );
    // The note has the agent's session and its transcript, which give the turns' figures and
    // final words: Claude Code and Gemini CLI take the session Shepherd names, Codex's is the
    // one its rollout shows, opencode's the one its own `session list` shows (read back with
    // `opencode export`).
    assert!(
        field(&note, "agentSession").is_some(),
        "{host}: session in {note}"
    );
    let transcript = field(&note, "transcript").unwrap_or_else(|| panic!("{host}: {note}"));
    assert!(
        std::path::Path::new(transcript).exists(),
        "{host}: {transcript}"
    );
    let number = |key: &str| {
        field(&note, key)
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
    };
    assert!(note.contains(FINAL_WORDS), "{host}: final words in {note}");
    assert!(number("turns") >= 2, "{host}: turns in {note}");
    assert!(number("toolCalls") >= 2, "{host}: tool calls in {note}");
    assert!(
        number("tokensIn") + number("tokensOut") > 0,
        "{host}: tokens in {note}"
    );
    // Cost where the agent's own records give one (opencode's export), never made up: Claude
    // Code's transcript has none, Codex and Gemini CLI report none (see docs/agents.md).
    let cost = field(&note, "cost").and_then(|v| v.parse::<f64>().ok());
    if host == Host::Opencode {
        assert!(cost.is_some_and(|c| c > 0.0), "{host}: cost in {note}");
    } else {
        assert_eq!(cost, None, "{host}: no cost in {note}");
    }
    assert_no_mismatches(fake, host);
    world.stop_and_check_nothing_left();
}

/// The sheep's tmux pane is the agent's terminal: when it grows the agent draws to the new
/// width, and what the user types there shows in the TUI's input box (each read again until
/// it does, within a deadline).
fn typed_in_the_pane_reaches_the_agent(world: &World, id: &str, window: &str) {
    let listed = world.tmux(&["list-panes", "-a", "-F", "#{pane_id} #{window_name}"]);
    let listed = String::from_utf8_lossy(&listed.stdout).into_owned();
    let pane_id = listed
        .lines()
        .find_map(|line| line.strip_suffix(window).map(str::trim))
        .unwrap_or_else(|| panic!("no tmux window {window:?} in:\n{listed}"))
        .to_owned();
    // The pane grows wider than tmux's default 80 columns: the agent redraws to the new size.
    let resized = world.tmux(&["resize-window", "-t", &pane_id, "-x", "140", "-y", "40"]);
    assert!(resized.status.success(), "tmux resize-window");
    let wide = |screen: &str| {
        screen
            .lines()
            .any(|line| line.trim_end().chars().count() > 100)
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let mut screen = pane(world, id);
    while !wide(&screen) {
        assert!(
            std::time::Instant::now() < deadline,
            "the agent never drew wider than 100 columns:\n{screen}"
        );
        screen = pane(world, id);
    }
    let typed = world.tmux(&["send-keys", "-t", &pane_id, "-l", "typed by the user"]);
    assert!(typed.status.success(), "tmux send-keys");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    screen = pane(world, id);
    while !screen.contains("typed by the user") {
        assert!(
            std::time::Instant::now() < deadline,
            "the keys never reached the agent:\n{screen}"
        );
        screen = pane(world, id);
    }
}

fn tmux_round_trip(agent: &AgentBinary) {
    if !TmuxPane::available() {
        println!("skipping: tmux is not installed");
        return;
    }
    let fake = FakeLlm::start(sheep_script()).unwrap();
    let world = World::new(agent, &fake);
    // A project is usually a git repository, where Codex's TUI asks whether to trust it.
    let init = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(world.project())
        .status();
    assert!(init.is_ok_and(|s| s.success()), "git init");
    visible_round_trip(agent, &world, &fake, "tmux");
}

shepherd_testkit::agent_tests!(tmux_round_trip);

/// Claude Code visibly in a pane of a real Herdr.
#[test]
fn claude_code_in_herdr() {
    shepherd_testkit::agents::with_agent(Host::ClaudeCode, "claude_code_in_herdr", in_herdr);
}

fn in_herdr(agent: &AgentBinary) {
    let fake = FakeLlm::start(sheep_script()).unwrap();
    let mut world = World::new(agent, &fake);
    // The user's Herdr has their agent's provider settings, as their shell does; its panes
    // keep Herdr's own home.
    let options = RealOptions {
        env: world
            .env
            .vars()
            .into_iter()
            .filter(|(name, _)| name != "HOME" && !name.starts_with("XDG_"))
            .collect(),
        ..RealOptions::default()
    };
    let Some(herdr) = RealHerdr::start_with("harness_visible_claude", options) else {
        return;
    };
    let made = herdr.call(
        "workspace.create",
        &serde_json::json!({"cwd": "/tmp", "label": "user"}),
    );
    assert_eq!(made["root_pane"]["pane_id"], "w1:p1");
    for (key, value) in [
        ("HERDR_ENV", "1".to_owned()),
        ("HERDR_SOCKET_PATH", herdr.socket().display().to_string()),
        ("HERDR_PANE_ID", "w1:p1".to_owned()),
        ("HERDR_TAB_ID", "w1:t1".to_owned()),
        ("HERDR_WORKSPACE_ID", "w1".to_owned()),
    ] {
        world.extra_env.push((key.into(), value));
    }
    visible_round_trip(agent, &world, &fake, "herdr");
}

/// A turn that ends without `shepherd_done` is reminded the way a headless one is: the
/// reminder is typed into the TUI, and the agent's `shepherd_done` then settles the task.
fn forgotten_done_is_reminded(agent: &AgentBinary) {
    if !TmuxPane::available() {
        println!("skipping: tmux is not installed");
        return;
    }
    let host = agent.host;
    let script = scripted([
        Step::text("I looked, and stopped without reporting."),
        Step::tool_call_suffix(
            "shepherd_done",
            json!({"status": "completed", "summary": "reported when reminded"}),
        )
        .expecting("Shepherd completion check"),
        Step::text("Reported.").expecting("completed"),
    ]);
    let fake = FakeLlm::start(script).unwrap();
    let world = World::new(agent, &fake);
    let id = world.spawn_worker("tmux", None);
    let task_id = world.delegate(&id, "Look, then report.", &[]);
    let output = world.run(&["watch", &task_id, "--wait", WAIT, "--json"]);
    let watched: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap_or_default();
    let settled = &watched["settled"][0];
    assert_eq!(
        settled["status"],
        "completed",
        "{host}: {watched}\n{}",
        pane(&world, &id)
    );
    assert_eq!(settled["summary"], "reported when reminded", "{host}");
    assert_no_mismatches(&fake, host);
    world.stop_and_check_nothing_left();
}

shepherd_testkit::agent_tests!(forgotten_done_is_reminded);

/// A 400 from the model fails a visible sheep's task at once, with the provider's message,
/// read from the agent's transcript or export (Claude Code, opencode) or its screen (Codex,
/// Gemini CLI).
fn provider_error_fails_the_task(agent: &AgentBinary) {
    let host = agent.host;
    if !TmuxPane::available() {
        println!("skipping: tmux is not installed");
        return;
    }
    let script = scripted([Step::error(400, "the fake model refuses this request")]);
    let fake = FakeLlm::start(script).unwrap();
    let world = World::new(agent, &fake);
    let id = world.spawn_worker("tmux", None);
    let task_id = world.delegate(&id, "Do anything.", &[]);
    let output = world.run(&["watch", &task_id, "--wait", WAIT, "--json"]);
    let watched: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap_or_default();
    let settled = &watched["settled"][0];
    assert_eq!(
        settled["status"],
        "failed",
        "{host}: {watched}\n{}",
        pane(&world, &id)
    );
    let error = settled["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("the fake model refuses this request"),
        "{host}: {error}"
    );
    world.stop_and_check_nothing_left();
}

#[test]
fn codex_provider_error() {
    shepherd_testkit::agents::with_agent(
        Host::Codex,
        "codex_provider_error",
        provider_error_fails_the_task,
    );
}

#[test]
fn gemini_provider_error() {
    shepherd_testkit::agents::with_agent(
        Host::Gemini,
        "gemini_provider_error",
        provider_error_fails_the_task,
    );
}

#[test]
fn claude_code_provider_error() {
    shepherd_testkit::agents::with_agent(
        Host::ClaudeCode,
        "claude_code_provider_error",
        provider_error_fails_the_task,
    );
}

#[test]
fn opencode_provider_error() {
    shepherd_testkit::agents::with_agent(
        Host::Opencode,
        "opencode_provider_error",
        provider_error_fails_the_task,
    );
}
