//! Contract tests of the Herdr backend against the fake server: every placement without
//! stealing focus, the label, cwd and environment reaching the pane (and the token never the
//! command line), waiting for the shell, reads that work around Herdr's blank small reads,
//! closes that are confirmed, kept panes, presence, and cleaning up after a failed launch.

mod herdr_support;

use std::time::{Duration, Instant};

use herdr_support::{TOKEN, TYPED, WAIT, backend, fake, spec};
use serde_json::json;
use shepherd_term::herdr::{HerdrBackend, HerdrClient};
use shepherd_term::{Backend, LaunchRecord, Placement, Presence, ReadSource, TermError};
use shepherd_testkit::fake_herdr::{FakeHerdr, FakeOptions, FakeState};

fn pane_of(record: &LaunchRecord) -> String {
    record.pane.clone().expect("a pane")
}

/// Asserts what every launch must leave: label, cwd, env, the typed line, focus untouched.
fn assert_placed(fake: &FakeHerdr, pane: &str, cwd: &str) {
    fake.inspect(|state| {
        let placed = state.pane(pane).expect("the pane exists");
        assert_eq!(placed.label.as_deref(), Some("worker: code review"));
        assert_eq!(placed.cwd, cwd);
        assert_eq!(
            placed.env.get("SHEPHERD_TOKEN").map(String::as_str),
            Some(TOKEN)
        );
        assert_eq!(
            placed.env.get("SHEPHERD_AGENT_ID").map(String::as_str),
            Some("a1")
        );
        assert_eq!(placed.commands, vec![TYPED.to_owned()]);
        assert!(
            !placed.typed.contains(TOKEN),
            "the token was typed: {}",
            placed.typed
        );
        assert_eq!(state.focus_changes(), 0, "focus moved");
        for request in state.requests() {
            assert_ne!(
                request.params.get("focus"),
                Some(&json!(true)),
                "{request:?}"
            );
            assert!(!request.method.ends_with(".focus"), "{request:?}");
        }
    });
}

#[test]
fn a_tab_goes_to_the_callers_workspace_in_the_background() {
    let fake = fake(FakeOptions::default());
    let backend = backend(&fake);
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().to_str().unwrap();
    let record = backend
        .launch(&spec(dir.path(), Placement::Tab, Some("w1:p1")))
        .unwrap();
    assert_eq!(record.pane.as_deref(), Some("w1:p2"));
    assert_eq!(record.window.as_deref(), Some("w1:t2"));
    assert_eq!(record.server.as_deref(), fake.socket().to_str());
    assert_placed(&fake, "w1:p2", cwd);
    fake.inspect(|state| {
        let tab = state.requests_for("tab.create")[0];
        assert_eq!(tab["workspace_id"], "w1");
        assert_eq!(tab["label"], "worker: code review");
        assert_eq!(state.focused_pane(), Some("w1:p1"));
    });
}

#[test]
fn without_a_caller_a_tab_goes_to_the_focused_workspace() {
    let fake = fake(FakeOptions::default());
    let backend = backend(&fake);
    let dir = tempfile::tempdir().unwrap();
    let client = HerdrClient::new(fake.socket());
    // A second workspace that is not focused must not be chosen.
    let other = shepherd_term::herdr::client::NewPane {
        cwd: "/",
        label: Some("other"),
        env: &[],
    };
    client.workspace_create(&other, None).unwrap();
    let record = backend
        .launch(&spec(dir.path(), Placement::Tab, None))
        .unwrap();
    assert_eq!(record.window.as_deref(), Some("w1:t2"));
    assert_placed(&fake, &pane_of(&record), dir.path().to_str().unwrap());
}

#[test]
fn with_no_workspace_at_all_one_is_created_and_its_root_pane_used() {
    let fake = fake(FakeOptions {
        initial_workspace: false,
        ..FakeOptions::default()
    });
    let backend = backend(&fake);
    let dir = tempfile::tempdir().unwrap();
    let record = backend
        .launch(&spec(dir.path(), Placement::Tab, None))
        .unwrap();
    assert_eq!(record.pane.as_deref(), Some("w1:p1"));
    assert_placed(&fake, "w1:p1", dir.path().to_str().unwrap());
    fake.inspect(|state| {
        assert!(state.requests_for("tab.create").is_empty());
        assert_eq!(
            state.requests_for("workspace.create")[0]["label"],
            "worker: code review"
        );
        assert_eq!(
            state.open_panes(),
            vec!["w1:p1"],
            "no empty shell is left beside it"
        );
    });
}

