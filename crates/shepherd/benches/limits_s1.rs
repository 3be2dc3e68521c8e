//! The S1 rate-limit scenario as a bench (a bench binary, not a timed test): run with
//! `cargo bench -p shepherd --bench limits_s1` (`-- --runs N` for N runs of each mode, 5 by default).
//!
//! Eight headless Claude Code and eight headless Codex sheep in one `shepherd run --plan` of
//! sixteen parallel tasks, offline against two fake models (one per API, so one provider key
//! each) that answer each request after 1.5 s, let 3 requests of a key be in flight at once and
//! refuse beyond that with a 429 announcing `retry-after: 2` and the provider's own body. Each
//! task takes three model requests (a harmless `shepherd_herd` call, a `shepherd_done` call,
//! then final words), as the scenario measured with the real providers does. Shepherd's
//! settings are its defaults (`rateLimitWaitSeconds` 60) apart from room for sixteen tasks; the
//! agents' own retries are off, as the test kit configures them, so every refusal reaches
//! Shepherd. Runs in threes, interleaved, with the limiter on (`holdProviderKeys`, the default)
//! and off and with unlimited keys, report per run and as medians:
//! - the wall time against the ideal schedule (per key: 8 tasks × 3 requests × 1.5 s ÷ 3 in
//!   flight = 12 s; the keys run side by side);
//! - the 429s per key, and the most refused in one 2 s window after the first window (the
//!   burst sent before any sheep had heard);
//! - whether all sixteen completed;
//! - and, as the floor, a third run whose keys are not limited at all: what sixteen agents take
//!   on this machine with no refusal, which the limited runs cannot beat.

// Benches set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use shepherd_testkit::agents::{AgentBinary, AgentEnv, Host, installed_or_skip};
use shepherd_testkit::fake_llm::{Exhausted, FakeLlm, Limits, Script, Step};

const SHEPHERD: &str = env!("CARGO_BIN_EXE_shepherd");
/// Tasks per agent.
const EACH: usize = 8;
/// Requests a key may have in flight.
const IN_FLIGHT: usize = 3;
/// What a 429 announces, and the window refusals are counted in.
const RETRY_AFTER: Duration = Duration::from_secs(2);
/// How long each answer takes.
const ANSWER: Duration = Duration::from_millis(1500);
/// Model requests each task makes.
const REQUESTS_PER_TASK: usize = 3;

/// One run of the herd.
struct Outcome {
    elapsed: Duration,
    completed: usize,
    /// Per key (Claude Code's, Codex's): when each 429 was sent, since its fake started.
    refusals: [Vec<Duration>; 2],
    left_behind: usize,
}

impl Outcome {
    /// The most 429s of one key in one window after its first window.
    fn most_per_later_window(&self) -> usize {
        self.refusals
            .iter()
            .map(|times| {
                let Some(first) = times.iter().min() else {
                    return 0;
                };
                let mut counts: Vec<usize> = Vec::new();
                for at in times {
                    let index = ((*at - *first).as_secs_f64() / RETRY_AFTER.as_secs_f64()) as usize;
                    if counts.len() <= index {
                        counts.resize(index + 1, 0);
                    }
                    counts[index] += 1;
                }
                counts.iter().skip(1).max().copied().unwrap_or(0)
            })
            .max()
            .unwrap_or(0)
    }
}

/// How a run's herd meets its provider.
#[derive(Clone, Copy, PartialEq)]
enum Mode {
    /// Keys limited, Shepherd's limiter on (the default).
    On,
    /// Keys limited, the limiter off (`holdProviderKeys false`).
    Off,
    /// Keys unlimited: what sixteen agents take on this machine with no refusal at all, the
    /// floor any limited run stands on.
    Free,
}

impl Mode {
    fn label(self) -> &'static str {
        match self {
            Mode::On => "on  ",
            Mode::Off => "off ",
            Mode::Free => "free",
        }
    }
}

fn model(limited: bool) -> FakeLlm {
    let mut script = Script::new()
        .with_toolless(Step::text("Fake title"))
        .with_exhausted(Exhausted::Step(Box::new(Step::text(
            "fake-llm: the script is finished",
        ))));
    for n in 0..EACH {
        script = script.with_queue(
            &format!("m{n}"),
            [
                Step::tool_call_suffix("shepherd_herd", json!({})).with_delay(ANSWER),
                Step::tool_call_suffix(
                    "shepherd_done",
                    json!({"status": "completed", "summary": "one of the herd"}),
                )
                .with_delay(ANSWER),
                Step::text("Done.").with_delay(ANSWER),
            ],
        );
    }
    let fake = FakeLlm::start(script).unwrap();
    if limited {
        fake.set_limits(
            Limits::new()
                .with_max_in_flight(IN_FLIGHT)
                .with_retry_after(RETRY_AFTER),
        );
    }
    fake
}

