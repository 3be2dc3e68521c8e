//! Benchmark of the fieldnotes store under concurrent processes, measured the way the original
//! extension was measured: P worker processes (P = 1, 4, 16) each make K = 50 reservations
//! through the store library, into one shared session and into separate sessions, and the
//! same for a delegated task's whole note lifecycle (reserve, start, finish). Workers are
//! started first and released together, so process start-up is not counted. Reports notes per
//! second and per-operation p50/p95/max, checks that nothing was duplicated or lost and that no
//! call failed, and measures how fast the next writer takes over the lock of a holder killed
//! with SIGKILL, and the disk's own floor: how many durable commits per second one writer, and
//! sixteen writers in separate directories, can make at all.
//!
//! Run: `cargo bench -p shepherd-notes --bench store` (add `-- --quick` for a smoke run).
//!
//! A/B: `-- --base DIR` runs every scenario alternately with the `notes-worker` in `DIR` (an
//! earlier commit's build: `CARGO_TARGET_DIR=/tmp/base cargo build --release -p
//! shepherd-notes` in a checkout of it) and with this build's, `--reps N` times each (default
//! 3), and prints each build's range and the ratio of the medians. Ratios within one run hold
//! on a noisy machine; absolute figures move between runs.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::collections::HashSet;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use jiff::Timestamp;
use shepherd_notes::{CommitStage, PlannedNote, Store, StoreOptions};

const WORKER: &str = env!("CARGO_BIN_EXE_notes-worker");
const EVENT_TIMEOUT: Duration = Duration::from_secs(120);

struct Worker {
    child: Child,
    lines: mpsc::Receiver<(Instant, String)>,
}

impl Worker {
    fn spawn(program: &Path, args: &[String]) -> Self {
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn notes-worker");
        let stdout = child.stdout.take().expect("piped stdout");
        let (sender, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if sender.send((Instant::now(), line)).is_err() {
                    break;
                }
            }
        });
        Self { child, lines }
    }

    fn next(&self) -> (Instant, String) {
        self.lines
            .recv_timeout(EVENT_TIMEOUT)
            .expect("worker went quiet")
    }

    fn go(&mut self) {
        let stdin = self.child.stdin.as_mut().expect("piped stdin");
        stdin
            .write_all(b"go\n")
            .and_then(|()| stdin.flush())
            .expect("release worker");
    }
}

#[derive(Default, Clone)]
struct Stats {
    micros: Vec<u64>,
}

impl Stats {
    fn summary(&mut self) -> String {
        self.micros.sort_unstable();
        let pick = |q: f64| {
            let index = ((self.micros.len() as f64 - 1.0) * q).round() as usize;
            self.micros[index] as f64 / 1000.0
        };
        format!(
            "{:.1} / {:.1} / {:.1}",
            pick(0.5),
            pick(0.95),
            *self.micros.last().unwrap() as f64 / 1000.0
        )
    }
}

struct Outcome {
    per_second: f64,
    ops: Stats,
}

#[derive(Clone, Copy)]
struct Scenario {
    processes: usize,
    count: usize,
    shared: bool,
    lifecycle: bool,
}

impl Scenario {
    fn label(self) -> String {
        format!(
            "{}, {}",
            if self.lifecycle {
                "lifecycle (reserve+start+finish)"
            } else {
                "reserve"
            },
            if self.shared {
                "one session"
            } else {
                "separate sessions"
            }
        )
    }
}

/// Runs one scenario with `worker` and verifies the result.
fn scenario(worker: &Path, s: Scenario) -> Outcome {
    let temp = tempfile::tempdir().expect("temp dir");
    let root = temp.path().to_str().unwrap().to_owned();
    let mut workers: Vec<Worker> = (0..s.processes)
        .map(|i| {
            let session = if s.shared {
                "bench".to_owned()
            } else {
                format!("bench {i}")
            };
            let mut args: Vec<String> = vec![
                "reserve".into(),
                "--project".into(),
                root.clone(),
                "--session-name".into(),
                session,
                "--agent".into(),
                format!("agent-{}", i % 4),
                "--count".into(),
                s.count.to_string(),
                "--report-ops".into(),
                "--wait-go".into(),
            ];
            if s.lifecycle {
                args.push("--lifecycle".into());
            }
            Worker::spawn(worker, &args)
        })
        .collect();
    for worker in &workers {
        assert!(worker.next().1.starts_with("ready"));
    }
    let started = Instant::now();
    for worker in &mut workers {
        worker.go();
    }
    let mut ops = Stats::default();
    let mut finished = started;
    for mut worker in workers {
        loop {
            let (at, line) = worker.next();
            if let Some(rest) = line.strip_prefix("op ") {
                let micros = rest.split(' ').nth(1).unwrap().parse().unwrap();
                ops.micros.push(micros);
            } else if line.starts_with("done") {
                finished = finished.max(at);
                break;
            }
        }
        assert!(worker.child.wait().unwrap().success(), "a call failed");
    }
    let elapsed = finished.duration_since(started).as_secs_f64();
    verify(temp.path(), s.processes * s.count, s.lifecycle);
    Outcome {
        per_second: (s.processes * s.count) as f64 / elapsed,
        ops,
    }
}

