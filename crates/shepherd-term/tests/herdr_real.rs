//! The Herdr backend against a real Herdr (`HERDR_BIN`, else `herdr` on `PATH`; each test
//! starts its own private server and stops it). Without a binary each test says it skipped —
//! unless `SHEPHERD_REQUIRE_HERDR=1`, which makes that a failure. These are the faults found
//! when Shepherd first met a real server (`research/herdr-real-check.md` §5), each with the
//! behaviour that fixes it: placements, a reused pane id after a restart (B1), a server that
//! is gone (B2), a moved pane (B3), an rc file that reads stdin (B4), a close that would hold
//! the whole server (B6) and a pane that should close with its sheep (B8).

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::herdr_support;

use std::path::Path;
use std::time::Instant;

use herdr_support::{WAIT, events_until, fake_shepherd, real_backend, spec};
use serde_json::{Value, json};
use shepherd_term::herdr::{HerdrBackend, HerdrEvent, PaneRef};
use shepherd_term::{Backend, LaunchRecord, LaunchSpec, Placement, Presence, ReadSource};
use shepherd_testkit::fake_herdr::RealHerdr;
use shepherd_testkit::fake_herdr::real::RealOptions;

/// A user's workspace `w1` with its shell pane `w1:p1`, focused.
fn user_session(real: &RealHerdr) {
    let made = real.call("workspace.create", &json!({"cwd": "/tmp", "label": "user"}));
    assert_eq!(made["root_pane"]["pane_id"], "w1:p1");
}

/// A spec running `script` (through the stand-in supervisor) in `dir`.
fn running(dir: &Path, placement: Placement, script: &str) -> LaunchSpec {
    let mut spec = spec(dir, placement, Some("w1:p1"));
    spec.shepherd_exe = fake_shepherd(dir);
    spec.program = vec!["sh".into(), "-c".into(), script.into()];
    spec.env.push(("SHELL".into(), "/bin/sh".into()));
    spec
}

fn pane_of(record: &LaunchRecord) -> String {
    PaneRef::parse(record.pane.as_deref().unwrap()).pane_id
}

fn wait_for(real: &RealHerdr, pane: &str, regex: &str) {
    let params = json!({"pane_id": pane, "source": "recent",
        "match": {"type": "regex", "value": regex}, "timeout_ms": WAIT.as_millis() as u64});
    real.request("pane.wait_for_output", &params)
        .unwrap_or_else(|err| panic!("no {regex} in {pane}: {err}"));
}

fn listed(real: &RealHerdr) -> Vec<Value> {
    real.call("pane.list", &json!({}))["panes"]
        .as_array()
        .unwrap()
        .clone()
}

fn terminal_listed(real: &RealHerdr, record: &LaunchRecord) -> bool {
    let terminal = PaneRef::parse(record.pane.as_deref().unwrap()).terminal_id;
    listed(real)
        .iter()
        .any(|p| p["terminal_id"].as_str() == terminal.as_deref())
}

fn start(test: &str) -> Option<(RealHerdr, HerdrBackend)> {
    let real = RealHerdr::start(test)?;
    user_session(&real);
    let backend = real_backend(&real);
    Some((real, backend))
}

#[test]
fn every_placement_runs_the_sheep_in_a_labelled_background_pane() {
    let Some((real, backend)) = start("backend_every_placement") else {
        return;
    };
    let mut events = backend.events().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let script = "echo \"ready:$SHEPHERD_AGENT_ID:$HERDR_PANE_ID\"; exec cat";
    for placement in [
        Placement::Tab,
        Placement::PaneRight,
        Placement::PaneDown,
        Placement::Workspace,
    ] {
        let record = backend
            .launch(&running(dir.path(), placement, script))
            .unwrap();
        let pane = pane_of(&record);
        wait_for(&real, &pane, "^ready:a1:");
        let text = backend.read(&record, ReadSource::Recent, 5).unwrap();
        assert!(text.starts_with("ready:a1:"), "{placement:?}: {text:?}");
        assert!(!text.contains(herdr_support::TOKEN), "{text:?}");
        let info = real.call("pane.get", &json!({"pane_id": pane}));
        assert_eq!(
            info["pane"]["label"], "worker: code review",
            "{placement:?}"
        );
        assert_eq!(info["pane"]["focused"], false, "{placement:?}");
        let expected_tab = matches!(placement, Placement::PaneRight | Placement::PaneDown);
        assert_eq!(
            info["pane"]["tab_id"] == "w1:t1",
            expected_tab,
            "{placement:?}: {info}"
        );
        let caller = real.call("pane.get", &json!({"pane_id": "w1:p1"}));
        assert_eq!(
            caller["pane"]["focused"], true,
            "{placement:?}: focus stays with the caller"
        );
        assert_eq!(backend.presence(&record), Presence::Present);
        backend
            .close(&record, false, Instant::now() + WAIT)
            .unwrap();
        assert!(!terminal_listed(&real, &record), "{placement:?}");
        assert_eq!(backend.presence(&record), Presence::Gone);
        let closed = HerdrEvent::PaneClosed {
            pane: record.pane.clone().unwrap(),
        };
        events_until(&mut events, |event| *event == closed);
    }
    assert_eq!(listed(&real).len(), 1, "only the user's pane is left");
}

