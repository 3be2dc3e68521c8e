//! A held key's herd let go again, with the real Claude Code and Codex as sheep, offline against
//! the fake model: the sheep let go first after a reset (the probe) counts as answered at its
//! first model response, as it shows, not when its turn ends, so the next held sheep goes while
//! the probe's turn is still running.
//!
//! Two sheep on one key meet a key that refuses everything; the key is then opened. At the
//! reset one of them probes: its first request is answered, its second is held by the fake
//! until the test lets it go. The other must be let go on the probe's answer — the journal
//! shows the probe's `limit_answered` before the second `limit_released` — and not by the
//! round's grace, which lets the next round go when nobody answered.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::harness_support;

use harness_support::{World, harness};
use serde_json::{Value, json};
use shepherd_testkit::agents::{AgentBinary, Host, installed_or_skip};
use shepherd_testkit::fake_llm::{Exhausted, FakeLlm, Limits, Script, Step};
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

/// How long the herd may take to come back: two agents' start-ups on a loaded machine, twice.
const BACK: Duration = Duration::from_secs(240);
/// The sheep's models, one queue each.
const MODELS: [&str; 2] = ["m1", "m2"];

/// Each sheep: done, then final words held until the test releases its model's gate.
fn model() -> FakeLlm {
    let mut script = Script::new()
        .with_toolless(Step::text("Fake title"))
        .with_exhausted(Exhausted::Step(Box::new(Step::text(
            "fake-llm: the script is finished",
        ))));
    for model in MODELS {
        script = script.with_queue(
            model,
            [
                Step::tool_call_suffix(
                    "shepherd_done",
                    json!({"status": "completed", "summary": "back after the limit"}),
                ),
                Step::text("Done.").held_until(model),
            ],
        );
    }
    let fake = FakeLlm::start(script).unwrap();
    fake.set_limits(
        Limits::new()
            .with_max_in_flight(0)
            .with_retry_after(Duration::from_secs(2)),
    );
    fake
}

/// The queues that had a request through (not refused): the sheep the key let go.
fn answered_queues(fake: &FakeLlm) -> BTreeSet<String> {
    let refused: BTreeSet<usize> = fake.limited_replies().iter().map(|r| r.request).collect();
    fake.requests()
        .into_iter()
        .filter(|r| !refused.contains(&r.seq) && MODELS.contains(&r.queue.as_str()))
        .map(|r| r.queue)
        .collect()
}

/// The broker's journal in `world`, one event per line.
fn journal(world: &World) -> Vec<Value> {
    let brokers = world.env.home().join(".local/state/shepherd/brokers");
    let mut events = Vec::new();
    for dir in std::fs::read_dir(&brokers).unwrap() {
        let path = dir.unwrap().path().join("journal.jsonl");
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        events.extend(
            text.lines()
                .filter_map(|line| serde_json::from_str::<Value>(line).ok())
                .map(|row| row["event"].clone()),
        );
    }
    events
}

fn the_next_sheep_goes_at_the_probes_first_answer(agent: &AgentBinary) {
    let fake = model();
    let world = World::new(agent, &fake);
    let set = world.run(&["settings", "set", "rateLimitWaitSeconds", "2"]);
    assert!(set.status.success(), "{set:?}");
    let sheep: Vec<String> = MODELS
        .iter()
        .map(|model| {
            world.json(&[
                "spawn",
                "worker",
                "--harness",
                harness(agent.host),
                "--backend",
                "headless",
                "--model",
                model,
                "--json",
            ])["agentId"]
                .as_str()
                .expect("spawn returns an id")
                .to_owned()
        })
        .collect();
    let tasks: Vec<String> = sheep
        .iter()
        .map(|id| world.delegate(id, "Report that you are done.", &[]))
        .collect();
    // Both meet the limit before the key opens.
    let deadline = Instant::now() + BACK;
    while fake
        .limited_replies()
        .iter()
        .map(|r| r.model.clone())
        .filter(|m| MODELS.contains(&m.as_str()))
        .collect::<BTreeSet<_>>()
        .len()
        < MODELS.len()
    {
        assert!(Instant::now() < deadline, "both sheep were refused");
        // Polled by design: the fake's record is read with a deadline.
        std::thread::sleep(Duration::from_millis(100));
    }
    fake.set_limits(Limits::new());
    // The probe's second request is held by its gate, so its turn cannot end: the other sheep
    // goes on the probe's first answer or, without it, only after the round's grace.
    let deadline = Instant::now() + BACK;
    while answered_queues(&fake).len() < MODELS.len() {
        assert!(
            Instant::now() < deadline,
            "the second sheep was never let go: {:?}",
            answered_queues(&fake)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let events = journal(&world);
    let of = |name: &str| -> Vec<(usize, String)> {
        events
            .iter()
            .enumerate()
            .filter(|(_, e)| e["event"] == name)
            .map(|(i, e)| (i, e["agent_id"].as_str().unwrap_or_default().to_owned()))
            .collect()
    };
    let released = of("limit_released");
    let answered = of("limit_answered");
    assert!(released.len() >= 2, "two sheep let go: {released:?}");
    let (probe_at, probe) = released[0].clone();
    let (next_at, next) = released[1].clone();
    assert_ne!(probe, next, "the probe, then the other sheep");
    assert!(
        answered
            .iter()
            .any(|(at, id)| *id == probe && probe_at < *at && *at < next_at),
        "the other sheep went on the probe's answer, not on the round's grace: released \
         {released:?}, answered {answered:?}"
    );
    for model in MODELS {
        fake.release(model);
    }
    for task in &tasks {
        let watched = world.json(&["watch", task, "--wait", "240", "--json"]);
        assert_eq!(watched["settled"][0]["status"], "completed", "{watched}");
    }
    world.stop_and_check_nothing_left();
}

#[test]
fn the_next_sheep_goes_at_the_probes_first_answer_claude_code() {
    let test = "harness_release::claude_code";
    if let Some(agent) = installed_or_skip(Host::ClaudeCode, test) {
        the_next_sheep_goes_at_the_probes_first_answer(&agent);
    }
}

#[test]
fn the_next_sheep_goes_at_the_probes_first_answer_codex() {
    let test = "harness_release::codex";
    if let Some(agent) = installed_or_skip(Host::Codex, test) {
        the_next_sheep_goes_at_the_probes_first_answer(&agent);
    }
}
