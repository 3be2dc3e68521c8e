//! Driving `pi --mode rpc` from a test: JSON commands on stdin, responses and events on stdout,
//! every wait bounded by a deadline.
//!
//! Headless pi sheep run in RPC mode, so tests need to send prompts, wait for the end of a run
//! (which differs between pi versions) and read the answer. Lines are split on `\n` only, as
//! pi's protocol requires (its JSON may hold U+2028).

use std::io::{BufRead, BufReader, Write};
use std::process::{ChildStdin, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::env::PiEnv;
use super::process::{Collected, Process};
use super::{PiBinary, PiError, PiVersion, io_err};

/// A running `pi --mode rpc`. Dropping it kills pi; [`close`](Self::close) ends it in order.
#[derive(Debug)]
pub struct PiRpc {
    version: PiVersion,
    process: Process,
    stdin: Option<ChildStdin>,
    lines: Receiver<Value>,
    stderr: Collected,
    records: Vec<Value>,
    /// Index of the first record [`wait_for`](Self::wait_for) has not passed yet.
    cursor: usize,
    next_id: u64,
}

fn kind(record: &Value) -> &str {
    record.get("type").and_then(Value::as_str).unwrap_or("")
}

impl PiRpc {
    /// Starts `pi --mode rpc` in `env` with extra arguments (e.g. `--model`, `--session`).
    ///
    /// # Errors
    /// When pi cannot be started.
    pub fn spawn(env: &PiEnv, pi: &PiBinary, args: &[&str]) -> Result<Self, PiError> {
        let mut command = env.command(pi);
        command
            .args(["--mode", "rpc"])
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let (process, pipes) = Process::spawn(&mut command)
            .map_err(io_err(format!("starting {}", pi.path.display())))?;
        let stderr = pipes
            .stderr
            .map(|pipe| Collected::start(pipe).0)
            .unwrap_or_default();
        let (send, lines) = mpsc::channel();
        if let Some(stdout) = pipes.stdout {
            thread::spawn(move || {
                let mut reader = BufReader::new(stdout);
                let mut line = Vec::new();
                while matches!(reader.read_until(b'\n', &mut line), Ok(1..)) {
                    let text = String::from_utf8_lossy(&line);
                    let text = text.trim_end_matches(['\r', '\n']);
                    let record = serde_json::from_str(text)
                        .unwrap_or_else(|_| Value::String(text.to_owned()));
                    if send.send(record).is_err() {
                        break;
                    }
                    line.clear();
                }
            });
        }
        Ok(Self {
            version: pi.version,
            process,
            stdin: pipes.stdin,
            lines,
            stderr,
            records: Vec::new(),
            cursor: 0,
            next_id: 0,
        })
    }

    /// The pi version running.
    #[must_use]
    pub fn version(&self) -> PiVersion {
        self.version
    }

    /// Every record pi wrote so far (responses and events; a line that is not JSON is kept as
    /// a JSON string).
    #[must_use]
    pub fn records(&self) -> &[Value] {
        &self.records
    }

    /// What pi wrote on stderr so far.
    #[must_use]
    pub fn stderr(&self) -> String {
        self.stderr.text()
    }

    /// Writes one command line.
    ///
    /// # Errors
    /// When pi's stdin is closed.
    pub fn send(&mut self, command: &Value) -> Result<(), PiError> {
        let stdin = self.stdin.as_mut().ok_or_else(|| PiError::Exited {
            what: "stdin to accept a command".to_owned(),
            stderr: String::new(),
        })?;
        let mut line = command.to_string();
        line.push('\n');
        stdin
            .write_all(line.as_bytes())
            .and_then(|()| stdin.flush())
            .map_err(io_err("writing to pi's stdin"))
    }

    /// Receives one more record before `deadline`.
    fn receive(&mut self, what: &str, timeout: Duration, deadline: Instant) -> Result<(), PiError> {
        let left = deadline.saturating_duration_since(Instant::now());
        match self.lines.recv_timeout(left) {
            Ok(record) => {
                self.records.push(record);
                Ok(())
            }
            Err(RecvTimeoutError::Timeout) => Err(PiError::Timeout {
                what: what.to_owned(),
                waited: timeout,
                stderr: self.stderr(),
            }),
            Err(RecvTimeoutError::Disconnected) => Err(PiError::Exited {
                what: what.to_owned(),
                stderr: self.stderr(),
            }),
        }
    }

    /// Sends `command` with a fresh `id` and waits for its response (whether it succeeded or
    /// not: check `success`). Events that arrive meanwhile stay for [`wait_for`](Self::wait_for).
    ///
    /// # Errors
    /// On a timeout, or when pi exits first.
    pub fn call(&mut self, mut command: Value, timeout: Duration) -> Result<Value, PiError> {
        let deadline = Instant::now() + timeout;
        self.next_id += 1;
        let id = format!("test-{}", self.next_id);
        command["id"] = json!(id);
        self.send(&command)?;
        let what = format!("the response to {command}");
        let mut seen = self.records.len();
        loop {
            if let Some(response) = self.records[seen..]
                .iter()
                .find(|r| kind(r) == "response" && r["id"] == json!(id))
            {
                return Ok(response.clone());
            }
            seen = self.records.len();
            self.receive(&what, timeout, deadline)?;
        }
    }

    /// Waits for the next record (after those already passed) that satisfies `matches`.
    ///
    /// # Errors
    /// On a timeout (pi is left running), or when pi exits first.
    pub fn wait_for(
        &mut self,
        what: &str,
        timeout: Duration,
        mut matches: impl FnMut(&Value) -> bool,
    ) -> Result<Value, PiError> {
        let deadline = Instant::now() + timeout;
        loop {
            while self.cursor < self.records.len() {
                let record = &self.records[self.cursor];
                self.cursor += 1;
                if matches(record) {
                    return Ok(record.clone());
                }
            }
            self.receive(what, timeout, deadline)?;
        }
    }

    /// Waits for the next event of type `event_type`.
    ///
    /// # Errors
    /// As [`wait_for`](Self::wait_for).
    pub fn wait_for_event(
        &mut self,
        event_type: &str,
        timeout: Duration,
    ) -> Result<Value, PiError> {
        self.wait_for(&format!("a {event_type} event"), timeout, |r| {
            kind(r) == event_type
        })
    }

    /// Sends a `prompt` and checks that pi accepted it.
    ///
    /// # Errors
    /// As [`call`](Self::call), and [`PiError::Protocol`] when pi refused the prompt.
    pub fn prompt(&mut self, message: &str, timeout: Duration) -> Result<Value, PiError> {
        let response = self.call(json!({"type": "prompt", "message": message}), timeout)?;
        if response["success"] == json!(true) {
            Ok(response)
        } else {
            Err(PiError::Protocol(format!("prompt refused: {response}")))
        }
    }

    /// Waits until the current run has finished for good, and returns the records from where
    /// the wait started to the finishing one.
    ///
    /// On 1.x that is `agent_settled`. On 0.73 it is an `agent_end` after which pi starts no
    /// retry or compaction: pi emits `auto_retry_start` / `compaction_start` synchronously
    /// after `agent_end`, so a `get_state` answered with no such event in between (and
    /// `isStreaming` / `isCompacting` false) proves the run is over.
    ///
    /// # Errors
    /// On a timeout, when pi exits first, or when `get_state` contradicts the events.
    pub fn wait_run_finished(&mut self, timeout: Duration) -> Result<Vec<Value>, PiError> {
        let deadline = Instant::now() + timeout;
        let start = self.cursor;
        let left = || deadline.saturating_duration_since(Instant::now());
        if self.version.emits_agent_settled() {
            self.wait_for_event("agent_settled", left())?;
            return Ok(self.records[start..self.cursor].to_vec());
        }
        loop {
            let end = self.wait_for("agent_end (or the end of a compaction)", left(), |r| {
                matches!(kind(r), "agent_end" | "compaction_end")
            })?;
            if end["willRetry"] == json!(true) {
                continue;
            }
            let before = self.records.len();
            let state = self.call(json!({"type": "get_state"}), left())?;
            let continued = self.records[before..]
                .iter()
                .any(|r| matches!(kind(r), "auto_retry_start" | "compaction_start"));
            if continued {
                continue;
            }
            let data = &state["data"];
            if data["isStreaming"] != json!(false) || data["isCompacting"] != json!(false) {
                return Err(PiError::Protocol(format!(
                    "agent_end with no retry or compaction, but get_state says {state}"
                )));
            }
            self.cursor = self.cursor.max(before);
            return Ok(self.records[start..before].to_vec());
        }
    }

    /// `get_last_assistant_text`: the final assistant text of the session, if any.
    ///
    /// # Errors
    /// As [`call`](Self::call).
    pub fn last_assistant_text(&mut self, timeout: Duration) -> Result<Option<String>, PiError> {
        let response = self.call(json!({"type": "get_last_assistant_text"}), timeout)?;
        Ok(response["data"]["text"].as_str().map(str::to_owned))
    }

    /// Closes stdin (pi's orderly shutdown) and waits for pi to exit; kills it after `timeout`.
    ///
    /// # Errors
    /// [`PiError::Timeout`] when pi did not exit in time.
    pub fn close(mut self, timeout: Duration) -> Result<ExitStatus, PiError> {
        drop(self.stdin.take());
        match self.process.wait(Instant::now() + timeout) {
            Some(status) => Ok(status),
            None => Err(PiError::Timeout {
                what: "pi to exit after its stdin closed".to_owned(),
                waited: timeout,
                stderr: self.stderr(),
            }),
        }
    }
}
