//! Making sure a Herdr server answers: use the one that runs, or — when the user chose Herdr
//! and none runs — start `herdr server` the supported way (headless, detached from our
//! process group, stdin closed, bound to exactly the socket we resolved) and wait for it to
//! answer `ping`. Whether we started it is recorded, because a server we did not start is
//! never stopped: it holds the user's panes.
//!
//! The wait is event-driven: a watch on the socket's directory wakes us when the socket
//! appears and an exit watch wakes us if the server dies during start-up (see `platform`); a short retry slice
//! only covers the moment between the socket's creation and its `listen`.

// This module owns the Herdr server's process when it starts one.
#![allow(clippy::disallowed_types)]

use std::ffi::OsString;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::DirBuilderExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags, Timespec, poll};
use rustix::process::Signal;

use super::client::HerdrClient;
use super::error::HerdrError;
use super::socket::SocketTarget;
use crate::process;

/// Longest pause between two `ping`s while a started server comes up, for the moment between
/// its socket file appearing and it accepting connections.
const RETRY_SLICE: Duration = Duration::from_millis(100);

/// Variables a server must not inherit from a caller that itself runs inside Herdr: they
/// describe the caller's pane, not the new server.
const PANE_VARIABLES: [&str; 4] = [
    "HERDR_ENV",
    "HERDR_PANE_ID",
    "HERDR_TAB_ID",
    "HERDR_WORKSPACE_ID",
];

/// Who runs the server Shepherd talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerOrigin {
    /// It was already running (the user's): never stopped by Shepherd.
    Existing,
    /// Shepherd started it.
    Started {
        /// The server's pid.
        pid: u32,
    },
}

/// A server that answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerStatus {
    /// Its API socket.
    pub socket: PathBuf,
    /// Its version.
    pub version: String,
    /// Its protocol number.
    pub protocol: u32,
    /// Whether Shepherd started it.
    pub origin: ServerOrigin,
}

/// How to start a server when none answers.
#[derive(Debug, Clone)]
pub struct ServerStart {
    /// The `herdr` executable (`HERDR_BIN_PATH`, or `herdr` on `PATH`).
    pub bin: PathBuf,
    /// Further environment changes for the server (`None` removes), applied last.
    pub env: Vec<(OsString, Option<OsString>)>,
    /// Where the server's stderr goes; discarded when `None` (Herdr keeps its own log).
    pub log: Option<PathBuf>,
    /// How long the server gets to answer.
    pub timeout: Duration,
}

impl ServerStart {
    /// Starts `bin` with no further environment, a discarded stderr and a 20 s limit (what
    /// the original allowed).
    pub fn new(bin: impl Into<PathBuf>) -> Self {
        Self {
            bin: bin.into(),
            env: Vec::new(),
            log: None,
            timeout: Duration::from_secs(20),
        }
    }
}

/// Returns the server at `target`, starting one with `start` when nothing answers there.
/// A server that answers but misbehaves (too old, timing out) is reported, never replaced.
pub fn ensure_server(
    client: &HerdrClient,
    target: &SocketTarget,
    start: Option<&ServerStart>,
) -> Result<ServerStatus, HerdrError> {
    let status = |pong: super::wire::Pong, origin| ServerStatus {
        socket: client.socket().to_path_buf(),
        version: pong.version,
        protocol: pong.protocol,
        origin,
    };
    match (client.handshake(None), start) {
        (Ok(pong), _) => Ok(status(pong, ServerOrigin::Existing)),
        (Err(err), Some(start)) if err.is_unreachable() => {
            let (pid, pong) = start_server(client, target, start)?;
            Ok(status(pong, ServerOrigin::Started { pid }))
        }
        (Err(err), _) => Err(err),
    }
}

/// Stops the server if Shepherd started it, waiting until its process is gone; returns
/// whether it stopped one. A server Shepherd did not start is left alone.
pub fn stop_started_server(
    client: &HerdrClient,
    status: &ServerStatus,
    deadline: Instant,
) -> Result<bool, HerdrError> {
    let ServerOrigin::Started { pid } = status.origin else {
        return Ok(false);
    };
    client.server_stop(Some(deadline))?;
    if !process::wait_gone(pid, deadline) {
        process::signal_process(pid, Signal::KILL);
    }
    Ok(true)
}

