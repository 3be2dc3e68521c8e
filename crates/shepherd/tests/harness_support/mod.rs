//! A world for sheep on other coding agents: the real agent, configured the way its user would
//! have it (the test kit's hermetic settings in a private HOME, pointed at the fake model), a
//! project, and the `shepherd` CLI run in that environment.

#![allow(dead_code, unreachable_pub)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::Value;
use shepherd_testkit::agents::{AgentBinary, AgentEnv};
use shepherd_testkit::fake_llm::FakeLlm;

pub const SHEPHERD: &str = env!("CARGO_BIN_EXE_shepherd");

/// One project whose user has `agent` installed and configured.
pub struct World {
    pub env: AgentEnv,
    pub agent: AgentBinary,
    runtime: PathBuf,
}

impl World {
    pub fn new(agent: &AgentBinary, fake: &FakeLlm) -> Self {
        let env = AgentEnv::builder(agent.host, fake).build().unwrap();
        let runtime = env.root().join("run");
        std::fs::create_dir_all(&runtime).unwrap();
        Self {
            env,
            agent: agent.clone(),
            runtime,
        }
    }

    pub fn project(&self) -> &Path {
        self.env.work_dir()
    }

    /// A `shepherd` command in this world: the user's environment, the agent found where the
    /// test kit installed it.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(SHEPHERD);
        self.env.apply(&mut command);
        command
            .args(args)
            .env("XDG_RUNTIME_DIR", &self.runtime)
            .env(self.agent.host.env_var(), &self.agent.path)
            .stdin(Stdio::null());
        command
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    /// Runs a command that prints one JSON document and must succeed.
    pub fn json(&self, args: &[&str]) -> Value {
        let output = self.run(args);
        assert!(
            output.status.success(),
            "shepherd {args:?}: {}\nstdout: {}\nstderr: {}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        serde_json::from_slice(&output.stdout).unwrap_or_else(|err| {
            panic!(
                "shepherd {args:?} printed no JSON ({err}): {}",
                String::from_utf8_lossy(&output.stdout)
            )
        })
    }

    /// The single fieldnotes session's directory.
    pub fn session(&self) -> PathBuf {
        let sessions = self.project().join(".shepherd/sessions");
        std::fs::read_dir(&sessions)
            .unwrap_or_else(|e| panic!("{}: {e}", sessions.display()))
            .flatten()
            .map(|e| e.path())
            .find(|p| p.is_dir() && !p.file_name().unwrap().to_string_lossy().starts_with('.'))
            .unwrap_or_else(|| panic!("no session in {}", sessions.display()))
    }

    /// The text of the note whose file name starts with `prefix`.
    pub fn note(&self, prefix: &str) -> String {
        let session = self.session();
        let note = std::fs::read_dir(&session)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .find(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with(prefix))
            })
            .unwrap_or_else(|| panic!("no {prefix} note in {}", session.display()));
        std::fs::read_to_string(note).unwrap()
    }

    /// Stops the broker (closing every sheep) and checks that nothing started in this world is
    /// left running.
    pub fn stop_and_check_nothing_left(&self) {
        let stopped = self.run(&["broker", "stop"]);
        assert!(
            stopped.status.success(),
            "broker stop: {}",
            String::from_utf8_lossy(&stopped.stderr)
        );
        let left = self.env.reap_processes(Duration::from_secs(30));
        assert!(left.is_empty(), "left running: {left:?}");
    }
}

impl Drop for World {
    fn drop(&mut self) {
        let _stopped = self.run(&["broker", "stop"]);
    }
}

/// A metadata value of a note's frontmatter (`key: value` lines), as written.
pub fn field<'a>(note: &'a str, key: &str) -> Option<&'a str> {
    let front = note.strip_prefix("---\n")?.split("\n---").next()?;
    front.lines().find_map(|line| {
        line.strip_prefix(key)
            .and_then(|rest| rest.strip_prefix(':'))
            .map(|v| v.trim().trim_matches('"'))
    })
}
