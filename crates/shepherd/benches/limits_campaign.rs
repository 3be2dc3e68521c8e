//! The provider-limit reliability campaign (a bench binary, not a timed test): run with
//! `cargo bench -p shepherd --bench limits_campaign` (`-- --episodes N`, 100 by default;
//! `-- --minutes M` stops starting episodes after M minutes).
//!
//! Each episode is one task of one headless sheep, offline against its own fake model, on the
//! agents the harness tests drive (Claude Code, Codex, Gemini CLI, opencode, whichever are
//! installed), cycling agents and kinds: the fake refuses every request with a rate limit
//! (429, `retry-after: 2`), an overload (529 or 503) or a usage limit (resetting 2 s ahead).
//! Once `status` shows the task waiting, the limit lasts 2 s more (the bench is the provider:
//! it lifts the limit then); in one episode of four, on each agent in turn, the broker is killed
//! (SIGKILL) during that wait and started again. Reported: episodes, resumed (the next answered request came within
//! the reset + 10 s), failed (the task did not complete), doubled (the sheep's work ran twice:
//! more answered requests than the task's script holds, the last of them past its end).
//!
//! The agents' own retries are off, as the test kit configures them, so every refusal reaches
//! Shepherd; its settings are the defaults.

// Benches set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

#[path = "../tests/harness_support/mod.rs"]
mod harness_support;

use std::time::{Duration, Instant};

use harness_support::{World, scripted};
use serde_json::{Value, json};
use shepherd_testkit::agents::{AgentBinary, Host, installed_or_skip};
use shepherd_testkit::fake_llm::{FakeLlm, Limits, Step, UsageLimit};

/// How long a limit lasts once Shepherd shows the task waiting.
const RESET: Duration = Duration::from_secs(2);
/// How late after the reset the task may go on and still count as resumed.
const GRACE: Duration = Duration::from_secs(10);
/// How long the bench waits for any one thing before it counts the episode failed.
const DEADLINE: Duration = Duration::from_secs(180);
/// Model requests the task's script answers.
const SCRIPTED: usize = 2;

/// What the fake refuses with.
#[derive(Debug, Clone, Copy)]
enum Kind {
    RateLimit,
    Overload,
    UsageLimit,
}

impl Kind {
    const ALL: [Self; 3] = [Self::RateLimit, Self::Overload, Self::UsageLimit];

    fn limits(self) -> Limits {
        match self {
            Self::RateLimit => Limits::new().with_max_in_flight(0).with_retry_after(RESET),
            Self::Overload => Limits::new().with_max_in_flight(0).with_overloaded(),
            Self::UsageLimit => Limits::new().with_usage_limit(UsageLimit::next(1_000_000, RESET)),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::RateLimit => "rate limit",
            Self::Overload => "overload",
            Self::UsageLimit => "usage limit",
        }
    }
}

/// How one episode went.
#[derive(Debug, Default)]
struct Outcome {
    /// Seconds from the reset to the next answered request, when there was one.
    resumed_after: Option<f64>,
    completed: bool,
    doubled: bool,
    /// Why it fell short, when it did.
    why: Option<String>,
}

