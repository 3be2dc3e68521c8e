//! A scripted fake model server, so real coding agents (pi, Claude Code, Codex, Gemini CLI,
//! opencode) run offline and deterministically in Shepherd's tests.
//!
//! It speaks every wire format those agents use, streamed or not, and answers each model
//! request with the next [`Step`] of a [`Script`]:
//!
//! | route | format ([`Api`]) | who |
//! |---|---|---|
//! | `POST …/chat/completions` | OpenAI chat completions, SSE when `stream` | pi, opencode |
//! | `POST …/v1/messages` | Anthropic messages, SSE when `stream` | Claude Code, pi |
//! | `POST …/responses` | OpenAI responses, SSE when `stream` | Codex |
//! | `POST …/models/M:streamGenerateContent` | Gemini, SSE with `?alt=sse`, else a JSON array | Gemini CLI |
//! | `POST …/models/M:generateContent` | Gemini, one JSON body | Gemini CLI |
//! | `POST …/messages/count_tokens`, `…:countTokens` | a fixed count | |
//! | `GET /v1/models` | the queues' model ids | |
//!
//! A request's `model` (for Gemini, the model in the path) picks its queue, so one server
//! scripts a parent agent and each of its sheep separately (one model id each). Every request
//! is recorded with its format, query and headers ([`RecordedRequest`]), and read the same way
//! whatever its format (the last user message or tool result, the tools offered, the tool
//! results in the conversation). A provider error is a step with `error`: the status and
//! message in each API's own error shape (use a 4xx: every agent retries 5xx and 429 for a
//! while). Control endpoints, for scripts driving the `shepherd-fake-llm` binary:
//!
//! | route | effect |
//! |---|---|
//! | `POST /_script` | replace the script (the request record stays) |
//! | `POST /_append` | `{"queue"?: model, "responses": [STEP...]}`: append to a queue |
//! | `POST /_release` | `{"gate": name}`: let replies held by `"hold": name` go on |
//! | `POST /_limits` | replace the rate limits ([`Limits`], JSON below) |
//! | `GET /_limits` | the rate limits, with the usage-limit replies still to send |
//! | `GET /_requests` | every model request so far, in order ([`RecordedRequest`]) |
//! | `GET /_state` | `{"served", "pending": {queue: steps left}, "mismatches", "limited": {credential: refusals}, "limited_replies": [LimitedReply...]}` |
//!
//! Rate-limit mode ([`Limits`], off by default; [`Options::limits`], [`FakeLlm::set_limits`] or
//! `POST /_limits`) refuses model requests the way providers do, per credential (the
//! `x-api-key`, `authorization: Bearer`, `x-goog-api-key` header or `key=` query parameter;
//! [`ANONYMOUS`] without one), before any script step is taken:
//!
//! | policy (JSON) | refuses | reply |
//! |---|---|---|
//! | `"max_in_flight": N` | a request while N of its credential are being answered (held and delayed ones too) | 429 rate limit |
//! | `"requests": R, "window_ms": W` | past R admitted requests per credential per fixed window (default 60000) | 429 rate limit |
//! | `"retry_after_ms": MS` | | the wait announced (default: the window's rest, or 1 s) |
//! | `"overloaded": true` | | 529 `overloaded_error` (Anthropic), 503 (OpenAI, Gemini) instead |
//! | `"usage_limits": [{"count"?: K, "credential"?, "model"?, "reset_in_ms"?}]` | the next K matching requests (default 1, resetting in an hour) | 429 usage limit |
//!
//! Each reply has the provider's body: Anthropic `rate_limit_error` (a usage limit adds
//! `anthropic-ratelimit-unified-status: rejected` and `anthropic-ratelimit-unified-reset`),
//! OpenAI `rate_limit_exceeded` (usage: `usage_limit_reached` with `resets_at` and
//! `resets_in_seconds`), Gemini `RESOURCE_EXHAUSTED` with a `RetryInfo` (usage: a daily
//! `QuotaFailure`). Every reply carries `retry-after` (whole seconds, at least 1) and
//! `retry-after-ms`; a rate limit adds `x-ratelimit-*-requests` (OpenAI) or
//! `anthropic-ratelimit-requests-*` (reset as RFC 3339). Streamed requests get the same plain
//! JSON reply. A refused request takes no step, is recorded with
//! [`RecordedRequest::limited`] set, and is counted ([`FakeLlm::limited`],
//! [`FakeLlm::limited_replies`] with the time of each). A fatal bad-key reply is a script step:
//! [`Step::unauthorized`].
//!
//! In Rust tests use [`FakeLlm`] directly: it binds 127.0.0.1 on a free port, and stops when
//! dropped. Waiting for requests is an event with a deadline ([`FakeLlm::wait_for_requests`]).

