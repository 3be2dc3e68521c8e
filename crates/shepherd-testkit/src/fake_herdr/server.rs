//! The fake's socket: one thread per connection answering one request (or keeping a
//! subscription open), the app lock every request but subscriptions and output waits takes
//! (as Herdr's single app thread does), and one poller per subscription delivering events on
//! Herdr's 100 ms rhythm.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::atomic::Ordering;
use std::sync::{Arc, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::events::Subscriber;
use super::model::{FakeState, Leaving, Outcome, error};
use super::{Shared, run, session};

/// Binds the socket and starts accepting.
pub(crate) fn listen(shared: &Arc<Shared>) -> std::io::Result<JoinHandle<()>> {
    let _stale = std::fs::remove_file(&shared.socket);
    let listener = UnixListener::bind(&shared.socket)?;
    let accepting = Arc::clone(shared);
    std::thread::Builder::new()
        .name("fake-herdr".into())
        .spawn(move || accept_loop(&accepting, &listener))
}

/// Cuts every subscription and ends every process the fake started.
pub(crate) fn stop_everything(state: &mut FakeState) {
    state.stopped = true;
    for subscriber in state.subscribers.drain(..) {
        if let Some(stream) = subscriber.stream {
            let _closed = stream.shutdown(std::net::Shutdown::Both);
        }
    }
    let ids: Vec<String> = state.panes().iter().map(|pane| pane.id.clone()).collect();
    for id in ids {
        if let Some(pane) = state.pane_any_mut(&id) {
            pane.closing = true;
            pane.end_everything();
        }
    }
}

fn accept_loop(shared: &Arc<Shared>, listener: &UnixListener) {
    for stream in listener.incoming() {
        if shared.closing.load(Ordering::SeqCst) || shared.lock().stopped() {
            break;
        }
        if let Ok(stream) = stream {
            let shared = Arc::clone(shared);
            std::thread::spawn(move || serve(&shared, &stream));
        }
    }
    let _removed = std::fs::remove_file(&shared.socket);
}

/// Answers one connection: one request, one reply (or a subscription that stays open).
fn serve(shared: &Arc<Shared>, stream: &UnixStream) {
    let _bounded = stream.set_read_timeout(Some(Duration::from_secs(60)));
    let Ok(read_half) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(read_half);
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    let request: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
    let field = |key: &str| {
        request
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    let (id, method) = (field("id"), field("method"));
    let params = request.get("params").cloned().unwrap_or_else(|| json!({}));
    let app = (!matches!(method.as_str(), "events.subscribe" | "pane.wait_for_output"))
        .then(|| shared.app.lock().unwrap_or_else(PoisonError::into_inner));
    let mut state = shared.lock();
    state.log(&method, &params);
    if let Some(at) = state.closes.iter().position(|closed| *closed == method) {
        state.closes.remove(at);
        drop(state);
        shared.changed.notify_all();
        return;
    }
    if let Some(at) = state.hangs.iter().position(|hung| *hung == method) {
        state.hangs.remove(at);
        drop((state, app));
        shared.changed.notify_all();
        drain(reader);
        return;
    }
    let outcome = match scripted_failure(&mut state, &method) {
        Some(outcome) => outcome,
        None if method.is_empty() => Outcome::Error {
            code: "invalid_request".into(),
            message: format!(
                "invalid request: expected value at line 1 column {}",
                line.trim_end().len()
            ),
            id: Some(String::new()),
        },
        None => state.handle(&method, &params, &id, line.trim_end().len()),
    };
    let (state, result) = match outcome {
        Outcome::Reply(result) => {
            after_success(shared, &mut state, &method, &params);
            (state, Ok(result))
        }
        Outcome::Error { code, message, id } => (state, Err((code, message, id))),
        Outcome::Subscribe(subscriber) => {
            let number = subscribe(shared, state, stream, subscriber, &id);
            // The subscription lasts until the client hangs up, however long that takes.
            let _unbounded = stream.set_read_timeout(None);
            drain(reader);
            shared.lock().subscribers.retain(|s| s.number != number);
            shared.changed.notify_all();
            return;
        }
        Outcome::Close(pane) => close(shared, state, &pane),
        Outcome::WaitOutput(params) => {
            drop(state);
            wait_output(shared, &params)
        }
    };
    let mut state = state;
    let stopping = std::mem::take(&mut state.stop_requested);
    let (close_after, newline) = (
        state.options.close_after_reply,
        state.options.newline_after_reply,
    );
    drop((state, app));
    shared.changed.notify_all();
    let reply = match result {
        Ok(result) => json!({"id": id, "result": result, "x_fake_top": {"ignored": true}}),
        Err((code, message, own_id)) => {
            json!({"id": own_id.unwrap_or(id), "error": {"code": code, "message": message}})
        }
    };
    let mut bytes = reply.to_string().into_bytes();
    if newline {
        bytes.push(b'\n');
    }
    let _gone = (&*stream).write_all(&bytes);
    if stopping {
        // Only after the reply is out: a process serving the fake exits once it is stopped.
        stop_everything(&mut shared.lock());
        shared.changed.notify_all();
        // Wake the accept loop so it notices and removes the socket.
        let _woken = UnixStream::connect(&shared.socket);
    }
    if close_after || !newline {
        return;
    }
    drain(reader);
}

type Answer = Result<Value, (String, String, Option<String>)>;

/// `pane.close`: the session is signalled and waited for without the state lock (but with the
/// app lock, so every other request waits, as on Herdr); then the pane goes.
fn close<'a>(
    shared: &'a Shared,
    mut state: MutexGuard<'a, FakeState>,
    pane_id: &str,
) -> (MutexGuard<'a, FakeState>, Answer) {
    let Some(pane) = state.pane_mut(pane_id) else {
        return (state, Err(not_found(pane_id)));
    };
    pane.closing = true;
    let root = pane.real_root.then_some(pane.shell_pid);
    let job = pane.running;
    pane.stdin = None;
    drop(state);
    session::close_session(root, job);
    let mut state = shared.lock();
    state.remove_pane(pane_id, Leaving::Closed);
    (state, Ok(json!({"type": "ok", "x_fake_field": null})))
}

/// `pane.wait_for_output`: checks now, then whenever the fake changes, until `timeout_ms`.
fn wait_output<'a>(shared: &'a Shared, params: &Value) -> (MutexGuard<'a, FakeState>, Answer) {
    let pane_id = params.get("pane_id").and_then(Value::as_str).unwrap_or("");
    let needle = params
        .pointer("/match/value")
        .and_then(Value::as_str)
        .unwrap_or("");
    let regex = params.pointer("/match/type").and_then(Value::as_str) == Some("regex");
    let source = match params.get("source").and_then(Value::as_str) {
        Some("recent" | "recent_unwrapped") | None => "recent_unwrapped",
        Some(other) => other,
    };
    let timeout = params
        .get("timeout_ms")
        .and_then(Value::as_u64)
        .map_or(Duration::from_secs(3600), Duration::from_millis);
    let until = Instant::now() + timeout;
    let mut state = shared.lock();
    loop {
        let Some((text, _)) = state.read(pane_id, source, None) else {
            return (state, Err(not_found(pane_id)));
        };
        let found = text
            .lines()
            .find(|line| matches_line(line, needle, regex))
            .map(str::to_owned);
        if let Some(line) = found {
            let revision = 0;
            let read = state.read_json(pane_id, source, &text, false);
            let reply = json!({"type": "output_matched", "pane_id": pane_id, "revision": revision,
                "matched_line": line, "read": read});
            return (state, Ok(reply));
        }
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            let Outcome::Error { code, message, .. } =
                error("timeout", "timed out waiting for output match")
            else {
                unreachable!("error() makes an error");
            };
            return (state, Err((code, message, None)));
        }
        state = shared
            .changed
            .wait_timeout(state, left)
            .unwrap_or_else(PoisonError::into_inner)
            .0;
    }
}

