//! An agent's TUI in a pane of a private tmux server, for tests of visible agents: start a
//! [`TuiLaunch`], wait until the screen shows a text, type, press keys, read the screen, and
//! end it all (the server and everything in its panes) when dropped.
//!
//! Waiting on the screen is driven by events: a control-mode client (`tmux -C`) reports every
//! `%output` of the pane, and the screen is read again only then, until the text shows or the
//! deadline passes. The server has its own socket in a temporary directory, so it never meets
//! the developer's tmux; `remain-on-exit` keeps the pane (and its last screen) when the agent
//! exits.

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread;
use std::time::{Duration, Instant};

use super::{AgentError, TuiLaunch, io_err};

/// The session (and window) name inside the private server.
const SESSION: &str = "agent";

/// How long the control client may take to attach.
const ATTACH_LIMIT: Duration = Duration::from_secs(10);

/// A private tmux server running one TUI.
#[derive(Debug)]
pub struct TmuxPane {
    dir: tempfile::TempDir,
    control: Option<Child>,
    output: Receiver<()>,
}

impl TmuxPane {
    /// Whether tmux can be run at all (tests skip without it).
    #[must_use]
    pub fn available() -> bool {
        Command::new("tmux")
            .arg("-V")
            .output()
            .is_ok_and(|o| o.status.success())
    }

    /// Starts `launch` in a `width` × `height` pane of a new private server.
    ///
    /// # Errors
    /// When tmux cannot start the server or attach the control client.
    pub fn start(launch: &TuiLaunch, width: u16, height: u16) -> Result<Self, AgentError> {
        Self::start_shell(&launch.shell_command(), width, height)
    }

    /// Starts `command`, one `sh` command line, in a `width` × `height` pane of a new private
    /// server. The shell sees the pane's `TMUX` and `TMUX_PANE`, so the command can pass them on.
    ///
    /// # Errors
    /// When tmux cannot start the server or attach the control client.
    pub fn start_shell(command: &str, width: u16, height: u16) -> Result<Self, AgentError> {
        let dir = tempfile::Builder::new()
            .prefix("shepherd-tmux-")
            .tempdir()
            .map_err(io_err("creating the tmux directory"))?;
        let config = dir.path().join("tmux.conf");
        std::fs::write(
            &config,
            "set -g remain-on-exit on\nset -g history-limit 5000\nset -g status off\n",
        )
        .map_err(io_err("writing tmux.conf"))?;
        let mut pane = Self {
            dir,
            control: None,
            output: mpsc::channel().1,
        };
        let (width, height) = (width.to_string(), height.to_string());
        let mut new_session = pane.tmux();
        new_session.arg("-f").arg(&config).args([
            "new-session",
            "-d",
            "-s",
            SESSION,
            "-x",
            &width,
            "-y",
            &height,
            command,
        ]);
        pane.ok(&mut new_session, "starting the tmux session")?;
        let mut control = pane
            .tmux()
            .args(["-C", "attach-session", "-t", SESSION])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(io_err("attaching a tmux control client"))?;
        let (send, output) = mpsc::channel();
        if let Some(stdout) = control.stdout.take() {
            thread::spawn(move || {
                // Bytes, not text: a pane's output can split a UTF-8 character across lines.
                let mut reader = BufReader::new(stdout);
                let mut line = Vec::new();
                while reader.read_until(b'\n', &mut line).is_ok_and(|n| n > 0) {
                    // `%session-changed` comes once the client is attached (see below).
                    if (line.starts_with(b"%output")
                        || line.starts_with(b"%exit")
                        || line.starts_with(b"%session-changed"))
                        && send.send(()).is_err()
                    {
                        break;
                    }
                    line.clear();
                }
            });
        }
        pane.control = Some(control);
        pane.output = output;
        // Until the control client is attached, the pane's output is reported to nobody: a
        // program that draws once and then waits would never be seen to draw. Wait for the
        // client's first notification (its session, or output).
        pane.output
            .recv_timeout(ATTACH_LIMIT)
            .map_err(|_| AgentError::Io {
                what: "attaching a tmux control client".to_owned(),
                source: std::io::Error::other(format!("no notification within {ATTACH_LIMIT:?}")),
            })?;
        Ok(pane)
    }

