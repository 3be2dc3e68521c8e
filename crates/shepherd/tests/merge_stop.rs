//! A merge queue that can be stopped and survives a crash, against real git: Ctrl-C on
//! `shepherd merge` cancels the queue (B6), `broker stop` cancels it within its bound (B5), and
//! a broker killed mid-queue leaves no worktree or check process behind once the next broker
//! runs (B4); a second merge into the same branch waits its turn and says so (B11). Each check
//! here tells the test it started through a named pipe, so nothing waits on a timer.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use crate::herd_support::{World, kill9, parse_one_line, wait_gone};
use crate::merge_support::{define_writer, isolated_run, repository, run_json};
use shepherd_testkit::git::git;

/// A finished isolated run of three tasks, each writing a file of its own; its id.
fn three_branches(world: &World) -> String {
    repository(world, &["a", "b", "c"]);
    define_writer(world, "writer");
    isolated_run(world, &["writer=a one", "writer=b two", "writer=c three"]).0
}

/// A check that, the first time it runs, writes its pid into `check.pid`, tells the test
/// through the pipe `started` and then blocks for good; every later run passes at once.
struct BlockingCheck {
    command: String,
    started: PathBuf,
    pid_file: PathBuf,
}

impl BlockingCheck {
    fn new(world: &World) -> Self {
        let dir = world.dir.path();
        let started = world.fifo("started");
        let pid_file = dir.join("check.pid");
        let once = dir.join("check.once");
        let command = format!(
            "if [ -e {once} ]; then exit 0; fi; touch {once}; echo $$ > {pid}; echo up > {started}; exec sleep 600",
            once = once.display(),
            pid = pid_file.display(),
            started = started.display(),
        );
        Self {
            command,
            started,
            pid_file,
        }
    }

    /// Waits (up to 60 s) until the check started; its pid.
    fn wait_started(&self) -> u32 {
        let (tx, rx) = mpsc::channel();
        let started = self.started.clone();
        std::thread::spawn(move || {
            let _sent = tx.send(std::fs::read_to_string(started));
        });
        rx.recv_timeout(Duration::from_secs(60))
            .expect("the check did not start within 60 s")
            .unwrap();
        std::fs::read_to_string(&self.pid_file)
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    }
}

