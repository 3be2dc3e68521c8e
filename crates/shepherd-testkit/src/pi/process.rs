//! Child processes with deadlines: pi runs in its own process group, a thread reaps it, and a
//! wait that passes its deadline kills the whole group.
//!
//! A test must never hang on a pi that waits for input or a model that never answers, and must
//! not leave pi (or the shell commands it started) running after it fails.

use std::io::{self, Read};
use std::os::unix::process::CommandExt as _;
use std::process::{ChildStderr, ChildStdin, ChildStdout, Command, ExitStatus, Output, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process_group};

use super::{PiError, io_err};

/// How long a killed group gets to be reaped.
const REAP: Duration = Duration::from_secs(10);

/// A running child in its own process group.
#[derive(Debug)]
pub(super) struct Process {
    pid: Pid,
    exit: Receiver<io::Result<ExitStatus>>,
    status: Option<ExitStatus>,
}

/// The child's pipes, as configured on the command.
#[derive(Debug)]
pub(super) struct Pipes {
    pub(super) stdin: Option<ChildStdin>,
    pub(super) stdout: Option<ChildStdout>,
    pub(super) stderr: Option<ChildStderr>,
}

impl Process {
    pub(super) fn spawn(command: &mut Command) -> io::Result<(Self, Pipes)> {
        let mut child = command.process_group(0).spawn()?;
        let pid = Pid::from_child(&child);
        let pipes = Pipes {
            stdin: child.stdin.take(),
            stdout: child.stdout.take(),
            stderr: child.stderr.take(),
        };
        let (send, exit) = mpsc::channel();
        thread::Builder::new()
            .name("pi-reaper".to_owned())
            .spawn(move || drop(send.send(child.wait())))?;
        let process = Self {
            pid,
            exit,
            status: None,
        };
        Ok((process, pipes))
    }

    /// The exit status once the child exited before `deadline`.
    pub(super) fn wait(&mut self, deadline: Instant) -> Option<ExitStatus> {
        if self.status.is_none() {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.exit.recv_timeout(left) {
                Ok(Ok(status)) => self.status = Some(status),
                Ok(Err(_)) | Err(RecvTimeoutError::Disconnected) => {
                    // The reaper could not wait: treat the child as gone.
                    self.status = Some(ExitStatus::default());
                }
                Err(RecvTimeoutError::Timeout) => {}
            }
        }
        self.status
    }

    /// Kills the process group and reaps the child.
    pub(super) fn kill(&mut self) {
        if self.status.is_none() {
            // ESRCH means the group is already gone.
            let _ = kill_process_group(self.pid, Signal::KILL);
            self.wait(Instant::now() + REAP);
        }
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Collects a pipe's bytes on a thread; the buffer can be read while it fills.
#[derive(Debug, Clone, Default)]
pub(super) struct Collected(Arc<Mutex<Vec<u8>>>);

impl Collected {
    pub(super) fn start(mut pipe: impl Read + Send + 'static) -> (Self, JoinHandle<()>) {
        let buffer = Self::default();
        let sink = buffer.clone();
        let reader = thread::spawn(move || {
            let mut chunk = [0; 8192];
            while let Ok(n @ 1..) = pipe.read(&mut chunk) {
                sink.lock().extend_from_slice(&chunk[..n]);
            }
        });
        (buffer, reader)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<u8>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(super) fn bytes(&self) -> Vec<u8> {
        self.lock().clone()
    }

    pub(super) fn text(&self) -> String {
        String::from_utf8_lossy(&self.lock()).into_owned()
    }
}

fn collect<R: Read + Send + 'static>(
    pipe: Option<R>,
    readers: &mut Vec<JoinHandle<()>>,
) -> Collected {
    let Some(pipe) = pipe else {
        return Collected::default();
    };
    let (buffer, reader) = Collected::start(pipe);
    readers.push(reader);
    buffer
}

/// Runs `command` to its end (stdout and stderr captured, stdin as configured, e.g. `/dev/null`
/// from [`PiEnv::command`](super::PiEnv::command)); kills it and its process group when it
/// is not done within `timeout`.
///
/// # Errors
/// [`PiError::Io`] when it cannot start, [`PiError::Timeout`] (with its stderr) when it ran
/// too long.
pub fn run(command: &mut Command, timeout: Duration) -> Result<Output, PiError> {
    let deadline = Instant::now() + timeout;
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    let (mut process, pipes) =
        Process::spawn(command).map_err(io_err(format!("starting {:?}", command.get_program())))?;
    let mut readers = Vec::new();
    let stdout = collect(pipes.stdout, &mut readers);
    let stderr = collect(pipes.stderr, &mut readers);
    drop(pipes.stdin);
    let Some(status) = process.wait(deadline) else {
        process.kill();
        return Err(PiError::Timeout {
            what: format!("{:?} to exit", command.get_program()),
            waited: timeout,
            stderr: stderr.text(),
        });
    };
    // The pipes close when the last writer exits; anything pi left running in its group is
    // killed so that a stray background command cannot hold them open.
    process.kill_group_leftovers();
    for reader in readers {
        // A reader thread only panics on a poisoned buffer, which `bytes` tolerates.
        drop(reader.join());
    }
    Ok(Output {
        status,
        stdout: stdout.bytes(),
        stderr: stderr.bytes(),
    })
}

impl Process {
    /// After the leader exited: kills what is left in its group, if anything.
    fn kill_group_leftovers(&self) {
        // The group keeps the leader's id while members remain, so this cannot reach an
        // unrelated process; ESRCH (an empty group) is the usual answer.
        let _ = kill_process_group(self.pid, Signal::KILL);
    }
}
