//! Contract tests of the Herdr backend against the fake server: every placement without
//! stealing focus, the supervisor started as the pane's own program (never typed), the label,
//! cwd and environment reaching the pane (and the token never the argv), panes known by their
//! terminal id, reads that work around Herdr's blank small reads, confirmed closes, kept
//! panes, and cleaning up after a failed launch. How panes are found again is in
//! `herdr_identity.rs`.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::herdr_support;

use std::time::Instant;

use herdr_support::{TOKEN, WAIT, backend, fake, spec, supervisor_argv};
use serde_json::{Value, json};
use shepherd_term::herdr::{HerdrClient, PaneRef};
use shepherd_term::{Backend, LaunchRecord, Placement, Presence, ReadSource, TermError};
use shepherd_testkit::fake_herdr::{FakeHerdr, FakeOptions, FakeState};

fn user() -> FakeHerdr {
    fake(FakeOptions::with_user_session())
}

/// The pane a record names, as Herdr now lists it.
fn pane_of(record: &LaunchRecord) -> String {
    PaneRef::parse(record.pane.as_deref().expect("a pane")).pane_id
}

/// Asserts what every launch must leave: label, cwd, env, the argv, nothing typed, focus
/// untouched, and a record that names the pane's terminal.
fn assert_placed(fake: &FakeHerdr, record: &LaunchRecord, cwd: &str) {
    let reference = PaneRef::parse(record.pane.as_deref().unwrap());
    fake.inspect(|state| {
        let placed = state.pane(&reference.pane_id).expect("the pane exists");
        assert_eq!(Some(&placed.terminal_id), reference.terminal_id.as_ref());
        assert_eq!(placed.label.as_deref(), Some("worker: code review"));
        assert_eq!(placed.cwd, cwd);
        assert_eq!(
            placed.env.get("SHEPHERD_TOKEN").map(String::as_str),
            Some(TOKEN)
        );
        assert_eq!(placed.command.as_ref(), Some(&supervisor_argv()));
        assert!(placed.typed.is_empty(), "typed into: {}", placed.typed);
        assert_eq!(state.focus_changes(), 0, "focus moved");
        for request in state.requests() {
            assert_ne!(
                request.params.get("focus"),
                Some(&json!(true)),
                "{request:?}"
            );
            assert!(!request.method.ends_with(".focus"), "{request:?}");
            assert!(
                !request.params.to_string().contains(TOKEN) || request.method == "layout.apply"
            );
        }
    });
}

fn applied(state: &FakeState) -> Value {
    state.requests_for("layout.apply")[0].clone()
}

#[test]
fn a_tab_goes_to_the_callers_workspace_in_the_background() {
    let fake = user();
    let backend = backend(&fake);
    let dir = tempfile::tempdir().unwrap();
    let record = backend
        .launch(&spec(dir.path(), Placement::Tab, Some("w1:p1")))
        .unwrap();
    assert_eq!(pane_of(&record), "w1:p2");
    assert_eq!(record.window.as_deref(), Some("w1:t2"));
    assert_eq!(record.server.as_deref(), fake.socket().to_str());
    assert_placed(&fake, &record, dir.path().to_str().unwrap());
    fake.inspect(|state| {
        let layout = applied(state);
        assert_eq!(layout["workspace_id"], "w1");
        assert_eq!(layout["tab_label"], "worker: code review");
        assert_eq!(layout["root"]["env"]["SHEPHERD_AGENT_ID"], "a1");
        assert!(
            layout.get("tab_id").is_none(),
            "a new tab, never a replaced one"
        );
        assert_eq!(state.focused_pane(), Some("w1:p1"));
    });
}

#[test]
fn without_a_caller_a_tab_goes_to_the_focused_workspace() {
    let fake = user();
    let backend = backend(&fake);
    let dir = tempfile::tempdir().unwrap();
    let client = HerdrClient::new(fake.socket());
    // A second workspace that is not focused must not be chosen.
    let other = shepherd_term::herdr::NewPane {
        cwd: "/",
        label: Some("other"),
        env: &[],
    };
    client.workspace_create(&other, None).unwrap();
    let record = backend
        .launch(&spec(dir.path(), Placement::Tab, None))
        .unwrap();
    assert_eq!(record.window.as_deref(), Some("w1:t2"));
    assert_placed(&fake, &record, dir.path().to_str().unwrap());
}

