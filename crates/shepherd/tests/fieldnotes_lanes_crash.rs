//! The broker's fieldnotes lanes under `kill -9`: eight parents' worth of delegations, each
//! into its own named session, so the broker commits eight sessions side by side, while the
//! broker is SIGKILLed at random moments. Afterwards every acknowledged delegation settled
//! completed with one final note, each session lists each of its notes once, and no task has
//! two notes (a hand-over repeated after a restart reuses its note).
//!
//! `SHEPHERD_CRASH_SEED` replays a run (the seed is printed).

use crate::herd_support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use herd_support::{World, read};
use serde_json::Value;

const LANES: usize = 8;
const TASKS_PER_LANE: usize = 10;
const KILLS: usize = 4;

struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}

#[test]
fn sessions_committed_side_by_side_lose_nothing_over_broker_kills() {
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
    let world = Arc::new(World::new());
    // A shell sheep on the CLI, which rides out broker restarts (requests are resent under
    // their ids); a task seen twice (redelivered after a restart) is settled once.
    let script = r#"while :; do
  out=$(shepherd inbox --wait 30 --json) || continue
  printf '%s\n' "$out" | while IFS= read -r line; do
    case "$line" in *'"kind":"task"'*)
      id=$(printf '%s' "$line" | sed -n 's/.*"taskId":"\([^"]*\)".*/\1/p')
      shepherd done --status completed --summary "did $id" --task "$id" >/dev/null 2>&1 ;;
    esac
  done
done"#;
    world.define("quick", &["sh".into(), "-c".into(), script.into()]);
    let sheep: Vec<String> = (0..LANES)
        .map(|i| world.spawn("quick", &format!("lane{i}")))
        .collect();

    let stop = Arc::new(AtomicBool::new(false));
    let killed = Arc::new(AtomicUsize::new(0));
    let killer = {
        let (world, stop, killed) = (world.clone(), stop.clone(), killed.clone());
        let mut rng = Rng(seed);
        std::thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) && killed.load(Ordering::SeqCst) < KILLS {
                // Chaos, not synchronisation: the kills land wherever the commits happen to be.
                std::thread::sleep(Duration::from_millis(100 + rng.below(400)));
                if let Some(pid) = world.running_broker()
                    && rustix::process::kill_process(
                        rustix::process::Pid::from_raw(pid as i32).unwrap(),
                        rustix::process::Signal::KILL,
                    )
                    .is_ok()
                {
                    killed.fetch_add(1, Ordering::SeqCst);
                }
            }
        })
    };

    // Each lane: delegate into its own session, wait for the task to settle, again.
    let lanes: Vec<_> = sheep
        .iter()
        .enumerate()
        .map(|(lane, agent)| {
            let (world, agent) = (world.clone(), agent.clone());
            std::thread::spawn(move || {
                let session = format!("lane {lane}");
                let mut tasks = Vec::new();
                let mut failures = Vec::new();
                for n in 0..TASKS_PER_LANE {
                    let (code, doc) = world.json_status(&[
                        "delegate",
                        &agent,
                        &format!("job {lane}.{n}"),
                        "--session-name",
                        &session,
                    ]);
                    let Some(task) = doc["taskId"].as_str().filter(|_| code == 0) else {
                        failures.push(format!("delegate {lane}.{n}: {doc}"));
                        continue;
                    };
                    let (_, watched) = world.json_status(&["watch", task, "--wait", "60"]);
                    if watched["settled"][0]["status"] != "completed" {
                        failures.push(format!("watch {task}: {watched}"));
                    }
                    tasks.push(task.to_owned());
                }
                (session, tasks, failures)
            })
        })
        .collect();
    let mut by_session: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut failures = Vec::new();
    for lane in lanes {
        let (session, tasks, failed) = lane.join().unwrap();
        by_session.insert(session, tasks);
        failures.extend(failed);
    }
    stop.store(true, Ordering::SeqCst);
    killer.join().unwrap();
    assert!(
        failures.is_empty(),
        "seed {seed}: acknowledged requests failed: {failures:#?}"
    );
    let kills = killed.load(Ordering::SeqCst);
    eprintln!("seed {seed}: {kills} broker kills");
    assert!(kills > 0, "seed {seed}: no kill landed");

    for (session, tasks) in &by_session {
        let mut dir = None;
        for task in tasks {
            let watched = world.json(&["watch", task]);
            let settled = &watched["settled"][0];
            assert_eq!(settled["status"], "completed", "seed {seed}: {settled}");
            let note = Path::new(settled["note"].as_str().unwrap()).to_owned();
            let text = read(&note);
            assert!(text.contains("status: completed"), "seed {seed}: {text}");
            let parent = note.parent().unwrap().to_owned();
            assert!(
                dir.get_or_insert_with(|| parent.clone()) == &parent,
                "seed {seed}: {session}'s notes in two sessions"
            );
        }
        let dir = dir.unwrap();
        let json: Value = serde_json::from_str(&read(&dir.join("session.json"))).unwrap();
        assert_eq!(json["sessionName"], session.as_str());
        let index = read(&dir.join("shepherd.md"));
        let mut task_ids = BTreeSet::new();
        for artifact in json["artifacts"].as_array().unwrap() {
            let file = artifact["fileName"].as_str().unwrap();
            assert_eq!(
                index.matches(&format!("](./{file}) — ")).count(),
                1,
                "seed {seed}: {file} not listed once"
            );
            let task = artifact["taskId"].as_str().unwrap_or_default().to_owned();
            assert!(
                task_ids.insert(task.clone()),
                "seed {seed}: task {task} has two notes in {session}"
            );
        }
        for task in tasks {
            assert!(task_ids.contains(task), "seed {seed}: {task} has no note");
        }
    }
}
