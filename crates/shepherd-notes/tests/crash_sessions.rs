//! Parallel commits across sessions under `kill -9`: writer processes spread note lifecycles
//! over several sessions at once, and are SIGKILLed at random points of their work (after a
//! seeded random number of acknowledged operations, wherever the next one happens to be:
//! waiting for a lock, queued, staging, renaming). New writers carry on. Afterwards every
//! acknowledged reservation is listed exactly once, exists and is linked once; every
//! acknowledged finish is final; ordinals are never given twice; no lock is left taken and no
//! writer was wedged by a dead one.
//!
//! `SHEPHERD_CRASH_SEED` replays a run (the seed is printed).

use crate::common;

use std::collections::{BTreeMap, BTreeSet};

use common::{EVENT_TIMEOUT, Project, Worker, assert_consistent, temp_leftovers};
use original::Original;
use shepherd_notes::{NoteStatus, SessionRef};

use crate::original;

const SESSIONS: usize = 4;
/// Sixteen writers at once over four sessions: each session has several writers at any moment,
/// so operations queue, and a new lock holder repairs a queue while waiters take its answers.
const WRITERS: usize = 16;
const ROUNDS: usize = 3;
/// Lifecycles per writer: few enough that the campaign stays a few seconds on two cores, and
/// most writers are killed on the way.
const PER_WRITER: usize = 12;

struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}

fn writer(project: &Project, agent: &str) -> Worker {
    let root = project.root.to_str().unwrap();
    Worker::spawn(&[
        "reserve",
        "--project",
        root,
        "--session-name",
        "crash",
        "--sessions",
        &SESSIONS.to_string(),
        "--agent",
        agent,
        "--count",
        &PER_WRITER.to_string(),
        "--lifecycle",
        "--ack",
        "--wait-go",
    ])
}

#[test]
fn writers_killed_anywhere_across_sessions_lose_nothing_acknowledged() {
    let seed: u64 = std::env::var("SHEPHERD_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64);
            (nanos ^ u64::from(std::process::id())) | 1
        });
    eprintln!("seed {seed} (SHEPHERD_CRASH_SEED={seed} replays it)");
    let mut rng = Rng(seed);
    let project = Project::new();
    // (session, note) → the last acknowledged operation on it.
    let mut acked: BTreeMap<(String, String), String> = BTreeMap::new();
    let mut kills = 0;
    for round in 0..ROUNDS {
        let mut workers: Vec<(Worker, u64)> = (0..WRITERS)
            .map(|i| {
                // Each writer dies after a random number of acknowledged operations, unless it
                // drew the full count (then it finishes).
                let budget = rng.below((PER_WRITER * 3 + 8) as u64);
                (writer(&project, &format!("w{round}-{i}")), budget)
            })
            .collect();
        for (worker, _) in &workers {
            worker.expect_prefix("ready", EVENT_TIMEOUT);
        }
        for (worker, _) in &mut workers {
            worker.go();
        }
        // Follow all writers at once, one line at a time, killing each at its budget.
        let mut alive: Vec<(Worker, u64, u64)> = workers
            .into_iter()
            .map(|(worker, budget)| (worker, budget, 0))
            .collect();
        while !alive.is_empty() {
            let mut still = Vec::new();
            for (worker, budget, seen) in alive {
                let line = worker.expect_line(EVENT_TIMEOUT);
                if let Some(rest) = line.strip_prefix("acked ") {
                    let mut parts = rest.split(' ');
                    let (op, session, note) = (
                        parts.next().unwrap().to_owned(),
                        parts.next().unwrap().to_owned(),
                        parts.next().unwrap().to_owned(),
                    );
                    acked.insert((session, note), op);
                    if seen + 1 >= budget {
                        worker.kill();
                        kills += 1;
                        continue;
                    }
                    still.push((worker, budget, seen + 1));
                } else if line.starts_with("done") {
                    let lines = worker.finish();
                    assert!(lines.is_empty(), "seed {seed}: {lines:?}");
                } else {
                    panic!("seed {seed}: unexpected line {line:?}");
                }
            }
            alive = still;
        }
    }
    assert!(kills > 0, "seed {seed}: no writer was killed");

    // A last writer in every session (the original's rules, which never recover a stale lock:
    // they would wait if a dead Shepherd writer's lock were still there) — after one Shepherd
    // writer per session, which sweeps what the dead left.
    let store = project.store();
    let sessions: Vec<SessionRef> = store.sessions().unwrap();
    assert_eq!(sessions.len(), SESSIONS, "seed {seed}");
    for session in &sessions {
        store
            .reserve(
                session,
                vec![shepherd_notes::PlannedNote::new("last")],
                common::at(0),
            )
            .unwrap();
    }
    let original = Original::new(&project.root);
    for session in &sessions {
        let theirs = original
            .create_or_resume_named(&store.load(session).unwrap().session_name)
            .unwrap();
        original.reserve(&theirs, "original", "after").unwrap();
    }
    assert_eq!(original.retries(), 0, "seed {seed}: a lock was left taken");

    let mut listed = BTreeSet::new();
    for session in &sessions {
        assert_consistent(&project, session);
        let metadata = store.load(session).unwrap();
        for note in &metadata.artifacts {
            listed.insert((session.directory_name().to_owned(), note.file_name.clone()));
            if let Some(op) =
                acked.get(&(session.directory_name().to_owned(), note.file_name.clone()))
                && op == "finish"
            {
                assert_eq!(
                    note.status,
                    NoteStatus::Completed,
                    "seed {seed}: {} finished but is {}",
                    note.file_name,
                    note.status
                );
            }
        }
    }
    for key in acked.keys() {
        assert!(
            listed.contains(key),
            "seed {seed}: acknowledged note {key:?} lost"
        );
    }
    assert!(
        temp_leftovers(&project.root).is_empty(),
        "seed {seed}: {:?}",
        temp_leftovers(&project.root)
    );
}