#[test]
fn with_no_workspace_at_all_one_is_made_and_its_first_tab_replaced() {
    let fake = fake(FakeOptions::default());
    let backend = backend(&fake);
    let dir = tempfile::tempdir().unwrap();
    let record = backend
        .launch(&spec(dir.path(), Placement::Tab, None))
        .unwrap();
    assert_placed(&fake, &record, dir.path().to_str().unwrap());
    fake.inspect(|state| {
        assert_eq!(
            state.requests_for("workspace.create")[0]["label"],
            "worker: code review"
        );
        assert_eq!(
            applied(state)["tab_id"],
            "w1:t1",
            "the shell tab it came with"
        );
        assert_eq!(
            state.open_panes(),
            vec![pane_of(&record).as_str()],
            "no shell is left"
        );
    });
}

#[test]
fn splits_go_right_or_down_of_the_caller_and_keep_its_focus() {
    for (placement, direction) in [
        (Placement::PaneRight, "right"),
        (Placement::PaneDown, "down"),
    ] {
        let fake = user();
        let backend = backend(&fake);
        let dir = tempfile::tempdir().unwrap();
        let record = backend
            .launch(&spec(dir.path(), placement, Some("w1:p1")))
            .unwrap();
        assert_eq!(record.window.as_deref(), Some("w1:t1"), "the caller's tab");
        assert_placed(&fake, &record, dir.path().to_str().unwrap());
        fake.inspect(|state| {
            let moved = state.requests_for("pane.move")[0];
            assert_eq!(moved["destination"]["split"], direction);
            assert_eq!(moved["destination"]["target_pane_id"], "w1:p1");
            assert_eq!(moved["destination"]["tab_id"], "w1:t1");
            assert_eq!(state.focused_pane(), Some("w1:p1"));
            assert_eq!(state.open_panes().len(), 2, "the carrier tab closed");
        });
    }
}

#[test]
fn a_split_finds_the_callers_pane_through_its_ancestry() {
    let fake = user();
    let backend = backend(&fake);
    let dir = tempfile::tempdir().unwrap();
    let me = std::process::id();
    let parent = shepherd_term::process::parent_of(me).unwrap();
    fake.set_shell_pid("w1:p1", parent);
    let mut stripped = spec(dir.path(), Placement::PaneDown, None);
    stripped.caller_pid = Some(me);
    let record = backend.launch(&stripped).unwrap();
    assert_eq!(record.window.as_deref(), Some("w1:t1"));
    fake.inspect(|state| {
        assert_eq!(
            state.requests_for("pane.move")[0]["destination"]["target_pane_id"],
            "w1:p1"
        );
    });
}

#[test]
fn a_split_without_a_caller_pane_is_a_clear_error_and_creates_nothing() {
    let fake = user();
    let backend = backend(&fake);
    let dir = tempfile::tempdir().unwrap();
    let err = backend
        .launch(&spec(dir.path(), Placement::PaneDown, None))
        .unwrap_err();
    let TermError::NoCallerPane(message) = &err else {
        panic!("not a no-caller-pane error: {err}");
    };
    assert!(
        message.contains("pane_down") && message.contains("placement tab"),
        "{message}"
    );
    assert_eq!(err.code(), "no_caller_pane");
    let mut unrelated = spec(dir.path(), Placement::PaneDown, None);
    unrelated.caller_pid = Some(std::process::id());
    assert!(matches!(
        backend.launch(&unrelated),
        Err(TermError::NoCallerPane(_))
    ));
    let missing = backend
        .launch(&spec(dir.path(), Placement::PaneRight, Some("w1:p9")))
        .unwrap_err();
    assert!(
        matches!(&missing, TermError::NoCallerPane(m) if m.contains("w1:p9")),
        "{missing}"
    );
    fake.inspect(|state| assert_eq!(state.open_panes(), vec!["w1:p1"]));
}

