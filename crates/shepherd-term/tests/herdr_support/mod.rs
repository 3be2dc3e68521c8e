//! Shared set-up for the Herdr backend's tests: a fake Herdr server or a private real one, a
//! backend connected to it, a launch spec whose values are awkward on purpose (spaces and
//! quotes, a secret in the environment), and ways to receive events with a deadline from
//! synchronous tests — the backend's own, and a raw subscription for contract tests.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]
#![allow(dead_code, unreachable_pub)]

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use shepherd_term::herdr::{
    HerdrBackend, HerdrClient, HerdrConfig, HerdrEnv, HerdrEvent, HerdrEvents,
};
use shepherd_term::{LaunchSpec, Placement};
use shepherd_testkit::fake_herdr::real::RealOptions;
use shepherd_testkit::fake_herdr::{FakeHerdr, FakeOptions, RealHerdr};

/// The longest any test waits for something that should happen at once.
pub const WAIT: Duration = Duration::from_secs(10);

/// The capability token: it must reach the pane's environment, never its command line.
pub const TOKEN: &str = "secret-token-0f9c";

/// A fake Herdr with `options`.
pub fn fake(options: FakeOptions) -> FakeHerdr {
    FakeHerdr::start(options).expect("fake Herdr starts")
}

/// A backend on the fake's socket.
pub fn backend(fake: &FakeHerdr) -> HerdrBackend {
    HerdrBackend::connect(config(fake.socket())).expect("the backend connects")
}

/// A configuration naming `socket` explicitly, with an empty environment.
pub fn config(socket: &Path) -> HerdrConfig {
    let mut config = HerdrConfig::new(HerdrEnv::default());
    config.socket = Some(socket.to_path_buf());
    config
}

/// A launch of `sheep "it's here"` named `worker: code review`, in `cwd`.
pub fn spec(cwd: &Path, placement: Placement, caller: Option<&str>) -> LaunchSpec {
    LaunchSpec {
        agent_id: "a1".into(),
        display_name: "worker: code review".into(),
        cwd: cwd.to_path_buf(),
        program: vec!["sheep".into(), "it's here".into()],
        env: vec![
            ("SHEPHERD_TOKEN".into(), TOKEN.into()),
            ("SHEPHERD_AGENT_ID".into(), "a1".into()),
        ],
        shepherd_exe: PathBuf::from("/opt/my tools/shepherd"),
        socket: PathBuf::from("/run/shepherd.sock"),
        log: cwd.join("unused.log"),
        placement,
        caller_pane: caller.map(str::to_owned),
        caller_pid: None,
        tmux_socket: None,
        keep_open: false,
        keep_stdin: false,
        orphan_grace: Duration::from_millis(1500),
        supervisor_args: Vec::new(),
    }
}

/// The argv a launch of [`spec`] gives its pane.
pub fn supervisor_argv() -> Vec<String> {
    [
        "/opt/my tools/shepherd",
        "supervise",
        "--grace-ms",
        "1500",
        "--",
        "sheep",
        "it's here",
    ]
    .map(str::to_owned)
    .to_vec()
}

/// The next event, waiting up to `timeout`.
pub fn next_event(events: &mut HerdrEvents, timeout: Duration) -> Option<HerdrEvent> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a runtime");
    runtime
        .block_on(async { tokio::time::timeout(timeout, events.recv()).await })
        .ok()
        .flatten()
}

/// Events until `last` matches (inclusive), waiting up to [`WAIT`] in all.
pub fn events_until(
    events: &mut HerdrEvents,
    mut last: impl FnMut(&HerdrEvent) -> bool,
) -> Vec<HerdrEvent> {
    let until = Instant::now() + WAIT;
    let mut seen = Vec::new();
    while let Some(event) = next_event(events, until.saturating_duration_since(Instant::now())) {
        let done = last(&event);
        seen.push(event);
        if done {
            return seen;
        }
    }
    panic!("the awaited event did not come; saw {seen:?}");
}

/// Writes an executable script.
pub fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).expect("script written");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    path
}

/// A stand-in for `shepherd`: drops `supervise --grace-ms <ms> --` and runs the program.
pub fn fake_shepherd(dir: &Path) -> PathBuf {
    script(dir, "shepherd", "shift 4\nexec \"$@\"")
}

