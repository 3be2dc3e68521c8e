//! Provider-limit benchmark (a bench binary, not a timed test): run with
//! `cargo bench -p shepherd --bench limits` (add `-- --quick` for 8 sheep instead of 16).
//!
//! Sixteen headless Codex sheep share one provider key, offline against the fake model in its
//! rate-limit mode: a window of R requests per 10 s for that key, refused beyond with a 429
//! that says when the window frees. Every sheep's task takes two model requests (a
//! `shepherd_done` call, then final words), all sixteen run at once (`shepherd run` of sixteen
//! parallel tasks). Reported, with Shepherd holding the key (`holdProviderKeys` on, the
//! default) and with each limited sheep waiting alone (off):
//! - the run's wall time against the ideal schedule (tasks × requests ÷ R × 10 s);
//! - the 429s the provider sent after the first;
//! - whether every task completed.
//!
//! Codex does not say when a 429 resets, so each wait is `rateLimitWaitSeconds`, set here to
//! the window's length.

// Benches set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use shepherd_testkit::agents::{AgentBinary, AgentEnv, Host, installed_or_skip};
use shepherd_testkit::fake_llm::{Exhausted, FakeLlm, Limits, Script, Step};

const SHEPHERD: &str = env!("CARGO_BIN_EXE_shepherd");
/// Requests the key admits per window.
const PER_WINDOW: u32 = 8;
const WINDOW: Duration = Duration::from_secs(10);
/// Model requests each task makes.
const REQUESTS_PER_TASK: u32 = 2;

/// What one run of the herd showed.
struct Outcome {
    elapsed: Duration,
    completed: usize,
    /// When each 429 was sent, since the fake model started.
    refusals: Vec<Duration>,
    /// Processes the herd left behind (killed by the bench).
    left_behind: usize,
}

impl Outcome {
    /// The 429s in each window of [`WINDOW`] from the first one: the first window's are the
    /// burst sent before any sheep had heard of the limit.
    fn per_window(&self) -> Vec<usize> {
        let Some(first) = self.refusals.iter().min() else {
            return Vec::new();
        };
        let mut counts = Vec::new();
        for at in &self.refusals {
            let index = ((*at - *first).as_secs_f64() / WINDOW.as_secs_f64()) as usize;
            if counts.len() <= index {
                counts.resize(index + 1, 0);
            }
            counts[index] += 1;
        }
        counts
    }
}

fn script(sheep: usize) -> Script {
    let mut script = Script::new()
        .with_toolless(Step::text("Fake title"))
        .with_exhausted(Exhausted::Step(Box::new(Step::text(
            "fake-llm: the script is finished",
        ))));
    for n in 0..sheep {
        script = script.with_queue(
            &format!("m{n}"),
            [
                Step::tool_call_suffix(
                    "shepherd_done",
                    json!({"status": "completed", "summary": "one of the herd"}),
                ),
                Step::text("Done."),
            ],
        );
    }
    script
}

fn shepherd(env: &AgentEnv, codex: &AgentBinary, runtime: &std::path::Path) -> Command {
    let mut command = Command::new(SHEPHERD);
    env.apply(&mut command);
    command
        .env("XDG_RUNTIME_DIR", runtime)
        .env(Host::Codex.env_var(), &codex.path)
        .current_dir(env.work_dir());
    command
}

fn run_herd(codex: &AgentBinary, sheep: usize, hold: bool) -> Outcome {
    let fake = FakeLlm::start(script(sheep)).unwrap();
    fake.set_limits(Limits::new().with_window(PER_WINDOW, WINDOW));
    let env = AgentEnv::builder(Host::Codex, &fake).build().unwrap();
    let runtime = env.root().join("run");
    std::fs::create_dir_all(&runtime).unwrap();
    let agents = env.home().join(".agents/agents");
    std::fs::create_dir_all(&agents).unwrap();
    let mut plan = String::from("backend: headless\ntimeout: 15\ntasks:\n");
    for n in 0..sheep {
        std::fs::write(
            agents.join(format!("w{n}.md")),
            format!(
                "---\nname: w{n}\ndescription: One of the herd.\nmodels:\n  codex: m{n}\n---\nYou are one of the herd.\n"
            ),
        )
        .unwrap();
        plan.push_str(&format!(
            "  - {{agent: w{n}, harness: codex, task: \"Report that you are done.\"}}\n"
        ));
    }
    for (key, value) in [
        ("maxParallelTasks", sheep.to_string()),
        ("maxConcurrency", sheep.to_string()),
        ("holdProviderKeys", hold.to_string()),
        // Codex words a 429 without its reset, so the wait is this setting: the window's length.
        ("rateLimitWaitSeconds", WINDOW.as_secs().to_string()),
    ] {
        let set = shepherd(&env, codex, &runtime)
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
    let mut child = shepherd(&env, codex, &runtime)
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
    let _stopped = shepherd(&env, codex, &runtime)
        .args(["broker", "stop"])
        .output();
    let left_behind = env.reap_processes(Duration::from_secs(30)).len();
    Outcome {
        elapsed,
        completed,
        refusals: fake.limited_replies().iter().map(|r| r.at).collect(),
        left_behind,
    }
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let Some(codex) = installed_or_skip(Host::Codex, "bench limits") else {
        return;
    };
    let sheep = if quick { 8 } else { 16 };
    let ideal = WINDOW.as_secs_f64() * (sheep as f64 * f64::from(REQUESTS_PER_TASK))
        / f64::from(PER_WINDOW);
    println!(
        "{sheep} headless Codex sheep on one key, {PER_WINDOW} requests per {} s, {REQUESTS_PER_TASK} requests per task: ideal {ideal:.1} s",
        WINDOW.as_secs()
    );
    for (hold, name) in [(true, "limiter on "), (false, "limiter off")] {
        let outcome = run_herd(&codex, sheep, hold);
        let windows = outcome.per_window();
        let later = windows.iter().skip(1);
        println!(
            "  {name}: {:.1} s ({:.2}× ideal), {}/{sheep} completed, {} 429s after the first \
             ({} in its window, then {} in {} windows, at most {} in one){}",
            outcome.elapsed.as_secs_f64(),
            outcome.elapsed.as_secs_f64() / ideal,
            outcome.completed,
            outcome.refusals.len().saturating_sub(1),
            windows.first().map_or(0, |n| n.saturating_sub(1)),
            later.clone().sum::<usize>(),
            later.clone().filter(|n| **n > 0).count(),
            later.max().copied().unwrap_or(0),
            match outcome.left_behind {
                0 => String::new(),
                n => format!(", {n} processes left behind"),
            },
        );
    }
}
