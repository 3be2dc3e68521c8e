//! A private Shepherd world for one test: its own HOME, runtime directory and project, agent
//! definitions that run the scripted test sheep, and helpers to run the real `shepherd` binary
//! in it. Dropping it stops the test's broker, which closes every sheep it left.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]
#![allow(dead_code, unreachable_pub)]

use shepherd_testkit::procs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::Value;

pub struct World {
    pub dir: tempfile::TempDir,
    pub home: PathBuf,
    pub runtime: PathBuf,
    pub project: PathBuf,
    pub extra_env: Vec<(String, String)>,
    pub tmux_dir: Option<PathBuf>,
}

pub fn shepherd_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_shepherd"))
}

/// The scripted test sheep, built beside `shepherd` by the workspace build (`cargo nextest run
/// --workspace` builds it; a partial build may leave it missing or stale, which is refused).
pub fn test_sheep_bin() -> PathBuf {
    let path = shepherd_bin().with_file_name("shepherd-test-sheep");
    let hint = "build it with `cargo build -p shepherd-testkit` (the workspace test run does)";
    let built = std::fs::metadata(&path)
        .and_then(|m| m.modified())
        .unwrap_or_else(|_| panic!("{} is missing: {hint}", path.display()));
    let testkit = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shepherd-testkit/src");
    let newest = ["bin/test_sheep.rs", "script.rs"]
        .iter()
        .map(|file| {
            std::fs::metadata(testkit.join(file))
                .and_then(|m| m.modified())
                .unwrap()
        })
        .max()
        .unwrap();
    assert!(
        newest <= built,
        "{} is older than its sources: {hint}",
        path.display()
    );
    path
}