/// Zero duplicates, zero lost: every note listed once in session.json, present on disk, linked
/// once from shepherd.md; ordinals unique per agent; with a lifecycle, every note completed.
fn verify(project: &Path, expected: usize, lifecycle: bool) {
    let store = Store::open(project).unwrap();
    let mut total = 0;
    for session in store.sessions().unwrap() {
        let metadata = store.load(&session).unwrap();
        let index = store.read_index(&session).unwrap().unwrap();
        let dir = store.session_dir(&session);
        let mut files = HashSet::new();
        let mut ordinals = HashSet::new();
        for note in &metadata.artifacts {
            assert!(
                files.insert(note.file_name.clone()),
                "duplicate {}",
                note.file_name
            );
            assert!(
                ordinals.insert((note.agent.clone(), note.ordinal)),
                "duplicate ordinal"
            );
            assert!(
                dir.join(&note.file_name).is_file(),
                "lost {}",
                note.file_name
            );
            let link = format!("](./{}) — ", note.file_name);
            assert_eq!(
                index.matches(&link).count(),
                1,
                "{} not linked once",
                note.file_name
            );
            if lifecycle {
                assert_eq!(note.status.as_str(), "completed");
            }
        }
        total += files.len();
    }
    assert_eq!(total, expected, "notes lost");
}

/// Time from SIGKILL of a process holding the session lock to the next writer holding it.
fn takeover() -> Duration {
    let temp = tempfile::tempdir().unwrap();
    let store = Store::open(temp.path()).unwrap();
    let session = store
        .create_or_continue_named("takeover", Timestamp::now())
        .unwrap()
        .session;
    let root = temp.path().to_str().unwrap().to_owned();
    let args: Vec<String> = ["hold", "--project", &root, "--session-name", "takeover"]
        .into_iter()
        .chain(["--during", "reserve", "--stage", "locked"])
        .map(str::to_owned)
        .collect();
    let mut holder = Worker::spawn(Path::new(WORKER), &args);
    assert_eq!(holder.next().1, "locked");
    let acquired: Arc<Mutex<Option<Instant>>> = Arc::default();
    let seen = Arc::clone(&acquired);
    let options = StoreOptions {
        commit_hook: Some(Arc::new(move |stage: CommitStage<'_>| {
            if let CommitStage::SessionLocked(_) = stage {
                seen.lock().unwrap().get_or_insert_with(Instant::now);
            }
        })),
        ..StoreOptions::default()
    };
    let writer = Store::with_options(temp.path(), options).unwrap();
    let (blocked, waiting) = mpsc::channel();
    let thread = std::thread::spawn(move || {
        blocked.send(()).unwrap();
        writer
            .reserve(&session, vec![PlannedNote::new("next")], Timestamp::now())
            .unwrap();
    });
    waiting.recv().unwrap();
    let killed = Instant::now();
    holder.child.kill().unwrap();
    holder.child.wait().unwrap();
    thread.join().unwrap();
    let acquired = acquired.lock().unwrap().expect("writer took the lock");
    acquired.saturating_duration_since(killed)
}