mod http;
mod limits;
#[cfg(test)]
mod limits_tests;
mod request;
mod server;
mod state;
mod wire;

pub mod client;
pub mod script;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs::OpenOptions;
use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::Duration;

use serde_json::Value;

pub use limits::{LimitedReply, Limits, UsageLimit};
pub use request::{ANONYMOUS, Api, LimitReason, Limited, OfferedTool, RecordedRequest, credential};
pub use script::{ErrorReply, Exhausted, NameMatch, Script, Step, ToolCall, Usage};
pub use state::{DEFAULT_QUEUE, Mismatch, MismatchKind, TOOLLESS_QUEUE};

use server::Shared;

/// Where and how the server runs.
#[derive(Debug, Clone)]
pub struct Options {
    /// The address to bind (default 127.0.0.1; keep it on loopback).
    pub host: IpAddr,
    /// The port (default 0: a free one, so parallel tests never collide).
    pub port: u16,
    /// Append every model request to this file as a JSON line.
    pub log: Option<PathBuf>,
    /// The rate limits to start with (none by default).
    pub limits: Limits,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            host: IpAddr::V4(Ipv4Addr::LOCALHOST),
            port: 0,
            log: None,
            limits: Limits::default(),
        }
    }
}

/// What can go wrong with the fake server.
#[derive(Debug, thiserror::Error)]
pub enum FakeLlmError {
    /// The listening socket or the log file could not be set up.
    #[error("fake model server: {what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// Why it failed.
        source: io::Error,
    },
    /// A wait passed its deadline.
    #[error(
        "fake model server: timed out after {waited:?} waiting for {what}; received:{received}"
    )]
    Timeout {
        /// What was awaited.
        what: String,
        /// How long.
        waited: Duration,
        /// One line per request received, to see what did arrive.
        received: String,
    },
}

/// A running fake model server; stops when dropped.
#[derive(Debug)]
pub struct FakeLlm {
    shared: Arc<Shared>,
    addr: SocketAddr,
    accept: Option<JoinHandle<()>>,
}

impl FakeLlm {
    /// Starts a server on 127.0.0.1 and a free port.
    ///
    /// # Errors
    /// When no socket can be bound.
    pub fn start(script: Script) -> Result<Self, FakeLlmError> {
        Self::start_with(script, &Options::default())
    }

    /// Starts a server with explicit options.
    ///
    /// # Errors
    /// When the socket cannot be bound or the log file cannot be opened.
    pub fn start_with(script: Script, options: &Options) -> Result<Self, FakeLlmError> {
        let mut state = state::State::default();
        state.load(script);
        state.limiter.set(options.limits.clone());
        if let Some(path) = &options.log {
            let file = OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(|source| FakeLlmError::Io {
                    what: format!("opening the log {}", path.display()),
                    source,
                })?;
            state.log = Some(file);
        }
        let io_error = |what: &str| {
            let what = what.to_owned();
            move |source| FakeLlmError::Io { what, source }
        };
        let listener = TcpListener::bind((options.host, options.port)).map_err(io_error(
            &format!("binding {}:{}", options.host, options.port),
        ))?;
        let addr = listener
            .local_addr()
            .map_err(io_error("reading the bound address"))?;
        let shared = Arc::new(Shared::new(state));
        let accept = {
            let shared = Arc::clone(&shared);
            thread::Builder::new()
                .name("fake-llm-accept".to_owned())
                .spawn(move || server::accept_loop(&listener, &shared))
                .map_err(io_error("starting the accept thread"))?
        };
        Ok(Self {
            shared,
            addr,
            accept: Some(accept),
        })
    }

    /// The bound port.
    #[must_use]
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// `http://127.0.0.1:<port>`: the base URL for Anthropic clients (they add `/v1/messages`)
    /// and Gemini clients (they add `/v1beta/models/…`).
    #[must_use]
    pub fn url(&self) -> String {
        format!("http://{}", self.connect_addr())
    }

    /// `http://127.0.0.1:<port>/v1`: the base URL for OpenAI clients.
    #[must_use]
    pub fn openai_base_url(&self) -> String {
        format!("{}/v1", self.url())
    }

    fn connect_addr(&self) -> SocketAddr {
        let mut addr = self.addr;
        if addr.ip().is_unspecified() {
            addr.set_ip(IpAddr::V4(Ipv4Addr::LOCALHOST));
        }
        addr
    }

