//! Tests of Herdr server management: a running server is used and never stopped; when none
//! runs, `herdr server` is started, waited for and — because we started it — stoppable; a
//! server that dies or never answers during start-up is reported. The stand-in `herdr` is a
//! script that re-runs this test binary as a fake server (see `fake_herdr_server_process`).

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::herdr_support;

use std::ffi::OsString;
use std::time::{Duration, Instant};

use herdr_support::{WAIT, fake, script};
use shepherd_term::herdr::server::{ensure_server, stop_started_server};
use shepherd_term::herdr::{
    HerdrBackend, HerdrClient, HerdrConfig, HerdrEnv, HerdrError, ServerOrigin, ServerStart,
    SocketTarget,
};
use shepherd_testkit::fake_herdr::{FakeHerdr, FakeOptions};

/// Set for the stand-in server process.
const SERVE: &str = "SHEPHERD_TEST_SERVE_FAKE_HERDR";

/// Not a test: the body of the stand-in `herdr server` process, run by the start-up test
/// through this test binary. It serves a fake Herdr on `HERDR_SOCKET_PATH` until a client
/// calls `server.stop` (or a minute passes, so it can never linger).
#[test]
#[ignore = "the stand-in `herdr server` process; the start-up test runs it"]
fn fake_herdr_server_process() {
    if std::env::var_os(SERVE).is_none() {
        return;
    }
    let socket = std::env::var_os("HERDR_SOCKET_PATH").expect("HERDR_SOCKET_PATH is set");
    let fake = FakeHerdr::start_at(socket.as_ref(), FakeOptions::default()).unwrap();
    assert!(fake.wait_stopped(Duration::from_secs(60)));
}

fn target(path: &std::path::Path) -> SocketTarget {
    SocketTarget::resolve(Some(path), None, &HerdrEnv::default()).unwrap()
}

#[test]
fn a_running_server_is_used_and_never_stopped() {
    let fake = fake(FakeOptions::default());
    let client = HerdrClient::new(fake.socket());
    // Starting is allowed but must not happen: the executable does not even exist.
    let start = ServerStart::new("/nonexistent/herdr");
    let status = ensure_server(&client, &target(fake.socket()), Some(&start)).unwrap();
    assert_eq!(status.origin, ServerOrigin::Existing);
    assert_eq!(status.protocol, 20);
    assert!(!stop_started_server(&client, &status, Instant::now() + WAIT).unwrap());
    let mut config = herdr_support::config(fake.socket());
    config.start = Some(start);
    let backend = HerdrBackend::connect(config).unwrap();
    assert!(!backend.stop_started_server(Instant::now() + WAIT).unwrap());
    fake.inspect(|state| assert!(state.requests_for("server.stop").is_empty()));
}

#[test]
fn without_permission_to_start_a_missing_server_is_unreachable() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("herdr.sock");
    let client = HerdrClient::new(&path);
    let err = ensure_server(&client, &target(&path), None).unwrap_err();
    assert!(err.is_unreachable(), "{err}");
}

#[test]
fn a_missing_server_is_started_waited_for_and_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let exe = std::env::current_exe().unwrap();
    let herdr = script(
        dir.path(),
        "herdr",
        &format!(
            "[ \"$1\" = server ] || exit 2\nexec '{}' --exact herdr_server::fake_herdr_server_process --ignored --nocapture",
            exe.display()
        ),
    );
    // A socket in a directory that does not exist yet: the start creates it.
    let socket = dir.path().join("run").join("herdr.sock");
    let mut config = HerdrConfig::new(HerdrEnv::default());
    config.socket = Some(socket.clone());
    let mut start = ServerStart::new(&herdr);
    start.env = vec![(OsString::from(SERVE), Some(OsString::from("1")))];
    start.log = Some(dir.path().join("server.log"));
    start.timeout = WAIT;
    config.start = Some(start);
    let backend = HerdrBackend::connect(config).unwrap();
    let ServerOrigin::Started { pid } = backend.server().origin else {
        panic!("not started by us: {:?}", backend.server());
    };
    assert_eq!(backend.server().socket, socket);
    assert!(HerdrClient::new(&socket).handshake(None).is_ok());
    assert!(backend.stop_started_server(Instant::now() + WAIT).unwrap());
    assert!(shepherd_term::process::wait_gone(
        pid,
        Instant::now() + WAIT
    ));
    let err = HerdrClient::new(&socket).ping(None).unwrap_err();
    assert!(err.is_unreachable(), "{err}");
}

#[test]
fn a_server_that_dies_during_start_up_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let herdr = script(
        dir.path(),
        "herdr",
        "echo 'herdr: broken config' >&2\nexit 3",
    );
    let socket = dir.path().join("herdr.sock");
    let mut start = ServerStart::new(&herdr);
    start.log = Some(dir.path().join("server.log"));
    start.timeout = WAIT;
    let started = Instant::now();
    let err =
        ensure_server(&HerdrClient::new(&socket), &target(&socket), Some(&start)).unwrap_err();
    assert!(
        matches!(&err, HerdrError::ServerStart { detail, .. } if detail.contains("exited during start-up")),
        "{err}"
    );
    assert!(err.to_string().contains("server.log"), "{err}");
    assert!(
        started.elapsed() < WAIT,
        "noticed by the exit, not the deadline"
    );
    let log = std::fs::read_to_string(dir.path().join("server.log")).unwrap();
    assert!(log.contains("broken config"));
}

#[test]
fn a_server_that_never_answers_is_given_up_and_ended() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let herdr = script(
        dir.path(),
        "herdr",
        &format!("echo $$ > '{}'\nexec sleep 60", pid_file.display()),
    );
    let socket = dir.path().join("herdr.sock");
    let mut start = ServerStart::new(&herdr);
    start.timeout = Duration::from_millis(300);
    let err =
        ensure_server(&HerdrClient::new(&socket), &target(&socket), Some(&start)).unwrap_err();
    assert!(
        matches!(&err, HerdrError::ServerStart { detail, .. } if detail.contains("did not answer")),
        "{err}"
    );
    // The script may not even have run before the deadline; if it did, it must be gone.
    let written = std::fs::read_to_string(&pid_file).unwrap_or_default();
    if let Ok(pid) = written.trim().parse::<u32>() {
        let gone = shepherd_term::process::wait_gone(pid, Instant::now() + WAIT);
        assert!(gone, "the stuck server was left running");
    }
}
