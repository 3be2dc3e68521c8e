//! The broker benchmark's fieldnotes scenarios (`cargo bench -p shepherd --bench broker --
//! fieldnotes`), each optionally compared with an earlier build in the same run.
//!
//! Through a real broker, 16 clients at once, into one session and into 16 separate sessions:
//! - **lifecycles**: delegate (its note reserved running), the sheep receives the task and says
//!   `done`, the task settles with its note finalised; per client 50 in a row. The `delegate`
//!   call's own latency is reported too: it is the broker's reservation of a note.
//! - **plans**: `run.submit` of single-task runs (the answer comes once the run's note is
//!   reserved), 10 per client back to back; then every run is followed to its end.
//! - **done → completion**: one sheep, the parent's completion push after its `done`.
//! - **the file system's floor** for lifecycles in separate sessions: their file operations
//!   alone, with nothing else running (module `floor`).
//!
//! Through the CLI (a process per call): `shepherd notes reserve` by 16 processes calling it in
//! a loop, into one session and into separate sessions, and by one process, each with no
//! broker (the process writes the store) and with the project's broker running (the call goes
//! through it); and the floor a process per call sets, `shepherd --version` called the same
//! way.
//!
//! Every scenario checks that no call failed and that every note is listed exactly once,
//! exists, and (for lifecycles and plans) is final. With `--base DIR`, every scenario runs
//! alternately with the `shepherd` binary in `DIR` (an earlier commit's release build) and
//! with this build's, `--reps N` times each (default 3), and prints both ranges and the ratio
//! of the medians: ratios within one run hold on a noisy machine, absolute figures do not.
//! `SHEPHERD_BENCH_ONLY=<text>|<text>…` runs only the scenarios whose label holds one of them.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use shepherd_core::protocol::Role;

use super::{World, bin, connect, next_inbox, percentile, puppet};

mod cli;
mod compare;
mod floor;

use cli::{cli_calls, cli_reserve};
use compare::{COMPARING, compare};

const CLIENTS: usize = 16;

/// One measurement: a rate and the latencies behind it, in ms.
struct Measured {
    rate: f64,
    ms: Vec<f64>,
}

fn latency_summary(mut ms: Vec<f64>) -> String {
    ms.sort_by(f64::total_cmp);
    format!(
        "{:.1} / {:.1} / {:.1}",
        percentile(&ms, 50.0),
        percentile(&ms, 99.0),
        ms.last().copied().unwrap_or(f64::NAN)
    )
}

/// Every note of every session in `project`: listed once, present, linked once from
/// `shepherd.md`, final when `final_only`. Returns how many there are and how many sessions
/// hold them.
fn verify_notes(project: &Path, final_only: bool) -> (usize, usize) {
    let sessions = project.join(".shepherd/sessions");
    let mut notes = 0;
    let mut count = 0;
    for entry in std::fs::read_dir(&sessions).unwrap().flatten() {
        let dir = entry.path();
        if !entry.file_name().to_string_lossy().as_bytes()[0].is_ascii_digit() {
            continue;
        }
        count += 1;
        let json: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("session.json")).unwrap())
                .unwrap();
        let index = std::fs::read_to_string(dir.join("shepherd.md")).unwrap();
        let mut files = HashSet::new();
        for note in json["artifacts"].as_array().unwrap() {
            let file = note["fileName"].as_str().unwrap();
            assert!(files.insert(file.to_owned()), "{file} listed twice");
            assert!(dir.join(file).is_file(), "{file} lost");
            assert_eq!(
                index.matches(&format!("](./{file}) — ")).count(),
                1,
                "{file} not linked once"
            );
            if final_only {
                let status = note["status"].as_str().unwrap();
                assert!(
                    ["completed", "failed", "cancelled", "timed-out"].contains(&status),
                    "{file} is {status}"
                );
            }
        }
        notes += files.len();
        // Sessions without notes (the parent's, made when its sheep spawned) do not count.
        if files.is_empty() {
            count -= 1;
        }
    }
    (notes, count)
}

/// 16 clients, each with its own sheep, run `per_client` lifecycles in a row, all into one
/// session or each into its own. Returns lifecycles/s with lifecycle latencies, and the
/// `delegate` latencies.
/// Waits (up to `within`) until every session's `shepherd.md` links each note its record
/// lists: the catch-up of an index a reservation put off is the event waited for.
fn await_indexes(project: &Path, within: Duration) {
    let deadline = Instant::now() + within;
    let sessions = project.join(".shepherd/sessions");
    loop {
        let behind = fs_err::read_dir(&sessions).unwrap().flatten().any(|entry| {
            let dir = entry.path();
            let Ok(record) = fs_err::read_to_string(dir.join("session.json")) else {
                return false;
            };
            let record: Value = serde_json::from_str(&record).unwrap();
            let index = fs_err::read_to_string(dir.join("shepherd.md")).unwrap_or_default();
            record["artifacts"].as_array().unwrap().iter().any(|note| {
                let link = format!("](./{})", note["fileName"].as_str().unwrap());
                !index.contains(&link)
            })
        });
        if !behind {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "shepherd.md still behind after {within:?}"
        );
        std::thread::yield_now();
    }
}

