//! The tmux backend: sheep in tmux windows and panes, driven through the tmux CLI.
//!
//! Inside tmux, sheep go on the caller's own server (found from `$TMUX`); elsewhere on the
//! default server (`TMUX_TMPDIR` respected), in a detached session named `shepherd`. A sheep's
//! supervisor is the pane's program, started directly as its argv with the sheep's environment
//! given by `-e`, so nothing is typed into a shell. Nothing takes focus: windows are created
//! with `-d`, splits with `-d`. With keep-open, the pane stays after the sheep ends
//! (`remain-on-exit`) for inspection until it is closed or pruned.
//!
//! The detached `shepherd` session, when this backend makes it, remembers the pane it was made
//! with (`@shepherd_placeholder`). On a host, where nobody started tmux but Shepherd, the
//! backend tidies up ([`TmuxBackend::tidying`]): once the last sheep of that session is closed
//! the session goes, and with it the server when it was the server's only session.

// This backend drives tmux through its CLI: every call runs `tmux`.
#![allow(clippy::disallowed_types)]

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::process::{self, run_with_deadline};
use crate::{
    Backend, BackendKind, LaunchRecord, LaunchSpec, Placement, Presence, ReadSource, TermError,
};

/// How long one tmux command may take.
const COMMAND_LIMIT: Duration = Duration::from_secs(10);

/// The session sheep go into when the caller is not inside tmux.
pub const DEFAULT_SESSION: &str = "shepherd";

/// Which tmux server to talk to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Server {
    /// The server at this socket (the caller's, from `$TMUX`).
    Socket(PathBuf),
    /// The default server (`$TMUX_TMPDIR/tmux-<uid>/default`).
    Default,
}

/// Runs sheep in tmux.
#[derive(Debug, Clone)]
pub struct TmuxBackend {
    program: PathBuf,
    /// Ends the `shepherd` session it made once its last sheep is closed.
    tidy: bool,
}

impl Default for TmuxBackend {
    fn default() -> Self {
        Self {
            program: PathBuf::from("tmux"),
            tidy: false,
        }
    }
}

/// The session option naming the pane a `shepherd` session was made with.
const PLACEHOLDER_OPTION: &str = "@shepherd_placeholder";

/// The socket path in a `$TMUX` value (`<socket>,<pid>,<session>`).
pub fn socket_from_tmux_env(tmux: &str) -> Option<PathBuf> {
    let socket = tmux.split(',').next()?;
    (!socket.is_empty()).then(|| PathBuf::from(socket))
}

impl TmuxBackend {
    /// A backend using the `tmux` on PATH.
    pub fn new() -> Self {
        Self::default()
    }

    /// A backend that ends the detached `shepherd` session it made once that session's last
    /// sheep is closed (and so the server, when that was its only session): for a host, whose
    /// tmux nobody but Shepherd started.
    pub fn tidying() -> Self {
        Self {
            tidy: true,
            ..Self::default()
        }
    }

    /// Whether tmux can be run at all.
    pub fn available(&self) -> bool {
        self.command(&Server::Default)
            .arg("-V")
            .output()
            .is_ok_and(|out| out.status.success())
    }

    fn command(&self, server: &Server) -> Command {
        let mut command = Command::new(&self.program);
        if let Server::Socket(socket) = server {
            command.arg("-S").arg(socket);
        }
        command
    }

    fn run(&self, server: &Server, args: &[&str]) -> Result<String, TermError> {
        let mut command = self.command(server);
        command.args(args);
        let out =
            run_with_deadline(&mut command, Instant::now() + COMMAND_LIMIT).map_err(|source| {
                TermError::Io {
                    context: format!("running tmux {}", args.first().copied().unwrap_or_default()),
                    source,
                }
            })?;
        if out.success {
            Ok(out.stdout)
        } else {
            Err(TermError::Unavailable(format!(
                "tmux {} failed: {}",
                shown_args(args),
                out.stderr.trim()
            )))
        }
    }

