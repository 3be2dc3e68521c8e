//! The merge queue under a crash schedule, against real git: a queue of 10 branches with a
//! check of at most 0.5 s; a seeded (and printed) schedule kills the broker (SIGKILL) at step
//! boundaries — after the queue said it merges or checks a branch — 20 times, landing again
//! after each kill. Every branch ends landed exactly once, the target only moved forward through
//! verified landings (each a merge of one branch onto the target before it), and no merge
//! worktree or check process is left. Three minutes at most in all.
//! `SHEPHERD_FAULT_SEED=<n>` replays a schedule.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::herd_support::{World, kill9, wait_gone};
use crate::merge_support::{define_writer, repository, run_json};
use shepherd_testkit::git::git;

const BRANCHES: usize = 10;
const KILLS: usize = 20;

/// A small, seeded generator (xorshift64*): the schedule is the seed's.
struct Schedule(u64);

impl Schedule {
    fn next(&mut self, below: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % below
    }
}

fn seed() -> u64 {
    std::env::var("SHEPHERD_FAULT_SEED")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .subsec_nanos()
                .into()
        })
        .max(1)
}

/// Runs `shepherd merge run --check check` and kills the broker once the queue said `after`
/// more things it is doing (merging, checking); waits for the command to end either way.
fn merge_and_kill(world: &World, run_id: &str, check: &str, after: u64) {
    let mut child = world
        .command(&["merge", run_id, "--check", check])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufRead::lines(std::io::BufReader::new(stderr)).map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut said = 0;
    while said < after {
        match rx.recv_timeout(Duration::from_secs(30)) {
            Ok(line) if line.starts_with("merging ") || line.starts_with("checking ") => {
                said += 1;
            }
            Ok(_) => {}
            // The command ended (nothing left to land) or went quiet: kill now.
            Err(_) => break,
        }
    }
    if let Some(pid) = world.running_broker() {
        kill9(pid);
    }
    assert!(
        wait_gone(child.id(), Duration::from_secs(60)),
        "shepherd merge did not end within 60 s of its broker's death"
    );
    let _reaped = child.wait();
}

#[test]
fn a_queue_killed_at_step_boundaries_lands_each_branch_once_and_leaves_nothing() {
    let started = Instant::now();
    let seed = seed();
    println!("fault schedule seed: {seed} (SHEPHERD_FAULT_SEED={seed} replays it)");
    let mut schedule = Schedule(seed);
    let world = World::new();
    let files: Vec<String> = (0..BRANCHES).map(|i| format!("f{i}")).collect();
    let names: Vec<&str> = files.iter().map(String::as_str).collect();
    repository(&world, &names);
    define_writer(&world, "writer");
    let tasks: Vec<String> = files.iter().map(|f| format!("writer={f} landed")).collect();
    let mut args = vec!["run", "--isolate", "--parallel"];
    args.extend(tasks.iter().map(String::as_str));
    world.settings(r#"{"maxParallelTasks": 10, "maxConcurrency": 10}"#);
    let (code, doc) = run_json(&world, &args);
    assert_eq!(code, 0, "{doc}");
    let run_id = doc["runId"].as_str().unwrap().to_owned();
    let base = git(&world.project, &["rev-parse", "main"]);
    // The check records its pid, and takes at most 0.5 s.
    let pids = world.dir.path().join("check-pids");
    let check = format!("echo $$ >> {}; sleep 0.1", pids.display());

    for kill in 0..KILLS {
        let after = 1 + schedule.next(4);
        let before = git(&world.project, &["rev-parse", "main"]);
        merge_and_kill(&world, &run_id, &check, after);
        let now = git(&world.project, &["rev-parse", "main"]);
        println!(
            "kill {kill}: after {after} step(s) said, main went from {before:.10} to {now:.10}"
        );
        // Only forward.
        let ancestry = std::process::Command::new("git")
            .args(["merge-base", "--is-ancestor", &before, &now])
            .current_dir(&world.project)
            .status()
            .unwrap();
        assert!(
            ancestry.success(),
            "kill {kill} (seed {seed}): main moved from {before} to {now}, not forward"
        );
    }
    // Landing again finishes the queue.
    let (code, merge) = run_json(&world, &["merge", &run_id, "--check", &check]);
    assert_eq!(code, 0, "seed {seed}: {merge}");

    // Every step on main since the base is a verified landing of one branch, each branch once.
    let steps = git(
        &world.project,
        &[
            "rev-list",
            "--first-parent",
            "--parents",
            &format!("{base}..main"),
        ],
    );
    let mut landed: HashMap<String, usize> = HashMap::new();
    for step in steps.lines() {
        let parents: Vec<&str> = step.split_whitespace().collect();
        assert_eq!(
            parents.len(),
            3,
            "seed {seed}: not a merge of one branch: {step}"
        );
        let changed = git(
            &world.project,
            &["diff", "--name-only", parents[1], parents[0]],
        );
        for file in changed.lines() {
            *landed.entry(file.to_owned()).or_default() += 1;
        }
    }
    for file in &files {
        assert_eq!(
            landed.get(file),
            Some(&1),
            "seed {seed}: {file} landed {:?} times",
            landed.get(file)
        );
        assert_eq!(
            git(&world.project, &["show", &format!("main:{file}")]),
            format!("{file} landed")
        );
    }
    // No merge worktree, and no check process, is left.
    let root = world.state_dir().join("worktrees");
    for repo in std::fs::read_dir(&root).into_iter().flatten().flatten() {
        for made in std::fs::read_dir(repo.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            assert!(
                !made.file_name().to_string_lossy().starts_with("merge-"),
                "seed {seed}: {} is left",
                made.path().display()
            );
        }
    }
    for pid in std::fs::read_to_string(&pids).unwrap_or_default().lines() {
        let pid: u32 = pid.trim().parse().unwrap();
        assert!(
            wait_gone(pid, Duration::from_secs(5)),
            "seed {seed}: check {pid} is left"
        );
    }
    assert!(
        started.elapsed() < Duration::from_secs(180),
        "seed {seed}: took {:?}",
        started.elapsed()
    );
}