async fn lifecycles(world: &World, per_client: usize, separate: bool) -> (Measured, Vec<f64>) {
    let socket = world.socket();
    let mut parent = connect(&socket, Role::Parent, None, None).await;
    let mut puppets = Vec::new();
    for n in 1..=CLIENTS {
        puppets.push(puppet(world, &socket, &mut parent, n).await);
    }
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for (n, (id, mut sheep)) in puppets.into_iter().enumerate() {
        let socket = socket.clone();
        let session = if separate {
            format!("lifecycles {n}")
        } else {
            "lifecycles".to_owned()
        };
        tasks.spawn(async move {
            let mut parent = connect(&socket, Role::Parent, None, None).await;
            let (mut whole, mut delegate) = (Vec::new(), Vec::new());
            for i in 0..per_client {
                let t0 = Instant::now();
                let task = parent
                    .call_value(
                        "delegate",
                        json!({ "target": id, "task": format!("t{i}"), "sessionName": session }),
                    )
                    .await
                    .unwrap();
                delegate.push(t0.elapsed().as_secs_f64() * 1000.0);
                next_inbox(&mut sheep).await;
                sheep
                    .call_value("done", json!({ "status": "completed", "summary": "ok" }))
                    .await
                    .unwrap();
                let waited = parent
                    .call_value("wait", json!({ "id": task["taskId"], "timeoutMs": 30000 }))
                    .await
                    .unwrap();
                assert_eq!(waited["settled"][0]["status"], "completed");
                whole.push(t0.elapsed().as_secs_f64() * 1000.0);
            }
            (whole, delegate)
        });
    }
    let (mut whole, mut delegate) = (Vec::new(), Vec::new());
    while let Some(done) = tasks.join_next().await {
        let (w, d) = done.unwrap();
        whole.extend(w);
        delegate.extend(d);
    }
    let wall = started.elapsed().as_secs_f64();
    let total = CLIENTS * per_client;
    let (notes, sessions) = verify_notes(&world.project, true);
    assert_eq!(notes, total, "every lifecycle has exactly one final note");
    assert_eq!(sessions, if separate { CLIENTS } else { 1 });
    (
        Measured {
            rate: total as f64 / wall,
            ms: whole,
        },
        delegate,
    )
}

/// 16 clients each submit `per_client` single-task runs back to back (the answer comes once
/// the run's note is reserved), then follow them all to the end. Returns plans/s with the
/// submit latencies.
async fn plans(world: &World, per_client: usize, separate: bool) -> Measured {
    world.define(
        "quick",
        &[
            bin("shepherd-test-sheep").to_str().unwrap(),
            "--on-task",
            "done completed ok {id}",
        ],
    );
    let socket = world.socket();
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for n in 0..CLIENTS {
        let socket = socket.clone();
        let session = if separate {
            format!("plans {n}")
        } else {
            "plans".to_owned()
        };
        tasks.spawn(async move {
            let mut client = connect(&socket, Role::Parent, None, None).await;
            let mut submits = Vec::new();
            let mut runs = HashSet::new();
            let mut submitted_at = Instant::now();
            for i in 0..per_client {
                let t0 = Instant::now();
                let view = client
                    .call_value(
                        "run.submit",
                        json!({
                            "mode": "single",
                            "steps": [{ "agent": "quick", "task": format!("plan {n}.{i}") }],
                            "sessionName": session,
                        }),
                    )
                    .await
                    .unwrap();
                submits.push(t0.elapsed().as_secs_f64() * 1000.0);
                submitted_at = Instant::now();
                runs.insert(view["runId"].as_str().unwrap().to_owned());
            }
            let deadline = Instant::now() + Duration::from_secs(30);
            while !runs.is_empty() {
                let left = deadline.saturating_duration_since(Instant::now());
                let Ok(push) = tokio::time::timeout(left, client.next_push()).await else {
                    break;
                };
                let (event, view) = push.unwrap();
                if event == "run" && !view["report"].is_null() {
                    runs.remove(view["runId"].as_str().unwrap_or_default());
                }
            }
            // A run whose last push never came (a broker fault outside the fieldnotes, seen
            // with either build under this load) is asked about; one already forgotten has
            // finished, and its note is checked on disk below like every other.
            let missed = runs.len();
            for run in runs {
                match client
                    .call_value("run.attach", json!({ "runId": run }))
                    .await
                {
                    Ok(view) => assert!(!view["report"].is_null(), "run {run} never finished"),
                    Err(err) => assert!(err.to_string().contains("no run"), "{err}"),
                }
            }
            (submits, submitted_at, missed)
        });
    }
    let mut submits = Vec::new();
    let mut last_submit = started;
    let mut missed = 0;
    while let Some(done) = tasks.join_next().await {
        let (s, at, m) = done.unwrap();
        submits.extend(s);
        last_submit = last_submit.max(at);
        missed += m;
    }
    if missed > 0 {
        eprintln!("plans: {missed} run(s) finished without their last push reaching the client");
    }
    let total = CLIENTS * per_client;
    let (notes, sessions) = verify_notes(&world.project, true);
    assert_eq!(notes, total, "every run has exactly one final note");
    assert_eq!(sessions, if separate { CLIENTS } else { 1 });
    Measured {
        rate: total as f64 / last_submit.duration_since(started).as_secs_f64(),
        ms: submits,
    }
}

