//! Running the real Claude Code, Codex, Gemini CLI and opencode in tests, offline and hermetic.
//!
//! `scripts/setup` installs pinned versions into `.tools/` ([`Host::pinned`]); this module finds
//! them ([`locate`], [`installed_or_skip`], [`agent_tests!`](crate::agent_tests)) and builds,
//! per run, an [`AgentEnv`]: a private temporary HOME (and XDG directories, `CLAUDE_CONFIG_DIR`,
//! `CODEX_HOME`, `GEMINI_CLI_HOME`, opencode's config file) holding the settings that skip
//! first-run dialogs, update checks and telemetry, the model endpoint pointed at a
//! [`FakeLlm`], and the stdio MCP servers given for this run ([`McpServer`]). From it come a
//! headless one-shot [`Command`] (stdin `/dev/null`, machine-readable output, which
//! [`AgentEnv::parse_output`] reads into an [`Outcome`]) and a [`TuiLaunch`] for the
//! interactive program in tmux. Nothing the agent writes lands outside the temporary directory,
//! and its environment is cleared down to a few variables, so the developer's own agent
//! settings and keys never leak in. The per-host modules hold each agent's settings and gotchas.
//!
//! [`AgentEnvBuilder::user_setup`] builds the other kind of world: the agent installed as a
//! user has it, its settings in their default places under HOME and nothing granted, so that a
//! test can apply a user's documented setup (an `mcp add` line, a config block) and run the
//! documented command line as written.

mod claude;
mod codex;
mod gemini;
mod host;
mod opencode;
mod process;
mod tmux;

use std::ffi::OsString;
use std::io;
use std::os::unix::fs::DirBuilderExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::fake_llm::FakeLlm;

pub use host::{AgentBinary, Host, installed_or_skip, locate, with_agent};
pub use process::{RunOutput, run};
pub use tmux::TmuxPane;

/// What can go wrong around an agent.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// The binary is not there.
    #[error(
        "{host} is not installed at {}: run scripts/setup (or set {} to its binary)",
        path.display(), host.env_var()
    )]
    NotInstalled {
        /// Which agent.
        host: Host,
        /// Where it was looked for.
        path: PathBuf,
    },
    /// A file or process operation failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// Why it failed.
        source: io::Error,
    },
    /// A TUI did not show what was awaited in time.
    #[error("timed out after {waited:?} waiting for {what}; the screen:\n{screen}")]
    Screen {
        /// What was awaited.
        what: String,
        /// How long.
        waited: Duration,
        /// What the pane showed last.
        screen: String,
    },
    /// A deadline passed; the agent and its process group were killed.
    #[error("timed out after {waited:?} waiting for {what}; its stderr:\n{stderr}")]
    Timeout {
        /// What was awaited.
        what: String,
        /// How long.
        waited: Duration,
        /// What it wrote on stderr so far.
        stderr: String,
    },
}

pub(crate) fn io_err(what: impl Into<String>) -> impl FnOnce(io::Error) -> AgentError {
    let what = what.into();
    move |source| AgentError::Io { what, source }
}

/// A stdio MCP server to give the agent for one run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServer {
    /// Its name in the agent's configuration; it becomes part of the tool names the model sees
    /// ([`Host::mcp_tool_name`]). Keep it to letters, digits and `_`.
    pub name: String,
    /// The program.
    pub command: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// Variables set for it (on top of what the agent passes down).
    pub env: Vec<(String, String)>,
}

impl McpServer {
    /// A server `name` run as `command` with no arguments.
    #[must_use]
    pub fn new(name: impl Into<String>, command: impl Into<PathBuf>) -> Self {
        Self {
            name: name.into(),
            command: command.into(),
            args: Vec::new(),
            env: Vec::new(),
        }
    }

    /// Adds arguments.
    #[must_use]
    pub fn args<S: Into<String>>(mut self, args: impl IntoIterator<Item = S>) -> Self {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Sets a variable for the server.
    #[must_use]
    pub fn env(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.push((name.into(), value.into()));
        self
    }

    fn command_text(&self) -> String {
        self.command.to_string_lossy().into_owned()
    }
}

/// Variables kept from the test's own environment; everything else is cleared.
pub const KEPT_VARS: &[&str] = &[
    "PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "USER", "LOGNAME", "SHELL",
];

/// Builds an [`AgentEnv`].
#[derive(Debug)]
pub struct AgentEnvBuilder {
    host: Host,
    base_url: String,
    model: Option<String>,
    mcp: Vec<McpServer>,
    user_setup: bool,
    extra: Vec<(String, OsString)>,
}

impl AgentEnvBuilder {
    /// The model id the agent asks for (default [`Host::default_model`]); it picks the fake
    /// server's queue.
    #[must_use]
    pub fn model(mut self, id: impl Into<String>) -> Self {
        self.model = Some(id.into());
        self
    }