#[test]
fn a_pane_id_reused_after_a_restart_is_never_closed() {
    let Some((mut real, backend)) = start("backend_b1_reused_pane_id") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let record = backend
        .launch(&running(dir.path(), Placement::Tab, "exec sleep 600"))
        .unwrap();
    let old_id = pane_of(&record);
    // A fresh session, in which the user has made panes by the time Shepherd looks again.
    real.restart_fresh_then(|real| {
        user_session(real);
        let mut mine = String::new();
        while mine != old_id {
            let applied = real.call(
                "layout.apply",
                &json!({"workspace_id": "w1", "root": {"type": "pane", "command": ["sleep", "777"], "cwd": "/tmp"}}),
            );
            mine = applied["layout"]["root"]["pane_id"].as_str().unwrap().to_owned();
            assert!(mine.len() < 6, "ids did not start again");
        }
    });
    assert_eq!(backend.presence(&record), Presence::Gone);
    backend
        .close(&record, false, Instant::now() + WAIT)
        .unwrap();
    assert!(backend.read(&record, ReadSource::Recent, 5).is_err());
    let still = listed(&real);
    assert!(
        still.iter().any(|p| p["pane_id"] == old_id.as_str()),
        "the user's {old_id} was closed"
    );
    let info = real.call("pane.process_info", &json!({"pane_id": old_id}));
    assert_eq!(
        info["process_info"]["foreground_processes"][0]["argv"],
        json!(["sleep", "777"])
    );
}

#[test]
fn a_server_that_is_gone_leaves_nothing_to_clean_up() {
    let Some((mut real, backend)) = start("backend_b2_server_gone") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let record = backend
        .launch(&running(dir.path(), Placement::Tab, "exec sleep 600"))
        .unwrap();
    real.kill9();
    assert_eq!(backend.presence(&record), Presence::Gone);
    backend
        .close(&record, false, Instant::now() + WAIT)
        .unwrap();
    let err = backend.read(&record, ReadSource::Recent, 5).unwrap_err();
    assert!(err.to_string().contains("is gone"), "{err}");
    assert!(backend.available().is_err(), "no server answers");
}

