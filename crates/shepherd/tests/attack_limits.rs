//! Attacks on the machine's resources (the report's F6): a sheep that forks without end,
//! allocates without end or fills its disk is stopped by its limit, its task fails naming the
//! limit, and the rest of the herd goes on; ordinary work (150 processes, 256 MiB, 64 MiB of
//! files) runs under the default limits untouched.
//!
//! As root the limits are the sheep's own cgroups; as an unprivileged user here (no writable
//! cgroup, no user systemd) they are rlimits, and status says so. Every test holds both ways.

#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use serde_json::Value;

use crate::attack_support::{define_attacker, is_root};
use crate::herd_support::World;

/// Runs `tasks` (`AGENT=TASK`) side by side and returns each task's result.
fn run_parallel(world: &World, tasks: &[&str]) -> Vec<Value> {
    let mut argv = vec!["run", "--json", "--parallel"];
    argv.extend_from_slice(tasks);
    let out = world.run(&argv);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|err| {
        panic!(
            "shepherd run: {err}\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    report["results"].as_array().cloned().unwrap_or_default()
}

fn error_of(result: &Value) -> String {
    result["error"].as_str().unwrap_or_default().to_owned()
}

/// A sheep of the herd that does its small task and completes.
fn define_worker(world: &World) {
    define_attacker(
        world,
        "worker",
        "",
        r#"
t = task()
done({"did": t})
"#,
    );
}

/// A fork loop: children that wait, until a fork is refused; then it fails.
const FORK_BOMB: &str = r#"
import time
t = task()
made = 0
while True:
    pid = os.fork()
    if pid == 0:
        time.sleep(120)
        os._exit(0)
    made += 1
"#;

#[test]
fn a_fork_bomb_is_stopped_by_its_pids_limit_and_the_herd_goes_on() {
    let world = World::new();
    define_attacker(&world, "bomb", "limits:\n  pids: 64", FORK_BOMB);
    define_worker(&world);
    let results = run_parallel(&world, &["bomb=fork", "worker=work"]);
    assert_eq!(results.len(), 2, "{results:?}");
    let bomb = error_of(&results[0]);
    assert!(
        bomb.contains("was stopped by its pids limit (64)"),
        "the bomb's task names its limit: {results:?}"
    );
    assert_eq!(
        results[1]["status"], "completed",
        "the herd goes on: {results:?}"
    );
    assert!(
        results[1]["text"]
            .as_str()
            .unwrap_or_default()
            .contains("work")
    );
}

/// Allocates and touches 16 MiB at a time, without end.
const MEMORY_HOG: &str = r#"
t = task()
hoard = []
while True:
    hoard.append(bytearray(16 << 20))
"#;

#[test]
fn a_memory_hog_is_stopped_by_its_memory_limit() {
    let world = World::new();
    define_attacker(&world, "hog", "limits:\n  memory: 256M", MEMORY_HOG);
    define_worker(&world);
    let results = run_parallel(&world, &["hog=eat", "worker=work"]);
    let hog = error_of(&results[0]);
    assert!(
        hog.contains("was stopped by its memory limit (256 MiB)"),
        "the hog's task names its limit: {results:?}"
    );
    assert_eq!(results[1]["status"], "completed", "{results:?}");
}

/// Fills its private `/tmp` 4 MiB at a time, without end.
const DISK_FILLER: &str = r#"
t = task()
n = 0
while True:
    with open("/tmp/fill-%d" % n, "wb") as f:
        f.write(b"x" * (4 << 20))
    n += 1
"#;

#[test]
fn a_sheep_filling_its_private_tmp_is_stopped_by_its_disk_limit() {
    let world = World::new();
    define_attacker(
        &world,
        "filler",
        "sandbox: workspace\nnetwork: none\nlimits:\n  disk: 32M",
        DISK_FILLER,
    );
    let results = run_parallel(&world, &["filler=fill"]);
    let filler = error_of(&results[0]);
    assert!(
        filler.contains("was stopped by its disk limit (32 MiB)"),
        "{results:?}"
    );
    assert!(filler.contains("No space left on device"), "{results:?}");
}

#[test]
fn one_file_larger_than_the_disk_limit_is_refused_unconfined_too() {
    let world = World::new();
    define_attacker(
        &world,
        "writer",
        "limits:\n  disk: 16M",
        r#"
t = task()
with open("big", "wb") as f:
    f.write(b"x" * (64 << 20))
"#,
    );
    let results = run_parallel(&world, &["writer=write"]);
    let writer = error_of(&results[0]);
    assert!(
        writer.contains("was stopped by its disk limit (16 MiB)"),
        "{results:?}"
    );
    assert!(writer.contains("File too large"), "{results:?}");
}

/// Ordinary work: 150 processes at once, 256 MiB held, 64 MiB of files in the worktree and in
/// `/tmp`.
const ORDINARY_WORK: &str = r#"
import time
t = task()
kids = []
for _ in range(150):
    pid = os.fork()
    if pid == 0:
        time.sleep(2)
        os._exit(0)
    kids.append(pid)
for pid in kids:
    os.waitpid(pid, 0)
held = bytearray(256 << 20)
for i in range(0, len(held), 4096):
    held[i] = 1
for where in ("work-%d.bin" % os.getpid(), "/tmp/work-%d.bin" % os.getpid()):
    with open(where, "wb") as f:
        f.write(b"x" * (64 << 20))
    os.remove(where)
done({"processes": len(kids), "heldMiB": len(held) >> 20})
"#;

#[test]
fn ordinary_work_runs_untouched_under_the_default_limits_confined_or_not() {
    let world = World::new();
    define_attacker(&world, "plain", "", ORDINARY_WORK);
    define_attacker(
        &world,
        "confined",
        "sandbox: workspace\nnetwork: none",
        ORDINARY_WORK,
    );
    // The same work under limits below it is stopped: the limits are real.
    define_attacker(&world, "tight", "limits:\n  pids: 100", ORDINARY_WORK);
    let mut results = run_parallel(&world, &["plain=work", "confined=work", "tight=work"]);
    let tight = results.pop().unwrap();
    assert!(
        error_of(&tight).contains("was stopped by its pids limit (100)"),
        "{tight}"
    );
    for result in &results {
        assert_eq!(result["status"], "completed", "{results:?}");
        let found: Value = serde_json::from_str(result["text"].as_str().unwrap()).unwrap();
        assert_eq!(found["processes"], 150, "{found}");
        assert_eq!(found["heldMiB"], 256, "{found}");
    }
}

#[test]
fn status_and_the_note_record_the_limits_and_how_they_are_applied() {
    let world = World::new();
    world.define_file(
        "waiter",
        "---\nname: waiter\ndescription: Waits.\ncommand: [sh, -c, 'shepherd inbox --wait 60 >/dev/null; shepherd done --status completed --summary ok; sleep 60']\nlimits:\n  memory: 1G\n---\nWaits.\n",
    );
    let id = world.spawn("waiter", "");
    let sheep = world.json(&["status", &id]);
    assert_eq!(sheep["limits"]["memory"], 1u64 << 30, "{sheep}");
    assert_eq!(sheep["limits"]["pids"], 4096, "the default: {sheep}");
    let by = sheep["limitsBy"]["by"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let cgroups_here =
        rustix::fs::access("/sys/fs/cgroup/pids", rustix::fs::Access::WRITE_OK).is_ok();
    if is_root() && cgroups_here {
        assert!(by.starts_with("cgroup"), "as root here: {sheep}");
    } else if !is_root() {
        assert_eq!(by, "rlimits", "{sheep}");
        let unapplied = sheep["limitsBy"]["unapplied"].to_string();
        assert!(
            unapplied.contains("RLIMIT_NPROC"),
            "said, not ignored: {sheep}"
        );
    }
    let text = world.run(&["status", &id]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("; limits pids 4096, memory 1 GiB, disk 4 GiB"),
        "{text}"
    );
    let task = world.delegate(&id, "go")["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    let settled = world.json_status(&["watch", &task, "--wait", "60"]).1["settled"][0].clone();
    assert_eq!(settled["status"], "completed", "{settled}");
    let note = std::fs::read_to_string(settled["note"].as_str().unwrap()).unwrap();
    assert!(
        note.contains("limits: \"pids 4096, memory 1 GiB, disk 4 GiB ("),
        "{note}"
    );
}
