//! Herdr benchmark (a bench binary, not a timed test), against a real Herdr: run with
//! `HERDR_BIN=../shared/tools/herdr/herdr cargo bench -p shepherd --bench herdr` (or with
//! `herdr` on `PATH`; add `-- --quick` for a short run).
//!
//! Every figure is the `shepherd` CLI as a caller inside a Herdr pane sees it, with a sleeper
//! sheep (`sleep 600`) and `keepOpen` off unless said, on a private Herdr server:
//! 1. spawn → ready, one at a time, and close with the pane confirmed gone (Herdr no longer
//!    lists its terminal), with `keepOpen` off and on — beside headless and tmux (when
//!    installed) measured the same way in the same run;
//! 2. ten spawns at once, then ten closes at once: the wall time and each call's latency;
//! 3. `shepherd broker stop` with 40 sheep in Herdr: how long the whole herd takes to close,
//!    and what it could not confirm.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use serde_json::{Value, json};
use shepherd_testkit::fake_herdr::RealHerdr;

struct World {
    _dir: tempfile::TempDir,
    home: PathBuf,
    runtime: PathBuf,
    project: PathBuf,
    env: Vec<(String, String)>,
}

impl World {
    fn new(env: Vec<(String, String)>) -> Self {
        Self::with_settings(env, r#"{"keepOpen": false}"#)
    }

    fn with_settings(env: Vec<(String, String)>, settings_json: &str) -> Self {
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
            agents.join("sleeper.md"),
            "---\nname: sleeper\ndescription: bench sheep\ncommand: [\"sleep\", \"600\"]\n---\nbench\n",
        )
        .unwrap();
        let settings = home.join(".pi/agent/pi-shepherd");
        std::fs::create_dir_all(&settings).unwrap();
        std::fs::write(settings.join("config.json"), settings_json).unwrap();
        let project = project.canonicalize().unwrap();
        Self {
            _dir: dir,
            home,
            runtime,
            project,
            env,
        }
    }

    fn run(&self, args: &[&str]) -> Value {
        let out = Command::new(env!("CARGO_BIN_EXE_shepherd"))
            .args(args)
            .arg("--json")
            .current_dir(&self.project)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &self.home)
            .env("XDG_RUNTIME_DIR", &self.runtime)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "shepherd {args:?}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }

    /// Spawn and return (agent id, milliseconds).
    fn spawn(&self, backend: &str, label: &str) -> (String, f64) {
        let started = Instant::now();
        let spawned = self.run(&["spawn", "sleeper", "--backend", backend, "--label", label]);
        let ms = started.elapsed().as_secs_f64() * 1000.0;
        (spawned["agentId"].as_str().unwrap().to_owned(), ms)
    }

    fn close(&self, agent: &str) -> f64 {
        let started = Instant::now();
        self.run(&["close", agent]);
        started.elapsed().as_secs_f64() * 1000.0
    }
}

