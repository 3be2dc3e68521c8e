//! Shared set-up for the Herdr backend's tests: a fake Herdr server, a backend connected to
//! it, a launch spec whose values are awkward on purpose (spaces and quotes, a secret in the
//! environment), and a way to receive events with a deadline from synchronous tests.

#![allow(dead_code, unreachable_pub)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use shepherd_term::herdr::{HerdrBackend, HerdrConfig, HerdrEnv, HerdrEvent, HerdrEvents};
use shepherd_term::{LaunchSpec, Placement};
use shepherd_testkit::fake_herdr::{FakeHerdr, FakeOptions};

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
        tmux_socket: None,
        keep_open: false,
        keep_stdin: false,
        orphan_grace: Duration::from_millis(1500),
        supervisor_args: Vec::new(),
    }
}

/// The command line a launch of [`spec`] must type.
pub const TYPED: &str =
    "'/opt/my tools/shepherd' supervise --grace-ms 1500 -- 'sheep' 'it'\\''s here'";

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