#[test]
fn a_moved_pane_is_followed_and_closed() {
    let Some((real, backend)) = start("backend_b3_moved_pane") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let record = backend
        .launch(&running(
            dir.path(),
            Placement::Tab,
            "echo moving; exec sleep 600",
        ))
        .unwrap();
    wait_for(&real, &pane_of(&record), "^moving$");
    let moved = real.call(
        "pane.move",
        &json!({"pane_id": pane_of(&record), "destination": {"type": "new_workspace"}}),
    );
    let now = moved["move_result"]["pane"]["pane_id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_ne!(now, pane_of(&record));
    assert_eq!(backend.presence(&record), Presence::Present);
    assert_eq!(
        backend.read(&record, ReadSource::Recent, 1).unwrap(),
        "moving"
    );
    backend
        .close(&record, false, Instant::now() + WAIT)
        .unwrap();
    assert!(!terminal_listed(&real, &record));
    assert!(!listed(&real).iter().any(|p| p["pane_id"] == now.as_str()));
}

#[test]
fn a_sheep_starts_whatever_the_shells_rc_file_does() {
    let options = RealOptions {
        shell: "/bin/bash".into(),
        bashrc: Some("sleep 0.3\nread -t 3 line && echo \"rc-file read: [$line]\"\n".into()),
        ..RealOptions::default()
    };
    let Some(real) = RealHerdr::start_with("backend_b4_rc_file_reads_stdin", options) else {
        return;
    };
    user_session(&real);
    let backend = real_backend(&real);
    let dir = tempfile::tempdir().unwrap();
    let mut spec = running(
        dir.path(),
        Placement::Tab,
        "echo \"sheep-$((6*7))\"; exec cat",
    );
    spec.env.retain(|(key, _)| key != "SHELL");
    spec.keep_open = true;
    let record = backend.launch(&spec).unwrap();
    wait_for(&real, &pane_of(&record), "^sheep-42$");
    let text = backend
        .read(&record, ReadSource::RecentUnwrapped, 50)
        .unwrap();
    assert!(!text.contains("rc-file read"), "{text}");
    assert_eq!(text.matches("sheep-42").count(), 1, "{text}");
    backend
        .close(&record, false, Instant::now() + WAIT)
        .unwrap();
}

#[test]
fn a_sheep_that_ends_closes_its_pane_unless_it_is_kept() {
    let Some((real, backend)) = start("backend_b8_keep_open") else {
        return;
    };
    let mut events = backend.events().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let gate = dir.path().join("gate");
    let done = running(
        dir.path(),
        Placement::Tab,
        &format!(
            "while [ ! -e '{}' ]; do sleep 0.02; done; exit 3",
            gate.display()
        ),
    );
    let gone = backend.launch(&done).unwrap();
    assert_eq!(backend.presence(&gone), Presence::Present);
    std::fs::write(&gate, "").unwrap();
    let closed = HerdrEvent::PaneClosed {
        pane: gone.pane.clone().unwrap(),
    };
    events_until(&mut events, |event| *event == closed);
    assert_eq!(backend.presence(&gone), Presence::Gone);
    let mut keep = running(dir.path(), Placement::Tab, "echo kept-bye; exit 3");
    keep.keep_open = true;
    let kept = backend.launch(&keep).unwrap();
    let pane = pane_of(&kept);
    wait_for(&real, &pane, "^kept-bye$");
    backend.close(&kept, true, Instant::now() + WAIT).unwrap();
    let info = real.call("pane.process_info", &json!({"pane_id": pane}))["process_info"].clone();
    assert_eq!(
        info["shell_pid"], info["foreground_process_group_id"],
        "a shell: {info}"
    );
    assert_eq!(backend.presence(&kept), Presence::Present);
    backend.close(&kept, false, Instant::now() + WAIT).unwrap();
    assert_eq!(backend.presence(&kept), Presence::Gone);
}

#[test]
fn a_process_is_placed_in_its_pane_through_its_ancestry() {
    let Some((real, backend)) = start("backend_pane_of_process") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let record = backend
        .launch(&running(
            dir.path(),
            Placement::Tab,
            &format!("sh -c 'echo $$ > {}; exec sleep 600'", pid_file.display()),
        ))
        .unwrap();
    let until = Instant::now() + WAIT;
    let pid: u32 = loop {
        if let Some(pid) = std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|t| t.trim().parse().ok())
        {
            break pid;
        }
        assert!(
            Instant::now() < until,
            "the pane's process never wrote its pid"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    assert_eq!(
        backend.pane_of_process(pid).unwrap(),
        Some(pane_of(&record))
    );
    assert_eq!(backend.pane_of_process(std::process::id()).unwrap(), None);
    drop(real);
}

#[test]
fn a_sheeps_leftovers_end_before_herdr_is_asked_to_close_its_pane() {
    let Some((real, backend)) = start("backend_b6_leftovers_first") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("leftover");
    let mut spec = running(dir.path(), Placement::Tab, &leftover(&log));
    spec.keep_open = true;
    let record = backend.launch(&spec).unwrap();
    wait_for(&real, &pane_of(&record), "leftover-started");
    backend
        .close(&record, false, Instant::now() + WAIT)
        .unwrap();
    let heard = std::fs::read_to_string(&log).unwrap_or_default();
    assert_eq!(heard.trim(), "done", "Herdr's close signalled the leftover");
    assert!(!terminal_listed(&real, &record));
}

/// A process that leaves the sheep's process group (so ending the sheep does not reach it),
/// prints `leftover-started`, lives a second and notes in `log` any hang-up it hears, then
/// `done`.
fn leftover(log: &Path) -> String {
    r#"perl -e '$| = 1; setpgrp(0, 0); sub note { open(my $f, ">>", $ARGV[0]); print $f "$_[0]\n" } $SIG{HUP} = sub { note("hup") }; print "leftover-started\n"; select(undef, undef, undef, 1); note("done")' 'LOG' &"#
        .replace("LOG", &log.display().to_string())
}
