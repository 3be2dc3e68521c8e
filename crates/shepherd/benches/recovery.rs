//! Recovery benchmark (a bench binary, not a timed test): how long a herd takes to get its
//! broker back after `kill -9`, with no parent attached, and how long a task delegated at
//! that moment takes to complete end to end. Run with `cargo bench -p shepherd --bench recovery`
//! (add `-- --quick` for fewer kills).
//!
//! Measures, with the real `shepherd` binary and six shell sheep that loop on
//! `shepherd inbox --wait` / `shepherd done` as the README shows:
//! 1. kill → a new broker answers, started by the herd's own supervisors (p50/max);
//! 2. kill → a task delegated right away has completed (the delegating command itself
//!    reconnects and resends; p50/max);
//!
//! and checks that every sheep kept its pid (re-adopted, never restarted).

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

const LOOP: &str = r#"while :; do t=$(shepherd inbox --wait 60) || continue; shepherd done --status completed --summary ok >/dev/null; done"#;

struct World {
    _dir: tempfile::TempDir,
    home: PathBuf,
    runtime: PathBuf,
    project: PathBuf,
}

impl World {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let runtime = dir.path().join("run");
        let project = dir.path().join("project");
        for d in [&home, &runtime, &project] {
            std::fs::create_dir_all(d).unwrap();
        }
        let agents = home.join(".pi/agent/agents");
        std::fs::create_dir_all(&agents).unwrap();
        std::fs::write(
            agents.join("echo.md"),
            format!(
                "---\nname: echo\ndescription: bench sheep\ncommand: {}\n---\nbench\n",
                serde_json::to_string(&["sh", "-c", LOOP]).unwrap()
            ),
        )
        .unwrap();
        let project = project.canonicalize().unwrap();
        Self {
            _dir: dir,
            home,
            runtime,
            project,
        }
    }

    fn json(&self, args: &[&str]) -> Value {
        let output = Command::new(env!("CARGO_BIN_EXE_shepherd"))
            .args(args)
            .arg("--json")
            .current_dir(&self.project)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &self.home)
            .env("XDG_RUNTIME_DIR", &self.runtime)
            .output()
            .unwrap();
        serde_json::from_slice(&output.stdout).unwrap_or(Value::Null)
    }

    fn broker(&self) -> Option<u32> {
        self.json(&["broker", "status"])["status"]["pid"]
            .as_u64()
            .map(|p| p as u32)
    }
}

fn kill9(pid: u32) {
    let _killed = Command::new("kill").args(["-9", &pid.to_string()]).status();
    assert!(shepherd_term::process::wait_gone(
        pid,
        Instant::now() + Duration::from_secs(10)
    ));
}

fn summary(name: &str, mut samples: Vec<Duration>) {
    samples.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "{name}: n = {}, p50 {:.0} ms, max {:.0} ms",
        samples.len(),
        ms(samples[samples.len() / 2]),
        ms(*samples.last().unwrap())
    );
    if std::env::var_os("SHEPHERD_BENCH_SAMPLES").is_some() {
        let all: Vec<String> = samples.iter().map(|d| format!("{:.0}", ms(*d))).collect();
        println!("  samples (ms): {}", all.join(" "));
    }
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let kills = if quick { 3 } else { 10 };
    let world = World::new();
    let sheep: Vec<String> = (0..6)
        .map(|i| {
            world.json(&["spawn", "echo", "--label", &format!("s{i}")])["agentId"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    let pids = |w: &World| -> Vec<Value> {
        sheep
            .iter()
            .map(|s| w.json(&["status", s])["pid"].clone())
            .collect()
    };
    let before = pids(&world);

    let mut back = Vec::new();
    for _ in 0..kills {
        let old = world.broker().unwrap();
        let start = Instant::now();
        kill9(old);
        // Nothing here starts a broker: the herd's supervisors must.
        loop {
            if world.broker().is_some_and(|pid| pid != old) {
                break;
            }
            assert!(
                start.elapsed() < Duration::from_secs(15),
                "no broker came back"
            );
        }
        back.push(start.elapsed());
    }
    summary(
        "kill -9 → the herd's broker answers again (no parent attached)",
        back,
    );

    let mut end_to_end = Vec::new();
    for round in 0..kills {
        let old = world.broker().unwrap();
        let start = Instant::now();
        kill9(old);
        let target = &sheep[round % sheep.len()];
        let task = world.json(&["delegate", target, "after the kill"])["taskId"]
            .as_str()
            .unwrap()
            .to_owned();
        let watched = world.json(&["watch", &task, "--wait", "30"]);
        assert_eq!(watched["settled"][0]["status"], "completed", "{watched}");
        end_to_end.push(start.elapsed());
    }
    summary(
        "kill -9 → a task delegated at once has completed",
        end_to_end,
    );
    assert_eq!(
        pids(&world),
        before,
        "every sheep was re-adopted, none restarted"
    );
    println!("all {} sheep re-adopted with their pids", sheep.len());
    world.json(&["broker", "stop"]);
}