/// `done` → the parent's completion push, one task at a time.
async fn done_to_completion(world: &World, rounds: usize) -> Measured {
    let socket = world.socket();
    let mut parent = connect(&socket, Role::Parent, None, None).await;
    let mut inbox = connect(&socket, Role::Parent, None, None).await;
    inbox.call_value("subscribe", json!({})).await.unwrap();
    let (id, mut sheep) = puppet(world, &socket, &mut parent, 0).await;
    let mut ms = Vec::new();
    let started = Instant::now();
    for i in 0..rounds {
        let task = parent
            .call_value("delegate", json!({ "target": id, "task": format!("d{i}") }))
            .await
            .unwrap();
        parent
            .call_value("watch", json!({ "id": task["taskId"] }))
            .await
            .unwrap();
        next_inbox(&mut sheep).await;
        let t0 = Instant::now();
        sheep
            .call_value("done", json!({ "status": "completed", "summary": "ok" }))
            .await
            .unwrap();
        loop {
            let items = next_inbox(&mut inbox).await;
            if items.iter().any(|item| item["type"] == "completion") {
                break;
            }
        }
        ms.push(t0.elapsed().as_secs_f64() * 1000.0);
    }
    let (notes, _) = verify_notes(&world.project, true);
    assert_eq!(notes, rounds);
    Measured {
        rate: rounds as f64 / started.elapsed().as_secs_f64(),
        ms,
    }
}

/// `notes.write` reservations straight from 16 connections (what each `shepherd notes reserve`
/// process sends, without the process), `per_client` each.
async fn broker_notes_writes(world: &World, per_client: usize, separate: bool) -> Measured {
    let socket = world.socket();
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for n in 0..CLIENTS {
        let socket = socket.clone();
        let session = if separate {
            format!("writes {n}")
        } else {
            "writes".to_owned()
        };
        tasks.spawn(async move {
            let mut parent = connect(&socket, Role::Parent, None, None).await;
            let mut ms = Vec::new();
            for _ in 0..per_client {
                let t0 = Instant::now();
                parent
                    .call_value(
                        shepherd_core::protocol::method::NOTES_WRITE,
                        json!({
                            "session": { "named": { "sessionName": session } },
                            "change": { "reserve": {
                                "agent": format!("agent-{}", n % 4),
                                "mode": "single",
                                "task": null,
                                "group": null,
                                "start": false,
                            } },
                        }),
                    )
                    .await
                    .unwrap();
                ms.push(t0.elapsed().as_secs_f64() * 1000.0);
            }
            ms
        });
    }
    let mut ms = Vec::new();
    while let Some(done) = tasks.join_next().await {
        ms.extend(done.unwrap());
    }
    let rate = ms.len() as f64 / started.elapsed().as_secs_f64();
    // The last reservation of each session put its `shepherd.md` off; the broker catches it up.
    await_indexes(&world.project, Duration::from_secs(10));
    let (notes, sessions) = verify_notes(&world.project, false);
    assert_eq!(notes, CLIENTS * per_client, "no reservation lost");
    assert_eq!(sessions, if separate { CLIENTS } else { 1 });
    Measured { rate, ms }
}