fn start_server(
    client: &HerdrClient,
    target: &SocketTarget,
    start: &ServerStart,
) -> Result<(u32, super::wire::Pong), HerdrError> {
    let failed = |detail: String| HerdrError::ServerStart {
        bin: start.bin.clone(),
        detail,
    };
    let deadline = Instant::now() + start.timeout;
    // Watch before spawning, so the socket's creation cannot slip past us.
    let dir = target.path.parent().unwrap_or(Path::new("/"));
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|err| failed(format!("cannot create {}: {err}", dir.display())))?;
    let watch = watch_dir(dir);

    let mut command = Command::new(&start.bin);
    command
        .arg("server")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .process_group(0);
    command.stderr(match &start.log {
        Some(log) => fs_err::File::create(log)
            .map_err(|err| failed(err.to_string()))?
            .into_parts()
            .0
            .into(),
        None => Stdio::null(),
    });
    for name in PANE_VARIABLES {
        command.env_remove(name);
    }
    for (name, value) in target.server_env().into_iter().chain(start.env.clone()) {
        match value {
            Some(value) => command.env(name, value),
            None => command.env_remove(name),
        };
    }
    let mut child = command
        .spawn()
        .map_err(|err| failed(format!("cannot run it: {err}")))?;
    let pid = child.id();
    let exited = crate::platform::exit_watch(pid).ok().flatten();

    let outcome = loop {
        match client.handshake(Some(deadline)) {
            Ok(pong) => break Ok(pong),
            Err(err) if err.is_unreachable() => {}
            Err(err) => break Err(err),
        }
        if Instant::now() >= deadline {
            break Err(failed(format!(
                "it did not answer on {} within {} ms",
                target.path.display(),
                start.timeout.as_millis()
            )));
        }
        let until = deadline.min(Instant::now() + RETRY_SLICE);
        if wait_for_change(watch.as_ref(), exited.as_ref(), until) {
            let status = child
                .wait()
                .map_or_else(|err| err.to_string(), |s| s.to_string());
            let log = start
                .log
                .as_ref()
                .map(|log| format!("; see {}", log.display()))
                .unwrap_or_default();
            return Err(failed(format!("it exited during start-up ({status}){log}")));
        }
    };
    match outcome {
        Ok(pong) => {
            reap_in_background(child);
            Ok((pid, pong))
        }
        Err(err) => {
            // Ours and unusable: do not leave it behind.
            let _gone = child.kill();
            let _reaped = child.wait();
            Err(err)
        }
    }
}

/// An inotify descriptor watching `dir` for new entries; `None` when inotify is unavailable
/// (the wait then falls back to the retry slice).
fn watch_dir(dir: &Path) -> Option<OwnedFd> {
    crate::platform::dir_watch(dir).ok()
}

/// Waits until the directory changes, the server exits, or `until`. Returns whether the server
/// exited.
fn wait_for_change(watch: Option<&OwnedFd>, exited: Option<&OwnedFd>, until: Instant) -> bool {
    let left = until.saturating_duration_since(Instant::now());
    let timeout = Timespec::try_from(left).unwrap_or(Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    });
    let mut fds: Vec<PollFd<'_>> = [watch, exited]
        .into_iter()
        .flatten()
        .map(|fd| PollFd::new(fd, PollFlags::IN))
        .collect();
    if poll(&mut fds, Some(&timeout)).is_err() {
        return false;
    }
    let server_exited = exited.is_some()
        && fds
            .last()
            .is_some_and(|fd| fd.revents().contains(PollFlags::IN));
    if let Some(watch) = watch {
        // Drain the queued notifications; their content does not matter, only that
        // something changed.
        let mut buf = [0_u8; 4096];
        while matches!(rustix::io::read(watch.as_fd(), &mut buf), Ok(read) if read > 0) {}
    }
    server_exited
}

/// Reaps the started server when it exits, so it never lingers as a zombie of the broker.
fn reap_in_background(mut child: std::process::Child) {
    let spawned = std::thread::Builder::new()
        .name("herdr-reap".into())
        .stack_size(64 * 1024)
        .spawn(move || {
            let _status = child.wait();
        });
    if let Err(err) = spawned {
        tracing::warn!("could not start a reaper thread for the Herdr server: {err}");
    }
}