impl Drop for World {
    fn drop(&mut self) {
        let _stopped = Command::new(env!("CARGO_BIN_EXE_shepherd"))
            .args(["broker", "stop"])
            .current_dir(&self.project)
            .env("HOME", &self.home)
            .env("XDG_RUNTIME_DIR", &self.runtime)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .output();
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let at = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[at.min(sorted.len() - 1)]
}

fn summary(label: &str, mut ms: Vec<f64>) {
    ms.sort_by(f64::total_cmp);
    println!(
        "{label:<44} n={:<3} p50 {:>7.1} ms  p90 {:>7.1} ms  max {:>7.1} ms",
        ms.len(),
        percentile(&ms, 0.5),
        percentile(&ms, 0.9),
        ms[ms.len() - 1]
    );
}

/// Spawns and closes `rounds` sleepers one at a time; `gone` confirms a closed sheep's pane
/// is gone (Herdr) before the next round.
fn one_at_a_time(
    world: &World,
    backend: &str,
    name: &str,
    rounds: usize,
    gone: &dyn Fn(&str) -> bool,
) {
    world.run(&["broker", "ensure"]);
    let (mut spawns, mut closes) = (Vec::new(), Vec::new());
    for n in 0..rounds {
        let label = format!("{backend}-{n}");
        let (agent, ms) = world.spawn(backend, &label);
        spawns.push(ms);
        closes.push(world.close(&agent));
        assert!(gone(&format!("sleeper: {label}")), "{label} is still there");
    }
    summary(&format!("{name}: spawn → ready (sleeper)"), spawns);
    summary(&format!("{name}: close, pane confirmed gone"), closes);
}

fn labels(herdr: &RealHerdr) -> Vec<String> {
    herdr.call("pane.list", &json!({}))["panes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["label"].as_str().map(str::to_owned))
        .collect()
}

fn ten_at_once(world: &World, herdr: &RealHerdr) {
    world.run(&["broker", "ensure"]);
    let started = Instant::now();
    let spawned: Vec<(String, f64)> = std::thread::scope(|scope| {
        let all: Vec<_> = (0..10)
            .map(|n| scope.spawn(move || world.spawn("herdr", &format!("ten-{n}"))))
            .collect();
        all.into_iter().map(|s| s.join().unwrap()).collect()
    });
    let spawn_wall = started.elapsed();
    let started = Instant::now();
    let closes: Vec<f64> = std::thread::scope(|scope| {
        let all: Vec<_> = spawned
            .iter()
            .map(|(agent, _)| scope.spawn(move || world.close(agent)))
            .collect();
        all.into_iter().map(|s| s.join().unwrap()).collect()
    });
    let close_wall = started.elapsed();
    assert!(!labels(herdr).iter().any(|l| l.contains("ten-")));
    println!(
        "herdr: 10 spawns at once: all ready in {:.0} ms; 10 closes at once: all gone in {:.0} ms",
        spawn_wall.as_secs_f64() * 1000.0,
        close_wall.as_secs_f64() * 1000.0
    );
    summary(
        "herdr: spawn → ready, 10 at once",
        spawned.into_iter().map(|(_, ms)| ms).collect(),
    );
    summary("herdr: close, 10 at once", closes);
}

fn herd_shutdown(world: &World, herdr: &RealHerdr, sheep: usize) {
    world.run(&["broker", "ensure"]);
    std::thread::scope(|scope| {
        for chunk in 0..4 {
            scope.spawn(move || {
                for n in (chunk..sheep).step_by(4) {
                    world.spawn("herdr", &format!("herd-{n}"));
                }
            });
        }
    });
    let started = Instant::now();
    let stopped = world.run(&["broker", "stop"]);
    let took = started.elapsed();
    let left = labels(herdr).iter().filter(|l| l.contains("herd-")).count();
    println!(
        "herdr: broker stop with {sheep} sheep: {:.2} s, closed {}, not confirmed {}, panes left {left}",
        took.as_secs_f64(),
        stopped["closed"],
        stopped["failed"].as_array().map_or(0, Vec::len),
    );
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let rounds = if quick { 10 } else { 30 };
    let Some(herdr) = RealHerdr::start("bench_herdr") else {
        println!("no Herdr: set HERDR_BIN or put herdr on PATH");
        return;
    };
    herdr.call("workspace.create", &json!({"cwd": "/tmp", "label": "user"}));
    let inside = vec![
        ("HERDR_ENV".to_owned(), "1".to_owned()),
        (
            "HERDR_SOCKET_PATH".to_owned(),
            herdr.socket().display().to_string(),
        ),
        ("HERDR_PANE_ID".to_owned(), "w1:p1".to_owned()),
        ("HERDR_WORKSPACE_ID".to_owned(), "w1".to_owned()),
    ];
    let world = World::new(inside.clone());
    let herdr_gone = |label: &str| !labels(&herdr).iter().any(|l| l == label);
    one_at_a_time(&world, "herdr", "herdr", rounds, &herdr_gone);
    let kept = World::with_settings(inside.clone(), r#"{"keepOpen": true}"#);
    one_at_a_time(&kept, "herdr", "herdr, keepOpen on", rounds, &herdr_gone);
    drop(kept);
    one_at_a_time(
        &World::new(Vec::new()),
        "headless",
        "headless",
        rounds,
        &|_| true,
    );
    let tmux_dir = tempfile::tempdir().unwrap();
    let tmux_installed = Command::new("tmux").arg("-V").output().is_ok();
    if tmux_installed {
        let tmux = World::new(vec![(
            "TMUX_TMPDIR".into(),
            tmux_dir.path().display().to_string(),
        )]);
        one_at_a_time(&tmux, "tmux", "tmux", rounds, &|_| true);
        let _killed = Command::new("tmux")
            .arg("kill-server")
            .env("TMUX_TMPDIR", tmux_dir.path())
            .output();
    }
    ten_at_once(&world, &herdr);
    herd_shutdown(&World::new(inside), &herdr, if quick { 10 } else { 40 });
    drop(world);
}
