//! A thousand sheep on one machine: `cargo bench -p shepherd --bench broker -- thousand
//! [--sheep N] [--tmux N] [--in-flight N] [--idle S]`.
//!
//! Spawns N headless test sheep (default 1,000; then 200 in tmux windows) with 32 spawns in
//! flight, hands each a task as it comes up, waits for every task to settle, leaves the herd
//! idle for 10 s, then closes every sheep and confirms that no process of the herd is left.
//! Reports the wall times, spawn → ready p50/p99, the broker's CPU (busy and idle) and peak RSS,
//! the total PSS of all supervisors (and of the sheep programs, for scale) and the broker's
//! open descriptors, and fails if a task was lost or a process outlived its close.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;
use shepherd_core::protocol::Role;
use shepherd_testkit::procs::{self, Process};

use super::{World, bin, connect, percentile, proc_stat};

/// What one run is asked to do.
pub(crate) struct Crowd {
    pub(crate) sheep: usize,
    pub(crate) backend: &'static str,
    pub(crate) in_flight: usize,
    pub(crate) idle: Duration,
}

impl Crowd {
    /// The runs `-- thousand [--sheep N] [--tmux N] [--in-flight N] [--idle S]` asks for: the
    /// headless crowd, then the tmux one (when tmux is installed); a count of 0 skips a run.
    pub(crate) fn from_args(args: &[String], tmux_installed: bool) -> Vec<Self> {
        let value = |flag: &str, default: usize| {
            args.iter()
                .position(|a| a == flag)
                .and_then(|i| args.get(i + 1))
                .map_or(default, |n| n.parse().expect("a number"))
        };
        let in_flight = value("--in-flight", 32);
        let idle = Duration::from_secs(value("--idle", 10) as u64);
        let tmux = if tmux_installed {
            value("--tmux", 200)
        } else {
            0
        };
        [("headless", value("--sheep", 1000)), ("tmux", tmux)]
            .into_iter()
            .filter(|(_, sheep)| *sheep > 0)
            .map(|(backend, sheep)| Self {
                sheep,
                backend,
                in_flight,
                idle,
            })
            .collect()
    }
}

/// Sum of the PSS (kB) of every running process of this world whose arguments `is_one` picks.
fn pss_of(is_one: impl Fn(&[String]) -> bool, marker: &str) -> (usize, u64) {
    processes_of(marker)
        .iter()
        .filter(|process| is_one(&process.arguments()))
        .filter_map(Process::pss_kb)
        .fold((0, 0), |(count, pss), kb| (count + 1, pss + kb))
}

/// This world's running processes: their command line or environment mentions `marker` (this
/// world's directory).
fn processes_of(marker: &str) -> Vec<Process> {
    procs::all()
        .into_iter()
        .filter(|process| {
            process.command_line_holds(marker) || process.environment_holds(marker.as_bytes())
        })
        .collect()
}

