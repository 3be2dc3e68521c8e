//! The Herdr backend's hold on its panes, against the fake server: a pane is found by its
//! terminal id (so a pane id reused after a restart is never touched, and a moved pane is
//! followed), a server that is gone took its panes with it while one that does not answer
//! proves nothing, a record names its own server, and a sheep's leftover processes end before
//! Herdr is asked to close its pane.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::herdr_support;

use std::time::Instant;

use herdr_support::{WAIT, backend, fake, spec};
use serde_json::json;
use shepherd_term::herdr::{HerdrBackend, HerdrClient, PaneRef};
use shepherd_term::{Backend, LaunchRecord, Placement, Presence, ReadSource};
use shepherd_testkit::fake_herdr::{FakeHerdr, FakeOptions};

fn user() -> FakeHerdr {
    fake(FakeOptions::with_user_session())
}

fn pane_of(record: &LaunchRecord) -> String {
    PaneRef::parse(record.pane.as_deref().expect("a pane")).pane_id
}

#[test]
fn presence_is_unknown_when_herdr_cannot_answer_and_gone_when_it_is_gone() {
    let fake = user();
    let backend = backend(&fake);
    let dir = tempfile::tempdir().unwrap();
    let record = backend
        .launch(&spec(dir.path(), Placement::Tab, None))
        .unwrap();
    fake.fail("pane.list", "internal_error", "scripted");
    assert_eq!(backend.presence(&record), Presence::Unknown);
    assert_eq!(backend.presence(&record), Presence::Present);
    fake.hang_next("pane.list");
    let mut config = herdr_support::config(fake.socket());
    config.call_timeout = std::time::Duration::from_millis(200);
    let impatient = HerdrBackend::connect(config).unwrap();
    assert_eq!(
        impatient.presence(&record),
        Presence::Unknown,
        "a timeout proves nothing"
    );
    drop(fake);
    // No server listens any more: its panes went with it.
    assert_eq!(backend.presence(&record), Presence::Gone);
    backend
        .close(&record, false, Instant::now() + WAIT)
        .unwrap();
    assert_eq!(backend.presence(&LaunchRecord::default()), Presence::Gone);
}

#[test]
fn a_record_from_another_herdr_server_is_served_by_that_server() {
    let ours = user();
    let theirs = user();
    let backend = backend(&ours);
    let terminal = theirs.inspect(|state| state.pane("w1:p1").unwrap().terminal_id.clone());
    let record = LaunchRecord {
        pane: Some(PaneRef::new("w1:p1", terminal).to_string()),
        server: theirs.socket().to_str().map(str::to_owned),
        ..LaunchRecord::default()
    };
    theirs.set_screen("w1:p1", "from the other server\n");
    assert_eq!(
        backend.read(&record, ReadSource::Recent, 1).unwrap(),
        "from the other server"
    );
    backend
        .close(&record, false, Instant::now() + WAIT)
        .unwrap();
    assert!(theirs.inspect(|state| state.pane("w1:p1").unwrap().closed));
    assert!(!ours.inspect(|state| state.pane("w1:p1").unwrap().closed));
}

