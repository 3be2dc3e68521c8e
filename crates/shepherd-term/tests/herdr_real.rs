//! The Herdr backend against a real `herdr`, when one is on `PATH`; otherwise this prints one
//! line saying it was skipped and passes (no usable Herdr can be installed on CI).
//!
//! It follows Herdr's own isolation recipe: a private `XDG_CONFIG_HOME` (a server restores the
//! saved layout of its config directory), `XDG_RUNTIME_DIR` and socket, `SHELL=/bin/sh`,
//! onboarding and network checks off, and the server started by the backend itself — so it is
//! also the test of starting and stopping a server we own.

mod herdr_support;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use herdr_support::{WAIT, events_until, fake_shepherd, spec};
use serde_json::json;
use shepherd_term::herdr::{
    HerdrBackend, HerdrConfig, HerdrEnv, HerdrEvent, ServerOrigin, ServerStart,
};
use shepherd_term::{Backend, Placement, Presence, ReadSource};

fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}

/// Stops the server we started even when an assertion fails.
struct StopOnDrop<'a>(&'a HerdrBackend);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        let _stopped = self.0.stop_started_server(Instant::now() + WAIT);
    }
}

fn isolated(base: &Path, herdr: PathBuf) -> HerdrConfig {
    let config_home = base.join("config");
    std::fs::create_dir_all(config_home.join("herdr")).unwrap();
    std::fs::write(
        config_home.join("herdr").join("config.toml"),
        "onboarding = false\n[update]\nversion_check = false\nmanifest_check = false\n",
    )
    .unwrap();
    let runtime = base.join("runtime");
    std::fs::create_dir_all(&runtime).unwrap();
    let mut start = ServerStart::new(herdr);
    start.env = vec![
        (
            OsString::from("XDG_CONFIG_HOME"),
            Some(config_home.into_os_string()),
        ),
        (
            OsString::from("XDG_RUNTIME_DIR"),
            Some(runtime.into_os_string()),
        ),
        (OsString::from("SHELL"), Some(OsString::from("/bin/sh"))),
    ];
    start.log = Some(base.join("server.log"));
    start.timeout = Duration::from_secs(20);
    let mut config = HerdrConfig::new(HerdrEnv::default());
    config.socket = Some(base.join("herdr.sock"));
    config.start = Some(start);
    config
}

#[test]
fn a_real_herdr_runs_sheep_in_tabs_and_splits() {
    let Some(herdr) = on_path("herdr") else {
        println!("skipped: herdr is not on PATH, so the real-Herdr tests did not run");
        return;
    };
    let base = tempfile::tempdir().unwrap();
    let backend = HerdrBackend::connect(isolated(base.path(), herdr)).unwrap();
    let _stop = StopOnDrop(&backend);
    assert!(matches!(
        backend.server().origin,
        ServerOrigin::Started { .. }
    ));
    assert!(backend.server().protocol >= 20);
    let mut events = backend.events().unwrap();

    let mut tab = spec(base.path(), Placement::Tab, None);
    tab.shepherd_exe = fake_shepherd(base.path());
    tab.env
        .push(("SHEPHERD_TEST_VALUE".into(), "xyz-42".into()));
    // The marker is computed by the shell, so the echoed command line cannot match it.
    tab.program = vec![
        "sh".into(),
        "-c".into(),
        "echo \"ready:$SHEPHERD_TEST_VALUE\"; exec cat".into(),
    ];
    let first = backend.launch(&tab).unwrap();
    let pane = first.pane.clone().unwrap();
    let wait = json!({
        "pane_id": pane, "source": "recent",
        "match": {"type": "regex", "value": "^ready:xyz-42$"}, "timeout_ms": 10_000,
    });
    backend
        .client()
        .request("pane.wait_for_output", &wait, Some(Instant::now() + WAIT))
        .unwrap();
    let text = backend.read(&first, ReadSource::Recent, 5).unwrap();
    assert!(text.lines().any(|line| line == "ready:xyz-42"), "{text:?}");
    assert!(!text.contains(herdr_support::TOKEN), "{text:?}");
    let info = backend.client().pane_get(&pane, None).unwrap();
    assert_eq!(info.label.as_deref(), Some("worker: code review"));
    assert_eq!(backend.presence(&first), Presence::Present);

    let mut split = tab.clone();
    split.placement = Placement::PaneRight;
    split.caller_pane = Some(pane.clone());
    let second = backend.launch(&split).unwrap();
    let second_pane = second.pane.clone().unwrap();
    assert_eq!(second.window, first.window, "split within the caller's tab");
    assert!(
        !backend
            .client()
            .pane_get(&second_pane, None)
            .unwrap()
            .focused
    );

    backend
        .close(&second, false, Instant::now() + WAIT)
        .unwrap();
    let closed = HerdrEvent::PaneClosed {
        pane_id: second_pane,
    };
    events_until(&mut events, |event| *event == closed);
    backend.close(&first, false, Instant::now() + WAIT).unwrap();
    assert_eq!(backend.presence(&first), Presence::Gone);
}
