//! The fake model server's threads: an accept loop, one thread per connection, and the routes.
//!
//! Plain std threads keep the test kit free of an async stack; the shared state sits behind one
//! mutex, with condition variables for "a request arrived" and "the server is stopping", so
//! waits and scripted delays end on events rather than polls.

use std::cell::Cell;
use std::io::{BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::{Value, json};

use super::http::{self, Request, Sse};
use super::limits::Limits;
use super::request::Api;
use super::script::{Script, Step};
use super::state::{Answer, Incoming, State};
use super::wire::{self, Reply, anthropic, chat, gemini, responses};

/// How long a connection may stay silent before the server gives up on it.
const IDLE: Duration = Duration::from_secs(60);
/// How long a connection whose reply is written waits for the client to close its side.
const LINGER: Duration = Duration::from_secs(2);

/// State shared by the handle and the server threads.
#[derive(Debug, Default)]
pub(crate) struct Shared {
    state: Mutex<State>,
    /// Notified whenever a model request is recorded.
    pub(crate) arrived: Condvar,
    stopping: Mutex<bool>,
    stopped: Condvar,
}

impl Shared {
    pub(crate) fn new(state: State) -> Self {
        Self {
            state: Mutex::new(state),
            ..Self::default()
        }
    }

    /// The state. A panicked connection thread cannot leave it half-written in a way that
    /// matters to a test, so poisoning is ignored.
    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits `duration`, or less when the server stops; true when the whole time passed.
    pub(crate) fn pause(&self, duration: Duration) -> bool {
        let stopping = self.stopping.lock().unwrap_or_else(PoisonError::into_inner);
        let (stopping, _) = self
            .stopped
            .wait_timeout_while(stopping, duration, |stopping| !*stopping)
            .unwrap_or_else(PoisonError::into_inner);
        !*stopping
    }

    pub(crate) fn stop(&self) {
        *self.stopping.lock().unwrap_or_else(PoisonError::into_inner) = true;
        self.stopped.notify_all();
        // Waiters on `arrived` check the flag while holding the state lock: taking it here
        // means each one either sees the flag or is already waiting for this notification.
        drop(self.lock());
        self.arrived.notify_all();
    }

    /// Opens a gate: held replies waiting for it go on.
    pub(crate) fn release(&self, gate: &str) {
        self.lock().released.insert(gate.to_owned());
        self.arrived.notify_all();
    }

    /// Waits until `gate` is released; false when the server stops first.
    fn hold(&self, gate: &str) -> bool {
        let mut state = self.lock();
        loop {
            if state.released.contains(gate) {
                return true;
            }
            if self.is_stopping() {
                return false;
            }
            state = self
                .arrived
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    fn is_stopping(&self) -> bool {
        *self.stopping.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Accepts connections until the server stops (the handle wakes it with a connection).
pub(crate) fn accept_loop(listener: &TcpListener, shared: &Arc<Shared>) {
    for connection in listener.incoming() {
        if shared.is_stopping() {
            break;
        }
        let Ok(stream) = connection else { continue };
        let shared = Arc::clone(shared);
        let spawned = thread::Builder::new()
            .name("fake-llm-conn".to_owned())
            .spawn(move || serve(&shared, stream));
        // Without a thread the connection is dropped and the client sees it closed.
        drop(spawned);
    }
}

fn serve(shared: &Shared, stream: TcpStream) {
    // Errors here mean the client went away; there is nobody left to tell.
    drop(stream.set_read_timeout(Some(IDLE)));
    drop(stream.set_nodelay(true));
    let Ok(read_half) = stream.try_clone() else {
        return;
    };
    let mut out = stream;
    let mut reader = BufReader::new(read_half);
    match http::read_request(&mut reader) {
        Ok(Some(request)) => route(shared, &request, &mut out),
        Ok(None) => {}
        Err(err) => {
            drop(http::write_json(
                &mut out,
                400,
                &json!({"error": err.to_string()}),
            ));
        }
    }
    lingering_close(&out, reader.get_mut());
}

/// Ends a connection whose reply is written the way HTTP servers do: the write side is shut
/// first, then the server waits (at most [`LINGER`]) for the client to close its side, reading
/// and dropping anything it still sends. A server that closes at once, the way this one did,
/// lost its reply now and then on a loaded machine: the fake had written a 429 for Claude
/// Code's one request, and Claude Code reported `Unable to connect to API (ECONNRESET)`
/// instead, which Shepherd rightly waits out as a server error, not a rate limit.
fn lingering_close(out: &TcpStream, read_half: &mut TcpStream) {
    drop(out.shutdown(std::net::Shutdown::Write));
    drop(read_half.set_read_timeout(Some(LINGER)));
    let deadline = Instant::now() + LINGER;
    let mut sink = [0_u8; 4096];
    while Instant::now() < deadline {
        match read_half.read(&mut sink) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
    }
}

fn parse<T: for<'de> Deserialize<'de>>(body: &[u8]) -> Result<T, String> {
    let body = if body.is_empty() { b"{}" } else { body };
    serde_json::from_slice(body).map_err(|err| format!("bad JSON body: {err}"))
}

/// The body of `POST /_release`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReleaseBody {
    gate: String,
}

/// The body of `POST /_append`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AppendBody {
    /// The model id whose queue grows; the default queue when absent.
    #[serde(alias = "model")]
    queue: Option<String>,
    responses: Vec<Step>,
}

fn route(shared: &Shared, request: &Request, out: &mut impl Write) {
    let path = request.path.as_str();
    let result = match (request.method.as_str(), path) {
        ("GET", "/v1/models" | "/models") => {
            let mut models = shared.lock().models();
            if models.is_empty() {
                models.push("fake-model".to_owned());
            }
            let data: Vec<Value> = models
                .iter()
                .map(|id| json!({"id": id, "object": "model", "owned_by": "fake"}))
                .collect();
            http::write_json(out, 200, &json!({"object": "list", "data": data}))
        }
        ("GET", "/_requests") => http::write_json(out, 200, &json!(shared.lock().requests)),
        ("GET", "/_state") => http::write_json(out, 200, &shared.lock().snapshot()),
        ("POST", "/_script") => match parse::<Script>(&request.body) {
            Ok(script) => {
                shared.lock().load(script);
                http::write_json(out, 200, &json!({"ok": true}))
            }
            Err(err) => http::write_json(out, 400, &json!({"error": err})),
        },
        ("POST", "/_append") => match parse::<AppendBody>(&request.body) {
            Ok(body) => {
                shared.lock().append(body.queue.as_deref(), body.responses);
                http::write_json(out, 200, &json!({"ok": true}))
            }
            Err(err) => http::write_json(out, 400, &json!({"error": err})),
        },
        ("GET", "/_limits") => http::write_json(out, 200, &json!(shared.lock().limiter.limits())),
        ("POST", "/_limits") => match parse::<Limits>(&request.body) {
            Ok(limits) => {
                shared.lock().limiter.set(limits);
                http::write_json(out, 200, &json!({"ok": true}))
            }
            Err(err) => http::write_json(out, 400, &json!({"error": err})),
        },
        ("POST", "/_release") => match parse::<ReleaseBody>(&request.body) {
            Ok(body) => {
                shared.release(&body.gate);
                http::write_json(out, 200, &json!({"ok": true}))
            }
            Err(err) => http::write_json(out, 400, &json!({"error": err})),
        },
        ("POST", _) if path.ends_with("/messages/count_tokens") => {
            http::write_json(out, 200, &json!({"input_tokens": 42}))
        }
        ("POST", _) if path.ends_with(":countTokens") => {
            http::write_json(out, 200, &json!({"totalTokens": 42}))
        }
        ("POST", _) if Api::from_path(path).is_some() => {
            let api = Api::from_path(path).unwrap_or_default();
            model_request(shared, api, request, out)
        }
        _ => http::write_json(
            out,
            404,
            &json!({"error": format!("not found: {} {path}", request.method)}),
        ),
    };
    // A failed write means the client hung up (e.g. pi aborted a stream): nothing to do.
    drop(result);
}

fn model_request(
    shared: &Shared,
    api: Api,
    request: &Request,
    out: &mut impl Write,
) -> std::io::Result<()> {
    let body: Value = match parse(&request.body) {
        Ok(body) => body,
        Err(err) => return http::write_json(out, 400, &wire::error_body(api, 400, &err)),
    };
    let (recorded, answer) = shared.lock().take(Incoming {
        api,
        path: request.path.clone(),
        query: request.query.clone(),
        headers: request.headers.clone(),
        body,
    });
    shared.arrived.notify_all();
    // An admitted request is in flight for the rate limiter until the last bytes of its reply
    // go out (a client may send its next request the moment it has read them); a refused one
    // never was.
    let in_flight = InFlight {
        shared,
        credential: recorded.credential(),
        done: Cell::new(recorded.limited.is_some()),
    };
    let step = match answer {
        Answer::Limited(reply) => {
            return http::write_json_with(out, reply.status, &reply.headers, &reply.body);
        }
        Answer::Exhausted { queue } => {
            let message = format!(
                "fake-llm: script exhausted for queue {queue} (request {})",
                recorded.seq
            );
            in_flight.release();
            return http::write_json(out, 500, &wire::error_body(api, 500, &message));
        }
        Answer::Step(step) => step,
    };
    if step.delay_ms > 0 && !shared.pause(Duration::from_millis(step.delay_ms)) {
        return Ok(());
    }
    if let Some(gate) = &step.hold
        && !shared.hold(gate)
    {
        return Ok(());
    }
    if let Some(error) = &step.error {
        in_flight.release();
        return http::write_json(
            out,
            error.status,
            &wire::error_body(api, error.status, &error.message),
        );
    }
    let (reply, missing) = Reply::new(&step, &recorded);
    if !missing.is_empty() {
        let mut state = shared.lock();
        for wanted in &missing {
            state.no_such_tool(&recorded, wanted);
        }
    }
    let sse = recorded.is_stream() && (api != Api::Gemini || recorded.query.contains("alt=sse"));
    if !sse {
        let body = match api {
            Api::ChatCompletions => chat::whole(&reply),
            Api::AnthropicMessages => anthropic::whole(&reply),
            Api::Responses => responses::whole(&reply),
            Api::Gemini if recorded.is_stream() => gemini::array(&reply),
            Api::Gemini => gemini::whole(&reply),
        };
        in_flight.release();
        return http::write_json(out, 200, &body);
    }
    let pause = |duration| shared.pause(duration);
    let release = || in_flight.release();
    let mut sse = Sse::start(out, &pause, Duration::from_millis(step.chunk_delay_ms))?;
    sse.before_last(&release);
    match api {
        Api::ChatCompletions => {
            let include_usage = recorded
                .body
                .pointer("/stream_options/include_usage")
                .and_then(Value::as_bool)
                == Some(true);
            chat::stream(&mut sse, &reply, include_usage)
        }
        Api::AnthropicMessages => anthropic::stream(&mut sse, &reply),
        Api::Responses => responses::stream(&mut sse, &reply),
        Api::Gemini => gemini::stream(&mut sse, &reply),
    }
}

/// An admitted model request, in flight for the rate limiter until released or dropped.
struct InFlight<'a> {
    shared: &'a Shared,
    credential: String,
    done: Cell<bool>,
}

impl InFlight<'_> {
    /// The reply is (about to be) complete; idempotent.
    fn release(&self) {
        if !self.done.replace(true) {
            self.shared.lock().limiter.finished(&self.credential);
        }
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.release();
    }
}

/// Waits until `done` holds for the requests received, or the deadline passes.
pub(crate) fn wait_until<T>(
    shared: &Shared,
    timeout: Duration,
    mut done: impl FnMut(&State) -> Option<T>,
) -> Result<T, MutexGuard<'_, State>> {
    let deadline = Instant::now() + timeout;
    let mut state = shared.lock();
    loop {
        if let Some(found) = done(&state) {
            return Ok(found);
        }
        let now = Instant::now();
        if now >= deadline || shared.is_stopping() {
            return Err(state);
        }
        state = shared
            .arrived
            .wait_timeout(state, deadline - now)
            .unwrap_or_else(PoisonError::into_inner)
            .0;
    }
}
