//! A synchronous client for Herdr's socket API.
//!
//! Herdr closes the stream after each reply (a second request on the same connection fails
//! with `EPIPE`), so every call opens its own connection, writes one JSON line, reads one JSON
//! line back and drops the connection — it never waits for the server to close, and it copes
//! with a reply that ends at EOF instead of a newline. Every call has a deadline: the
//! client's per-call timeout, shortened to the caller's deadline when that is sooner. The
//! backend runs on the broker's blocking threads, so plain `std` sockets with read and write
//! timeouts are all it needs.

use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::error::{ErrorCode, HerdrError};

/// How long one call may take unless the caller's deadline is sooner.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(5);

/// The largest reply line accepted (a full scrollback read is far smaller).
const MAX_REPLY_BYTES: u64 = 64 * 1024 * 1024;

/// A connection to one Herdr socket.
#[derive(Debug)]
pub struct HerdrClient {
    socket: PathBuf,
    timeout: Duration,
    next_id: AtomicU64,
}

impl Clone for HerdrClient {
    fn clone(&self) -> Self {
        Self::new(self.socket.clone()).with_timeout(self.timeout)
    }
}

/// A subscription: the open stream, past its acknowledgement, ready for event lines.
pub(crate) struct Subscription {
    pub(crate) reader: BufReader<UnixStream>,
}

impl HerdrClient {
    /// A client for the socket at `socket`.
    pub fn new(socket: impl Into<PathBuf>) -> Self {
        Self {
            socket: socket.into(),
            timeout: DEFAULT_CALL_TIMEOUT,
            next_id: AtomicU64::new(1),
        }
    }

    /// The same client with another per-call timeout.
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// A client for another socket, with the same timeout.
    pub fn clone_for(&self, socket: impl Into<PathBuf>) -> Self {
        Self::new(socket).with_timeout(self.timeout)
    }

    /// The socket.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// Sends one request and returns its `result`, or Herdr's structured error.
    pub fn request(
        &self,
        method: &str,
        params: &Value,
        deadline: Option<Instant>,
    ) -> Result<Value, HerdrError> {
        let (_reader, line) = self.exchange(method, params, deadline)?;
        parse_reply(method, &line)
    }

    /// [`Self::request`], with the result deserialised into `T`.
    pub fn call<T: DeserializeOwned>(
        &self,
        method: &str,
        params: &Value,
        deadline: Option<Instant>,
    ) -> Result<T, HerdrError> {
        let result = self.request(method, params, deadline)?;
        serde_json::from_value(result).map_err(|err| HerdrError::Protocol {
            method: method.to_owned(),
            detail: err.to_string(),
        })
    }

    /// Opens an `events.subscribe` stream and waits for its acknowledgement. The returned
    /// stream has no read timeout: events arrive whenever they happen.
    pub(crate) fn subscribe(
        &self,
        subscriptions: &[Value],
        deadline: Option<Instant>,
    ) -> Result<Subscription, HerdrError> {
        const METHOD: &str = "events.subscribe";
        let params = json!({ "subscriptions": subscriptions });
        let (reader, line) = self.exchange(METHOD, &params, deadline)?;
        parse_reply(METHOD, &line)?;
        reader
            .get_ref()
            .set_read_timeout(None)
            .map_err(|source| self.io(METHOD, source))?;
        Ok(Subscription { reader })
    }

    /// Sends one request and reads one reply line, all before the deadline; a timeout names
    /// the time this call actually had.
    fn exchange(
        &self,
        method: &str,
        params: &Value,
        deadline: Option<Instant>,
    ) -> Result<(BufReader<UnixStream>, Vec<u8>), HerdrError> {
        let started = Instant::now();
        let deadline = self.deadline(deadline);
        let result = self.send(method, params, deadline).and_then(|mut reader| {
            let line = self.read_line(&mut reader, method, deadline)?;
            Ok((reader, line))
        });
        result.map_err(|err| match err {
            HerdrError::TimedOut { path, method, .. } => HerdrError::TimedOut {
                path,
                method,
                timeout_ms: deadline.saturating_duration_since(started).as_millis(),
            },
            other => other,
        })
    }

    fn deadline(&self, deadline: Option<Instant>) -> Instant {
        let own = Instant::now() + self.timeout;
        deadline.map_or(own, |deadline| deadline.min(own))
    }