#[test]
fn a_workspace_is_created_without_taking_focus() {
    let fake = user();
    let backend = backend(&fake);
    let dir = tempfile::tempdir().unwrap();
    let record = backend
        .launch(&spec(dir.path(), Placement::Workspace, Some("w1:p1")))
        .unwrap();
    assert_eq!(pane_of(&record), "w2:p2");
    assert_placed(&fake, &record, dir.path().to_str().unwrap());
    fake.inspect(|state| {
        assert_eq!(
            state.requests_for("workspace.create")[0]["label"],
            "worker: code review"
        );
        assert_eq!(state.focused_pane(), Some("w1:p1"));
    });
}

#[test]
fn keep_open_wraps_the_supervisor_so_the_pane_outlives_it() {
    let fake = user();
    let backend = backend(&fake);
    let dir = tempfile::tempdir().unwrap();
    let mut kept = spec(dir.path(), Placement::Tab, None);
    kept.keep_open = true;
    let record = backend.launch(&kept).unwrap();
    let argv = fake.inspect(|state| {
        state
            .pane(&pane_of(&record))
            .unwrap()
            .command
            .clone()
            .unwrap()
    });
    assert_eq!(&argv[..2], ["/bin/sh", "-c"]);
    assert!(
        argv[2].contains("set -m") && argv[2].contains("exec \"${SHELL"),
        "{argv:?}"
    );
    assert_eq!(argv[4..], supervisor_argv()[..]);
}

#[test]
fn a_launch_that_fails_after_placing_closes_its_pane() {
    let fake = user();
    let backend = backend(&fake);
    let dir = tempfile::tempdir().unwrap();
    fake.fail("pane.move", "invalid_params", "scripted refusal");
    let err = backend
        .launch(&spec(dir.path(), Placement::PaneRight, Some("w1:p1")))
        .unwrap_err();
    assert!(
        matches!(&err, TermError::Launch(m) if m.contains("scripted refusal")),
        "{err}"
    );
    fake.inspect(|state| assert_eq!(state.open_panes(), vec!["w1:p1"]));
}

#[test]
fn reads_ask_for_many_rows_and_trim_on_our_side() {
    let fake = user();
    let backend = backend(&fake);
    let dir = tempfile::tempdir().unwrap();
    let record = backend
        .launch(&spec(dir.path(), Placement::Tab, None))
        .unwrap();
    fake.set_screen(&pane_of(&record), "one\ntwo\nthree\n");
    for (source, api) in [
        (ReadSource::Recent, "recent"),
        (ReadSource::RecentUnwrapped, "recent_unwrapped"),
        (ReadSource::Visible, "visible"),
        (ReadSource::Detection, "detection"),
    ] {
        assert_eq!(
            backend.read(&record, source, 2).unwrap(),
            "two\nthree",
            "{source:?}"
        );
        fake.inspect(|state| {
            let read = *state.requests_for("pane.read").last().unwrap();
            assert_eq!(read["source"], api);
            assert!(read["lines"].as_u64().unwrap() >= 200, "{read}");
        });
    }
    assert_eq!(
        backend.read(&record, ReadSource::Recent, 10).unwrap(),
        "one\ntwo\nthree"
    );
    fake.exit_pane(&pane_of(&record));
    let err = backend.read(&record, ReadSource::Recent, 5).unwrap_err();
    assert!(
        matches!(&err, TermError::Read(m) if m.contains("is gone")),
        "{err}"
    );
}

#[test]
fn close_removes_the_pane_and_confirms_it() {
    let fake = user();
    let backend = backend(&fake);
    let dir = tempfile::tempdir().unwrap();
    let record = backend
        .launch(&spec(dir.path(), Placement::Tab, None))
        .unwrap();
    assert_eq!(backend.presence(&record), Presence::Present);
    backend
        .close(&record, false, Instant::now() + WAIT)
        .unwrap();
    fake.inspect(|state| assert!(state.pane(&pane_of(&record)).unwrap().closed));
    assert_eq!(backend.presence(&record), Presence::Gone);
    // Closing again, or a pane whose program already ended, is not an error.
    backend
        .close(&record, false, Instant::now() + WAIT)
        .unwrap();
    let second = backend
        .launch(&spec(dir.path(), Placement::Tab, None))
        .unwrap();
    fake.exit_pane(&pane_of(&second));
    backend
        .close(&second, false, Instant::now() + WAIT)
        .unwrap();
    fake.inspect(|state| {
        assert_eq!(state.focus_changes(), 0);
        assert_eq!(
            state.requests_for("pane.close").len(),
            1,
            "nothing closed twice"
        );
    });
}