    /// Gives the agent a stdio MCP server for this run.
    #[must_use]
    pub fn mcp_server(mut self, server: McpServer) -> Self {
        self.mcp.push(server);
        self
    }

    /// Sets up the agent as a user's own installation rather than a test run's: its settings
    /// in their default places under HOME (`~/.claude.json` and `~/.claude/`, `~/.codex/`,
    /// `~/.gemini/`, `~/.config/opencode/`; no `CLAUDE_CONFIG_DIR`, `CODEX_HOME`,
    /// `GEMINI_CLI_HOME` or `OPENCODE_CONFIG`), holding only the model endpoint and what a user
    /// has answered once (onboarding; Codex's trusted project). Nothing is granted: no
    /// allowed tools, approval mode, trusted workspace, shell permission or MCP connection
    /// wait. A test then applies the documented setup itself and runs the agent's documented
    /// command line (not [`AgentEnv::headless`], whose flags grant what this leaves out).
    #[must_use]
    pub fn user_setup(mut self) -> Self {
        self.user_setup = true;
        self
    }

    /// Sets a variable in the agent's environment, as the user's shell would (a provider key).
    #[must_use]
    pub fn var(mut self, name: impl Into<String>, value: impl Into<OsString>) -> Self {
        self.extra.push((name.into(), value.into()));
        self
    }

    /// Creates the directories and writes the agent's settings.
    ///
    /// # Errors
    /// When the temporary directory or a file cannot be written.
    pub fn build(self) -> Result<AgentEnv, AgentError> {
        // `SHEPHERD_KEEP_TEST_DIRS=1` keeps the directory (settings, sessions, logs).
        let keep = std::env::var_os("SHEPHERD_KEEP_TEST_DIRS").is_some_and(|v| v == "1");
        let root = tempfile::Builder::new()
            .prefix(&format!("shepherd-{}-", self.host.wrapper()))
            .disable_cleanup(keep)
            .tempdir()
            .map_err(io_err("creating a temporary directory"))?;
        let base = root.path().to_owned();
        let env = AgentEnv {
            host: self.host,
            home: base.join("home"),
            work_dir: base.join("work"),
            tmp_dir: base.join("tmp"),
            root,
            base_url: self.base_url,
            model: self
                .model
                .unwrap_or_else(|| self.host.default_model().to_owned()),
            mcp: self.mcp,
            user_setup: self.user_setup,
            extra: self.extra,
        };
        for dir in [&env.home, &env.work_dir, &env.tmp_dir] {
            std::fs::create_dir_all(dir).map_err(io_err(format!("creating {}", dir.display())))?;
        }
        // The user's private runtime directory, as a login session has one.
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(env.runtime_dir())
            .map_err(io_err("creating the runtime directory"))?;
        match env.host {
            Host::ClaudeCode => claude::configure(&env)?,
            Host::Codex => codex::configure(&env)?,
            Host::Gemini => gemini::configure(&env)?,
            Host::Opencode => opencode::configure(&env)?,
        }
        Ok(env)
    }
}

/// One hermetic run's world: a temporary directory with HOME, a working directory, TMPDIR and
/// the agent's settings pointed at the fake model. Removed when dropped (unless
/// `SHEPHERD_KEEP_TEST_DIRS=1`).
#[derive(Debug)]
pub struct AgentEnv {
    host: Host,
    root: tempfile::TempDir,
    home: PathBuf,
    work_dir: PathBuf,
    tmp_dir: PathBuf,
    base_url: String,
    model: String,
    mcp: Vec<McpServer>,
    user_setup: bool,
    extra: Vec<(String, OsString)>,
}

impl AgentEnv {
    /// Starts a builder for `host` talking to `fake`.
    #[must_use]
    pub fn builder(host: Host, fake: &FakeLlm) -> AgentEnvBuilder {
        Self::builder_with_url(host, &fake.url())
    }

    /// Starts a builder for `host` talking to the model server at `base_url`
    /// (`http://host:port`, without `/v1`), e.g. a `shepherd-fake-llm` process.
    #[must_use]
    pub fn builder_with_url(host: Host, base_url: &str) -> AgentEnvBuilder {
        AgentEnvBuilder {
            host,
            base_url: base_url.trim_end_matches('/').to_owned(),
            model: None,
            mcp: Vec::new(),
            user_setup: false,
            extra: Vec::new(),
        }
    }

    /// Which agent.
    #[must_use]
    pub fn host(&self) -> Host {
        self.host
    }

    /// The temporary directory holding everything.
    #[must_use]
    pub fn root(&self) -> &Path {
        self.root.path()
    }

    /// `HOME` (and the XDG directories under it).
    #[must_use]
    pub fn home(&self) -> &Path {
        &self.home
    }