/// The floor the file system sets for lifecycles in 16 separate sessions (see `floor`),
/// measured `reps` times.
fn file_system_floor(reps: usize, seconds: f64) {
    let label = "file system floor: the file operations of those lifecycles alone, 16 threads";
    if let Ok(only) = std::env::var("SHEPHERD_BENCH_ONLY")
        && !only.split('|').any(|wanted| {
            label.contains(wanted)
                || "lifecycles, 16 clients, 16 separate sessions".contains(wanted)
        })
    {
        return;
    }
    let rates: Vec<f64> = (0..reps)
        .map(|_| floor::lifecycle_files(CLIENTS, seconds))
        .collect();
    let low = rates.iter().copied().fold(f64::INFINITY, f64::min);
    let high = rates.iter().copied().fold(0.0, f64::max);
    println!("| … {label} | | {low:.0}–{high:.0} /s | | |");
}

/// Every fieldnotes scenario; `base` is the directory of an earlier build to compare with.
pub(crate) async fn run(quick: bool, base: Option<PathBuf>, reps: usize) {
    let ours = bin("shepherd").parent().unwrap().to_owned();
    let mut builds = vec![(false, ours)];
    if let Some(base) = &base {
        builds.insert(0, (true, base.clone()));
    }
    COMPARING.store(base.is_some(), std::sync::atomic::Ordering::Relaxed);
    let per_client = if quick { 10 } else { 50 };
    let per_plan_client = if quick { 3 } else { 10 };
    let per_process = if quick { 5 } else { 25 };
    println!("# fieldnotes through the broker and the CLI ({reps} run(s) per build)\n");
    if let Some(base) = &base {
        println!(
            "A/B: base `{}` vs this build, alternating\n",
            base.display()
        );
        println!("| scenario | base | this build | ratio | this build p50 / p99 / max (ms) |");
        println!("|---|---:|---:|---:|---|");
    } else {
        println!("| scenario | result | p50 / p99 / max (ms) |");
        println!("|---|---:|---|");
    }
    for separate in [false, true] {
        let sessions = if separate {
            "16 separate sessions"
        } else {
            "one session"
        };
        let delegates = std::cell::RefCell::new(Vec::new());
        compare(
            &builds,
            reps,
            &format!("broker: lifecycles, 16 clients, {sessions}"),
            "/s",
            |dir| {
                let delegates = &delegates;
                async move {
                    let world = World::with_bins(&dir);
                    let (measured, delegate) = lifecycles(&world, per_client, separate).await;
                    if dir == bin("shepherd").parent().unwrap() {
                        delegates.borrow_mut().extend(delegate);
                    }
                    measured
                }
            },
        )
        .await;
        let delegates = delegates.into_inner();
        if !delegates.is_empty() {
            println!(
                "| … of which `delegate` (reserves the note), this build | | | | {} |",
                latency_summary(delegates)
            );
        }
        if separate {
            file_system_floor(reps, if quick { 1.0 } else { 4.0 });
        }
        compare(
            &builds,
            reps,
            &format!("broker: plans (`run.submit`), 16 clients, {sessions}"),
            "/s",
            |dir| async move {
                let world = World::with_bins(&dir);
                plans(&world, per_plan_client, separate).await
            },
        )
        .await;
    }
    compare(
        &builds,
        reps,
        "broker: `done` → completion pushed, one sheep",
        "/s",
        |dir| async move {
            let world = World::with_bins(&dir);
            done_to_completion(&world, if quick { 50 } else { 300 }).await
        },
    )
    .await;
    for separate in [false, true] {
        let sessions = if separate {
            "16 separate sessions"
        } else {
            "one session"
        };
        // Only this build knows `notes.write`.
        compare(
            &builds[builds.len() - 1..],
            reps,
            &format!("broker: `notes.write` reservations, 16 connections, {sessions}"),
            "/s",
            |dir| async move {
                let world = World::with_bins(&dir);
                broker_notes_writes(&world, per_process * 2, separate).await
            },
        )
        .await;
    }
    for broker in [false, true] {
        for (processes, separate) in [(1, false), (16, false), (16, true)] {
            let sessions = if separate {
                "separate sessions"
            } else {
                "one session"
            };
            let through = if broker {
                "through the running broker"
            } else {
                "no broker"
            };
            compare(
                &builds,
                reps,
                &format!(
                    "CLI: `notes reserve`, {processes} process(es) calling, {sessions}, {through}"
                ),
                "/s",
                |dir| async move {
                    cli_reserve(
                        &dir.join("shepherd"),
                        processes,
                        per_process,
                        separate,
                        broker,
                    )
                },
            )
            .await;
        }
    }
    compare(
        &builds,
        reps,
        "CLI floor: `shepherd --version`, 16 processes calling",
        "/s",
        |dir| async move {
            let temp = tempfile::tempdir().unwrap();
            cli_calls(&dir.join("shepherd"), temp.path(), 16, per_process, |_| {
                vec!["--version".to_owned()]
            })
        },
    )
    .await;
    println!(
        "\nEvery scenario verified: no failed call; every note listed once, present and linked once; lifecycle and plan notes final."
    );
}
