//! Long op sessions over a host's link: one `shepherd remote serve` answers many ops.
//!
//! An op run alone is an SSH session of its own over the master: a login shell and a
//! `shepherd` start on the host for every step. One task delegated to a host sheep took three
//! (the session's copy, its read-back, the last read before the note is finalised), each a
//! line in the host's sshd log and tens of milliseconds. A `serve` session stays open beside
//! the master and answers one JSON line per op instead. A call takes an idle session or opens
//! one, and gives it back when answered: steps in a row share one session, steps that run at
//! once still run at once. A session that does not answer by its step's deadline, or whose
//! line cannot be written, is ended, never reused.

// The sessions are `ssh` processes this module owns.
#![allow(clippy::disallowed_types)]

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::ops::{ServeAnswer, ServeFrame};

/// How many answered sessions are kept for the next steps; more (steps that ran at once)
/// are ended when answered.
const IDLE_KEPT: usize = 4;
/// How much of a session's standard error is kept to say why it ended.
const STDERR_KEPT: usize = 4096;

/// The idle sessions of one link.
#[derive(Default)]
pub(crate) struct OpSessions {
    idle: Mutex<Vec<OpSession>>,
}

/// Why a step over a session failed.
#[derive(Debug)]
pub(crate) enum SessionError {
    /// The op's line never reached the host: the step may be tried again.
    NotSent(String),
    /// The host took the line, or may have: the step failed.
    Failed(String),
}

impl OpSessions {
    /// Ends every idle session (the master they ran over is gone, or the link is retired).
    pub(crate) fn clear(&self) {
        self.idle.lock().expect("sessions lock").clear();
    }

    /// Runs `op` over an idle session or a new one made by `open`; `host` names the host in
    /// errors. An idle session that died meanwhile is replaced once.
    pub(crate) fn call(
        &self,
        host: &str,
        open: impl Fn() -> Command,
        op: &str,
        request: serde_json::Value,
        deadline: Instant,
    ) -> Result<serde_json::Value, String> {
        let frame = ServeFrame {
            op: op.to_owned(),
            request,
        };
        let mut line = serde_json::to_vec(&frame).expect("frames serialise");
        line.push(b'\n');
        let reused = self.idle.lock().expect("sessions lock").pop();
        let mut session = match reused {
            Some(session) => session,
            None => OpSession::open(open())?,
        };
        let mut answer = session.exchange(&line, deadline);
        if let Err(SessionError::NotSent(_)) = answer {
            session = OpSession::open(open())?;
            answer = session.exchange(&line, deadline);
        }
        let answer = match answer {
            Ok(answer) => answer,
            Err(SessionError::NotSent(why) | SessionError::Failed(why)) => {
                return Err(format!("`{op}` on host {host}: {why}"));
            }
        };
        let mut idle = self.idle.lock().expect("sessions lock");
        if idle.len() < IDLE_KEPT {
            idle.push(session);
        }
        drop(idle);
        match serde_json::from_str::<ServeAnswer>(&answer) {
            Ok(ServeAnswer::Ok(value)) => Ok(value),
            Ok(ServeAnswer::Error(why)) => Err(format!("`{op}` on host {host} failed: {why}")),
            Err(err) => Err(format!(
                "host {host}'s shepherd answered `{op}` with something else ({err}): {}",
                answer.trim()
            )),
        }
    }
}

/// One `shepherd remote serve` over the master.
struct OpSession {
    child: Child,
    stdin: ChildStdin,
    answers: mpsc::Receiver<String>,
    stderr: Arc<Mutex<String>>,
}

impl OpSession {
    fn open(mut command: Command) -> Result<Self, String> {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|err| format!("cannot run ssh: {err}"))?;
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = child.stdout.take().expect("piped stdout");
        let mut stderr_pipe = child.stderr.take().expect("piped stderr");
        let (send, answers) = mpsc::channel();
        // The readers end with the session: its pipes close when it does.
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if send.send(line).is_err() {
                    return;
                }
            }
        });
        let stderr = Arc::new(Mutex::new(String::new()));
        let kept = stderr.clone();
        std::thread::spawn(move || {
            let mut chunk = [0_u8; 1024];
            while let Ok(read) = stderr_pipe.read(&mut chunk) {
                if read == 0 {
                    return;
                }
                let mut text = kept.lock().expect("stderr lock");
                text.push_str(&String::from_utf8_lossy(&chunk[..read]));
                if text.len() > STDERR_KEPT {
                    let cut = text.len() - STDERR_KEPT;
                    let cut = (cut..text.len())
                        .find(|at| text.is_char_boundary(*at))
                        .unwrap_or(text.len());
                    text.drain(..cut);
                }
            }
        });
        Ok(Self {
            child,
            stdin,
            answers,
            stderr,
        })
    }

    /// Writes one op's line and waits for its answer line until `deadline`.
    fn exchange(&mut self, line: &[u8], deadline: Instant) -> Result<String, SessionError> {
        if let Ok(Some(status)) = self.child.try_wait() {
            return Err(SessionError::NotSent(self.ended(status)));
        }
        if let Err(err) = self.stdin.write_all(line).and_then(|()| self.stdin.flush()) {
            return Err(SessionError::NotSent(format!(
                "the session's input closed: {err}"
            )));
        }
        let wait = deadline.saturating_duration_since(Instant::now());
        match self.answers.recv_timeout(wait) {
            Ok(answer) => Ok(answer),
            Err(RecvTimeoutError::Timeout) => {
                self.end();
                Err(SessionError::Failed(format!(
                    "no answer within {:.1} s",
                    wait.as_secs_f64()
                )))
            }
            Err(RecvTimeoutError::Disconnected) => {
                let status = self.child.wait();
                Err(SessionError::Failed(match status {
                    Ok(status) => self.ended(status),
                    Err(err) => format!("the session cannot be waited for: {err}"),
                }))
            }
        }
    }

    /// What a session that ended says.
    fn ended(&self, status: std::process::ExitStatus) -> String {
        let stderr = self.stderr.lock().expect("stderr lock").trim().to_owned();
        if status.code() == Some(127) {
            format!(
                "`shepherd` is not installed there (or not on its PATH; set `shepherd` in the \
                 host's definition): {stderr}"
            )
        } else {
            format!("the session ended ({status}): {stderr}")
        }
    }

    fn end(&mut self) {
        let _killed = self.child.kill();
        let _reaped = self.child.wait();
    }
}

impl Drop for OpSession {
    fn drop(&mut self) {
        self.end();
    }
}
