//! Provider limits with the real Claude Code, Codex, Gemini CLI and opencode as sheep, offline
//! against the fake model in its rate-limit mode (each agent configured, as a user who lets
//! Shepherd ride out limits would have it, with its own retries off where it has a switch).
//!
//! For each agent, headless:
//!
//! 1. a 429 ends the sheep's turn: the task stays open and `status` shows it rate-limited with
//!    its provider; once the provider answers again the sheep's session is resumed with a
//!    "continue", the task completes, and its note records the wait;
//! 2. a usage limit that resets 3 s ahead makes the task wait, not fail;
//! 3. a 401 fails the task at once, naming the provider's message (Claude Code too with its
//!    own retries on: at its first `api_retry` event);
//! 4. an overload (529, 503 `server_is_overloaded`, `UNAVAILABLE`) waits and never fails;
//!
//! and in a tmux pane, the first again: at the reset "continue" is typed into the agent's TUI.
//!
//! And for the herd: `shepherd run --parallel` with eight Claude Code and eight Codex sheep, each
//! agent's key allowing three requests in flight, completes all sixteen.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::harness_support;

use harness_support::{World, field, scripted};
use serde_json::{Value, json};
use shepherd_testkit::agents::{AgentBinary, AgentEnv, Host, TmuxPane, installed_or_skip};
use shepherd_testkit::fake_llm::{FakeLlm, Limits, Script, Step, UsageLimit};
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

/// Seconds a watch may wait: a turn takes seconds alone, longer with every agent at once on
/// two cores, and a limited task waits a few more.
const WAIT: &str = "300";
/// How long the test waits for the herd to see a limit.
const SEEN: Duration = Duration::from_secs(240);

/// The sheep's model: done, then final words.
fn done_script() -> Script {
    scripted([
        Step::tool_call_suffix(
            "shepherd_done",
            json!({"status": "completed", "summary": "done after the wait"}),
        ),
        Step::text("Finished after the provider let us go on."),
    ])
}

/// A world whose limited sheep wait 2 s when the provider does not say how long.
fn world(agent: &AgentBinary, fake: &FakeLlm) -> World {
    let world = World::new(agent, fake);
    let set = world.run(&["settings", "set", "rateLimitWaitSeconds", "2"]);
    assert!(
        set.status.success(),
        "settings set: {}",
        String::from_utf8_lossy(&set.stderr)
    );
    world
}

/// Waits until `id`'s task shows a provider limit in `status`; returns it.
fn wait_rate_limited(world: &World, id: &str) -> Value {
    let deadline = Instant::now() + SEEN;
    let mut last = Value::Null;
    while Instant::now() < deadline {
        let output = world.run(&["status", id, "--json"]);
        if let Ok(status) = serde_json::from_slice::<Value>(&output.stdout) {
            if let Some(limit) = status["task"]["rateLimit"].as_object() {
                return Value::Object(limit.clone());
            }
            last = status;
        }
        // Polled by design: status is a request the test makes, with a deadline.
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("the task never showed a limit: {last}");
}

/// The provider `status` names for the agent's API.
fn provider(host: Host) -> &'static str {
    match host {
        Host::ClaudeCode => "anthropic",
        Host::Codex => "openai",
        Host::Gemini => "google",
        // opencode reaches any provider; the key is named for opencode's own configuration.
        Host::Opencode => "opencode",
    }
}

fn a_rate_limit_waits_then_the_task_completes(agent: &AgentBinary) {
    rate_limit_round_trip(agent, "headless");
}

shepherd_testkit::agent_tests!(a_rate_limit_waits_then_the_task_completes);

/// The same in a pane: the agent's TUI shows the limit, and at the reset "continue" is typed
/// in.
fn a_rate_limit_in_a_pane_waits_then_the_task_completes(agent: &AgentBinary) {
    if !TmuxPane::available() {
        println!("skipping: tmux is not installed");
        return;
    }
    rate_limit_round_trip(agent, "tmux");
}

// Gemini CLI's TUI is left out: there a refused turn does not end within the wait (the sheep
// stays working with no error on its screen), so Shepherd sees no limit to wait out.
#[test]
fn a_rate_limit_in_a_pane_claude_code() {
    shepherd_testkit::agents::with_agent(
        Host::ClaudeCode,
        "a_rate_limit_in_a_pane_claude_code",
        a_rate_limit_in_a_pane_waits_then_the_task_completes,
    );
}

#[test]
fn a_rate_limit_in_a_pane_codex() {
    shepherd_testkit::agents::with_agent(
        Host::Codex,
        "a_rate_limit_in_a_pane_codex",
        a_rate_limit_in_a_pane_waits_then_the_task_completes,
    );
}