    /// Every model request so far, in arrival order.
    #[must_use]
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.lock().requests.clone()
    }

    /// The model requests that named `model`.
    #[must_use]
    pub fn requests_for(&self, model: &str) -> Vec<RecordedRequest> {
        let state = self.shared.lock();
        state
            .requests
            .iter()
            .filter(|r| r.model == model)
            .cloned()
            .collect()
    }

    /// Waits until at least `count` model requests have arrived; returns them all.
    ///
    /// # Errors
    /// [`FakeLlmError::Timeout`] when fewer arrived within `timeout`.
    pub fn wait_for_requests(
        &self,
        count: usize,
        timeout: Duration,
    ) -> Result<Vec<RecordedRequest>, FakeLlmError> {
        self.wait_until(&format!("{count} model requests"), timeout, |requests| {
            requests.len() >= count
        })
    }

    /// Waits until `done` holds for the requests received so far; returns them all.
    ///
    /// # Errors
    /// [`FakeLlmError::Timeout`] when it does not hold within `timeout` (the error lists what
    /// arrived).
    pub fn wait_until(
        &self,
        what: &str,
        timeout: Duration,
        mut done: impl FnMut(&[RecordedRequest]) -> bool,
    ) -> Result<Vec<RecordedRequest>, FakeLlmError> {
        server::wait_until(&self.shared, timeout, |state| {
            done(&state.requests).then(|| state.requests.clone())
        })
        .map_err(|state| FakeLlmError::Timeout {
            what: what.to_owned(),
            waited: timeout,
            received: summary(&state.requests),
        })
    }

    /// Replaces the script; the request record and mismatches stay.
    pub fn set_script(&self, script: Script) {
        self.shared.lock().load(script);
    }

    /// Appends steps to the queue of `model` (creating it).
    pub fn append(&self, model: &str, steps: impl IntoIterator<Item = Step>) {
        self.shared.lock().append(Some(model), steps);
    }

    /// Appends steps to the default queue.
    pub fn append_default(&self, steps: impl IntoIterator<Item = Step>) {
        self.shared.lock().append(None, steps);
    }

    /// Opens `gate`: replies of steps with `"hold": gate` go on, now and later.
    pub fn release(&self, gate: &str) {
        self.shared.release(gate);
    }

    /// Replaces the rate limits. The windows start afresh; requests in flight and the record
    /// of refusals stay.
    pub fn set_limits(&self, limits: Limits) {
        self.shared.lock().limiter.set(limits);
    }

    /// The rate limits, with the usage-limit replies still to send.
    #[must_use]
    pub fn limits(&self) -> Limits {
        self.shared.lock().limiter.limits().clone()
    }

    /// How many requests each credential got refused by the rate limiter.
    #[must_use]
    pub fn limited(&self) -> BTreeMap<String, usize> {
        self.shared.lock().limiter.counts()
    }

    /// Every refusal so far, in order, with when it was sent.
    #[must_use]
    pub fn limited_replies(&self) -> Vec<LimitedReply> {
        self.shared.lock().limiter.replies().to_vec()
    }

    /// Every `expect` that did not match, and every request that found its queue exhausted.
    #[must_use]
    pub fn mismatches(&self) -> Vec<Mismatch> {
        self.shared.lock().mismatches.clone()
    }

    /// Steps left per queue ([`DEFAULT_QUEUE`] is `responses`).
    #[must_use]
    pub fn pending(&self) -> BTreeMap<String, usize> {
        self.shared.lock().pending()
    }

    /// The body `GET /_state` returns.
    #[must_use]
    pub fn state(&self) -> Value {
        self.shared.lock().snapshot()
    }
}

impl Drop for FakeLlm {
    fn drop(&mut self) {
        self.shared.stop();
        // The accept loop blocks in accept(); a connection wakes it to see the stop flag.
        if TcpStream::connect_timeout(&self.connect_addr(), Duration::from_secs(5)).is_ok()
            && let Some(accept) = self.accept.take()
        {
            // A panic in the accept loop has nothing left to report here.
            drop(accept.join());
        }
    }
}

/// One line per request: its number, model and the end of its last input text.
fn summary(requests: &[RecordedRequest]) -> String {
    if requests.is_empty() {
        return " nothing".to_owned();
    }
    let mut out = String::new();
    for request in requests {
        let text = request.last_input_text();
        let start = text
            .char_indices()
            .rev()
            .nth(79)
            .map_or(0, |(index, _)| index);
        let _ = write!(
            out,
            "\n  #{} model {:?} ({}): ...{:?}",
            request.seq,
            request.model,
            request.path,
            &text[start..]
        );
    }
    out
}