#[test]
fn splits_go_right_or_down_of_the_caller() {
    for (placement, direction) in [
        (Placement::PaneRight, "right"),
        (Placement::PaneDown, "down"),
    ] {
        let fake = fake(FakeOptions::default());
        let backend = backend(&fake);
        let dir = tempfile::tempdir().unwrap();
        let record = backend
            .launch(&spec(dir.path(), placement, Some("w1:p1")))
            .unwrap();
        assert_eq!(record.window.as_deref(), Some("w1:t1"), "the caller's tab");
        assert_placed(&fake, &pane_of(&record), dir.path().to_str().unwrap());
        fake.inspect(|state| {
            let split = state.requests_for("pane.split")[0];
            assert_eq!(split["direction"], direction);
            assert_eq!(split["target_pane_id"], "w1:p1");
            assert_eq!(state.focused_pane(), Some("w1:p1"));
        });
    }
}

#[test]
fn a_split_without_a_caller_pane_is_a_clear_error_and_creates_nothing() {
    let fake = fake(FakeOptions::default());
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
    let fake = fake(FakeOptions::default());
    let backend = backend(&fake);
    let dir = tempfile::tempdir().unwrap();
    let record = backend
        .launch(&spec(dir.path(), Placement::Workspace, Some("w1:p1")))
        .unwrap();
    assert_eq!(record.pane.as_deref(), Some("w2:p1"));
    assert_placed(&fake, "w2:p1", dir.path().to_str().unwrap());
    fake.inspect(|state| {
        assert_eq!(
            state.requests_for("workspace.create")[0]["label"],
            "worker: code review"
        );
        assert_eq!(state.focused_pane(), Some("w1:p1"));
    });
}

#[test]
fn nothing_is_typed_before_the_shell_owns_its_terminal() {
    let fake = fake(FakeOptions {
        slow_shell_start: true,
        ..FakeOptions::default()
    });
    let backend = backend(&fake);
    let dir = tempfile::tempdir().unwrap();
    std::thread::scope(|scope| {
        let launch = scope.spawn(|| backend.launch(&spec(dir.path(), Placement::Tab, None)));
        assert!(fake.wait_until(WAIT, |state| {
            !state.requests_for("pane.process_info").is_empty()
        }));
        // The shell's start-up still holds the terminal: the launch must be waiting.
        assert!(!launch.is_finished());
        fake.inspect(|state| assert!(state.requests_for("pane.send_input").is_empty()));
        fake.finish_shell_start("w1:p2");
        let record = launch.join().unwrap().unwrap();
        assert_placed(&fake, &pane_of(&record), dir.path().to_str().unwrap());
    });
}

#[test]
fn a_shell_that_never_gets_ready_fails_the_launch_and_leaves_nothing() {
    let fake = fake(FakeOptions {
        slow_shell_start: true,
        ..FakeOptions::default()
    });
    let mut config = herdr_support::config(fake.socket());
    config.launch_timeout = Duration::from_millis(300);
    let backend = HerdrBackend::connect(config).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let err = backend
        .launch(&spec(dir.path(), Placement::Tab, None))
        .unwrap_err();
    assert!(
        matches!(&err, TermError::Launch(m) if m.contains("w1:p2") && m.contains("not ready")),
        "{err}"
    );
    fake.inspect(|state| {
        assert_eq!(state.open_panes(), vec!["w1:p1"]);
        assert!(state.requests_for("pane.send_input").is_empty());
    });
}

#[test]
fn a_launch_that_fails_after_placing_closes_its_pane() {
    let fake = fake(FakeOptions::default());
    let backend = backend(&fake);
    let dir = tempfile::tempdir().unwrap();
    fake.fail("pane.send_input", "invalid_request", "scripted refusal");
    let err = backend
        .launch(&spec(dir.path(), Placement::Tab, None))
        .unwrap_err();
    assert!(
        matches!(&err, TermError::Launch(m) if m.contains("scripted refusal")),
        "{err}"
    );
    fake.inspect(|state| assert_eq!(state.open_panes(), vec!["w1:p1"]));
}

