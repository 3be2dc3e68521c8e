//! The check a merge runs after each step: the user's command under `sh -c` in the merge
//! worktree, in a process group of its own, within its deadline, and ended with the queue.
//!
//! Everything the check starts carries `SHEPHERD_MERGE_CHECK=<herd>:<merge>` in its
//! environment and runs in the group the check leads, so it ends as one: at its deadline
//! (`SIGTERM`, then `SIGKILL` to what is left), when the merge is cancelled (the group is
//! killed from the cancelling side, which wakes the wait), and once the check exits (a
//! straggler left in its group is killed, so nothing of it outlives its step). A broker that
//! died mid-check leaves it running; the next broker finds every process carrying the mark of
//! a merge it resumes and kills it ([`end_leftovers`]) before the merge goes on.

// The check is the user's own command, run here.
#![allow(clippy::disallowed_types)]

use std::io::Read;
use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use rustix::process::Signal;
use shepherd_term::process::{signal_group, terminate_group, wait_gone};

/// The variable that marks every process of a merge's check.
pub(super) const MARK: &str = "SHEPHERD_MERGE_CHECK";
/// The end of a failing check's output a report carries.
const TAIL: usize = 4 * 1024;
/// How long a check stopped at its deadline has to end after `SIGTERM`.
const GRACE: Duration = Duration::from_secs(2);
/// How long its output is waited for once its group is gone (a process that left the group
/// may hold the pipes open).
const DRAIN: Duration = Duration::from_secs(2);

/// Why a check did not pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Failed {
    /// How it ended, in words (`exit 3`, `stopped after 30 s`, `could not run: …`).
    pub(super) status: String,
    /// The end of what it printed.
    pub(super) output: String,
}

/// What a check ended as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Checked {
    Passed,
    Failed(Failed),
    /// The merge was cancelled while it ran (its group was killed).
    Cancelled,
}

/// Runs `command` in the worktree at `dir` within `limit`, marked `mark`. `started` is told
/// the check's process group as soon as it runs (so a cancel can kill it); `cancelled` is
/// asked once it ended whether that is why.
pub(super) fn run(
    dir: &Path,
    command: &str,
    limit: Duration,
    mark: &str,
    started: impl FnOnce(u32),
    cancelled: impl Fn() -> bool,
) -> Checked {
    let mut shell = Command::new("sh");
    shell
        .arg("-c")
        .arg(command)
        .current_dir(dir)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .env(MARK, mark)
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = match shell.spawn() {
        Ok(child) => child,
        Err(err) => {
            return Checked::Failed(Failed {
                status: format!("could not run: {err}"),
                output: String::new(),
            });
        }
    };
    let pgid = child.id();
    started(pgid);
    let (said, heard) = mpsc::channel();
    for pipe in [
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    ]
    .into_iter()
    .flatten()
    {
        let said = said.clone();
        std::thread::spawn(move || {
            let mut pipe = pipe;
            let mut bytes = Vec::new();
            let _partial = pipe.read_to_end(&mut bytes);
            let _gone = said.send(bytes);
        });
    }
    drop(said);
    let started_at = Instant::now();
    let ended = wait_gone(pgid, started_at + limit);
    if !ended {
        terminate_group(pgid, GRACE, Instant::now() + GRACE * 2);
    }
    let status = child.wait().ok();
    // Whatever the check left in its group ends with it.
    signal_group(pgid, Signal::KILL);
    let mut output = Vec::new();
    let drained = Instant::now() + DRAIN;
    for _ in 0..2 {
        match heard.recv_timeout(drained.saturating_duration_since(Instant::now())) {
            Ok(bytes) => output.extend(bytes),
            Err(_) => break,
        }
    }
    if cancelled() {
        return Checked::Cancelled;
    }
    if ended && status.is_some_and(|s| s.success()) {
        return Checked::Passed;
    }
    let status = if ended {
        use std::os::unix::process::ExitStatusExt as _;
        match status {
            Some(s) if s.code().is_some() => format!("exit {}", s.code().unwrap_or_default()),
            Some(s) => format!("killed by signal {}", s.signal().unwrap_or_default()),
            None => "ended unseen".to_owned(),
        }
    } else {
        format!("stopped after {}", words(limit))
    };
    Checked::Failed(Failed {
        status,
        output: tail(&String::from_utf8_lossy(&output)),
    })
}