/// The disk's floor: `threads` writers, each in its own directory, making durable commits the
/// way the store does (a 2 KB temp file written and flushed, renamed over its target, the
/// directory flushed) for `seconds`; commits per second in all.
fn disk_floor(threads: usize, seconds: f64) -> f64 {
    let temp = tempfile::tempdir().unwrap();
    let until = Instant::now() + Duration::from_secs_f64(seconds);
    let started = Instant::now();
    let commits: usize = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|i| {
                let dir = temp.path().join(format!("d{i}"));
                std::fs::create_dir(&dir).unwrap();
                scope.spawn(move || {
                    let mut n = 0;
                    let target = dir.join("session.json");
                    while Instant::now() < until {
                        let temp = dir.join(".tmp");
                        let mut file = std::fs::File::create(&temp).unwrap();
                        file.write_all(&[b'x'; 2048]).unwrap();
                        file.sync_data().unwrap();
                        std::fs::rename(&temp, &target).unwrap();
                        std::fs::File::open(&dir).unwrap().sync_all().unwrap();
                        n += 1;
                    }
                    n
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).sum()
    });
    commits as f64 / started.elapsed().as_secs_f64()
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn range(values: &[f64]) -> String {
    let low = values.iter().copied().fold(f64::INFINITY, f64::min);
    let high = values.iter().copied().fold(0.0, f64::max);
    if (high - low).abs() < 0.5 {
        format!("{low:.0}")
    } else {
        format!("{low:.0}–{high:.0}")
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|arg| arg == "--quick");
    let value = |flag: &str| {
        args.iter()
            .position(|arg| arg == flag)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let base = value("--base").map(|dir| PathBuf::from(dir).join("notes-worker"));
    let reps: usize = value("--reps").map_or(if base.is_some() { 3 } else { 1 }, |n| {
        n.parse().expect("--reps N")
    });
    let count = if quick { 10 } else { 50 };
    let ours = PathBuf::from(WORKER);
    println!("# fieldnotes store benchmark (K = {count} per process, {reps} run(s) each)\n");
    match &base {
        Some(base) => {
            println!(
                "A/B: base `{}` vs this build, alternating\n",
                base.display()
            );
            println!(
                "| scenario | P | base notes/s | this build notes/s | ratio | this build op p50 / p95 / max (ms) |"
            );
            println!("|---|---:|---:|---:|---:|---|");
        }
        None => {
            println!("| scenario | P | notes/s | op p50 / p95 / max (ms) |");
            println!("|---|---:|---:|---|");
        }
    }
    for lifecycle in [false, true] {
        for shared in [true, false] {
            for processes in [1, 4, 16] {
                let s = Scenario {
                    processes,
                    count,
                    shared,
                    lifecycle,
                };
                let mut base_rates = Vec::new();
                let mut our_rates = Vec::new();
                let mut our_ops = Stats::default();
                for rep in 0..reps {
                    // Alternate which build goes first, so neither always runs on a warmer disk.
                    let order: [Option<&PathBuf>; 2] = if rep % 2 == 0 {
                        [base.as_ref(), Some(&ours)]
                    } else {
                        [Some(&ours), base.as_ref()]
                    };
                    for worker in order.into_iter().flatten() {
                        let outcome = scenario(worker, s);
                        if *worker == ours {
                            our_rates.push(outcome.per_second);
                            our_ops.micros.extend(outcome.ops.micros);
                        } else {
                            base_rates.push(outcome.per_second);
                        }
                    }
                }
                if base.is_some() {
                    let ratio = median(&mut our_rates.clone()) / median(&mut base_rates.clone());
                    println!(
                        "| {} | {processes} | {} | {} | {ratio:.2}× | {} |",
                        s.label(),
                        range(&base_rates),
                        range(&our_rates),
                        our_ops.summary()
                    );
                } else {
                    println!(
                        "| {} | {processes} | {} | {} |",
                        s.label(),
                        range(&our_rates),
                        our_ops.summary()
                    );
                }
            }
        }
    }
    let mut takeovers: Vec<Duration> = (0..5).map(|_| takeover()).collect();
    takeovers.sort();
    println!(
        "\nLock takeover after SIGKILL of the holder: median {:.2} ms, max {:.2} ms (5 runs)",
        takeovers[2].as_secs_f64() * 1000.0,
        takeovers[4].as_secs_f64() * 1000.0
    );
    let seconds = if quick { 0.5 } else { 2.0 };
    println!(
        "Disk floor (durable commits of a 2 KB file, each flushed and renamed, its directory flushed): one writer {:.0}/s; 16 writers in separate directories {:.0}/s in all",
        disk_floor(1, seconds),
        disk_floor(16, seconds)
    );
    println!(
        "Every scenario verified: zero duplicate ordinals or file names, zero lost entries, zero failed calls."
    );
}