/// A substring, or a regex of the simple kind tests use: a literal (with `\`-escaped
/// punctuation), optionally anchored with `^` and `$`.
fn matches_line(line: &str, needle: &str, regex: bool) -> bool {
    if !regex {
        return line.contains(needle);
    }
    let (start, rest) = match needle.strip_prefix('^') {
        Some(rest) => (true, rest),
        None => (false, needle),
    };
    let (end, body) = match rest.strip_suffix('$') {
        Some(body) => (true, body),
        None => (false, rest),
    };
    let mut literal = String::new();
    let mut chars = body.chars();
    while let Some(c) = chars.next() {
        literal.push(if c == '\\' {
            chars.next().unwrap_or(c)
        } else {
            c
        });
    }
    match (start, end) {
        (true, true) => line == literal,
        (true, false) => line.starts_with(&literal),
        (false, true) => line.ends_with(&literal),
        (false, false) => line.contains(&literal),
    }
}

fn not_found(pane_id: &str) -> (String, String, Option<String>) {
    (
        "pane_not_found".into(),
        format!("pane {pane_id} not found"),
        None,
    )
}

fn scripted_failure(state: &mut FakeState, method: &str) -> Option<Outcome> {
    let at = state.failures.iter().position(|f| f.method == method)?;
    let failure = &mut state.failures[at];
    let outcome = Outcome::Error {
        code: failure.code.clone(),
        message: failure.message.clone(),
        id: None,
    };
    failure.times = failure.times.saturating_sub(1);
    if failure.times == 0 {
        state.failures.remove(at);
    }
    Some(outcome)
}