/// Kills every process carrying `mark` (a check a broker before this one left running), and
/// returns how many there were.
pub(super) fn end_leftovers(mark: &str) -> usize {
    let mut ended = 0;
    for pid in shepherd_term::platform::process_ids() {
        let marked = shepherd_term::process::environ_var(pid, MARK)
            .is_some_and(|value| value.to_string_lossy() == mark);
        if marked {
            shepherd_term::process::signal_process(pid, Signal::KILL);
            ended += 1;
        }
    }
    ended
}

/// Kills the check whose process group is `pgid` (the merge was cancelled).
pub(super) fn kill(pgid: u32) {
    signal_group(pgid, Signal::KILL);
}

/// `limit` in words (`30 s`, `30 min`).
fn words(limit: Duration) -> String {
    let secs = limit.as_secs_f64();
    if secs >= 60.0 && secs % 60.0 == 0.0 {
        format!("{} min", secs / 60.0)
    } else {
        format!("{} s", (secs * 10.0).round() / 10.0)
    }
}

/// The end of `said`, at most [`TAIL`] bytes, on a character boundary.
fn tail(said: &str) -> String {
    let mut start = said.len().saturating_sub(TAIL);
    while !said.is_char_boundary(start) {
        start += 1;
    }
    said[start..].trim().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_check_that_fails_says_its_status_apart_from_its_output() {
        let dir = tempfile::tempdir().unwrap();
        let checked = run(
            dir.path(),
            "printf 'a lot\\n%.0s' $(seq 1 50); exit 3",
            Duration::from_secs(30),
            "test:merge-a",
            |_| {},
            || false,
        );
        let Checked::Failed(failed) = checked else {
            panic!("{checked:?}");
        };
        assert_eq!(failed.status, "exit 3");
        assert!(failed.output.ends_with("a lot"), "{}", failed.output);
        assert_eq!(
            run(
                dir.path(),
                "true",
                Duration::from_secs(30),
                "m",
                |_| {},
                || false
            ),
            Checked::Passed
        );
    }

    #[test]
    fn a_check_past_its_deadline_is_stopped_with_everything_it_started() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("child");
        let command = format!("sleep 600 & echo $! > '{}'; wait", pid_file.display());
        let checked = run(
            dir.path(),
            &command,
            Duration::from_millis(300),
            "test:merge-b",
            |_| {},
            || false,
        );
        let Checked::Failed(failed) = checked else {
            panic!("{checked:?}");
        };
        assert_eq!(failed.status, "stopped after 0.3 s");
        let child: u32 = fs_err::read_to_string(&pid_file)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(
            wait_gone(child, Instant::now() + Duration::from_secs(10)),
            "the check's own child ended with it"
        );
    }

    #[test]
    fn a_cancelled_check_is_killed_from_outside_and_a_leftover_found_by_its_mark() {
        let dir = tempfile::tempdir().unwrap();
        let (tell, group) = mpsc::channel();
        let cancelled = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = cancelled.clone();
        let killer = std::thread::spawn(move || {
            let pgid: u32 = group.recv().unwrap();
            flag.store(true, std::sync::atomic::Ordering::SeqCst);
            kill(pgid);
        });
        let checked = run(
            dir.path(),
            "sleep 600",
            Duration::from_secs(600),
            "test:merge-c",
            move |pgid| tell.send(pgid).unwrap(),
            || cancelled.load(std::sync::atomic::Ordering::SeqCst),
        );
        killer.join().unwrap();
        assert_eq!(checked, Checked::Cancelled);

        // A check whose broker died: found by its mark alone.
        let mark = format!("test:merge-d-{}", std::process::id());
        let mut orphan = Command::new("sh")
            .args(["-c", "echo up; exec sleep 600"])
            .env(MARK, &mark)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        // Once it said it is up, it runs with its environment (not its parent's, as a child
        // that has not exec'd yet would show).
        let mut up = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(orphan.stdout.as_mut().unwrap()),
            &mut up,
        )
        .unwrap();
        assert!(end_leftovers(&mark) >= 1);
        let _reaped = orphan.wait();
        assert_eq!(end_leftovers(&mark), 0);
    }
}