    /// The server's socket.
    #[must_use]
    pub fn socket(&self) -> PathBuf {
        self.dir.path().join("socket")
    }

    fn tmux(&self) -> Command {
        let mut command = Command::new("tmux");
        command.arg("-S").arg(self.socket()).env_remove("TMUX");
        command
    }

    fn ok(&self, command: &mut Command, what: &str) -> Result<String, AgentError> {
        let output = command.output().map_err(io_err(what))?;
        if output.status.success() {
            Ok(String::from_utf8_lossy(&output.stdout).into_owned())
        } else {
            Err(AgentError::Io {
                what: what.to_owned(),
                source: std::io::Error::other(String::from_utf8_lossy(&output.stderr).trim()),
            })
        }
    }

    /// What the pane shows now, one line per row, with no-break spaces (Claude Code draws one
    /// after its prompt sign) read as spaces.
    ///
    /// # Errors
    /// When tmux cannot be asked (the server is gone).
    pub fn screen(&self) -> Result<String, AgentError> {
        let mut capture = self.tmux();
        capture.args(["capture-pane", "-p", "-J", "-t", SESSION]);
        Ok(self
            .ok(&mut capture, "reading the pane")?
            .replace('\u{a0}', " "))
    }

    /// Waits until the screen contains `text`; returns the screen.
    ///
    /// # Errors
    /// [`AgentError::Screen`] with the last screen when `timeout` passes first.
    pub fn wait_for(&self, text: &str, timeout: Duration) -> Result<String, AgentError> {
        self.wait_until(&format!("{text:?}"), timeout, |screen| {
            screen.contains(text)
        })
    }

    /// Waits until the screen contains every one of `texts` at once (a redraw in progress can
    /// show some and not yet the others); returns the screen.
    ///
    /// # Errors
    /// [`AgentError::Screen`] with the last screen when `timeout` passes first.
    pub fn wait_for_all(&self, texts: &[&str], timeout: Duration) -> Result<String, AgentError> {
        self.wait_until(&format!("{texts:?}"), timeout, |screen| {
            texts.iter().all(|text| screen.contains(text))
        })
    }

