//! Process facts and signals, for supervisors and for confirming that a sheep is gone.
//!
//! Waiting for a process that is not our child uses the platform's exit watch (a pidfd), so
//! "wait until it is gone" is an event with a deadline, never a polling loop. Process facts come
//! from the platform's process table (`crate::platform`).

// This module owns running a command: `run_with_deadline` spawns, drains and kills it.
#![allow(clippy::disallowed_types)]

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags, poll};
use rustix::process::{Pid, Signal};

use crate::platform;

/// Whether a process with `pid` exists (zombies count as existing).
pub fn alive(pid: u32) -> bool {
    to_pid(pid).is_some_and(|pid| rustix::process::test_kill_process(pid).is_ok())
}

/// Whether any process is left in process group `pgid`.
pub fn group_alive(pgid: u32) -> bool {
    to_pid(pgid).is_some_and(|pid| rustix::process::test_kill_process_group(pid).is_ok())
}

/// Sends `signal` to process group `pgid`; a group that is already gone is not an error.
pub fn signal_group(pgid: u32, signal: Signal) {
    if let Some(pid) = to_pid(pgid) {
        let _gone = rustix::process::kill_process_group(pid, signal);
    }
}

/// Sends `signal` to process `pid`; a process that is already gone is not an error.
pub fn signal_process(pid: u32, signal: Signal) {
    if let Some(pid) = to_pid(pid) {
        let _gone = rustix::process::kill_process(pid, signal);
    }
}

/// Waits until process `pid` has exited (or been reaped), up to `deadline`. Returns whether it
/// is gone. A zombie still awaiting its parent's reaping counts as gone: it runs nothing.
pub fn wait_gone(pid: u32, deadline: Instant) -> bool {
    if to_pid(pid).is_none() {
        return true;
    }
    let fd = match platform::exit_watch(pid) {
        Ok(Some(fd)) => fd,
        Ok(None) => return true,
        Err(_) => return !alive(pid),
    };
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let mut fds = [PollFd::new(&fd, PollFlags::IN)];
        let timeout = rustix::event::Timespec::try_from(left).unwrap_or(rustix::event::Timespec {
            tv_sec: 0,
            tv_nsec: 0,
        });
        match poll(&mut fds, Some(&timeout)) {
            Ok(0) => return false,
            Ok(_) => return true,
            Err(rustix::io::Errno::INTR) if !left.is_zero() => continue,
            Err(_) => return !alive(pid) || is_zombie(pid),
        }
    }
}

/// Ends process group `pgid`: SIGTERM, up to `grace` for its leader to exit, then SIGKILL to
/// whatever is left. Returns whether the leader is gone by `deadline`.
pub fn terminate_group(pgid: u32, grace: Duration, deadline: Instant) -> bool {
    signal_group(pgid, Signal::TERM);
    let soft = (Instant::now() + grace).min(deadline);
    if !wait_gone(pgid, soft) {
        signal_group(pgid, Signal::KILL);
    }
    let gone = wait_gone(pgid, deadline);
    // Stragglers that outlived their leader in the same group.
    signal_group(pgid, Signal::KILL);
    gone
}

/// Every live process below `root` — its children, theirs, and so on. A supervisor that is a
/// child subreaper sees here whatever its sheep left behind, daemons that called `setsid`
/// included.
///
/// The walk follows the kernel's per-process lists of children, so its cost grows with the
/// tree below `root`, not with every process on the machine: two hundred supervisors closing
/// at once would otherwise each read the whole process table. Where the kernel keeps no such
/// lists, one scan of the process table gives the same answer.
pub fn descendants(root: u32) -> Vec<u32> {
    descendants_by_children(root).unwrap_or_else(|| descendants_by_scan(root))
}

/// [`descendants`] through the kernel's lists of children; `None` when it keeps none.
fn descendants_by_children(root: u32) -> Option<Vec<u32>> {
    // The root itself must have a list; below it, a process that ended meanwhile has none.
    let mut queue = platform::children(root)?;
    let mut found = Vec::new();
    while let Some(pid) = queue.pop() {
        if found.contains(&pid) {
            continue;
        }
        match platform::stat(pid) {
            Some(stat) if !stat.zombie => {
                found.push(pid);
                queue.extend(platform::children(pid).unwrap_or_default());
            }
            _ => {}
        }
    }
    Some(found)
}

