//! Finding processes by what `/proc` says of them, for tests and benchmarks that must prove a
//! herd's processes started, or that none outlived a close. Scenarios, their support modules and
//! the benchmarks each had their own `/proc` walk; this is the one they share.
//!
//! A zombie counts as gone everywhere here: a process that has exited but whose parent has not
//! reaped it yet no longer runs anything.

use std::path::{Path, PathBuf};

/// One process seen in `/proc`; its files are read when asked, and a process that has ended
/// since answers as if they were empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Process {
    pub pid: u32,
}

impl Process {
    fn file(&self, name: &str) -> PathBuf {
        Path::new("/proc").join(self.pid.to_string()).join(name)
    }

    /// Its command line, the arguments joined by spaces.
    pub fn command_line(&self) -> String {
        self.arguments().join(" ")
    }

    /// Its arguments, the program first.
    pub fn arguments(&self) -> Vec<String> {
        let bytes = std::fs::read(self.file("cmdline")).unwrap_or_default();
        bytes
            .split(|byte| *byte == 0)
            .filter(|argument| !argument.is_empty())
            .map(|argument| String::from_utf8_lossy(argument).into_owned())
            .collect()
    }

    /// Whether its command line holds `needle`.
    pub fn command_line_holds(&self, needle: &str) -> bool {
        self.command_line().contains(needle)
    }

    /// Whether its environment holds `needle` (bytes of one `NAME=value` or part of one).
    pub fn environment_holds(&self, needle: &[u8]) -> bool {
        let environ = std::fs::read(self.file("environ")).unwrap_or_default();
        !needle.is_empty() && environ.windows(needle.len()).any(|window| window == needle)
    }

    /// Whether its environment sets `name` to exactly `value`.
    pub fn environment_sets(&self, name: &str, value: &[u8]) -> bool {
        let mut entry = format!("{name}=").into_bytes();
        entry.extend_from_slice(value);
        let environ = std::fs::read(self.file("environ")).unwrap_or_default();
        environ.split(|byte| *byte == 0).any(|pair| pair == entry)
    }

    /// Its short name (`comm`), such as `tmux: server`.
    pub fn name(&self) -> String {
        std::fs::read_to_string(self.file("comm"))
            .map(|comm| comm.trim_end().to_owned())
            .unwrap_or_default()
    }

    /// Its parent's pid, while it runs.
    pub fn parent(&self) -> Option<u32> {
        stat_fields(self.pid)?.get(1)?.parse().ok()
    }

    /// Its proportional set size in kB (`smaps_rollup`'s `Pss`), while it runs.
    pub fn pss_kb(&self) -> Option<u64> {
        let rollup = std::fs::read_to_string(self.file("smaps_rollup")).ok()?;
        rollup
            .lines()
            .find(|line| line.starts_with("Pss:"))?
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()
    }
}

/// The fields of `/proc/<pid>/stat` after the command name, which may itself hold spaces and
/// parentheses: the state first, then the parent's pid.
fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_name = stat.rsplit_once(')')?.1;
    Some(after_name.split_whitespace().map(str::to_owned).collect())
}

/// Whether process `pid` exists and is not a zombie.
pub fn running(pid: u32) -> bool {
    stat_fields(pid).is_some_and(|fields| fields.first().is_some_and(|state| state != "Z"))
}

/// Every running process but the caller itself.
pub fn all() -> Vec<Process> {
    let own = std::process::id();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| *pid != own && running(*pid))
        .map(|pid| Process { pid })
        .collect()
}

/// The pids of the running processes whose command line holds `needle`.
pub fn mentioning(needle: &str) -> Vec<u32> {
    all()
        .into_iter()
        .filter(|process| process.command_line_holds(needle))
        .map(|process| process.pid)
        .collect()
}

/// The pids of the running processes whose `HOME` is `home` (a test world's broker,
/// supervisors and sheep).
pub fn with_home(home: &Path) -> Vec<u32> {
    let home = home.as_os_str().as_encoded_bytes();
    all()
        .into_iter()
        .filter(|process| process.environment_sets("HOME", home))
        .map(|process| process.pid)
        .collect()
}

/// The pids of the running children of process `parent`.
pub fn children_of(parent: u32) -> Vec<u32> {
    all()
        .into_iter()
        .filter(|process| process.parent() == Some(parent))
        .map(|process| process.pid)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::{Command, Stdio};

    #[test]
    fn a_child_is_found_by_its_command_line_its_home_and_its_parent_then_counts_as_gone() {
        let home = tempfile::tempdir().unwrap();
        let marker = format!("procs-test-{}", std::process::id());
        let mut child = Command::new("sh")
            .args(["-c", "echo started; read line", &marker])
            .env("HOME", home.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let pid = child.id();
        // `spawn` returns once the child has begun its exec, which may be before the kernel
        // has laid out its new arguments (its command line reads empty until then): the line
        // it prints says it runs.
        let mut started = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.as_mut().unwrap()),
            &mut started,
        )
        .unwrap();
        assert_eq!(started, "started\n");
        assert!(running(pid));
        assert_eq!(mentioning(&marker), vec![pid]);
        assert_eq!(with_home(home.path()), vec![pid]);
        assert!(children_of(std::process::id()).contains(&pid));
        let process = Process { pid };
        assert_eq!(process.name(), "sh");
        assert_eq!(process.parent(), Some(std::process::id()));
        assert!(process.pss_kb().is_some_and(|kb| kb > 0));
        assert!(process.arguments().contains(&marker));

        drop(child.stdin.take());
        child.wait().unwrap();
        assert!(!running(pid));
        assert!(mentioning(&marker).is_empty());
    }

    #[test]
    fn a_zombie_counts_as_gone() {
        let mut child = Command::new("true").spawn().unwrap();
        let pid = child.id();
        // Wait for it to exit without reaping it (`NOWAIT`): it is then a zombie, which
        // `running` must call gone.
        let exited = rustix::process::waitid(
            rustix::process::WaitId::Pid(
                rustix::process::Pid::from_raw(pid.try_into().unwrap()).unwrap(),
            ),
            rustix::process::WaitIdOptions::EXITED | rustix::process::WaitIdOptions::NOWAIT,
        )
        .unwrap();
        assert!(
            exited.is_some(),
            "waitid without NOHANG returns once `true` has exited"
        );
        assert!(stat_fields(pid).is_some(), "the zombie is still listed");
        assert!(!running(pid));
        child.wait().unwrap();
    }
}