    fn io(&self, method: &str, source: std::io::Error) -> HerdrError {
        HerdrError::Io {
            path: self.socket.clone(),
            method: method.to_owned(),
            source,
        }
    }

    fn timed_out(&self, method: &str) -> HerdrError {
        HerdrError::TimedOut {
            path: self.socket.clone(),
            method: method.to_owned(),
            timeout_ms: self.timeout.as_millis(),
        }
    }

    /// Connects and writes the request line.
    fn send(
        &self,
        method: &str,
        params: &Value,
        deadline: Instant,
    ) -> Result<BufReader<UnixStream>, HerdrError> {
        let stream =
            UnixStream::connect(&self.socket).map_err(|source| HerdrError::Unreachable {
                path: self.socket.clone(),
                source,
            })?;
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut line = serde_json::to_vec(&json!({
            "id": format!("shepherd:{id}"),
            "method": method,
            "params": params,
        }))
        .map_err(|err| HerdrError::Protocol {
            method: method.to_owned(),
            detail: err.to_string(),
        })?;
        line.push(b'\n');
        let left = remaining(deadline).ok_or_else(|| self.timed_out(method))?;
        stream
            .set_write_timeout(Some(left))
            .map_err(|source| self.io(method, source))?;
        (&stream).write_all(&line).map_err(|source| {
            if is_timeout(&source) {
                self.timed_out(method)
            } else {
                self.io(method, source)
            }
        })?;
        Ok(BufReader::new(stream))
    }

    /// Reads one reply line, ending at a newline or at EOF, before `deadline`.
    fn read_line(
        &self,
        reader: &mut BufReader<UnixStream>,
        method: &str,
        deadline: Instant,
    ) -> Result<Vec<u8>, HerdrError> {
        let mut line = Vec::new();
        loop {
            let left = remaining(deadline).ok_or_else(|| self.timed_out(method))?;
            reader
                .get_ref()
                .set_read_timeout(Some(left))
                .map_err(|source| self.io(method, source))?;
            let budget = MAX_REPLY_BYTES.saturating_sub(line.len() as u64);
            match reader.by_ref().take(budget).read_until(b'\n', &mut line) {
                Ok(0) if line.is_empty() => {
                    return Err(HerdrError::NoReply {
                        path: self.socket.clone(),
                        method: method.to_owned(),
                    });
                }
                // A newline, or EOF before the byte budget ran out, ends the reply.
                Ok(read) if line.last() == Some(&b'\n') || (read as u64) < budget => {
                    return Ok(line);
                }
                Ok(_) => {
                    return Err(HerdrError::Protocol {
                        method: method.to_owned(),
                        detail: format!("the reply is longer than {MAX_REPLY_BYTES} bytes"),
                    });
                }
                Err(err) if err.kind() == ErrorKind::Interrupted => {}
                Err(err) if is_timeout(&err) => {}
                Err(err) => return Err(self.io(method, err)),
            }
        }
    }
}

fn remaining(deadline: Instant) -> Option<Duration> {
    let left = deadline.saturating_duration_since(Instant::now());
    (!left.is_zero()).then_some(left)
}

fn is_timeout(err: &std::io::Error) -> bool {
    matches!(err.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut)
}

#[derive(Deserialize)]
struct Reply {
    #[serde(default)]
    result: Option<Value>,
    #[serde(default)]
    error: Option<ErrorBody>,
}

#[derive(Default, Deserialize)]
#[serde(default)]
struct ErrorBody {
    code: String,
    message: String,
}

/// `{"result":..}` → the result; `{"error":{code,message}}` → [`HerdrError::Api`].
pub(crate) fn parse_reply(method: &str, line: &[u8]) -> Result<Value, HerdrError> {
    let reply: Reply = serde_json::from_slice(line).map_err(|err| HerdrError::Protocol {
        method: method.to_owned(),
        detail: format!("{err} in {:?}", String::from_utf8_lossy(line).trim_end()),
    })?;
    match (reply.error, reply.result) {
        (Some(error), _) => Err(HerdrError::Api {
            method: method.to_owned(),
            code: ErrorCode::parse(&error.code),
            message: error.message,
        }),
        (None, Some(result)) => Ok(result),
        (None, None) => Err(HerdrError::Protocol {
            method: method.to_owned(),
            detail: "the reply has neither `result` nor `error`".into(),
        }),
    }
}
