//! Running an agent to its end with a deadline: it runs in its own process group (with the MCP
//! servers and shell commands it starts), a thread reaps it, and whatever is left in the group
//! when it exits, or when the deadline passes, is killed.
//!
//! A test must never hang on an agent that waits for input or a model that never answers, and
//! must not leave an agent, an MCP server or a background install running after it.

use std::io::Read;
use std::os::unix::process::CommandExt as _;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread;
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process_group};

use super::{AgentError, io_err};

/// How long a killed group gets to be reaped.
const REAP: Duration = Duration::from_secs(10);

/// A finished run.
#[derive(Debug, Clone)]
pub struct RunOutput {
    /// How it exited.
    pub status: ExitStatus,
    /// Its stdout, as text.
    pub stdout: String,
    /// Its stderr, as text.
    pub stderr: String,
    /// How long it ran.
    pub elapsed: Duration,
}

impl RunOutput {
    /// Whether it exited with status 0.
    #[must_use]
    pub fn success(&self) -> bool {
        self.status.success()
    }
}

/// Runs `command` to its end (stdout and stderr captured, stdin as configured: `/dev/null`
/// from [`AgentEnv::headless`](super::AgentEnv::headless)), in its own process group. When it
/// is not done within `timeout` the whole group is killed.
///
/// # Errors
/// [`AgentError::Io`] when it cannot start, [`AgentError::Timeout`] (with its stderr) when it
/// ran too long.
pub fn run(command: &mut Command, timeout: Duration) -> Result<RunOutput, AgentError> {
    let started = Instant::now();
    let deadline = started + timeout;
    command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let mut child = command
        .spawn()
        .map_err(io_err(format!("starting {:?}", command.get_program())))?;
    let pid = Pid::from_child(&child);
    let stdout = Pipe::start(child.stdout.take());
    let stderr = Pipe::start(child.stderr.take());
    let (exit_send, exit_recv) = mpsc::channel();
    thread::spawn(move || drop(exit_send.send(child.wait())));
    let status = match exit_recv.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
        Ok(Ok(status)) => Ok(status),
        Ok(Err(source)) => Err(AgentError::Io {
            what: "waiting for the agent".to_owned(),
            source,
        }),
        Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => {
            // ESRCH: the group is already gone.
            let _ = kill_process_group(pid, Signal::KILL);
            drop(exit_recv.recv_timeout(REAP));
            Err(AgentError::Timeout {
                what: format!("{:?} to exit", command.get_program()),
                waited: timeout,
                stderr: stderr.collect(Instant::now() + Duration::from_secs(1)),
            })
        }
    };
    // What the agent left in its group (an MCP server that ignored the signal it was sent, a
    // background install) would hold the pipes open: end it. The group keeps the leader's id
    // while members remain, so this cannot reach an unrelated process; ESRCH is the usual
    // answer.
    let _ = kill_process_group(pid, Signal::KILL);
    let status = status?;
    // A process that left the group could still hold a pipe: read until the pipes close, or
    // give up after a bound.
    let until = Instant::now() + REAP;
    Ok(RunOutput {
        status,
        stdout: stdout.collect(until),
        stderr: stderr.collect(until),
        elapsed: started.elapsed(),
    })
}

/// A pipe read on a thread, chunk by chunk, so reading it can stop at a deadline.
struct Pipe(mpsc::Receiver<Vec<u8>>);

impl Pipe {
    fn start(pipe: Option<impl Read + Send + 'static>) -> Self {
        let (send, recv) = mpsc::channel();
        if let Some(mut pipe) = pipe {
            thread::spawn(move || {
                let mut chunk = [0; 8192];
                while let Ok(n @ 1..) = pipe.read(&mut chunk) {
                    if send.send(chunk[..n].to_vec()).is_err() {
                        break;
                    }
                }
            });
        }
        Self(recv)
    }

    /// Everything read until the pipe closed or `until` passed.
    fn collect(&self, until: Instant) -> String {
        let mut bytes = Vec::new();
        while let Ok(chunk) = self
            .0
            .recv_timeout(until.saturating_duration_since(Instant::now()))
        {
            bytes.extend(chunk);
        }
        String::from_utf8_lossy(&bytes).into_owned()
    }
}