    /// The working directory the agent runs in.
    #[must_use]
    pub fn work_dir(&self) -> &Path {
        &self.work_dir
    }

    /// The user's private runtime directory, made for every run and given as `XDG_RUNTIME_DIR`
    /// to a user's own installation ([`AgentEnvBuilder::user_setup`]): where the sockets of a
    /// herd the user's own `shepherd` reaches are.
    #[must_use]
    pub fn runtime_dir(&self) -> PathBuf {
        self.root.path().join("run")
    }

    /// Whether this is a user's own installation ([`AgentEnvBuilder::user_setup`]).
    #[must_use]
    pub fn is_user_setup(&self) -> bool {
        self.user_setup
    }

    /// The model id the agent asks for.
    #[must_use]
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The MCP servers given for this run.
    #[must_use]
    pub fn mcp_servers(&self) -> &[McpServer] {
        &self.mcp
    }

    /// The fake server's base URL (`http://127.0.0.1:<port>`).
    #[must_use]
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The name the model sees for `tool` of this run's MCP server `server`.
    #[must_use]
    pub fn mcp_tool_name(&self, server: &str, tool: &str) -> String {
        self.host.mcp_tool_name(server, tool)
    }

    /// Every variable the agent gets (the kept ones come from [`KEPT_VARS`] on top).
    #[must_use]
    pub fn vars(&self) -> Vec<(String, OsString)> {
        let home = &self.home;
        let mut vars: Vec<(String, OsString)> = vec![
            ("HOME".into(), home.clone().into()),
            ("XDG_CONFIG_HOME".into(), home.join(".config").into()),
            ("XDG_CACHE_HOME".into(), home.join(".cache").into()),
            ("XDG_DATA_HOME".into(), home.join(".local/share").into()),
            ("XDG_STATE_HOME".into(), home.join(".local/state").into()),
            ("TMPDIR".into(), self.tmp_dir.clone().into()),
            ("NO_COLOR".into(), "1".into()),
        ];
        if self.user_setup {
            // A user's shell, in a login session.
            vars.push(("XDG_RUNTIME_DIR".into(), self.runtime_dir().into()));
        }
        vars.extend(match self.host {
            Host::ClaudeCode => claude::vars(self),
            Host::Codex => codex::vars(self),
            Host::Gemini => gemini::vars(self),
            Host::Opencode => opencode::vars(self),
        });
        for (name, value) in &self.extra {
            vars.retain(|(kept, _)| kept != name);
            vars.push((name.clone(), value.clone()));
        }
        vars
    }