fn shepherd(
    env: &AgentEnv,
    codex_env: &AgentEnv,
    agents: &[AgentBinary; 2],
    runtime: &std::path::Path,
) -> Command {
    let common = ["HOME", "TMPDIR", "NO_COLOR"];
    let codex_vars: Vec<_> = codex_env
        .vars()
        .into_iter()
        .filter(|(name, _)| !common.contains(&name.as_str()) && !name.starts_with("XDG_"))
        .collect();
    let mut command = Command::new(SHEPHERD);
    env.apply(&mut command);
    command
        .envs(codex_vars)
        .env("XDG_RUNTIME_DIR", runtime)
        .current_dir(env.work_dir());
    for agent in agents {
        command.env(agent.host.env_var(), &agent.path);
    }
    command
}

fn run_herd(agents: &[AgentBinary; 2], mode: Mode) -> Outcome {
    let claude_model = model(mode != Mode::Free);
    let codex_model = model(mode != Mode::Free);
    let env = AgentEnv::builder(Host::ClaudeCode, &claude_model)
        .build()
        .unwrap();
    let codex_env = AgentEnv::builder(Host::Codex, &codex_model)
        .build()
        .unwrap();
    let runtime = env.root().join("run");
    std::fs::create_dir_all(&runtime).unwrap();
    let dir = env.home().join(".agents/agents");
    std::fs::create_dir_all(&dir).unwrap();
    let mut plan = String::from("backend: headless\ntimeout: 300\ntasks:\n");
    for (harness, offset) in [("claude-code", 0), ("codex", EACH)] {
        for n in 0..EACH {
            let name = format!("w{}", n + offset);
            std::fs::write(
                dir.join(format!("{name}.md")),
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
    let total = 2 * EACH;
    for (key, value) in [
        ("maxParallelTasks", total.to_string()),
        ("maxConcurrency", total.to_string()),
        ("holdProviderKeys", (mode != Mode::Off).to_string()),
    ] {
        let set = shepherd(&env, &codex_env, agents, &runtime)
            .args(["settings", "set", key, &value])
            .output()
            .unwrap();
        assert!(
            set.status.success(),
            "{}",
            String::from_utf8_lossy(&set.stderr)
        );
    }
    let started = Instant::now();
    let mut child = shepherd(&env, &codex_env, agents, &runtime)
        .args(["run", "--plan", "-", "--json"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(plan.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    let elapsed = started.elapsed();
    let report: Value = serde_json::from_slice(&output.stdout).unwrap_or(Value::Null);
    let completed = report["results"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| r["status"] == "completed")
        .count();
    let _stopped = shepherd(&env, &codex_env, agents, &runtime)
        .args(["broker", "stop"])
        .output();
    let left_behind = env.reap_processes(Duration::from_secs(30)).len()
        + codex_env.reap_processes(Duration::from_secs(30)).len();
    let times = |fake: &FakeLlm| fake.limited_replies().iter().map(|r| r.at).collect();
    Outcome {
        elapsed,
        completed,
        refusals: [times(&claude_model), times(&codex_model)],
        left_behind,
    }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let runs = args
        .iter()
        .position(|a| a == "--runs")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(5_usize);
    let (Some(claude), Some(codex)) = (
        installed_or_skip(Host::ClaudeCode, "bench limits_s1"),
        installed_or_skip(Host::Codex, "bench limits_s1"),
    ) else {
        return;
    };
    let agents = [claude, codex];
    let ideal = (EACH * REQUESTS_PER_TASK) as f64 * ANSWER.as_secs_f64() / IN_FLIGHT as f64;
    println!(
        "S1: {EACH} Claude Code + {EACH} Codex sheep, {IN_FLIGHT} in flight per key, 429 \
         retry-after {} s, {:.1} s per answer, {REQUESTS_PER_TASK} requests per task: ideal \
         {ideal:.1} s; {runs} paired runs",
        RETRY_AFTER.as_secs(),
        ANSWER.as_secs_f64()
    );
    let mut walls = [Vec::new(), Vec::new(), Vec::new()];
    for run in 0..runs {
        // Interleaved, the order turned each time, so a busy spell hits all three alike.
        let mut order = [Mode::On, Mode::Off, Mode::Free];
        order.rotate_left(run % 3);
        for mode in order {
            let outcome = run_herd(&agents, mode);
            walls[mode as usize].push(outcome.elapsed.as_secs_f64());
            println!(
                "  run {}: limiter {}: {:.1} s ({:.2}× ideal), {}/{} completed, 429s {} \
                 (Claude Code's key) / {} (Codex's), at most {} in one later window{}",
                run + 1,
                mode.label(),
                outcome.elapsed.as_secs_f64(),
                outcome.elapsed.as_secs_f64() / ideal,
                outcome.completed,
                2 * EACH,
                outcome.refusals[0].len(),
                outcome.refusals[1].len(),
                outcome.most_per_later_window(),
                match outcome.left_behind {
                    0 => String::new(),
                    n => format!(", {n} processes left behind"),
                },
            );
        }
    }
    let [on, off, free] = walls.map(median);
    println!(
        "  median: limiter on {on:.1} s ({:.2}× ideal), off {off:.1} s ({:.2}× ideal), keys \
         unlimited {free:.1} s ({:.2}× ideal); on/off {:.2}; on over unlimited {:+.1} s",
        on / ideal,
        off / ideal,
        free / ideal,
        on / off,
        on - free
    );
}