#[test]
fn reads_ask_for_many_rows_and_trim_on_our_side() {
    let fake = fake(FakeOptions::default());
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
    let fake = fake(FakeOptions::default());
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
    // Closing again, or a pane whose shell already exited, is not an error.
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
    assert_eq!(fake.inspect(FakeState::focus_changes), 0);
}

#[test]
fn close_confirms_through_pane_list_when_the_event_stream_is_down() {
    let fake = fake(FakeOptions::default());
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
}

#[test]
fn a_close_herdr_refuses_is_not_confirmed() {
    let fake = fake(FakeOptions::default());
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
        run_typed: true,
        ..FakeOptions::default()
    });
    let backend = backend(&fake);
    let dir = tempfile::tempdir().unwrap();
    let mut spec = spec(dir.path(), Placement::Tab, None);
    spec.shepherd_exe = herdr_support::fake_shepherd(dir.path());
    spec.program = vec![
        "sh".into(),
        "-c".into(),
        "echo \"started $SHEPHERD_AGENT_ID\"; exec sleep 60".into(),
    ];
    let record = backend.launch(&spec).unwrap();
    let pane = pane_of(&record);
    assert!(fake.wait_until(WAIT, |state| {
        state.pane(&pane).unwrap().screen.contains("started a1")
    }));
    let running = fake
        .inspect(|state| state.pane(&pane).unwrap().running_pid())
        .unwrap();
    std::thread::scope(|scope| {
        let close = scope.spawn(|| backend.close(&record, true, Instant::now() + WAIT));
        let asked = |state: &FakeState| state.requests_for("pane.process_info").len() >= 2;
        assert!(fake.wait_until(WAIT, asked));
        assert!(!close.is_finished(), "the sheep still runs");
        // What the supervisor does on terminate: end the sheep.
        rustix::process::kill_process_group(
            rustix::process::Pid::from_raw(running.cast_signed()).unwrap(),
            rustix::process::Signal::KILL,
        )
        .unwrap();
        close.join().unwrap().unwrap();
    });
    fake.inspect(|state| assert!(!state.pane(&pane).unwrap().closed, "the pane was kept"));
    assert_eq!(backend.presence(&record), Presence::Present);
}

#[test]
fn presence_is_unknown_never_gone_when_herdr_cannot_answer() {
    let fake = fake(FakeOptions::default());
    let backend = backend(&fake);
    let dir = tempfile::tempdir().unwrap();
    let record = backend
        .launch(&spec(dir.path(), Placement::Tab, None))
        .unwrap();
    fake.fail("pane.list", "internal_error", "scripted");
    assert_eq!(backend.presence(&record), Presence::Unknown);
    assert_eq!(backend.presence(&record), Presence::Present);
    drop(fake);
    assert_eq!(backend.presence(&record), Presence::Unknown);
    assert_eq!(
        backend.presence(&LaunchRecord::default()),
        Presence::Unknown
    );
}

#[test]
fn a_record_from_another_herdr_server_is_served_by_that_server() {
    let ours = fake(FakeOptions::default());
    let theirs = fake(FakeOptions::default());
    let backend = backend(&ours);
    let record = LaunchRecord {
        pane: Some("w1:p1".into()),
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
fn a_callers_pane_is_found_through_its_ancestry() {
    let fake = fake(FakeOptions::default());
    let backend = backend(&fake);
    let me = std::process::id();
    let parent = shepherd_term::process::parent_of(me).unwrap();
    // No pane's shell is an ancestor yet.
    assert_eq!(backend.pane_of_process(me).unwrap(), None);
    let client = HerdrClient::new(fake.socket());
    let new = shepherd_term::herdr::client::NewPane {
        cwd: "/",
        label: None,
        env: &[],
    };
    let split = client.pane_split("w1:p1", "down", &new, None).unwrap();
    fake.set_shell_pid("w1:p1", parent);
    assert_eq!(
        backend.pane_of_process(me).unwrap().as_deref(),
        Some("w1:p1")
    );
    // The nearest ancestor wins.
    fake.set_shell_pid(&split.pane_id, me);
    assert_eq!(
        backend.pane_of_process(me).unwrap(),
        Some(split.pane_id.clone())
    );
}