/// `shepherd merge ARGS --json` in the background.
fn merge_in_background(world: &World, args: &[&str]) -> Child {
    let mut all = vec!["merge"];
    all.extend_from_slice(args);
    all.push("--json");
    world
        .command(&all)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits (up to 60 s) for a background command to end; its status, document and stderr.
fn finish(child: Child) -> (i32, serde_json::Value, String) {
    assert!(
        wait_gone(child.id(), Duration::from_secs(60)),
        "shepherd merge did not end within 60 s"
    );
    let output = child.wait_with_output().unwrap();
    (
        output.status.code().unwrap_or(-1),
        parse_one_line(&output.stdout),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// What is left of merge worktrees (`…/worktrees/<repo>-<hash>/merge-<id>` under the state
/// directory), and the project's linked git worktrees besides its own.
fn extra_worktrees(world: &World) -> Vec<String> {
    let mut left: Vec<String> = git(&world.project, &["worktree", "list", "--porcelain"])
        .lines()
        .filter_map(|l| l.strip_prefix("worktree "))
        .filter(|w| Path::new(w) != world.project)
        .map(str::to_owned)
        .collect();
    let root = world.state_dir().join("worktrees");
    for repo in std::fs::read_dir(&root).into_iter().flatten().flatten() {
        for made in std::fs::read_dir(repo.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            if made.file_name().to_string_lossy().starts_with("merge-") {
                left.push(made.path().display().to_string());
            }
        }
    }
    left
}

#[test]
fn b6_ctrl_c_on_merge_cancels_the_queue_and_the_target_stays_put() {
    let world = World::new();
    let run_id = three_branches(&world);
    let before = git(&world.project, &["rev-parse", "main"]);
    let check = BlockingCheck::new(&world);
    let child = merge_in_background(&world, &[&run_id, "--check", &check.command]);
    let pid = check.wait_started();
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(child.id().cast_signed()).unwrap(),
        rustix::process::Signal::INT,
    )
    .unwrap();
    let (code, merge, _) = finish(child);
    assert_eq!(code, 130, "{merge}");
    assert!(merge["cancelled"].is_string(), "{merge}");
    assert!(
        wait_gone(pid, Duration::from_secs(10)),
        "the check outlived its cancelled merge"
    );
    // Nothing landed, then or later: landing again (which waits for the cancelled merge's
    // lane) finds every branch still to land, and main where it was until then.
    assert_eq!(git(&world.project, &["rev-parse", "main"]), before);
    assert!(extra_worktrees(&world).is_empty());
    for branch in merge["branches"].as_array().unwrap() {
        assert_ne!(branch["state"], "merged", "{merge}");
    }
    // `--cancel` of a merge that is over answers it as it ended.
    let id = merge["mergeId"].as_str().unwrap();
    let (code, again) = run_json(&world, &["merge", "--cancel", id]);
    assert_eq!(code, 130, "{again}");
}

#[test]
fn b5_broker_stop_cancels_a_running_check_within_its_bound() {
    let world = World::new();
    let run_id = three_branches(&world);
    let before = git(&world.project, &["rev-parse", "main"]);
    let check = BlockingCheck::new(&world);
    let child = merge_in_background(&world, &[&run_id, "--check", &check.command]);
    let pid = check.wait_started();
    let broker = world.broker_pid().unwrap();
    let stopped = world.run(&["broker", "stop"]);
    assert!(
        stopped.status.success(),
        "{}",
        String::from_utf8_lossy(&stopped.stderr)
    );
    assert!(wait_gone(broker, Duration::from_secs(20)));
    assert!(
        wait_gone(pid, Duration::from_secs(10)),
        "the check survived"
    );
    let _ended = finish(child);
    assert_eq!(git(&world.project, &["rev-parse", "main"]), before);
    assert!(extra_worktrees(&world).is_empty());
}

#[test]
fn b4_a_broker_killed_mid_queue_leaves_nothing_behind_and_landing_again_finishes() {
    let world = World::new();
    let run_id = three_branches(&world);
    let before = git(&world.project, &["rev-parse", "main"]);
    let check = BlockingCheck::new(&world);
    let child = merge_in_background(&world, &[&run_id, "--check", &check.command]);
    let pid = check.wait_started();
    assert_eq!(extra_worktrees(&world).len(), 1, "a merge worktree");
    kill9(world.broker_pid().unwrap());
    let _ended = finish(child);
    // The next broker ends the orphaned check, removes the worktree and lands the rest.
    let (code, merge) = run_json(&world, &["merge", &run_id, "--check", &check.command]);
    assert_eq!(code, 0, "{merge}");
    assert!(
        wait_gone(pid, Duration::from_secs(10)),
        "the orphaned check was not ended"
    );
    assert!(extra_worktrees(&world).is_empty());
    for file in ["a", "b", "c"] {
        let count = git(
            &world.project,
            &[
                "log",
                "--oneline",
                "--no-merges",
                &format!("{before}..main"),
                "--",
                file,
            ],
        );
        assert_eq!(count.lines().count(), 1, "{file} landed once: {count}");
    }
}

#[test]
fn b11_a_second_merge_into_the_same_branch_waits_its_turn_and_says_so() {
    let world = World::new();
    let run_id = three_branches(&world);
    let check = BlockingCheck::new(&world);
    let first = merge_in_background(&world, &[&run_id, "--check", &check.command]);
    check.wait_started();
    let mut second = world
        .command(&["merge", &run_id])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // It says it waits before anything else happens.
    let stderr = second.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufRead::lines(std::io::BufReader::new(stderr)).map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let waiting = loop {
        let line = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("the second merge did not say it waits");
        if line.contains("waiting for merge-") {
            break line;
        }
    };
    assert!(waiting.contains("main"), "{waiting}");
    // The first ends (its check is killed by cancelling it); the second then lands them all.
    let first_id = {
        let at = waiting.find("merge-").unwrap();
        waiting[at..]
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
            .next()
            .unwrap()
            .to_owned()
    };
    let (code, _) = run_json(&world, &["merge", "--cancel", &first_id]);
    assert_eq!(code, 130);
    let _ended = finish(first);
    assert!(
        wait_gone(second.id(), Duration::from_secs(60)),
        "the second merge did not end"
    );
    let output = second.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{text}");
    for file in ["a", "b", "c"] {
        assert!(
            crate::merge_support::file_on(&world, "main", file).ends_with(file_words(file)),
            "{file} did not land:\n{text}"
        );
    }
}

fn file_words(file: &str) -> &'static str {
    match file {
        "a" => "one",
        "b" => "two",
        _ => "three",
    }
}