    /// Waits until `done` holds for the screen (`what` names it in the error); returns the
    /// screen.
    ///
    /// # Errors
    /// [`AgentError::Screen`] with the last screen when `timeout` passes first.
    pub fn wait_until(
        &self,
        what: &str,
        timeout: Duration,
        done: impl Fn(&str) -> bool,
    ) -> Result<String, AgentError> {
        let deadline = Instant::now() + timeout;
        loop {
            // Everything that happened so far is covered by the read that follows.
            while self.output.try_recv().is_ok() {}
            let screen = self.screen()?;
            if done(&screen) {
                return Ok(screen);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match self.output.recv_timeout(left) {
                Ok(()) => {}
                Err(RecvTimeoutError::Timeout) => {
                    return Err(AgentError::Screen {
                        what: format!("{what} on the screen"),
                        waited: timeout,
                        screen: self.screen().unwrap_or_default(),
                    });
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(AgentError::Io {
                        what: format!("waiting for {what:?} on the screen"),
                        source: std::io::Error::other("the tmux control client ended"),
                    });
                }
            }
        }
    }

    /// What the pane shows now with its colours and attributes, as escape sequences.
    ///
    /// # Errors
    /// When tmux cannot be asked (the server is gone).
    pub fn screen_styled(&self) -> Result<String, AgentError> {
        self.run(&["capture-pane", "-p", "-e", "-t", SESSION])
    }

    /// Runs one tmux command on this server (`-t` targets may name the session `agent`);
    /// returns what it printed.
    ///
    /// # Errors
    /// When tmux refuses.
    pub fn run(&self, args: &[&str]) -> Result<String, AgentError> {
        let mut command = self.tmux();
        command.args(args);
        self.ok(&mut command, &format!("tmux {}", args.join(" ")))
    }

    /// Resizes the pane's window to `width` × `height`, as a terminal window resized by hand.
    ///
    /// # Errors
    /// When tmux refuses.
    pub fn resize(&self, width: u16, height: u16) -> Result<(), AgentError> {
        self.run(&[
            "resize-window",
            "-t",
            SESSION,
            "-x",
            &width.to_string(),
            "-y",
            &height.to_string(),
        ])
        .map(drop)
    }

    /// Types `text` literally (no key names).
    ///
    /// # Errors
    /// When tmux refuses.
    pub fn type_text(&self, text: &str) -> Result<(), AgentError> {
        let mut send = self.tmux();
        send.args(["send-keys", "-t", SESSION, "-l", text]);
        self.ok(&mut send, "typing into the pane").map(drop)
    }

    /// Presses keys by tmux name (`Enter`, `C-c`, `Escape`).
    ///
    /// # Errors
    /// When tmux refuses.
    pub fn press(&self, keys: &[&str]) -> Result<(), AgentError> {
        let mut send = self.tmux();
        send.args(["send-keys", "-t", SESSION]).args(keys);
        self.ok(&mut send, "pressing keys in the pane").map(drop)
    }

    /// The process the pane runs (the agent, once `exec` replaced the shell).
    ///
    /// # Errors
    /// When tmux cannot be asked.
    pub fn pane_pid(&self) -> Result<u32, AgentError> {
        let mut display = self.tmux();
        display.args(["display-message", "-p", "-t", SESSION, "#{pane_pid}"]);
        let text = self.ok(&mut display, "asking for the pane's process")?;
        text.trim().parse().map_err(|_| AgentError::Io {
            what: "reading the pane's process id".to_owned(),
            source: std::io::Error::other(text.trim().to_owned()),
        })
    }

    /// Waits until the agent in this pane can use its MCP server `server` (with `tools` tools).
    /// Only Claude Code's TUI needs this: it connects MCP servers in the background, and a
    /// task typed before that reaches the model without their tools (even with
    /// `MCP_CONNECTION_NONBLOCKING=0`, which only `-p` mode honours). Its `/mcp` dialog shows
    /// `<server> · ✔ connected · N tool(s)` once they are registered; this opens it, waits for
    /// that line, and closes it. The other agents wait by themselves (Codex with `required`,
    /// Gemini CLI and opencode always).
    ///
    /// # Errors
    /// [`AgentError::Screen`] when the line does not show within `timeout`.
    pub fn wait_mcp_ready(
        &self,
        host: super::Host,
        server: &str,
        tools: usize,
        timeout: Duration,
    ) -> Result<(), AgentError> {
        if host != super::Host::ClaudeCode {
            return Ok(());
        }
        let plural = if tools == 1 { "tool" } else { "tools" };
        self.type_text("/mcp")?;
        self.wait_for("❯ /mcp", timeout)?;
        self.press(&["Enter"])?;
        self.wait_for(
            &format!("{server} · ✔ connected · {tools} {plural}"),
            timeout,
        )?;
        self.press(&["Escape"])?;
        self.wait_for(host.tui_ready_text(), timeout).map(drop)
    }

    /// Ends the server: every pane's processes get SIGHUP.
    pub fn kill(&mut self) {
        let _gone = self.tmux().arg("kill-server").output();
        if let Some(mut control) = self.control.take() {
            drop(control.kill());
            drop(control.wait());
        }
    }

    /// The private directory (socket, configuration).
    #[must_use]
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for TmuxPane {
    fn drop(&mut self) {
        self.kill();
    }
}
