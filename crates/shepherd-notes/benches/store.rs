//! Benchmark of the fieldnotes store under concurrent processes, measured the way the original
//! extension was measured: P worker processes (P = 1, 4, 16) each make K = 50 reservations
//! through the store library, into one shared session and into separate sessions, and the
//! same for a delegated task's whole note lifecycle (reserve, start, finish). Workers are
//! started first and released together, so process start-up is not counted. Reports notes per
//! second and per-operation p50/p95/max, checks that nothing was duplicated or lost, and
//! measures how fast the next writer takes over the lock of a holder killed with SIGKILL.
//!
//! Run: `cargo bench -p shepherd-notes --bench store` (add `-- --quick` for a smoke run).

use std::collections::HashSet;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
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
    fn spawn(args: &[String]) -> Self {
        let mut child = Command::new(WORKER)
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

#[derive(Default)]
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

    fn max_ms(&self) -> f64 {
        *self.micros.iter().max().unwrap() as f64 / 1000.0
    }
}

struct Outcome {
    per_second: f64,
    ops: Stats,
}

/// Runs one scenario and verifies the result.
fn scenario(processes: usize, count: usize, shared: bool, lifecycle: bool) -> Outcome {
    let temp = tempfile::tempdir().expect("temp dir");
    let root = temp.path().to_str().unwrap().to_owned();
    let mut workers: Vec<Worker> = (0..processes)
        .map(|i| {
            let session = if shared {
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
                count.to_string(),
                "--report-ops".into(),
                "--wait-go".into(),
            ];
            if lifecycle {
                args.push("--lifecycle".into());
            }
            Worker::spawn(&args)
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
        assert!(worker.child.wait().unwrap().success());
    }
    let elapsed = finished.duration_since(started).as_secs_f64();
    verify(temp.path(), processes * count, lifecycle);
    Outcome {
        per_second: (processes * count) as f64 / elapsed,
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
    let mut holder = Worker::spawn(&args);
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

fn main() {
    let quick = std::env::args().any(|arg| arg == "--quick");
    let count = if quick { 10 } else { 50 };
    println!("# fieldnotes store benchmark (K = {count} per process)\n");
    println!("| scenario | P | notes/s | op p50 / p95 / max (ms) |");
    println!("|---|---:|---:|---|");
    let mut target = None;
    for (lifecycle, label) in [
        (false, "reserve"),
        (true, "lifecycle (reserve+start+finish)"),
    ] {
        for shared in [true, false] {
            for processes in [1, 4, 16] {
                let mut outcome = scenario(processes, count, shared, lifecycle);
                let sessions = if shared {
                    "one session"
                } else {
                    "separate sessions"
                };
                println!(
                    "| {label}, {sessions} | {processes} | {:.0} | {} |",
                    outcome.per_second,
                    outcome.ops.summary()
                );
                if !lifecycle && shared && processes == 16 {
                    target = Some((outcome.per_second, outcome.ops.max_ms()));
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
    if let Some((rate, max)) = target {
        let verdict = if rate >= 264.0 && max <= 100.0 {
            "met"
        } else {
            "NOT met"
        };
        println!(
            "Target (one session, P = 16: >= 264 notes/s, no op over 100 ms): {verdict} ({rate:.0} notes/s, max op {max:.1} ms)"
        );
    }
    println!("Every scenario verified: zero duplicate ordinals or file names, zero lost entries.");
}