#[test]
fn a_rate_limit_in_a_pane_opencode() {
    shepherd_testkit::agents::with_agent(
        Host::Opencode,
        "a_rate_limit_in_a_pane_opencode",
        a_rate_limit_in_a_pane_waits_then_the_task_completes,
    );
}

fn rate_limit_round_trip(agent: &AgentBinary, backend: &str) {
    let host = agent.host;
    let fake = FakeLlm::start(done_script()).unwrap();
    // Every request refused until the test lifts it, announcing a short wait.
    fake.set_limits(
        Limits::new()
            .with_max_in_flight(0)
            .with_retry_after(Duration::from_millis(500)),
    );
    let world = world(agent, &fake);
    let id = world.spawn_worker(backend, Some("patient"));
    let task = world.delegate(&id, "Report that you are done.", &[]);
    let limit = wait_rate_limited(&world, &id);
    if limit["class"] != "rate_limit" {
        // The notice the parent got quotes the agent's own error, which says why it was classed
        // otherwise.
        let inbox = world.run(&["inbox", "--json"]);
        panic!(
            "{host}: the limit was classed {limit}, not as a rate limit; the parent's inbox: {}",
            String::from_utf8_lossy(&inbox.stdout)
        );
    }
    assert!(
        limit["provider"]
            .as_str()
            .is_some_and(|p| p.starts_with(provider(host))),
        "{host}: {limit}"
    );
    let human = world.run(&["status", &id]);
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(text.contains("rate-limited"), "{host}: status says {text}");
    fake.set_limits(Limits::new());

    let watched = world.json(&["watch", &task, "--wait", WAIT, "--json"]);
    let settled = &watched["settled"][0];
    assert_eq!(settled["status"], "completed", "{host}: {watched}");
    assert_eq!(settled["summary"], "done after the wait", "{host}");
    let resumed = fake
        .requests()
        .into_iter()
        .find(|r| r.limited.is_none() && r.last_input_text().contains("[Shepherd rate limit]"));
    assert!(
        resumed.is_some(),
        "{host}: the sheep's session was resumed with a continue"
    );
    let closed = world.run(&["close", &id]);
    assert!(closed.status.success(), "{host}: close");
    let note = world.note("worker-");
    assert_eq!(field(&note, "status"), Some("completed"), "{host}: {note}");
    let episodes: u64 = field(&note, "rateLimits")
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(episodes >= 1, "{host}: the note counts the limit: {note}");
    assert!(
        note.contains("### Rate limits") && note.contains("· rate limit ·"),
        "{host}: the note records the wait: {note}"
    );
    let index = std::fs::read_to_string(world.session().join("shepherd.md")).unwrap();
    assert!(index.contains("- **Rate limits:** "), "{host}: {index}");
    world.stop_and_check_nothing_left();
}

fn a_usage_limit_waits_for_its_reset(agent: &AgentBinary) {
    let host = agent.host;
    let fake = FakeLlm::start(done_script()).unwrap();
    // opencode retries a refused request five times by itself (it has no switch for that), so
    // its limit outlasts those retries for Shepherd to see it.
    let refused = if host == Host::Opencode { 8 } else { 1 };
    fake.set_limits(
        Limits::new().with_usage_limit(
            UsageLimit::next(refused, Duration::from_secs(3)).for_model("default"),
        ),
    );
    let world = world(agent, &fake);
    let id = world.spawn_worker("headless", None);
    let task = world.delegate(&id, "Report that you are done.", &[]);
    let watched = world.json(&["watch", &task, "--wait", WAIT, "--json"]);
    let settled = &watched["settled"][0];
    assert_eq!(settled["status"], "completed", "{host}: {watched}");
    assert!(
        fake.limited().values().sum::<usize>() >= 1,
        "{host}: the usage limit was sent"
    );
    world.run(&["close", &id]);
    let note = world.note("worker-");
    assert!(
        note.contains("### Rate limits"),
        "{host}: the note records the wait: {note}"
    );
    world.stop_and_check_nothing_left();
}

shepherd_testkit::agent_tests!(a_usage_limit_waits_for_its_reset);