    /// Clears the command's environment down to [`KEPT_VARS`], sets [`vars`](Self::vars) and
    /// runs it in the working directory.
    pub fn apply<'c>(&self, command: &'c mut Command) -> &'c mut Command {
        command.env_clear();
        for name in KEPT_VARS {
            if let Some(value) = std::env::var_os(name) {
                command.env(name, value);
            }
        }
        command.envs(self.vars()).current_dir(&self.work_dir)
    }

    /// The agent's one-shot non-interactive mode for `prompt`, with machine-readable output on
    /// stdout (read it with [`parse_output`](Self::parse_output)) and stdin from `/dev/null`:
    /// Codex and opencode wait for an open stdin to end.
    #[must_use]
    pub fn headless(&self, binary: &AgentBinary, prompt: &str) -> Command {
        let mut command = Command::new(&binary.path);
        self.apply(&mut command)
            .args(match self.host {
                Host::ClaudeCode => claude::headless_args(self, prompt),
                Host::Codex => codex::headless_args(self, prompt),
                Host::Gemini => gemini::headless_args(self, prompt),
                Host::Opencode => opencode::headless_args(self, prompt),
            })
            .stdin(Stdio::null());
        command
    }

    /// What it takes to start the interactive agent in a terminal (a tmux pane): the program,
    /// its arguments, the whole environment, the directory. The settings already answer the
    /// first-run dialogs (onboarding, key approval, folder trust).
    #[must_use]
    pub fn tui(&self, binary: &AgentBinary) -> TuiLaunch {
        let mut env: Vec<(String, OsString)> = KEPT_VARS
            .iter()
            .filter_map(|name| std::env::var_os(name).map(|value| ((*name).to_owned(), value)))
            .collect();
        env.extend(self.vars());
        TuiLaunch {
            program: binary.path.clone(),
            args: match self.host {
                Host::ClaudeCode => claude::tui_args(self),
                Host::Codex => codex::tui_args(),
                Host::Gemini => gemini::tui_args(self),
                Host::Opencode => Vec::new(),
            },
            env,
            cwd: self.work_dir.clone(),
        }
    }

    /// Reads a headless run's stdout (see [`headless`](Self::headless)).
    #[must_use]
    pub fn parse_output(&self, stdout: &str) -> Outcome {
        let events: Vec<Value> = stdout
            .lines()
            .filter_map(|line| serde_json::from_str(line.trim()).ok())
            .collect();
        match self.host {
            Host::ClaudeCode => claude::outcome(&events),
            Host::Codex => codex::outcome(&events, self),
            Host::Gemini => gemini::outcome(&events),
            Host::Opencode => opencode::outcome(&events),
        }
    }

    /// Every live process started for this environment (its `HOME` is this one's): the agent,
    /// its MCP servers, shells, daemons it left behind. Zombies are not counted.
    #[must_use]
    pub fn processes(&self) -> Vec<u32> {
        let mut needle = b"HOME=".to_vec();
        needle.extend(self.home.as_os_str().as_encoded_bytes());
        needle.push(0);
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        let mut found: Vec<u32> = entries
            .flatten()
            .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
            .filter(|pid| {
                let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else {
                    return false;
                };
                // Each variable ends with a NUL; the first one has none before it.
                let mut padded = vec![0];
                padded.extend(environ);
                padded
                    .windows(needle.len() + 1)
                    .any(|w| w[0] == 0 && w[1..] == needle[..])
                    && !shepherd_term::process::is_zombie(*pid)
            })
            .collect();
        found.sort_unstable();
        found
    }

    /// Waits until every process of [`processes`](Self::processes) is gone (each wait is an
    /// event with a deadline); kills what is still there at `deadline`. Returns the processes
    /// that had to be killed, with their command lines.
    #[must_use]
    pub fn reap_processes(&self, timeout: Duration) -> Vec<(u32, String)> {
        let deadline = std::time::Instant::now() + timeout;
        let mut stragglers = Vec::new();
        for pid in self.processes() {
            if !shepherd_term::process::wait_gone(pid, deadline) {
                let cmdline = std::fs::read(format!("/proc/{pid}/cmdline"))
                    .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
                    .unwrap_or_default();
                shepherd_term::process::signal_process(pid, rustix::process::Signal::KILL);
                stragglers.push((pid, cmdline.trim().to_owned()));
            }
        }
        stragglers
    }

    /// Writes a file under the root (settings the agent reads).
    fn write(&self, path: &Path, text: &str) -> Result<(), AgentError> {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(io_err(format!("creating {}", parent.display())))?;
        }
        std::fs::write(path, text).map_err(io_err(format!("writing {}", path.display())))
    }
}

/// What a headless run reported on stdout, whatever the agent.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Outcome {
    /// The agent's last words: its final assistant text.
    pub final_text: Option<String>,
    /// The error it reported (a provider error, a failed turn).
    pub error: Option<String>,
    /// Its session (thread) id, for resuming.
    pub session_id: Option<String>,
    /// The model it named, when it names one.
    pub model: Option<String>,
    /// Input tokens over the run, when reported.
    pub input_tokens: Option<u64>,
    /// Output tokens over the run, when reported.
    pub output_tokens: Option<u64>,
    /// Cost in US dollars, when the agent computes one (Claude Code, opencode).
    pub cost_usd: Option<f64>,
    /// Every stdout line that parsed as JSON, in order.
    pub events: Vec<Value>,
}

/// What a TUI launch needs: start `program` with `args` in `cwd` with exactly `env`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TuiLaunch {
    /// The program.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// The whole environment (the terminal's `TERM` comes on top).
    pub env: Vec<(String, OsString)>,
    /// The working directory.
    pub cwd: PathBuf,
}

impl TuiLaunch {
    /// The program and its arguments.
    #[must_use]
    pub fn argv(&self) -> Vec<OsString> {
        let mut argv = vec![self.program.clone().into_os_string()];
        argv.extend(self.args.iter().cloned());
        argv
    }

    /// One `sh` command line that starts it with exactly this environment plus the pane's
    /// `TERM`: `cd DIR && exec env -i TERM=… K=V … PROGRAM ARGS`. For `tmux new-window`.
    #[must_use]
    pub fn shell_command(&self) -> String {
        let mut out = format!(
            "cd {} && exec env -i TERM=\"${{TERM:-xterm-256color}}\"",
            quote(self.cwd.as_os_str())
        );
        for (name, value) in &self.env {
            let mut pair = OsString::from(format!("{name}="));
            pair.push(value);
            out.push(' ');
            out.push_str(&quote(&pair));
        }
        for arg in self.argv() {
            out.push(' ');
            out.push_str(&quote(&arg));
        }
        out
    }
}

/// `text` in single quotes for `sh`.
fn quote(text: &std::ffi::OsStr) -> String {
    format!("'{}'", text.to_string_lossy().replace('\'', r"'\''"))
}

/// The fake API key every agent is given (opencode and Codex send it as a bearer token, Gemini
/// CLI as `x-goog-api-key`).
pub const API_KEY: &str = "fake-key";