impl World {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let runtime = dir.path().join("run");
        let project = dir.path().join("project");
        for d in [&home, &runtime, &project] {
            std::fs::create_dir_all(d).unwrap();
        }
        let project = project.canonicalize().unwrap();
        Self {
            dir,
            home,
            runtime,
            project,
            extra_env: Vec::new(),
            tmux_dir: None,
        }
    }

    /// Writes a user agent definition that runs `argv`.
    pub fn define(&self, name: &str, argv: &[String]) {
        let dir = self.home.join(".pi/agent/agents");
        std::fs::create_dir_all(&dir).unwrap();
        let command = serde_json::to_string(argv).unwrap();
        let text = format!(
            "---\nname: {name}\ndescription: Test sheep {name}.\ncommand: {command}\n---\nA test sheep.\n"
        );
        std::fs::write(dir.join(format!("{name}.md")), text).unwrap();
    }

    /// Writes a user agent definition file as it is.
    pub fn define_file(&self, name: &str, text: &str) {
        let dir = self.home.join(".pi/agent/agents");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("{name}.md")), text).unwrap();
    }

    /// Defines an agent that runs the test sheep with `on_task` (and answers questions with
    /// `answer` when given).
    pub fn define_test_sheep(&self, name: &str, on_task: &str, answer: Option<&str>) {
        let mut argv = vec![
            test_sheep_bin().display().to_string(),
            "--on-task".into(),
            on_task.into(),
        ];
        if let Some(answer) = answer {
            argv.push("--on-question".into());
            argv.push(format!("reply {answer}"));
        }
        self.define(name, &argv);
    }

    /// Writes the user settings file.
    pub fn settings(&self, json: &str) {
        let dir = self.home.join(".pi/agent/pi-shepherd");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("config.json"), json).unwrap();
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(shepherd_bin());
        cmd.args(args)
            .current_dir(&self.project)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &self.home)
            .env("XDG_RUNTIME_DIR", &self.runtime);
        for (k, v) in &self.extra_env {
            cmd.env(k, v);
        }
        cmd
    }

    /// Gives this world a private tmux server (its own `TMUX_TMPDIR`), for the tmux backend.
    pub fn with_private_tmux(mut self) -> Self {
        let dir = self.dir.path().join("tmux");
        std::fs::create_dir_all(&dir).unwrap();
        self.extra_env
            .push(("TMUX_TMPDIR".into(), dir.display().to_string()));
        self.tmux_dir = Some(dir);
        self
    }

    /// Runs tmux against this world's private server.
    pub fn tmux(&self, args: &[&str]) -> String {
        let dir = self.tmux_dir.as_ref().expect("with_private_tmux first");
        let out = Command::new("tmux")
            .args(args)
            .env_remove("TMUX")
            .env("TMUX_TMPDIR", dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    /// Runs with `--json` and returns the document, asserting success.
    pub fn json(&self, args: &[&str]) -> Value {
        let mut all = args.to_vec();
        all.push("--json");
        let output = self.run(&all);
        assert!(
            output.status.success(),
            "shepherd {args:?} failed ({}):\n{}\n{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        parse_one_line(&output.stdout)
    }

    /// Runs with `--json` whatever the exit status; returns (exit code, document).
    pub fn json_status(&self, args: &[&str]) -> (i32, Value) {
        let mut all = args.to_vec();
        all.push("--json");
        let output = self.run(&all);
        (
            output.status.code().unwrap_or(-1),
            parse_one_line(&output.stdout),
        )
    }

    /// Runs with `--json`, expecting failure; returns (exit code, error code, message).
    pub fn error(&self, args: &[&str]) -> (i32, String, String) {
        let mut all = args.to_vec();
        all.push("--json");
        let output = self.run(&all);
        assert!(
            !output.status.success(),
            "shepherd {args:?} unexpectedly succeeded: {}",
            String::from_utf8_lossy(&output.stdout)
        );
        let doc = parse_one_line(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        let lines: Vec<&str> = stderr.lines().collect();
        let hinted = lines.len() == 2 && lines[1].starts_with("hint: ");
        assert!(
            lines.len() == 1 || hinted,
            "one human line on stderr (and at most a hint: line), got: {stderr}"
        );
        if hinted {
            let code = doc["error"]["code"].as_str().unwrap_or_default();
            assert_eq!(
                doc["error"]["hint"].as_str(),
                lines[1].strip_prefix("hint: "),
                "the JSON error carries the same hint for {code}"
            );
        }
        (
            output.status.code().unwrap_or(-1),
            doc["error"]["code"].as_str().unwrap().to_owned(),
            doc["error"]["message"].as_str().unwrap().to_owned(),
        )
    }

    pub fn spawn(&self, agent: &str, label: &str) -> String {
        let mut args = vec!["spawn", agent];
        if !label.is_empty() {
            args.extend(["--label", label]);
        }
        self.json(&args)["agentId"].as_str().unwrap().to_owned()
    }

    pub fn delegate(&self, agent_id: &str, task: &str) -> Value {
        self.json(&["delegate", agent_id, task])
    }

    /// The broker's pid, from `broker status` (which exits 3 when none runs).
    pub fn broker_pid(&self) -> Option<u32> {
        let (code, status) = self.json_status(&["broker", "status"]);
        assert!(
            matches!(code, 0 | 3),
            "broker status exited {code}: {status}"
        );
        status["status"]["pid"].as_u64().map(|p| p as u32)
    }

    pub fn state_dir(&self) -> PathBuf {
        self.home.join(".local/state/shepherd")
    }
}

impl Drop for World {
    fn drop(&mut self) {
        let _stopped = self.command(&["broker", "stop"]).output();
        if let Some(dir) = &self.tmux_dir {
            let _killed = Command::new("tmux")
                .arg("kill-server")
                .env_remove("TMUX")
                .env("TMUX_TMPDIR", dir)
                .output();
        }
    }
}

pub fn parse_one_line(stdout: &[u8]) -> Value {
    let text = String::from_utf8_lossy(stdout);
    assert_eq!(
        text.trim_end().lines().count(),
        1,
        "exactly one JSON line expected, got:\n{text}"
    );
    serde_json::from_str(text.trim()).unwrap()
}

/// Waits (with a deadline, on an event) for a process to end.
pub fn wait_gone(pid: u32, within: Duration) -> bool {
    shepherd_term::process::wait_gone(pid, Instant::now() + within) || !procs::running(pid)
}

pub fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Kills `pid` with SIGKILL and waits (up to 10 s, on an event) until it is gone.
pub fn kill9(pid: u32) {
    let status = Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success(), "kill -9 {pid}");
    assert!(
        wait_gone(pid, Duration::from_secs(10)),
        "process {pid} survived SIGKILL"
    );
}

impl World {
    /// The pid of the broker answering now, without starting one (`broker status` never does).
    pub fn running_broker(&self) -> Option<u32> {
        let output = self.run(&["broker", "status", "--json"]);
        let doc: Value = serde_json::from_slice(&output.stdout).ok()?;
        doc["status"]["pid"].as_u64().map(|p| p as u32)
    }

    /// Waits (up to `within`) until a broker other than `old` answers, and returns its pid.
    /// Nothing here starts one: it must come back by itself.
    pub fn await_new_broker(&self, old: u32, within: Duration) -> u32 {
        let deadline = Instant::now() + within;
        loop {
            if let Some(pid) = self.running_broker().filter(|pid| *pid != old) {
                return pid;
            }
            assert!(
                Instant::now() < deadline,
                "no broker came back within {within:?}"
            );
            // `broker status` is one short round trip; asking again is the event we wait for.
            std::thread::yield_now();
        }
    }

    /// Makes a named pipe in the world's directory: a sheep reading it blocks until the test
    /// writes a line, so the test decides exactly when the sheep goes on.
    pub fn fifo(&self, name: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        let status = Command::new("mkfifo").arg(&path).status().unwrap();
        assert!(status.success());
        path
    }
}

/// Writes one line into a named pipe (blocks until its reader opens it).
pub fn release(fifo: &Path) {
    std::fs::write(fifo, "go\n").unwrap();
}

/// A `shepherd run` in the background whose plain progress lines arrive on a channel.
pub struct Background {
    pub child: std::process::Child,
    lines: std::sync::mpsc::Receiver<String>,
    pub seen: Vec<String>,
}

impl Background {
    pub fn start(world: &World, args: &[&str]) -> Self {
        let mut all = vec!["run"];
        all.extend_from_slice(args);
        all.extend(["--json", "--progress", "plain"]);
        let mut child = world
            .command(&all)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in
                std::io::BufRead::lines(std::io::BufReader::new(stderr)).map_while(Result::ok)
            {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Self {
            child,
            lines,
            seen: Vec::new(),
        }
    }

    /// Waits (up to 30 s) for a progress line starting with `prefix`.
    pub fn wait_for(&mut self, prefix: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !self.seen.iter().any(|line| line.starts_with(prefix)) {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => self.seen.push(line),
                Err(_) => panic!(
                    "no `{prefix}` within 30 s; progress so far: {:?}",
                    self.seen
                ),
            }
        }
        self.seen
            .iter()
            .find(|line| line.starts_with(prefix))
            .cloned()
            .unwrap_or_default()
    }

    /// Kills the command outright (SIGKILL), as a crash would, and reaps it.
    pub fn kill9(mut self) {
        let _killed = self.child.kill();
        let _reaped = self.child.wait();
    }

    /// Waits (up to 60 s) for the command to end by itself; returns (status, document).
    pub fn finish(self) -> (i32, Value) {
        let pid = self.child.id();
        assert!(
            wait_gone(pid, Duration::from_secs(60)),
            "shepherd run did not end within 60 s"
        );
        let output = self.child.wait_with_output().unwrap();
        (
            output.status.code().unwrap_or(-1),
            parse_one_line(&output.stdout),
        )
    }

    /// Sends `signal` and waits (up to 60 s) for the command to end; returns (status, document).
    pub fn signal_and_finish(self, signal: rustix::process::Signal) -> (i32, Value) {
        let pid = self.child.id();
        rustix::process::kill_process(
            rustix::process::Pid::from_raw(pid.cast_signed()).unwrap(),
            signal,
        )
        .unwrap();
        assert!(
            wait_gone(pid, Duration::from_secs(60)),
            "shepherd run did not end within 60 s of {signal:?}"
        );
        let output = self.child.wait_with_output().unwrap();
        (
            output.status.code().unwrap_or(-1),
            parse_one_line(&output.stdout),
        )
    }
}