    /// The caller's session, as a new-window target (`$3:`): new-window takes a window, not
    /// the pane the caller knows.
    fn session_of(&self, server: &Server, pane: &str) -> Result<String, TermError> {
        let session = self.run(
            server,
            &["display-message", "-p", "-t", pane, "#{session_id}"],
        )?;
        Ok(format!("{}:", session.trim()))
    }

    fn server_of(record: &LaunchRecord) -> Server {
        record
            .server
            .as_deref()
            .map_or(Server::Default, |s| Server::Socket(PathBuf::from(s)))
    }

    /// Ends the `shepherd` session when only the pane it was made with is left in it (a session
    /// someone else made, or one with any other pane, is left alone).
    fn end_empty_default_session(&self) {
        let session = format!("={DEFAULT_SESSION}");
        let Ok(placeholder) = self.run(
            &Server::Default,
            &[
                "show-options",
                "-v",
                "-t",
                &format!("{session}:"),
                PLACEHOLDER_OPTION,
            ],
        ) else {
            return;
        };
        let Ok(panes) = self.run(
            &Server::Default,
            &["list-panes", "-s", "-t", &session, "-F", "#{pane_id}"],
        ) else {
            return;
        };
        let panes: Vec<&str> = panes
            .lines()
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .collect();
        if panes == [placeholder.trim()] {
            let _ended = self.run(&Server::Default, &["kill-session", "-t", &session]);
        }
    }

    /// Makes sure the detached `shepherd` session exists on the default server.
    fn ensure_default_session(&self, cwd: &std::path::Path) -> Result<(), TermError> {
        let exists = self
            .run(
                &Server::Default,
                &["has-session", "-t", &format!("={DEFAULT_SESSION}")],
            )
            .is_ok();
        if !exists {
            let cwd = cwd.display().to_string();
            let created = self.run(
                &Server::Default,
                &[
                    "new-session",
                    "-d",
                    "-s",
                    DEFAULT_SESSION,
                    "-c",
                    &cwd,
                    "-P",
                    "-F",
                    "#{pane_id}",
                ],
            );
            // The pane the session was made with: once it is the only one left, no sheep is.
            if let Ok(placeholder) = &created {
                let _marked = self.run(
                    &Server::Default,
                    &[
                        "set-option",
                        "-t",
                        // Options take a pane target: `=name:` is the session's current one.
                        &format!("={DEFAULT_SESSION}:"),
                        PLACEHOLDER_OPTION,
                        placeholder.trim(),
                    ],
                );
            }
            // Another launch may have created it in between.
            if created.is_err() {
                self.run(
                    &Server::Default,
                    &["has-session", "-t", &format!("={DEFAULT_SESSION}")],
                )?;
            }
        }
        Ok(())
    }

    /// The pane a caller runs in, from `$TMUX_PANE`, else by walking up from `pid` to a pane's
    /// process.
    pub fn caller_pane(
        &self,
        server: &Server,
        tmux_pane: Option<&str>,
        pid: Option<u32>,
    ) -> Option<String> {
        if let Some(pane) = tmux_pane.filter(|p| !p.is_empty()) {
            return Some(pane.to_owned());
        }
        let ancestry = process::ancestry(pid?, 32);
        let listed = self
            .run(
                server,
                &["list-panes", "-a", "-F", "#{pane_id} #{pane_pid}"],
            )
            .ok()?;
        listed.lines().find_map(|line| {
            let (pane, pane_pid) = line.split_once(' ')?;
            let pane_pid: u32 = pane_pid.trim().parse().ok()?;
            ancestry.contains(&pane_pid).then(|| pane.to_owned())
        })
    }
}

/// tmux arguments for an error message, with `-e` values left out: they hold the sheep's
/// capability token, which must not travel into errors, logs or a model's context.
fn shown_args(args: &[&str]) -> String {
    let mut shown = Vec::with_capacity(args.len());
    let mut after_e = false;
    for arg in args {
        if after_e {
            let name = arg.split_once('=').map_or(*arg, |(name, _)| name);
            shown.push(format!("{name}=…"));
        } else {
            shown.push((*arg).to_owned());
        }
        after_e = *arg == "-e";
    }
    shown.join(" ")
}