#[test]
fn close_confirms_through_pane_list_when_the_event_stream_is_down() {
    let fake = user();
    let backend = backend(&fake);
    let dir = tempfile::tempdir().unwrap();
    let record = backend
        .launch(&spec(dir.path(), Placement::Tab, None))
        .unwrap();
    fake.fail_times(
        "events.subscribe",
        "invalid_request",
        "no events now",
        u32::MAX,
    );
    fake.drop_subscribers();
    let lists = fake.inspect(|state| state.requests_for("pane.list").len());
    backend
        .close(&record, false, Instant::now() + WAIT)
        .unwrap();
    assert!(fake.inspect(|state| state.requests_for("pane.list").len()) > lists);
    assert_eq!(backend.presence(&record), Presence::Gone);
}

#[test]
fn a_close_herdr_refuses_is_not_confirmed() {
    let fake = user();
    let backend = backend(&fake);
    let dir = tempfile::tempdir().unwrap();
    let record = backend
        .launch(&spec(dir.path(), Placement::Tab, None))
        .unwrap();
    fake.fail("pane.close", "invalid_params", "cannot close that");
    let err = backend
        .close(&record, false, Instant::now() + WAIT)
        .unwrap_err();
    assert!(
        matches!(&err, TermError::NotConfirmed(m) if m.contains("cannot close that")),
        "{err}"
    );
    assert_eq!(err.code(), "close_unconfirmed");
    assert_eq!(backend.presence(&record), Presence::Present);
}

#[test]
fn a_kept_pane_stays_and_close_waits_until_only_the_shell_runs() {
    let fake = fake(FakeOptions {
        run_processes: true,
        ..FakeOptions::with_user_session()
    });
    let backend = backend(&fake);
    let dir = tempfile::tempdir().unwrap();
    let mut spec = spec(dir.path(), Placement::Tab, None);
    spec.keep_open = true;
    spec.shepherd_exe = herdr_support::fake_shepherd(dir.path());
    // The wrapper's shell reads the pane's input afterwards; here it stays idle.
    spec.env.push(("SHELL".into(), "/bin/sh".into()));
    let pid_file = dir.path().join("sheep.pid");
    // Like a supervised sheep, it leads a process group of its own.
    spec.program = vec![
        "perl".into(),
        "-e".into(),
        r#"setpgrp(0, 0); open(my $f, ">", $ARGV[0]); print $f "$$\n"; close $f; $| = 1; print "started $ENV{SHEPHERD_AGENT_ID}\n"; exec "sleep", "60""#.into(),
        pid_file.display().to_string(),
    ];
    let record = backend.launch(&spec).unwrap();
    let pane = pane_of(&record);
    assert!(fake.wait_until(WAIT, |state| {
        state.pane(&pane).unwrap().screen.contains("started a1")
    }));
    let sheep: u32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    std::thread::scope(|scope| {
        let close = scope.spawn(|| backend.close(&record, true, Instant::now() + WAIT));
        let asked = |state: &FakeState| !state.requests_for("pane.process_info").is_empty();
        assert!(fake.wait_until(WAIT, asked));
        assert!(!close.is_finished(), "the sheep still runs");
        // What the supervisor does on terminate: end the sheep.
        shepherd_term::process::signal_process(sheep, rustix::process::Signal::KILL);
        close.join().unwrap().unwrap();
    });
    fake.inspect(|state| assert!(!state.pane(&pane).unwrap().closed, "the pane was kept"));
    assert_eq!(backend.presence(&record), Presence::Present);
}
