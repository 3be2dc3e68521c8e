//! Long op sessions over a host's link: one `shepherd remote serve` answers many ops.
//!
//! An op run alone is an SSH session of its own over the master: a login shell and a
//! `shepherd` start on the host for every step. One task delegated to a host sheep took three
//! (the session's copy, its read-back, the last read before the note is finalised), each a
//! line in the host's sshd log and tens of milliseconds. A `serve` session stays open beside
//! the master and answers one JSON line per op instead. A call takes an idle session or opens
//! one, and gives it back when answered: steps in a row share one session, steps that run at
//! once still run at once, up to a bound the host's sshd allows. A session that does not
//! answer by its step's deadline, or whose line cannot be written, is ended, never reused.

// The sessions are `ssh` processes this module owns.
#![allow(clippy::disallowed_types)]

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

use super::ops::{ServeAnswer, ServeFrame};

/// How many sessions one link holds open at most; a step beyond waits for one. OpenSSH's
/// server allows ten sessions per connection by default (`MaxSessions`), and git's own steps
/// over the master (a branch brought home) need room beside these.
const OPEN_AT_MOST: usize = 6;
/// How many answered sessions are kept for the next steps; more (left by steps that ran at
/// once) are ended when answered.
const IDLE_KEPT: usize = 2;
/// How much of a session's standard error is kept to say why it ended.
const STDERR_KEPT: usize = 4096;

/// The sessions of one link.
#[derive(Default)]
pub(crate) struct OpSessions {
    pool: Mutex<Pool>,
    returned: Condvar,
}

#[derive(Default)]
struct Pool {
    idle: Vec<OpSession>,
    /// Sessions open: idle, or answering a step.
    open: usize,
    /// Steps waiting for a session: one given back goes to them, never ended.
    waiting: usize,
}

/// Why a step over a session failed.
#[derive(Debug)]
enum SessionError {
    /// The op's line never reached the host: the step may be tried again.
    NotSent(String),
    /// The host took the line, or may have: the step failed.
    Failed(String),
}

impl OpSessions {
    /// Ends every idle session (the master they ran over is gone, or the link is retired).
    pub(crate) fn clear(&self) {
        let mut pool = self.pool.lock().expect("sessions lock");
        pool.open -= pool.idle.len();
        pool.idle.clear();
        drop(pool);
        self.returned.notify_all();
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
        let fail = |why: String| format!("`{op}` on host {host}: {why}");
        let frame = ServeFrame {
            op: op.to_owned(),
            request,
        };
        let mut line = serde_json::to_vec(&frame).expect("frames serialise");
        line.push(b'\n');
        let mut session = match self.take(deadline).map_err(fail)? {
            Some(session) => session,
            None => self.open(&open).map_err(fail)?,
        };
        let mut answer = session.exchange(&line, deadline);
        if let Err(SessionError::NotSent(_)) = answer {
            drop(session);
            session = self.open(&open).map_err(fail)?;
            answer = session.exchange(&line, deadline);
        }
        let answer = match answer {
            Ok(answer) => {
                self.give_back(session);
                answer
            }
            Err(SessionError::NotSent(why) | SessionError::Failed(why)) => {
                drop(session);
                self.forget_one();
                return Err(fail(why));
            }
        };
        match serde_json::from_str::<ServeAnswer>(&answer) {
            Ok(ServeAnswer::Ok(value)) => Ok(value),
            Ok(ServeAnswer::Error(why)) => Err(format!("`{op}` on host {host} failed: {why}")),
            Err(err) => Err(format!(
                "host {host}'s shepherd answered `{op}` with something else ({err}): {}",
                answer.trim()
            )),
        }
    }

    /// An idle session, or `None` with room counted for a new one; waits while the link has
    /// as many open as it may.
    fn take(&self, deadline: Instant) -> Result<Option<OpSession>, String> {
        let mut pool = self.pool.lock().expect("sessions lock");
        loop {
            if let Some(session) = pool.idle.pop() {
                return Ok(Some(session));
            }
            if pool.open < OPEN_AT_MOST {
                pool.open += 1;
                return Ok(None);
            }
            let wait = deadline.saturating_duration_since(Instant::now());
            if wait.is_zero() {
                return Err(format!(
                    "all {OPEN_AT_MOST} of the link's sessions stayed busy until the step's \
                     deadline"
                ));
            }
            pool.waiting += 1;
            pool = self
                .returned
                .wait_timeout(pool, wait)
                .expect("sessions lock")
                .0;
            pool.waiting -= 1;
        }
    }