fn env_args(spec: &LaunchSpec) -> Vec<String> {
    spec.env
        .iter()
        .flat_map(|(k, v)| ["-e".to_owned(), format!("{k}={v}")])
        .collect()
}

fn supervisor_argv(spec: &LaunchSpec) -> Vec<String> {
    let mut argv = vec![spec.shepherd_exe.display().to_string()];
    argv.extend(spec.supervisor_args(&[]));
    argv
}

impl Backend for TmuxBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Tmux
    }

    fn launch(&self, spec: &LaunchSpec) -> Result<LaunchRecord, TermError> {
        let server = match &spec.tmux_socket {
            Some(socket) => Server::Socket(socket.clone()),
            None => Server::Default,
        };
        let cwd = spec.cwd.display().to_string();
        let format = "#{pane_id} #{window_id}";
        let mut args: Vec<String> = match spec.placement {
            Placement::Tab => {
                let target = if server == Server::Default {
                    self.ensure_default_session(&spec.cwd)?;
                    format!("={DEFAULT_SESSION}:")
                } else {
                    match &spec.caller_pane {
                        // The caller's own session: a background window beside the caller.
                        Some(pane) => self
                            .session_of(&server, pane)
                            .map_err(|err| TermError::Launch(err.to_string()))?,
                        None => String::new(),
                    }
                };
                let mut args = vec![
                    "new-window".into(),
                    "-d".into(),
                    "-P".into(),
                    "-F".into(),
                    format.into(),
                ];
                if !target.is_empty() {
                    args.extend(["-t".into(), target]);
                }
                args.extend(["-n".into(), spec.display_name.clone()]);
                args
            }
            Placement::PaneRight | Placement::PaneDown => {
                let pane = spec.caller_pane.clone().ok_or_else(|| {
                    TermError::NoCallerPane(
                        "pane placement splits the caller's tmux pane, but the caller is not in a tmux pane \
                         (no TMUX_PANE, and no pane found among its parent processes); use placement tab"
                            .into(),
                    )
                })?;
                let side = if spec.placement == Placement::PaneRight {
                    "-h"
                } else {
                    "-v"
                };
                vec![
                    "split-window".into(),
                    "-d".into(),
                    side.into(),
                    "-t".into(),
                    pane,
                    "-P".into(),
                    "-F".into(),
                    format.into(),
                ]
            }
            Placement::Workspace => {
                let name = format!(
                    "shepherd-{}",
                    &spec.agent_id[spec.agent_id.len().saturating_sub(8)..]
                );
                vec![
                    "new-session".into(),
                    "-d".into(),
                    "-s".into(),
                    name,
                    "-P".into(),
                    "-F".into(),
                    format.into(),
                ]
            }
        };
        args.extend(["-c".into(), cwd]);
        args.extend(env_args(spec));
        args.extend(supervisor_argv(spec));
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let printed = self
            .run(&server, &refs)
            .map_err(|err| TermError::Launch(err.to_string()))?;
        let (pane, window) = printed.trim().split_once(' ').ok_or_else(|| {
            TermError::Launch(format!(
                "tmux did not say which pane it created (it printed `{}`)",
                printed.trim()
            ))
        })?;
        // Best effort: titles are cosmetic, and keep-open only matters once the sheep ends.
        let _titled = self.run(
            &server,
            &["select-pane", "-t", pane, "-T", &spec.display_name],
        );
        if spec.keep_open {
            let _kept = self.run(
                &server,
                &["set-option", "-p", "-t", pane, "remain-on-exit", "on"],
            );
        }
        Ok(LaunchRecord {
            supervisor_pid: None,
            pid: None,
            log: None,
            pane: Some(pane.to_owned()),
            window: Some(window.to_owned()),
            server: match server {
                Server::Socket(socket) => Some(socket.display().to_string()),
                Server::Default => None,
            },
            limits: None,
        })
    }

    fn read(
        &self,
        record: &LaunchRecord,
        source: ReadSource,
        lines: u32,
    ) -> Result<String, TermError> {
        let pane = record
            .pane
            .as_deref()
            .ok_or_else(|| TermError::Read("the sheep has no pane".into()))?;
        let start = format!("-{lines}");
        let mut args = vec!["capture-pane", "-p", "-t", pane];
        match source {
            ReadSource::Visible | ReadSource::Detection => {}
            ReadSource::Recent => args.extend(["-S", &start]),
            ReadSource::RecentUnwrapped => args.extend(["-J", "-S", &start]),
        }
        let text = self
            .run(&Self::server_of(record), &args)
            .map_err(|err| TermError::Read(err.to_string()))?;
        Ok(process::last_lines(&text, lines as usize))
    }

    fn close(
        &self,
        record: &LaunchRecord,
        keep_pane: bool,
        deadline: Instant,
    ) -> Result<(), TermError> {
        let server = Self::server_of(record);
        if let Some(pid) = record.pid {
            process::terminate_group(pid, crate::headless::TERM_GRACE, deadline);
        }
        if let Some(pane) = &record.pane
            && !keep_pane
            && self.presence(record) != Presence::Gone
        {
            // A pane that vanished between the check and the kill is what we wanted anyway.
            let _killed = self.run(&server, &["kill-pane", "-t", pane]);
        }
        let gone = record
            .supervisor_pid
            .is_none_or(|pid| process::wait_gone(pid, deadline));
        let pane_gone = keep_pane || self.presence(record) == Presence::Gone;
        if self.tidy && server == Server::Default && pane_gone {
            self.end_empty_default_session();
        }
        if gone && pane_gone {
            Ok(())
        } else {
            Err(TermError::NotConfirmed(format!(
                "tmux pane {} is still there",
                record.pane.as_deref().unwrap_or("?")
            )))
        }
    }

    fn focus(&self, record: &LaunchRecord, viewer_pane: Option<&str>) -> Result<(), TermError> {
        let pane = record
            .pane
            .as_deref()
            .ok_or_else(|| TermError::Unavailable("the sheep has no pane".into()))?;
        let server = Self::server_of(record);
        self.run(&server, &["select-window", "-t", pane])?;
        self.run(&server, &["select-pane", "-t", pane])?;
        // A viewer in another session sees the sheep only once its own client switches there.
        let Some(viewer) = viewer_pane else {
            return Ok(());
        };
        let session = |target: &str| {
            self.run(
                &server,
                &["display-message", "-p", "-t", target, "#{session_id}"],
            )
            .map(|id| id.trim().to_owned())
        };
        let viewer_session = session(viewer)?;
        if viewer_session == session(pane)? {
            return Ok(());
        }
        let clients = self.run(
            &server,
            &[
                "list-clients",
                "-t",
                &viewer_session,
                "-F",
                "#{client_name}",
            ],
        )?;
        for client in clients.lines().map(str::trim).filter(|c| !c.is_empty()) {
            self.run(&server, &["switch-client", "-c", client, "-t", pane])?;
        }
        Ok(())
    }

    fn presence(&self, record: &LaunchRecord) -> Presence {
        let Some(pane) = &record.pane else {
            return Presence::Unknown;
        };
        match self.run(
            &Self::server_of(record),
            &["list-panes", "-a", "-F", "#{pane_id}"],
        ) {
            Ok(listed) => {
                if listed.lines().any(|line| line.trim() == pane) {
                    Presence::Present
                } else {
                    Presence::Gone
                }
            }
            // No server any more means no panes.
            Err(TermError::Unavailable(message))
                if message.contains("no server running")
                    || message.contains("error connecting") =>
            {
                Presence::Gone
            }
            Err(_) => Presence::Unknown,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::shown_args;

    #[test]
    fn errors_show_the_command_without_environment_values() {
        let shown = shown_args(&["new-window", "-d", "-e", "SHEPHERD_TOKEN=secret", "-n", "w"]);
        assert_eq!(shown, "new-window -d -e SHEPHERD_TOKEN=… -n w");
    }
}