/// [`descendants`] from one scan of the whole process table.
fn descendants_by_scan(root: u32) -> Vec<u32> {
    let mut children: std::collections::HashMap<u32, Vec<u32>> = std::collections::HashMap::new();
    for pid in platform::process_ids() {
        if let Some(stat) = platform::stat(pid)
            && !stat.zombie
        {
            children.entry(stat.parent).or_default().push(pid);
        }
    }
    let mut found = Vec::new();
    let mut queue = vec![root];
    while let Some(parent) = queue.pop() {
        for child in children.get(&parent).into_iter().flatten() {
            if !found.contains(child) {
                found.push(*child);
                queue.push(*child);
            }
        }
    }
    found
}

/// Ends every process below `root` except those in `spare` (and their own descendants):
/// SIGTERM, up to `grace` for them to exit, then SIGKILL to what is left. Processes that
/// appear meanwhile are caught by a second pass. Returns whether none is left by `deadline`.
pub fn end_descendants(root: u32, spare: &[u32], grace: Duration, deadline: Instant) -> bool {
    let targets = |spare: &[u32]| -> Vec<u32> {
        let spared: Vec<u32> = spare
            .iter()
            .flat_map(|pid| std::iter::once(*pid).chain(descendants(*pid)))
            .collect();
        descendants(root)
            .into_iter()
            .filter(|pid| !spared.contains(pid))
            .collect()
    };
    let first = targets(spare);
    if first.is_empty() {
        return true;
    }
    for pid in &first {
        signal_process(*pid, Signal::TERM);
    }
    let soft = (Instant::now() + grace).min(deadline);
    for pid in &first {
        wait_gone(*pid, soft);
    }
    for _pass in 0..2 {
        let left = targets(spare);
        if left.is_empty() {
            return true;
        }
        for pid in &left {
            signal_process(*pid, Signal::KILL);
        }
        for pid in &left {
            wait_gone(*pid, deadline);
        }
    }
    targets(spare).is_empty()
}

/// Whether `pid` is a zombie (exited, not yet reaped).
pub fn is_zombie(pid: u32) -> bool {
    platform::stat(pid).is_some_and(|stat| stat.zombie)
}

/// The parent of `pid`, from the process table.
pub fn parent_of(pid: u32) -> Option<u32> {
    platform::stat(pid)
        .map(|stat| stat.parent)
        .filter(|ppid| *ppid > 0)
}

/// The value of `name` in the environment `pid` started with (`None` when it has none, is
/// gone, or may not be read).
pub fn environ_var(pid: u32, name: &str) -> Option<std::ffi::OsString> {
    platform::environ_var(pid, name)
}

/// `pid` and its ancestors, nearest first, up to `limit` steps.
pub fn ancestry(pid: u32, limit: usize) -> Vec<u32> {
    let mut chain = vec![pid];
    let mut current = pid;
    while chain.len() <= limit {
        match parent_of(current) {
            Some(parent) if parent != current && !chain.contains(&parent) => {
                chain.push(parent);
                current = parent;
            }
            _ => break,
        }
    }
    chain
}

/// `pid` and all its ancestors, nearest first, when they can be read to the end: the last is a
/// process without a parent (this pid namespace's init). `None` when a link is missing (a
/// process on the way is gone or cannot be read) or there are more than `limit`.
pub fn full_ancestry(pid: u32, limit: usize) -> Option<Vec<u32>> {
    let mut chain = vec![pid];
    let mut current = pid;
    loop {
        let parent = platform::stat(current)?.parent;
        if parent == 0 {
            return Some(chain);
        }
        if parent == current || chain.contains(&parent) || chain.len() > limit {
            return None;
        }
        chain.push(parent);
        current = parent;
    }
}

fn to_pid(pid: u32) -> Option<Pid> {
    i32::try_from(pid).ok().and_then(Pid::from_raw)
}

/// The last `lines` lines of a file, reading at most `max_bytes` from its end.
/// A link at `path` is not followed: output logs sit where a sheep might have been able to
/// plant one.
pub fn tail_of_file(path: &Path, lines: usize, max_bytes: u64) -> std::io::Result<String> {
    let mut file = shepherd_fs::open_nofollow(path)?;
    let len = file.metadata()?.len();
    let start = len.saturating_sub(max_bytes);
    file.seek(SeekFrom::Start(start))?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    let text = String::from_utf8_lossy(&bytes);
    Ok(last_lines(&text, lines))
}

