//! A real pane's processes, read from `/proc` and signalled as Herdr does.
//!
//! `pane.close` does what Herdr does ([`close_session`]): HUP, then TERM, then KILL to every
//! process of the pane's session, waiting up to 250 ms after each for all of them — a zombie
//! counts as alive. Who holds a session's terminal is read the same way ([`foreground_of`]).
//! Both the fake's model (a pane that goes away) and its process runner use these, so they sit
//! below both.

use std::path::Path;
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process, kill_process_group};

/// How long Herdr waits after each signal of a close.
const CLOSE_STEP: Duration = Duration::from_millis(250);

/// The session a process belongs to and its process group (fields 6 and 5 of its stat).
fn session_and_group(pid: u32) -> Option<(u32, u32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let mut fields = stat.rsplit_once(')')?.1.split_whitespace().skip(2);
    let group = fields.next()?.parse().ok()?;
    let session = fields.next()?.parse().ok()?;
    Some((session, group))
}

/// Every process (zombies included) of session `leader`.
fn session_members(leader: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| session_and_group(*pid).is_some_and(|(session, _)| session == leader))
        .collect()
}

/// Who holds a real session's terminal. The fake has no terminal, so it says what one would
/// show: a process group of the session other than its leader's (made by job control, or by a
/// supervisor that puts its sheep in a group of its own) holds it, with its leader's argv;
/// with none, the leader does.
pub(crate) fn foreground_of(leader: u32) -> Option<(u32, Vec<String>)> {
    let group = session_members(leader)
        .into_iter()
        .filter(|pid| !is_zombie(*pid))
        .filter_map(|pid| session_and_group(pid).map(|(_, group)| group))
        .filter(|group| *group != leader)
        .min()?;
    let cmdline = std::fs::read(format!("/proc/{group}/cmdline")).unwrap_or_default();
    let argv = cmdline
        .split(|byte| *byte == 0)
        .filter(|word| !word.is_empty())
        .map(|word| String::from_utf8_lossy(word).into_owned())
        .collect();
    Some((group, argv))
}

fn is_zombie(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            == Some("Z")
    })
}

/// Closes a pane's processes as Herdr does (see the module docs). Called without the state
/// lock; returns when they are gone or the last wait ran out.
pub(crate) fn close_session(root: Option<u32>, job: Option<u32>) {
    let pids = || {
        let mut pids = root.map(session_members).unwrap_or_default();
        pids.extend(job);
        pids.retain(|pid| Path::new(&format!("/proc/{pid}")).exists());
        pids
    };
    for signal in [Signal::HUP, Signal::TERM, Signal::KILL] {
        let targets = pids();
        if targets.is_empty() {
            return;
        }
        for pid in &targets {
            if let Some(pid) = to_pid(*pid) {
                let _gone = kill_process(pid, signal);
            }
        }
        // A typed job leads a process group of its own: all of it hears the signal.
        if let Some(group) = job.and_then(to_pid) {
            let _gone = kill_process_group(group, signal);
        }
        let until = Instant::now() + CLOSE_STEP;
        while !pids().is_empty() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// Kills at once a pane's typed job (`job`, which leads a process group of its own) and every
/// process of session `root`, when the pane's root is a real process.
pub(crate) fn kill_now(job: Option<u32>, root: Option<u32>) {
    if let Some(pid) = job.and_then(to_pid) {
        let _gone = kill_process_group(pid, Signal::KILL);
    }
    for pid in root.map(session_members).unwrap_or_default() {
        if let Some(pid) = to_pid(pid) {
            let _gone = kill_process(pid, Signal::KILL);
        }
    }
}

fn to_pid(pid: u32) -> Option<Pid> {
    i32::try_from(pid).ok().and_then(Pid::from_raw)
}