fn a_bad_key_fails_at_once(agent: &AgentBinary) {
    let host = agent.host;
    let fake = FakeLlm::start(scripted([Step::unauthorized()])).unwrap();
    let world = world(agent, &fake);
    let id = world.spawn_worker("headless", None);
    let task = world.delegate(&id, "Do anything.", &[]);
    let started = Instant::now();
    // `watch` exits 1 when a task it watched failed.
    let output = world.run(&["watch", &task, "--wait", WAIT, "--json"]);
    let watched: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|err| {
        panic!(
            "{host}: watch printed no JSON ({err}): {}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    let settled = &watched["settled"][0];
    assert_eq!(settled["status"], "failed", "{host}: {watched}");
    let error = settled["error"].as_str().unwrap_or_default().to_lowercase();
    assert!(
        [
            "invalid api key",
            "incorrect api key",
            "invalid authentication credentials"
        ]
        .iter()
        .any(|m| error.contains(m)),
        "{host}: the provider's message: {error}"
    );
    assert!(
        fake.requests().iter().all(|r| r.limited.is_none()),
        "{host}: no limit involved"
    );
    println!(
        "bench {host}: a 401 failed its task in {} ms",
        started.elapsed().as_millis()
    );
    world.stop_and_check_nothing_left();
}

shepherd_testkit::agent_tests!(a_bad_key_fails_at_once);

/// Waits until `id`'s task shows a limit or is over (as a task that failed at once is);
/// returns its limit, if it showed one.
fn wait_limited_or_over(world: &World, id: &str) -> Option<Value> {
    let deadline = Instant::now() + SEEN;
    while Instant::now() < deadline {
        let output = world.run(&["status", id, "--json"]);
        if let Ok(status) = serde_json::from_slice::<Value>(&output.stdout) {
            if let Some(limit) = status["task"]["rateLimit"].as_object() {
                return Some(Value::Object(limit.clone()));
            }
            let state = status["task"]["state"].as_str().unwrap_or("none");
            if !["created", "running", "waiting"].contains(&state) {
                return None;
            }
        }
        // Polled by design: status is a request the test makes, with a deadline.
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("{id}'s task neither showed a limit nor ended within {SEEN:?}");
}

/// An overload (Anthropic's 529 `overloaded_error`, OpenAI's 503 `server_is_overloaded`, which
/// Codex words "Selected model is at capacity", Gemini's 503 `UNAVAILABLE`) is waited out like
/// a limit: the task never fails on it, and completes once the provider answers again.
fn an_overload_waits_then_the_task_completes(agent: &AgentBinary) {
    let host = agent.host;
    let fake = FakeLlm::start(done_script()).unwrap();
    fake.set_limits(Limits::new().with_max_in_flight(0).with_overloaded());
    let world = world(agent, &fake);
    let id = world.spawn_worker("headless", Some("overloaded"));
    let task = world.delegate(&id, "Report that you are done.", &[]);
    fake.wait_until("an overloaded reply", SEEN, |requests| {
        requests.iter().any(|r| r.limited.is_some())
    })
    .unwrap();
    let limit = wait_limited_or_over(&world, &id);
    fake.set_limits(Limits::new());
    let watched = world.json(&["watch", &task, "--wait", WAIT, "--json"]);
    let settled = &watched["settled"][0];
    assert_eq!(
        settled["status"], "completed",
        "{host}: an overload never fails a task (its limit: {limit:?}): {watched}"
    );
    assert!(limit.is_some(), "{host}: the overload was waited out");
    world.run(&["close", &id]);
    world.stop_and_check_nothing_left();
}

shepherd_testkit::agent_tests!(an_overload_waits_then_the_task_completes);

/// Claude Code with its own retries on (as a user has it by default) retries a 401 ten times
/// over minutes; its first `api_retry` event already names the status, so the sheep fails
/// there, naming the provider and the status, and the agent sends no more requests.
#[test]
fn a_bad_key_fails_claude_code_at_its_first_retry() {
    let test = "harness_limits::a_bad_key_fails_claude_code_at_its_first_retry";
    let Some(claude) = installed_or_skip(Host::ClaudeCode, test) else {
        return;
    };
    let fake = FakeLlm::start(scripted(std::iter::repeat_n(Step::unauthorized(), 12))).unwrap();
    let mut world = world(&claude, &fake);
    world
        .extra_env
        .push(("CLAUDE_CODE_MAX_RETRIES".to_owned(), "10".to_owned()));
    let id = world.spawn_worker("headless", None);
    let task = world.delegate(&id, "Do anything.", &[]);
    let started = Instant::now();
    let output = world.run(&["watch", &task, "--wait", WAIT, "--json"]);
    let watched: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|err| {
        panic!(
            "watch printed no JSON ({err}): {}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    let settled = &watched["settled"][0];
    assert_eq!(settled["status"], "failed", "{watched}");
    let error = settled["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("anthropic") && error.contains("401"),
        "the failure names the provider and the status: {error}"
    );
    let requests = fake.requests().len();
    assert!(
        requests <= 2,
        "the agent's own retries were stopped at the first: {requests} requests"
    );
    println!(
        "bench claude-code: a 401 with the agent's own retries on failed its task in {} ms \
         after {requests} requests",
        started.elapsed().as_millis()
    );
    world.stop_and_check_nothing_left();
}

/// The herd's script for one sheep's model: done, then final words.
fn one_of_many() -> [Step; 2] {
    [
        Step::tool_call_suffix(
            "shepherd_done",
            json!({"status": "completed", "summary": "one of many"}),
        )
        .with_delay(Duration::from_millis(300)),
        Step::text("Done.").expecting("completed"),
    ]
}

/// A fake model for one agent of the herd: a queue per sheep's model (`m0`…), and a key that
/// lets three requests in at once and asks for 2 s beyond that.
fn herd_model(sheep: usize) -> FakeLlm {
    let mut script = scripted([]);
    for n in 0..sheep {
        script = script.with_queue(&format!("m{n}"), one_of_many());
    }
    let fake = FakeLlm::start(script).unwrap();
    fake.set_limits(
        Limits::new()
            .with_max_in_flight(3)
            .with_retry_after(Duration::from_secs(2)),
    );
    fake
}

/// `shepherd run --parallel` with eight Claude Code and eight Codex sheep, each agent's key
/// allowing three requests in flight: all sixteen complete, the run exits 0, and the notes of
/// the sheep that met a limit record the wait.
#[test]
fn sixteen_sheep_past_their_keys_limits_all_complete() {
    let test = "harness_limits::sixteen_sheep";
    let (Some(claude), Some(codex)) = (
        installed_or_skip(Host::ClaudeCode, test),
        installed_or_skip(Host::Codex, test),
    ) else {
        return;
    };
    const EACH: usize = 8;
    let claude_model = herd_model(EACH);
    let codex_model = herd_model(EACH);
    let world = world(&claude, &claude_model);
    for key in ["maxParallelTasks", "maxConcurrency"] {
        let set = world.run(&["settings", "set", key, "16"]);
        assert!(
            set.status.success(),
            "{}",
            String::from_utf8_lossy(&set.stderr)
        );
    }
    let codex_env = AgentEnv::builder(Host::Codex, &codex_model)
        .build()
        .unwrap();
    // One definition per sheep so that each asks for its own model, and so its own queue.
    let agents = world.env.home().join(".agents/agents");
    std::fs::create_dir_all(&agents).unwrap();
    let mut plan = String::from("backend: headless\ntimeout: 10\ntasks:\n");
    for (harness, offset) in [("claude-code", 0), ("codex", EACH)] {
        for n in 0..EACH {
            let name = format!("w{}", n + offset);
            std::fs::write(
                agents.join(format!("{name}.md")),
                format!(
                    "---\nname: {name}\ndescription: One of the herd.\nmodels:\n  {harness}: m{n}\n---\nYou are one of the herd.\n"
                ),
            )
            .unwrap();
            plan.push_str(&format!(
                "  - {{agent: {name}, harness: {harness}, task: \"Report that you are done.\"}}\n"
            ));
        }
    }
    let started = Instant::now();
    let (status, report) = world.run_plan(&plan, &codex, &codex_env);
    let elapsed = started.elapsed();
    assert!(status.success(), "{report}");
    let results = report["results"].as_array().expect("results");
    assert_eq!(results.len(), 2 * EACH, "{report}");
    for result in results {
        assert_eq!(result["status"], "completed", "{report}");
    }
    let note_of = |index: usize| {
        let path = results[index]["note"].as_str().expect("a note");
        std::fs::read_to_string(world.project().join(path)).unwrap()
    };
    // Each sheep asks for its own model (`m{n}`), so a refused request names its task: the
    // plan's n-th Claude Code task, or its (EACH + n)-th, a Codex one. A refusal before the
    // sheep's first answered request (the one that calls `shepherd_done`) ended a turn with
    // the task still open, so that task waited; one after it met a task already done.
    assert!(
        !claude_model.limited_replies().is_empty() || !codex_model.limited_replies().is_empty(),
        "the keys' limits were met: {report}"
    );
    let mut limited_tasks = BTreeSet::new();
    for (model, offset) in [(&claude_model, 0), (&codex_model, EACH)] {
        let refused: BTreeSet<usize> = model.limited_replies().iter().map(|r| r.request).collect();
        for n in 0..EACH {
            let requests = model.requests_for(&format!("m{n}"));
            let first_answered = requests
                .iter()
                .map(|r| r.seq)
                .find(|seq| !refused.contains(seq))
                .unwrap_or(usize::MAX);
            if requests
                .iter()
                .any(|r| refused.contains(&r.seq) && r.seq < first_answered)
            {
                limited_tasks.insert(offset + n);
            }
        }
    }
    for index in &limited_tasks {
        let note = note_of(*index);
        assert!(
            note.contains("### Rate limits"),
            "task {index} was refused, so its note records the wait: {note}"
        );
    }
    let limited = claude_model.limited_replies().len() + codex_model.limited_replies().len();
    let waited = limited_tasks.len();
    println!(
        "bench herd: 8 claude + 8 codex sheep, 3 in flight per key: {} ms, {limited} limit replies, {waited} limited notes record their waits",
        elapsed.as_millis()
    );
    world.stop_and_check_nothing_left();
}