/// A Herdr server for a contract test: the fake, or a private real one.
pub enum Server {
    /// The in-repo fake.
    Fake(FakeHerdr),
    /// A real Herdr.
    Real(RealHerdr),
}

impl Server {
    /// Its socket.
    pub fn socket(&self) -> PathBuf {
        match self {
            Self::Fake(fake) => fake.socket().to_path_buf(),
            Self::Real(real) => real.socket(),
        }
    }

    /// A client for it.
    pub fn client(&self) -> HerdrClient {
        HerdrClient::new(self.socket()).with_timeout(WAIT)
    }

    /// Which one it is, for messages.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Fake(_) => "fake",
            Self::Real(_) => "real",
        }
    }

    /// One request; the `result`, or the error as `(id, code, message)`.
    pub fn raw(&self, method: &str, params: &Value) -> Result<Value, (String, String, String)> {
        raw_request(&self.socket(), method, params)
    }
}

/// Runs `check` against a fresh fake (made with `fake`) and, when a Herdr binary exists, a
/// fresh private real server (made with `real`).
pub fn against_both(test: &str, fake: FakeOptions, real: RealOptions, check: impl Fn(&Server)) {
    let server = Server::Fake(self::fake(fake));
    check(&server);
    drop(server);
    if let Some(real) = RealHerdr::start_with(test, real) {
        check(&Server::Real(real));
    }
}

/// A backend on a private real server, never starting one itself.
pub fn real_backend(real: &RealHerdr) -> HerdrBackend {
    HerdrBackend::connect(config(&real.socket())).expect("the backend connects")
}

/// One request on its own connection, as raw JSON.
pub fn raw_request(
    socket: &Path,
    method: &str,
    params: &Value,
) -> Result<Value, (String, String, String)> {
    let mut stream = UnixStream::connect(socket).expect("the server listens");
    stream.set_read_timeout(Some(WAIT)).unwrap();
    let line = json!({"id": "contract", "method": method, "params": params});
    stream.write_all(format!("{line}\n").as_bytes()).unwrap();
    let mut reply = String::new();
    BufReader::new(stream).read_line(&mut reply).unwrap();
    let reply: Value = serde_json::from_str(&reply).unwrap();
    match reply.get("error") {
        Some(error) => Err((
            reply["id"].as_str().unwrap_or_default().to_owned(),
            error["code"].as_str().unwrap_or_default().to_owned(),
            error["message"].as_str().unwrap_or_default().to_owned(),
        )),
        None => Ok(reply["result"].clone()),
    }
}

/// A raw event subscription, read with deadlines.
pub struct RawEvents {
    reader: BufReader<UnixStream>,
}

impl RawEvents {
    /// Subscribes to `subscriptions` on `socket`; panics unless acknowledged.
    pub fn open(socket: &Path, subscriptions: &Value) -> Self {
        let mut stream = UnixStream::connect(socket).expect("the server listens");
        let line = json!({"id": "events", "method": "events.subscribe", "params": {"subscriptions": subscriptions}});
        stream.write_all(format!("{line}\n").as_bytes()).unwrap();
        let mut events = Self {
            reader: BufReader::new(stream),
        };
        let ack = events
            .next(Instant::now() + WAIT)
            .expect("an acknowledgement");
        assert_eq!(ack["result"]["type"], "subscription_started", "{ack}");
        events
    }

    /// The next line, or `None` at the deadline.
    pub fn next(&mut self, deadline: Instant) -> Option<Value> {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return None;
        }
        self.reader.get_ref().set_read_timeout(Some(left)).unwrap();
        let mut line = String::new();
        match self.reader.read_line(&mut line) {
            Ok(read) if read > 0 => Some(serde_json::from_str(&line).unwrap()),
            _ => None,
        }
    }

    /// Events up to and including the first that `last` accepts, within [`WAIT`].
    pub fn until(&mut self, mut last: impl FnMut(&Value) -> bool) -> Vec<Value> {
        let deadline = Instant::now() + WAIT;
        let mut seen = Vec::new();
        while let Some(event) = self.next(deadline) {
            let done = last(&event);
            seen.push(event);
            if done {
                return seen;
            }
        }
        panic!("the awaited event did not come; saw {seen:?}");
    }
}

/// The event name with dots for underscores, as both spellings mean the same.
pub fn event_name(event: &Value) -> String {
    event["event"]
        .as_str()
        .unwrap_or_default()
        .replace('.', "_")
}