/// Effects beyond the reply: starting new panes' programs, typing (and maybe running) text.
fn after_success(shared: &Arc<Shared>, state: &mut FakeState, method: &str, params: &Value) {
    for id in std::mem::take(&mut state.to_start) {
        if let Some(pane) = state.pane_mut(&id) {
            run::start_program(shared, pane);
        }
    }
    if !matches!(
        method,
        "pane.send_input" | "pane.send_text" | "pane.send_keys"
    ) {
        return;
    }
    let (run_typed, rc) = (state.options.run_processes, state.options.slow_shell_rc);
    let pane_id = params.get("pane_id").and_then(Value::as_str).unwrap_or("");
    let Some(pane) = state.pane_mut(pane_id) else {
        return;
    };
    let text = params.get("text").and_then(Value::as_str).unwrap_or("");
    pane.typed.push_str(text);
    pane.pending.push_str(text);
    let keys = params
        .get("keys")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for key in keys.iter().filter_map(Value::as_str) {
        pane.typed.push_str(&format!("<{key}>"));
        if key.eq_ignore_ascii_case("enter") {
            let line = std::mem::take(&mut pane.pending);
            pane.commands.push(line.clone());
            if pane.command.is_some() {
                // Typed into a program, not a shell: the fake does not feed it.
                continue;
            }
            if rc.is_some_and(|rc| pane.created.elapsed() < rc) {
                // The rc file is still running and reads the line itself.
                pane.screen.push_str(&format!("rc-file read: [{line}]\n"));
                continue;
            }
            pane.screen.push_str(&format!("$ {line}\n"));
            if run_typed {
                run::run_line(shared, pane, &line);
            }
        }
    }
}

/// Acknowledges a subscription and registers it with a poller; events can only follow the
/// acknowledgement because the poller starts after it.
fn subscribe(
    shared: &Arc<Shared>,
    mut state: MutexGuard<'_, FakeState>,
    stream: &UnixStream,
    mut subscriber: Subscriber,
    id: &str,
) -> u64 {
    state.next_subscriber += 1;
    subscriber.number = state.next_subscriber;
    let number = subscriber.number;
    let Ok(events) = stream.try_clone() else {
        return number;
    };
    let _bounded = events.set_write_timeout(Some(Duration::from_secs(2)));
    subscriber.stream = Some(events);
    let ack = json!({"id": id, "result": {"type": "subscription_started", "x_fake_field": 7}});
    if !subscriber.send(&ack) {
        return number;
    }
    state.subscribers.push(subscriber);
    let poll = state.options.event_poll;
    drop(state);
    shared.changed.notify_all();
    let polling = Arc::clone(shared);
    std::thread::spawn(move || poller(&polling, number, poll));
    number
}

/// Delivers the subscription's events, one per entry per poll, until it is gone.
fn poller(shared: &Shared, number: u64, poll: Duration) {
    loop {
        std::thread::sleep(poll);
        let mut state = shared.lock();
        let style = state.options.event_style;
        let FakeState {
            subscribers, ring, ..
        } = &mut *state;
        let Some(at) = subscribers.iter().position(|s| s.number == number) else {
            return;
        };
        let subscriber = &mut subscribers[at];
        let lines = subscriber.poll(ring, style);
        if !lines.iter().all(|line| subscriber.send(line)) {
            subscribers.remove(at);
            drop(state);
            shared.changed.notify_all();
            return;
        }
    }
}

/// Reads until the client closes (or the read timeout passes).
fn drain(mut reader: BufReader<UnixStream>) {
    let mut sink = [0_u8; 1024];
    while matches!(reader.read(&mut sink), Ok(read) if read > 0) {}
}