/// The last `lines` lines of `text`, without a trailing newline.
pub fn last_lines(text: &str, lines: usize) -> String {
    let trimmed = text.trim_end_matches(['\n', '\r']);
    let mut starts: Vec<usize> = trimmed.match_indices('\n').map(|(i, _)| i + 1).collect();
    starts.insert(0, 0);
    let from = starts.len().saturating_sub(lines);
    trimmed[starts.get(from).copied().unwrap_or(0)..].to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_lines_keeps_the_end() {
        assert_eq!(last_lines("a\nb\nc\n", 2), "b\nc");
        assert_eq!(last_lines("a\nb", 5), "a\nb");
        assert_eq!(last_lines("", 3), "");
    }

    #[test]
    fn a_started_environment_is_read_by_name() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .env_clear()
            .env("SHEPHERD_TEST_VAR", "one two")
            .env("SHEPHERD_TEST_VARIABLE", "longer")
            .spawn()
            .unwrap();
        let pid = child.id();
        assert_eq!(
            environ_var(pid, "SHEPHERD_TEST_VAR").as_deref(),
            Some(std::ffi::OsStr::new("one two"))
        );
        assert_eq!(environ_var(pid, "SHEPHERD_TEST"), None);
        assert_eq!(environ_var(pid, "PATH"), None);
        child.kill().unwrap();
        child.wait().unwrap();
    }

    #[test]
    fn ancestry_reaches_our_parent() {
        let me = std::process::id();
        let chain = ancestry(me, 8);
        assert_eq!(chain[0], me);
        assert_eq!(parent_of(me), chain.get(1).copied());
    }

    #[test]
    fn the_walk_by_children_finds_what_a_scan_of_the_table_finds() {
        use std::os::unix::process::CommandExt as _;
        let mut tree = std::process::Command::new("sh")
            .args(["-c", "sleep 30 & sh -c 'sleep 30 & wait' & wait"])
            .process_group(0)
            .spawn()
            .unwrap();
        let root = tree.id();
        // Below the root: a sleep, and a sh with a sleep of its own, once every fork is done.
        let deadline = Instant::now() + Duration::from_secs(10);
        while descendants_by_scan(root).len() < 3 {
            assert!(Instant::now() < deadline, "the tree never grew");
            std::thread::yield_now();
        }
        let mut scanned = descendants_by_scan(root);
        let mut walked =
            descendants_by_children(root).expect("this kernel keeps lists of children");
        scanned.sort_unstable();
        walked.sort_unstable();
        assert_eq!(walked, scanned);
        assert_eq!(descendants(root).len(), 3);
        signal_group(root, Signal::KILL);
        tree.wait().unwrap();
    }

    #[test]
    fn wait_gone_sees_an_exited_child() {
        let mut child = std::process::Command::new("sh")
            .args(["-c", "exit 0"])
            .spawn()
            .unwrap();
        let pid = child.id();
        child.wait().unwrap();
        assert!(wait_gone(pid, Instant::now() + Duration::from_secs(5)));
        let mut sleeper = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        assert!(!wait_gone(
            sleeper.id(),
            Instant::now() + Duration::from_millis(50)
        ));
        sleeper.kill().unwrap();
        sleeper.wait().unwrap();
    }
}

/// What a finished command printed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandOutput {
    /// Whether it exited with status 0.
    pub success: bool,
    /// Its exit code, if it exited normally.
    pub code: Option<i32>,
    /// Standard output, lossily decoded.
    pub stdout: String,
    /// Standard error, lossily decoded.
    pub stderr: String,
}

/// Runs `command` to completion with stdin closed, killing it at `deadline`.
pub fn run_with_deadline(
    command: &mut std::process::Command,
    deadline: Instant,
) -> std::io::Result<CommandOutput> {
    run_with_input(command, None, deadline)
}

/// Runs `command` to completion with `input` on its stdin (closed after it; closed at once
/// without), killing it at `deadline`.
pub fn run_with_input(
    command: &mut std::process::Command,
    input: Option<Vec<u8>>,
    deadline: Instant,
) -> std::io::Result<CommandOutput> {
    use std::process::Stdio;
    let stdin = if input.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    };
    let mut child = command
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    if let (Some(input), Some(mut pipe)) = (input, child.stdin.take()) {
        // Written beside the reads, so a command that answers before reading all of its input
        // cannot wedge both ends.
        std::thread::spawn(move || {
            use std::io::Write as _;
            let _closed_early = pipe.write_all(&input);
        });
    }
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                let _partial = pipe.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let stdout = drain(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let stderr = drain(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    if !wait_gone(child.id(), deadline) {
        let _already_gone = child.kill();
        let _reaped = child.wait();
        return Err(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            "the command did not finish in time",
        ));
    }
    let status = child.wait()?;
    let text = |handle: std::thread::JoinHandle<Vec<u8>>| {
        String::from_utf8_lossy(&handle.join().unwrap_or_default()).into_owned()
    };
    Ok(CommandOutput {
        success: status.success(),
        code: status.code(),
        stdout: text(stdout),
        stderr: text(stderr),
    })
}
