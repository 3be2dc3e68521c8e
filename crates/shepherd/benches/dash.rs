//! Dashboard benchmark (a bench binary, not a timed test): run with
//! `cargo bench -p shepherd --bench dash` (add `-- --quick` for a 10 s window).
//!
//! Measures what `shepherd herd --tui` costs while nothing changes but its clocks: a herd of
//! three `command` sheep, each with an open task, followed by the dashboard in a real tmux pane
//! (180 × 40); once it shows all three, the dashboard's CPU time (user + system, from
//! `/proc/<pid>/stat`) is read before and after a 30 s window, and the screen is captured at
//! both ends to confirm the clocks did move. The target is at most 0.3 s of CPU over 30 s.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;
use shepherd_testkit::agents::TmuxPane;

const HERD: &str = "bench-dash";

struct World {
    _dir: tempfile::TempDir,
    home: PathBuf,
    runtime: PathBuf,
    project: PathBuf,
}

fn shepherd() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_shepherd"))
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
            agents.join("busy.md"),
            "---\nname: busy\ndescription: bench sheep\ncommand: [\"sleep\", \"3600\"]\n---\nbench\n",
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
        let out = Command::new(shepherd())
            .args(args)
            .args(["--parent-session", HERD, "--json"])
            .current_dir(&self.project)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &self.home)
            .env("XDG_RUNTIME_DIR", &self.runtime)
            .output()
            .unwrap();
        assert!(out.status.success(), "shepherd {args:?}: {out:?}");
        serde_json::from_slice(&out.stdout).unwrap()
    }

    /// The dashboard's command line for a tmux pane, with exactly this world's environment.
    fn dashboard(&self) -> String {
        format!(
            "cd '{}' && exec env -i TERM=xterm-256color LANG=C.UTF-8 PATH='{}' HOME='{}' XDG_RUNTIME_DIR='{}' '{}' herd --tui --parent-session {HERD}",
            self.project.display(),
            std::env::var("PATH").unwrap_or_default(),
            self.home.display(),
            self.runtime.display(),
            shepherd().display(),
        )
    }
}

impl Drop for World {
    fn drop(&mut self) {
        let _stopped = Command::new(shepherd())
            .args(["broker", "stop", "--parent-session", HERD])
            .current_dir(&self.project)
            .env_clear()
            .env("HOME", &self.home)
            .env("XDG_RUNTIME_DIR", &self.runtime)
            .output();
    }
}

/// User plus system CPU time of `pid` so far, in seconds.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the command name (which may hold spaces) start at the last ')'.
    let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..]
        .split_whitespace()
        .collect();
    // utime and stime are fields 14 and 15 of the whole line: 11 and 12 after the name.
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    let per_second: f64 = String::from_utf8(
        Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap()
    .trim()
    .parse()
    .unwrap();
    #[allow(clippy::cast_precision_loss)]
    let ticks = ticks as f64;
    ticks / per_second
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let window = Duration::from_secs(if quick { 10 } else { 30 });
    let world = World::new();
    for label in ["a", "b", "c"] {
        let spawned = world.json(&["spawn", "busy", "--label", label, "--backend", "headless"]);
        let id = spawned["agentId"].as_str().unwrap().to_owned();
        world.json(&["delegate", &id, &format!("task {label}")]);
    }
    let started = Instant::now();
    let mut pane = TmuxPane::start_shell(&world.dashboard(), 180, 40).unwrap();
    pane.wait_for_all(
        &["busy: a", "busy: b", "busy: c", "● live"],
        Duration::from_secs(30),
    )
    .unwrap();
    println!(
        "dashboard start to three rows shown: {:.1} ms",
        started.elapsed().as_secs_f64() * 1000.0
    );
    let pid: u32 = pane
        .run(&["display-message", "-p", "-t", "agent", "#{pane_pid}"])
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let before_screen = pane.screen().unwrap();
    let before = cpu_seconds(pid);
    // The measurement window: the dashboard is left alone while its clocks tick.
    std::thread::sleep(window);
    let after = cpu_seconds(pid);
    let after_screen = pane.screen().unwrap();
    assert_ne!(before_screen, after_screen, "the clocks moved on screen");
    let used = after - before;
    println!(
        "dashboard CPU with only the clocks moving: {used:.3} s over {} s ({:.3} % of a core; target ≤ 0.3 s over 30 s)",
        window.as_secs(),
        used / window.as_secs_f64() * 100.0
    );
    let rss = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap()
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .map(|l| l.split_whitespace().nth(1).unwrap_or("?").to_owned())
        .unwrap_or_default();
    println!("dashboard peak RSS: {rss} kB");
    pane.kill();
}