/// Polls `done` every 50 ms until it says yes or [`DEADLINE`] passes.
fn wait_for(mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + DEADLINE;
    while Instant::now() < deadline {
        if done() {
            return true;
        }
        // Polled by design: the bench reads the fake's log and `status` until a deadline.
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

/// Answered requests that took a step of the task's script (not a title).
fn answered(fake: &FakeLlm) -> usize {
    fake.requests()
        .iter()
        .filter(|r| r.limited.is_none() && r.queue != "toolless")
        .count()
}

fn episode(agent: &AgentBinary, kind: Kind, kill: bool) -> Outcome {
    let fake = FakeLlm::start(scripted([
        Step::tool_call_suffix(
            "shepherd_done",
            json!({"status": "completed", "summary": "done after the limit"}),
        ),
        Step::text("Finished after the limit."),
    ]))
    .unwrap();
    fake.set_limits(kind.limits());
    let world = World::new(agent, &fake);
    let mut outcome = Outcome::default();
    let id = world.spawn_worker("headless", Some("campaign"));
    let task = world.delegate(&id, "Report that you are done.", &[]);
    let limited = wait_for(|| {
        let output = world.run(&["status", &id, "--json"]);
        serde_json::from_slice::<Value>(&output.stdout)
            .is_ok_and(|status| status["task"]["rateLimit"].is_object())
    });
    if !limited {
        outcome.why = Some("the task never showed a limit".to_owned());
    }
    if kill {
        let status = world.run(&["broker", "status", "--json"]);
        let pid = serde_json::from_slice::<Value>(&status.stdout)
            .ok()
            .and_then(|s| s["status"]["pid"].as_i64())
            .and_then(|p| i32::try_from(p).ok())
            .and_then(rustix::process::Pid::from_raw);
        match pid {
            Some(pid) => {
                let _killed = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
                let ensured = world.run(&["broker", "ensure"]);
                if !ensured.status.success() {
                    outcome.why = Some("the broker did not start again".to_owned());
                }
            }
            None => outcome.why = Some("no broker to kill".to_owned()),
        }
    }
    // The provider's reset: the limit lasts RESET more, then the fake answers again.
    std::thread::sleep(RESET);
    let before = answered(&fake);
    fake.set_limits(Limits::new());
    let reset = Instant::now();
    if wait_for(|| answered(&fake) > before) {
        outcome.resumed_after = Some(reset.elapsed().as_secs_f64());
    }
    let watched = world.run(&["watch", &task, "--wait", "180", "--json"]);
    let watched: Value = serde_json::from_slice(&watched.stdout).unwrap_or(Value::Null);
    outcome.completed = watched["settled"][0]["status"] == "completed";
    if !outcome.completed && outcome.why.is_none() {
        outcome.why = Some(format!("the task did not complete: {watched}"));
    }
    outcome.doubled = answered(&fake) > SCRIPTED;
    world.run(&["close", &id]);
    world.run(&["broker", "stop"]);
    world.kill_tmux();
    let left = world.env.reap_processes(Duration::from_secs(30));
    if !left.is_empty() && outcome.why.is_none() {
        outcome.why = Some(format!("left running: {left:?}"));
    }
    outcome
}

fn flag(args: &[String], name: &str) -> Option<f64> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse().ok())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let episodes = flag(&args, "--episodes").map_or(100, |n| n as usize);
    let budget = flag(&args, "--minutes").map(|m| Duration::from_secs_f64(m * 60.0));
    let agents: Vec<AgentBinary> = [Host::ClaudeCode, Host::Codex, Host::Gemini, Host::Opencode]
        .into_iter()
        .filter_map(|host| installed_or_skip(host, "bench limits_campaign"))
        .collect();
    if agents.is_empty() {
        return;
    }
    println!(
        "limits campaign: up to {episodes} episodes over {} (each a rate limit, overload or \
         usage limit lasting {} s past Shepherd's first sign of it; the broker killed and \
         restarted mid-wait in one of four){}",
        agents
            .iter()
            .map(|a| a.host.to_string())
            .collect::<Vec<_>>()
            .join(", "),
        RESET.as_secs(),
        budget.map_or_else(String::new, |b| format!(
            ", starting none after {:.0} min",
            b.as_secs_f64() / 60.0
        )),
    );
    let started = Instant::now();
    let (mut ran, mut resumed, mut failed, mut doubled, mut killed) = (0, 0, 0, 0, 0);
    let mut slowest: f64 = 0.0;
    for n in 0..episodes {
        if budget.is_some_and(|b| started.elapsed() >= b) {
            break;
        }
        let agent = &agents[n % agents.len()];
        let kind = Kind::ALL[(n / agents.len()) % Kind::ALL.len()];
        // One episode in four, on each agent in turn.
        let kill = n % 4 == (n / 4) % 4;
        let outcome = episode(agent, kind, kill);
        ran += 1;
        killed += usize::from(kill);
        let on_time = outcome
            .resumed_after
            .is_some_and(|s| s <= GRACE.as_secs_f64());
        resumed += usize::from(on_time);
        failed += usize::from(!outcome.completed);
        doubled += usize::from(outcome.doubled);
        slowest = slowest.max(outcome.resumed_after.unwrap_or(f64::INFINITY));
        println!(
            "  {:>3} {:<18} {:<11}{} resumed {} {}{}{}",
            n + 1,
            agent.host.to_string(),
            kind.name(),
            if kill { " broker killed," } else { "" },
            outcome.resumed_after.map_or_else(
                || "never".to_owned(),
                |s| format!("{s:.1} s after the reset")
            ),
            if outcome.completed {
                "completed"
            } else {
                "FAILED"
            },
            if outcome.doubled { ", DOUBLED" } else { "" },
            outcome
                .why
                .map_or_else(String::new, |why| format!(" ({why})")),
        );
    }
    println!(
        "  {ran} episodes ({killed} with the broker killed) in {:.1} min: resumed within the \
         reset + {} s {resumed}, failed {failed}, doubled {doubled}; slowest resume {slowest:.1} s \
         after the reset",
        started.elapsed().as_secs_f64() / 60.0,
        GRACE.as_secs(),
    );
}