    /// Opens a session in room already counted; gives the room back if it cannot.
    fn open(&self, open: &impl Fn() -> Command) -> Result<OpSession, String> {
        OpSession::open(open()).inspect_err(|_| self.forget_one())
    }

    fn give_back(&self, session: OpSession) {
        let mut pool = self.pool.lock().expect("sessions lock");
        if pool.idle.len() < IDLE_KEPT.max(pool.waiting) {
            pool.idle.push(session);
        } else {
            pool.open -= 1;
            drop(session);
        }
        drop(pool);
        self.returned.notify_one();
    }

    /// A session counted open has ended.
    fn forget_one(&self) {
        let mut pool = self.pool.lock().expect("sessions lock");
        pool.open = pool.open.saturating_sub(1);
        drop(pool);
        self.returned.notify_one();
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

#[cfg(test)]
mod tests {
    use super::{OPEN_AT_MOST, OpSessions};
    use std::process::Command;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::{Duration, Instant};

    /// A stand-in for `shepherd remote serve`: answers each line after `pause` seconds, and
    /// ends after `lines` of them.
    fn server(pause: &str, lines: usize) -> Command {
        let mut command = Command::new("sh");
        command.args([
            "-c",
            &format!(
                "i=0; while [ $i -lt {lines} ] && read -r line; do sleep {pause}; \
                 echo '{{\"ok\":{{\"pid\":'$$'}}}}'; i=$((i+1)); done"
            ),
        ]);
        command
    }

    fn pid_of(answer: &serde_json::Value) -> u64 {
        answer["pid"].as_u64().unwrap()
    }

    #[test]
    fn steps_in_a_row_share_one_session_and_a_dead_one_is_replaced() {
        let sessions = OpSessions::default();
        let opened = AtomicUsize::new(0);
        let open = || {
            opened.fetch_add(1, Ordering::SeqCst);
            server("0", 3)
        };
        let deadline = || Instant::now() + Duration::from_secs(10);
        let call = || {
            sessions
                .call("devbox", open, "files", serde_json::json!({}), deadline())
                .map(|answer| pid_of(&answer))
        };
        let first = call().unwrap();
        assert_eq!(call().unwrap(), first);
        assert_eq!(call().unwrap(), first);
        assert_eq!(opened.load(Ordering::SeqCst), 1);
        // That session has answered all it will and ends; once it has, the next step gets a
        // new one.
        let gone = Instant::now() + Duration::from_secs(10);
        let running = || {
            fs_err::read_to_string(format!("/proc/{first}/stat"))
                .is_ok_and(|stat| !stat.rsplit(") ").next().unwrap_or("").starts_with('Z'))
        };
        while running() {
            assert!(Instant::now() < gone, "the session's process never ended");
            std::thread::sleep(Duration::from_millis(10));
        }
        let next = call().unwrap();
        assert_ne!(next, first);
        assert_eq!(opened.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn steps_at_once_open_no_more_sessions_than_the_bound() {
        let sessions = OpSessions::default();
        let opened = AtomicUsize::new(0);
        let open = || {
            opened.fetch_add(1, Ordering::SeqCst);
            server("0.5", 100)
        };
        std::thread::scope(|scope| {
            for _ in 0..OPEN_AT_MOST * 2 {
                scope.spawn(|| {
                    sessions
                        .call(
                            "devbox",
                            open,
                            "files",
                            serde_json::json!({}),
                            Instant::now() + Duration::from_secs(20),
                        )
                        .unwrap()
                });
            }
        });
        // The steps beyond the bound waited, and took the sessions given back.
        assert_eq!(opened.load(Ordering::SeqCst), OPEN_AT_MOST);
    }

    #[test]
    fn a_session_that_does_not_answer_in_time_fails_its_step_and_is_not_reused() {
        let sessions = OpSessions::default();
        let opened = AtomicUsize::new(0);
        let slow = || {
            opened.fetch_add(1, Ordering::SeqCst);
            server("30", 100)
        };
        let err = sessions
            .call(
                "devbox",
                slow,
                "files",
                serde_json::json!({}),
                Instant::now() + Duration::from_millis(300),
            )
            .unwrap_err();
        assert!(
            err.contains("`files` on host devbox: no answer within"),
            "{err}"
        );
        let quick = || {
            opened.fetch_add(1, Ordering::SeqCst);
            server("0", 100)
        };
        sessions
            .call(
                "devbox",
                quick,
                "files",
                serde_json::json!({}),
                Instant::now() + Duration::from_secs(10),
            )
            .unwrap();
        assert_eq!(opened.load(Ordering::SeqCst), 2);
    }
}