pub(crate) async fn run(world: &World, crowd: &Crowd) {
    let Crowd {
        sheep,
        backend,
        in_flight,
        idle,
    } = *crowd;
    world.define(
        "crowd",
        &[
            bin("shepherd-test-sheep").to_str().unwrap(),
            "--on-task",
            "done completed ok {id}",
        ],
    );
    let socket = world.socket();
    let marker = world.home.to_string_lossy().into_owned();
    let pid = world.cli(&["broker", "status"])["status"]["pid"]
        .as_u64()
        .unwrap() as u32;
    let (cpu0, _) = proc_stat(pid);
    let started = Instant::now();
    // `in_flight` parents, each spawning and delegating the next sheep until all are up.
    let next = Arc::new(AtomicUsize::new(0));
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..in_flight {
        let next = next.clone();
        let socket = socket.clone();
        workers.spawn(async move {
            let mut client = connect(&socket, Role::Parent, None, None).await;
            let mut mine = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                if i >= sheep {
                    return (client, mine);
                }
                let asked = Instant::now();
                let spawned = client
                    .call_value(
                        "spawn",
                        json!({ "agent": "crowd", "label": format!("c{i}"), "backend": backend }),
                    )
                    .await
                    .unwrap();
                let spawn_ms = asked.elapsed().as_secs_f64() * 1000.0;
                let id = spawned["agentId"].as_str().unwrap().to_owned();
                let task = client
                    .call_value(
                        "delegate",
                        json!({ "target": id, "task": format!("crowd {i}") }),
                    )
                    .await
                    .unwrap();
                mine.push((id, task["taskId"].as_str().unwrap().to_owned(), spawn_ms));
            }
        });
    }
    let mut parents = Vec::new();
    while let Some(done) = workers.join_next().await {
        parents.push(done.unwrap());
    }
    let spawned_at = started.elapsed().as_secs_f64();
    let mut settled = 0;
    for (client, mine) in &mut parents {
        for (_, task, _) in mine.iter() {
            let waited = client
                .call_value("wait", json!({ "id": task, "timeoutMs": 120_000 }))
                .await
                .unwrap();
            if waited["settled"][0]["status"] == "completed" {
                settled += 1;
            }
        }
    }
    let settled_at = started.elapsed().as_secs_f64();
    let (cpu_busy, _) = proc_stat(pid);
    let idle_from = Instant::now();
    // Idle is measured over a fixed window while every sheep is alive and idle.
    tokio::time::sleep(idle).await;
    let (cpu_idle_end, _) = proc_stat(pid);
    let idle_secs = idle_from.elapsed().as_secs_f64();
    let (supervisors, supervisors_pss) = pss_of(
        |argv| {
            argv.get(1).is_some_and(|a| a == "supervise")
                && argv.first().is_some_and(|a| a.ends_with("/shepherd"))
        },
        &marker,
    );
    let (programs, programs_pss) = pss_of(
        |argv| {
            argv.first()
                .is_some_and(|a| a.ends_with("/shepherd-test-sheep"))
        },
        &marker,
    );
    let descriptors = std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, Iterator::count);
    let closing = Instant::now();
    let mut closes = tokio::task::JoinSet::new();
    for (mut client, mine) in parents {
        closes.spawn(async move {
            for (id, _, _) in &mine {
                client
                    .call_value("close", json!({ "id": id }))
                    .await
                    .unwrap();
            }
            mine
        });
    }
    let mut spawn_ms = Vec::new();
    while let Some(mine) = closes.join_next().await {
        spawn_ms.extend(mine.unwrap().into_iter().map(|(_, _, ms)| ms));
    }
    let closed_in = closing.elapsed().as_secs_f64();
    let (cpu_end, hwm_kb) = proc_stat(pid);
    // The detached `shepherd` tmux session keeps the shell it was made with for the person
    // who attaches; that pane (and its server) are tmux's, not a sheep's.
    let panes = std::process::Command::new("tmux")
        .args(["list-panes", "-a", "-F", "#{pane_pid}"])
        .env_remove("TMUX")
        .env("TMUX_TMPDIR", &world.tmux)
        .output()
        .map(|out| String::from_utf8_lossy(&out.stdout).into_owned())
        .unwrap_or_default();
    let placeholders: Vec<u32> = panes
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect();
    // The world's private tmux server lives until the world is dropped.
    let left: Vec<Process> = processes_of(&marker)
        .into_iter()
        .filter(|p| p.pid != pid && !placeholders.contains(&p.pid) && p.name() != "tmux: server")
        .collect();
    spawn_ms.sort_by(f64::total_cmp);
    let hz = 100.0;
    println!(
        "{sheep} {backend} test sheep, {in_flight} spawns in flight: spawned+delegated in {spawned_at:.2} s, all settled at {settled_at:.2} s, {settled}/{sheep} completed; closed in {closed_in:.2} s, {} processes left",
        left.len()
    );
    println!(
        "  spawn -> ready p50 {:.1} ms, p99 {:.1} ms",
        percentile(&spawn_ms, 50.0),
        percentile(&spawn_ms, 99.0)
    );
    println!(
        "  broker: CPU {:.2} s for the run, idle CPU {:.3}% over {idle_secs:.1} s, peak RSS {:.1} MB, {descriptors} descriptors open with the herd up",
        (cpu_end - cpu0) as f64 / hz,
        (cpu_idle_end - cpu_busy) as f64 / hz / idle_secs * 100.0,
        hwm_kb as f64 / 1024.0
    );
    println!(
        "  {supervisors} supervisors: PSS {:.1} MB in all ({:.2} MB each); {programs} test sheep programs: PSS {:.1} MB",
        supervisors_pss as f64 / 1024.0,
        supervisors_pss as f64 / 1024.0 / supervisors.max(1) as f64,
        programs_pss as f64 / 1024.0
    );
    assert_eq!(settled, sheep, "a task was lost");
    let described: Vec<String> = left
        .iter()
        .map(|p| format!("{} {}", p.pid, p.command_line()))
        .collect();
    assert!(
        left.is_empty(),
        "processes outlived the close: {described:?}"
    );
}