#[test]
fn a_pane_id_is_never_acted_on_without_its_terminal() {
    // After a restart with a fresh session, ids start again: `w1:p2` is now someone else's.
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("herdr.sock");
    let first = FakeHerdr::start_at(&socket, FakeOptions::with_user_session()).unwrap();
    let backend = backend(&first);
    let record = backend
        .launch(&spec(dir.path(), Placement::Tab, Some("w1:p1")))
        .unwrap();
    assert_eq!(pane_of(&record), "w1:p2");
    drop(first);
    let second = FakeHerdr::start_at(&socket, FakeOptions::with_user_session()).unwrap();
    HerdrClient::new(&socket)
        .tab_create(
            "w1",
            &shepherd_term::herdr::NewPane {
                cwd: "/",
                label: Some("mine"),
                env: &[],
            },
            None,
        )
        .unwrap();
    assert_eq!(backend.presence(&record), Presence::Gone);
    backend
        .close(&record, false, Instant::now() + WAIT)
        .unwrap();
    assert!(backend.read(&record, ReadSource::Recent, 5).is_err());
    // A record that names no terminal (written before terminals were recorded) is never ours.
    let legacy = LaunchRecord {
        pane: Some("w1:p2".into()),
        ..LaunchRecord::default()
    };
    assert_eq!(backend.presence(&legacy), Presence::Gone);
    backend
        .close(&legacy, false, Instant::now() + WAIT)
        .unwrap();
    second.inspect(|state| {
        assert!(
            !state.pane("w1:p2").unwrap().closed,
            "the user's pane survives"
        );
        assert!(state.requests_for("pane.close").is_empty());
    });
}

#[test]
fn a_moved_pane_is_followed_by_its_terminal() {
    let fake = user();
    let backend = backend(&fake);
    let dir = tempfile::tempdir().unwrap();
    let record = backend
        .launch(&spec(dir.path(), Placement::Tab, None))
        .unwrap();
    let moved = HerdrClient::new(fake.socket())
        .request(
            "pane.move",
            &json!({"pane_id": pane_of(&record), "destination": {"type": "new_workspace"}}),
            None,
        )
        .unwrap();
    let now = moved["move_result"]["pane"]["pane_id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_ne!(now, pane_of(&record));
    fake.set_screen(&now, "moved along\n");
    assert_eq!(backend.presence(&record), Presence::Present);
    assert_eq!(
        backend.read(&record, ReadSource::Recent, 1).unwrap(),
        "moved along"
    );
    backend
        .close(&record, false, Instant::now() + WAIT)
        .unwrap();
    fake.inspect(|state| {
        assert!(state.pane(&now).unwrap().closed);
        assert_eq!(state.requests_for("pane.close")[0]["pane_id"], now.as_str());
    });
}

#[test]
fn a_sheeps_leftovers_go_before_herdr_is_asked_to_close_its_pane() {
    // Herdr's close holds every request while the pane's processes linger, so the backend
    // lets a sheep's leftover end by itself first: it never hears Herdr's HUP.
    let fake = fake(FakeOptions {
        run_processes: true,
        ..FakeOptions::with_user_session()
    });
    let backend = backend(&fake);
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("leftover");
    let mut spec = spec(dir.path(), Placement::Tab, None);
    spec.keep_open = true;
    spec.env.push(("SHELL".into(), "/bin/sh".into()));
    spec.shepherd_exe = herdr_support::fake_shepherd(dir.path());
    spec.program = vec!["sh".into(), "-c".into(), leftover(&log)];
    let record = backend.launch(&spec).unwrap();
    let pane = pane_of(&record);
    assert!(fake.wait_until(WAIT, |state| {
        state
            .pane(&pane)
            .unwrap()
            .screen
            .contains("leftover-started")
    }));
    backend
        .close(&record, false, Instant::now() + WAIT)
        .unwrap();
    let heard = std::fs::read_to_string(&log).unwrap_or_default();
    assert_eq!(
        heard.trim(),
        "done",
        "the leftover was signalled by the close"
    );
    fake.inspect(|state| assert!(state.pane(&pane).unwrap().closed));
}

/// A process that leaves the sheep's process group (so ending the sheep does not reach it),
/// prints `leftover-started`, lives a second and notes in `log` any hang-up it hears, then
/// `done`.
fn leftover(log: &std::path::Path) -> String {
    r#"perl -e '$| = 1; setpgrp(0, 0); sub note { open(my $f, ">>", $ARGV[0]); print $f "$_[0]\n" } $SIG{HUP} = sub { note("hup") }; print "leftover-started\n"; select(undef, undef, undef, 1); note("done")' 'LOG' &"#
        .replace("LOG", &log.display().to_string())
}
