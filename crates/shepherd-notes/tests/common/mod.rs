//! Shared helpers for the store's integration tests: temp projects, fixed clocks, worker
//! processes and the checks every test repeats (no temp files, notes listed exactly once).

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]
#![allow(dead_code, unreachable_pub)]

use std::collections::HashSet;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use jiff::Timestamp;
use serde_json::Value;
use shepherd_notes::{SessionRef, Store};

/// A fixed instant, `minute` minutes after 2025-08-14T09:00:00Z.
pub fn at(minute: i64) -> Timestamp {
    Timestamp::from_second(1_755_162_000 + minute * 60).unwrap()
}

/// A temp directory holding a `project/` directory.
pub struct Project {
    pub temp: tempfile::TempDir,
    pub root: PathBuf,
}

impl Project {
    pub fn new() -> Self {
        let temp = tempfile::tempdir().unwrap();
        let root = temp.path().join("project");
        std::fs::create_dir(&root).unwrap();
        let root = std::fs::canonicalize(root).unwrap();
        Self { temp, root }
    }

    pub fn store(&self) -> Store {
        Store::open(&self.root).unwrap()
    }

    pub fn sessions_dir(&self) -> PathBuf {
        self.root.join(".shepherd/sessions")
    }

    pub fn session_dir(&self, session: &SessionRef) -> PathBuf {
        self.sessions_dir().join(session.directory_name())
    }

    /// Names of the session directories, sorted.
    pub fn session_dirs(&self) -> Vec<String> {
        let mut names: Vec<String> = match std::fs::read_dir(self.sessions_dir()) {
            Ok(entries) => entries
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .filter(|name| name.as_bytes()[0].is_ascii_digit())
                .collect(),
            Err(_) => Vec::new(),
        };
        names.sort();
        names
    }

    pub fn session_json(&self, session: &SessionRef) -> Value {
        let text = std::fs::read_to_string(self.session_dir(session).join("session.json")).unwrap();
        serde_json::from_str(&text).unwrap()
    }

    pub fn read(&self, session: &SessionRef, file: &str) -> String {
        std::fs::read_to_string(self.session_dir(session).join(file)).unwrap()
    }
}

/// Every entry under `dir`, recursively, whose name marks it as a temp file.
pub fn temp_leftovers(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    for entry in entries {
        let entry = entry.unwrap();
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with(".shepherd-tmp-") || name.contains(".tmp") {
            found.push(entry.path());
        }
        if entry.file_type().unwrap().is_dir() {
            found.extend(temp_leftovers(&entry.path()));
        }
    }
    found
}

/// Checks that session.json lists every note exactly once, that every listed note exists and
/// is linked exactly once from shepherd.md, and that no two notes share an agent ordinal.
/// Returns the number of notes (deleted ones included).
pub fn assert_consistent(project: &Project, session: &SessionRef) -> usize {
    let json = project.session_json(session);
    let artifacts = json["artifacts"].as_array().unwrap();
    let index = project.read(session, "shepherd.md");
    let mut files = HashSet::new();
    let mut ordinals = HashSet::new();
    let mut deleted = 0;
    for artifact in artifacts {
        let file = artifact["fileName"].as_str().unwrap();
        assert!(files.insert(file.to_owned()), "note {file} listed twice");
        let key = (
            artifact["agent"].to_string(),
            artifact["ordinal"].as_u64().unwrap(),
        );
        assert!(ordinals.insert(key.clone()), "ordinal {key:?} given twice");
        if artifact.get("deletedAt").is_some() {
            // A deleted note keeps its record; its file is gone.
            assert!(
                !project.session_dir(session).join(file).exists(),
                "deleted {file} still there"
            );
            deleted += 1;
            continue;
        }
        assert!(
            project.session_dir(session).join(file).is_file(),
            "{file} missing"
        );
        let link = format!("](./{file}) — ");
        assert_eq!(
            index.matches(&link).count(),
            1,
            "{file} not linked once in shepherd.md"
        );
    }
    // The shepherd's note is listed apart from the notes, and linked once at most (the
    // original's rewrite of the index drops the link until Shepherd's next write).
    if json.get("shepherdsNote").is_some() {
        assert!(
            project
                .session_dir(session)
                .join("shepherds-note.md")
                .is_file(),
            "the shepherd's note is missing"
        );
        assert!(
            index.matches("](./shepherds-note.md) — ").count() <= 1,
            "the shepherd's note linked more than once in shepherd.md"
        );
    }
    let on_disk = std::fs::read_dir(project.session_dir(session))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| {
            name.ends_with(".md") && name != "shepherd.md" && name != "shepherds-note.md"
        })
        .count();
    assert_eq!(
        on_disk,
        files.len() - deleted,
        "note files on disk and in session.json differ"
    );
    files.len()
}

/// A running `notes-worker` whose stdout lines arrive on a channel.
pub struct Worker {
    pub child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
}

impl Worker {
    pub fn spawn(args: &[&str]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_notes-worker"))
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (sender, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        Self {
            child,
            stdin,
            lines,
        }
    }

    /// The next line, waiting at most `timeout`; panics on timeout or end of output.
    pub fn expect_line(&self, timeout: Duration) -> String {
        self.lines
            .recv_timeout(timeout)
            .unwrap_or_else(|err| panic!("worker said nothing within {timeout:?}: {err}"))
    }

    /// Waits for a line starting with `prefix`, skipping others.
    pub fn expect_prefix(&self, prefix: &str, timeout: Duration) -> String {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            let line = self.expect_line(left);
            if line.starts_with(prefix) {
                return line;
            }
        }
    }

    /// Every remaining line, after the process exited successfully.
    pub fn finish(mut self) -> Vec<String> {
        drop(self.stdin.take());
        let mut lines = Vec::new();
        loop {
            match self.lines.recv_timeout(EVENT_TIMEOUT) {
                Ok(line) => lines.push(line),
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
                Err(mpsc::RecvTimeoutError::Timeout) => panic!("worker output never ended"),
            }
        }
        let status = self.child.wait().unwrap();
        assert!(status.success(), "worker failed: {status}");
        lines
    }

    pub fn go(&mut self) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(b"go\n").unwrap();
        stdin.flush().unwrap();
    }

    /// SIGKILL, and reap.
    pub fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

/// How long a test waits for a worker event before failing; generous for slow CI disks.
pub const EVENT_TIMEOUT: Duration = Duration::from_secs(60);
