//! A world for sheep on other coding agents: the real agent, configured the way its user would
//! have it (the test kit's hermetic settings in a private HOME, pointed at the fake model), a
//! project, and the `shepherd` CLI run in that environment.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]
#![allow(dead_code, unreachable_pub)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Output, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use shepherd_testkit::agents::{AgentBinary, AgentEnv, Host};
use shepherd_testkit::fake_llm::{Exhausted, FakeLlm, Script, Step};

pub const SHEPHERD: &str = env!("CARGO_BIN_EXE_shepherd");

/// What the sheep's model says once the task is done.
pub const FINAL_WORDS: &str = "Wrote hello into out.txt and reported it.";
/// The sheep's answer to the parent's question.
pub const REPLY: &str = "pong from the sheep";

/// The name `--harness` takes for an agent.
pub fn harness(host: Host) -> &'static str {
    match host {
        Host::ClaudeCode => "claude-code",
        Host::Codex => "codex",
        Host::Gemini => "gemini",
        Host::Opencode => "opencode",
    }
}

/// A script of `responses` for the sheep's model; a request without tools (a title) gets a
/// title, and a request past the end a text saying so.
pub fn scripted(responses: impl IntoIterator<Item = Step>) -> Script {
    Script::new()
        .with_responses(responses)
        .with_toolless(Step::text("Fake title"))
        .with_exhausted(Exhausted::Step(Box::new(Step::text(
            "fake-llm: the script is finished",
        ))))
}

/// The sheep's model: a shell call, done, final words; then, asked, a reply.
pub fn sheep_script() -> Script {
    scripted([
        Step::shell("printf hello > out.txt"),
        Step::tool_call_suffix(
            "shepherd_done",
            json!({"status": "completed", "summary": "wrote out.txt"}),
        ),
        Step::text(FINAL_WORDS).expecting("completed"),
        Step::tool_call_suffix(
            "shepherd_message",
            json!({"target": "shepherd", "message": REPLY, "replyTo": "{{message}}"}),
        )
        .filling("{{message}}", "shepherd-message-"),
        Step::text("Answered.").expecting("accepted for asynchronous delivery"),
    ])
}

/// One project whose user has `agent` installed and configured.
pub struct World {
    pub env: AgentEnv,
    pub agent: AgentBinary,
    runtime: PathBuf,
    /// The private tmux server's directory (`TMUX_TMPDIR`): a tmux sheep runs there.
    tmux_dir: PathBuf,
    /// Variables on top of the user's (a terminal's, e.g. Herdr's pane variables).
    pub extra_env: Vec<(String, String)>,
}

impl World {
    pub fn new(agent: &AgentBinary, fake: &FakeLlm) -> Self {
        let env = AgentEnv::builder(agent.host, fake).build().unwrap();
        let runtime = env.root().join("run");
        let tmux_dir = env.root().join("tmux");
        for dir in [&runtime, &tmux_dir] {
            std::fs::create_dir_all(dir).unwrap();
        }
        Self {
            env,
            agent: agent.clone(),
            runtime,
            tmux_dir,
            extra_env: Vec::new(),
        }
    }

    /// Spawns the bundled `worker` on this world's agent, on `backend`; returns its id.
    pub fn spawn_worker(&self, backend: &str, label: Option<&str>) -> String {
        let mut args = vec![
            "spawn",
            "worker",
            "--harness",
            harness(self.agent.host),
            "--backend",
            backend,
            "--json",
        ];
        if let Some(label) = label {
            args.extend(["--label", label]);
        }
        self.json(&args)["agentId"]
            .as_str()
            .expect("spawn returns an id")
            .to_owned()
    }

    /// Delegates `task` to `id` (with `extra` options); returns the task id.
    pub fn delegate(&self, id: &str, task: &str, extra: &[&str]) -> String {
        let mut args = vec!["delegate", id, task, "--json"];
        args.extend_from_slice(extra);
        self.json(&args)["taskId"]
            .as_str()
            .expect("delegate returns a task id")
            .to_owned()
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
            .env("TMUX_TMPDIR", &self.tmux_dir)
            .env_remove("TMUX")
            .env_remove("TMUX_PANE")
            .envs(self.extra_env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null());
        command
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    /// Runs `shepherd run --plan - --json` with `plan` on its stdin, the user having `second`
    /// installed and configured too (`second_env`'s own variables on top of this world's);
    /// returns the run's exit status and its report.
    pub fn run_plan(
        &self,
        plan: &str,
        second: &AgentBinary,
        second_env: &AgentEnv,
    ) -> (ExitStatus, Value) {
        let (status, report, _) = self.run_plan_with_progress(plan, second, second_env);
        (status, report)
    }

    /// [`World::run_plan`], with the progress lines it wrote (plain: stderr is a pipe).
    pub fn run_plan_with_progress(
        &self,
        plan: &str,
        second: &AgentBinary,
        second_env: &AgentEnv,
    ) -> (ExitStatus, Value, String) {
        let common = ["HOME", "TMPDIR", "NO_COLOR"];
        let second_vars: Vec<_> = second_env
            .vars()
            .into_iter()
            .filter(|(name, _)| !common.contains(&name.as_str()) && !name.starts_with("XDG_"))
            .collect();
        let mut command = self.command(&["run", "--plan", "-", "--json"]);
        command
            .envs(second_vars)
            .env(second.host.env_var(), &second.path)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn().unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(plan.as_bytes())
            .unwrap();
        let output = child.wait_with_output().unwrap();
        let report = serde_json::from_slice(&output.stdout).unwrap_or_else(|err| {
            panic!(
                "run printed no JSON ({err}): {}\nstderr: {}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            )
        });
        (
            output.status,
            report,
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
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

    /// Runs tmux against the world's private server.
    pub fn tmux(&self, args: &[&str]) -> Output {
        Command::new("tmux")
            .args(args)
            .env_remove("TMUX")
            .env("TMUX_TMPDIR", &self.tmux_dir)
            .output()
            .unwrap()
    }

    /// Ends the world's private tmux server (a tmux sheep's session holds a shell of its own).
    pub fn kill_tmux(&self) {
        let _killed = Command::new("tmux")
            .arg("kill-server")
            .env_remove("TMUX")
            .env("TMUX_TMPDIR", &self.tmux_dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
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
        self.kill_tmux();
        let left = self.env.reap_processes(Duration::from_secs(30));
        assert!(left.is_empty(), "left running: {left:?}");
    }
}

impl Drop for World {
    fn drop(&mut self) {
        let _stopped = self.run(&["broker", "stop"]);
        self.kill_tmux();
    }
}

/// Fails when the fake model saw a request the script did not expect.
pub fn assert_no_mismatches(fake: &FakeLlm, host: Host) {
    assert!(
        fake.mismatches().is_empty(),
        "{host}: {:#?}",
        fake.mismatches()
    );
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
