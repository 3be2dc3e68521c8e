//! Contract tests of the Herdr socket client against the fake server: the handshake and its
//! protocol check, every structured error code, the connection behaviours a real Herdr shows
//! (closing after each reply) or might show (keeping the connection open, ending a reply at
//! EOF, never answering), and lenient reading of unknown fields and values.

use crate::herdr_support;

use std::time::{Duration, Instant};

use herdr_support::{WAIT, fake};
use serde_json::json;
use shepherd_term::ReadSource;
use shepherd_term::TermError;
use shepherd_term::herdr::wire::AgentStatus;
use shepherd_term::herdr::{ErrorCode, HerdrBackend, HerdrClient, HerdrError};
use shepherd_testkit::fake_herdr::{FakeOptions, FakeState};

fn client(fake: &shepherd_testkit::fake_herdr::FakeHerdr) -> HerdrClient {
    HerdrClient::new(fake.socket()).with_timeout(WAIT)
}

#[test]
fn the_handshake_reports_version_and_protocol() {
    let fake = fake(FakeOptions::default());
    let pong = client(&fake).handshake(None).unwrap();
    assert_eq!((pong.version.as_str(), pong.protocol), ("0.8.0", 20));
}

#[test]
fn a_protocol_below_20_is_refused_with_a_clear_error() {
    let fake = fake(FakeOptions {
        protocol: 19,
        version: "0.7.9".into(),
        ..FakeOptions::default()
    });
    let err = client(&fake).handshake(None).unwrap_err();
    assert!(
        matches!(err, HerdrError::ProtocolTooOld { found: 19, .. }),
        "{err}"
    );
    let text = err.to_string();
    assert!(
        text.contains("protocol 19") && text.contains("protocol 20 or newer"),
        "{text}"
    );
    assert!(text.contains("upgrade Herdr"), "{text}");
    // A plain ping still works: only the handshake judges.
    assert_eq!(client(&fake).ping(None).unwrap().protocol, 19);
    let refused = HerdrBackend::connect(herdr_support::config(fake.socket())).unwrap_err();
    assert!(matches!(refused, HerdrError::ProtocolTooOld { .. }));
    assert!(matches!(
        TermError::from(refused),
        TermError::Unavailable(_)
    ));
}

#[test]
fn every_error_code_becomes_a_typed_error() {
    let fake = fake(FakeOptions::with_user_session());
    let client = client(&fake);
    let cases = [
        ("pane_not_found", ErrorCode::PaneNotFound),
        ("agent_not_found", ErrorCode::AgentNotFound),
        ("workspace_not_found", ErrorCode::WorkspaceNotFound),
        ("tab_not_found", ErrorCode::TabNotFound),
        ("not_found", ErrorCode::NotFound),
        ("timeout", ErrorCode::Timeout),
        ("invalid_request", ErrorCode::InvalidRequest),
        ("invalid_params", ErrorCode::InvalidParams),
        ("agent_not_idle", ErrorCode::AgentNotIdle),
        ("agent_prompt_stalled", ErrorCode::AgentPromptStalled),
        ("quota_exceeded", ErrorCode::Other("quota_exceeded".into())),
    ];
    for (code, expected) in cases {
        fake.fail("pane.list", code, &format!("scripted {code}"));
        let err = client.pane_list(None, None).unwrap_err();
        let HerdrError::Api {
            method,
            code: got,
            message,
        } = &err
        else {
            panic!("{code}: not an API error: {err}");
        };
        assert_eq!((method.as_str(), got), ("pane.list", &expected));
        assert_eq!(message, &format!("scripted {code}"));
        assert!(err.to_string().contains(code), "{err}");
    }
    // The failures were one-shot: the next call succeeds.
    assert!(!client.pane_list(None, None).unwrap().is_empty());
}

#[test]
fn errors_herdr_produces_itself_are_typed_too() {
    let fake = fake(FakeOptions::with_user_session());
    let client = client(&fake);
    let code = |err: HerdrError| err.code().cloned();
    assert_eq!(
        code(client.pane_get("w1:p99", None).unwrap_err()),
        Some(ErrorCode::PaneNotFound)
    );
    assert!(client.pane_get("w1:p99", None).unwrap_err().is_pane_gone());
    let unknown = client
        .request("pane.frobnicate", &json!({}), None)
        .unwrap_err();
    assert_eq!(code(unknown), Some(ErrorCode::InvalidRequest));
    let missing = client.request("pane.get", &json!({}), None).unwrap_err();
    assert_eq!(code(missing), Some(ErrorCode::InvalidRequest));
    let agent = client
        .request("agent.get", &json!({"target": "w1:p1"}), None)
        .unwrap_err();
    assert_eq!(code(agent), Some(ErrorCode::AgentNotFound));
    let wait = json!({"pane_id": "w1:p1", "source": "recent", "match": {"type": "substring", "value": "never"}, "timeout_ms": 10});
    let timeout = client
        .request("pane.wait_for_output", &wait, None)
        .unwrap_err();
    assert_eq!(code(timeout), Some(ErrorCode::Timeout));
}

#[test]
fn a_server_that_keeps_the_connection_open_still_gets_answered() {
    let fake = fake(FakeOptions {
        close_after_reply: false,
        ..FakeOptions::default()
    });
    // Waiting for the server to close would run into this timeout.
    let client = HerdrClient::new(fake.socket()).with_timeout(Duration::from_secs(3));
    for _ in 0..3 {
        assert_eq!(client.ping(None).unwrap().protocol, 20);
    }
}

#[test]
fn a_reply_that_ends_at_eof_without_a_newline_is_read() {
    let fake = fake(FakeOptions {
        newline_after_reply: false,
        ..FakeOptions::with_user_session()
    });
    let client = client(&fake);
    assert_eq!(client.ping(None).unwrap().protocol, 20);
    assert_eq!(client.workspace_list(None).unwrap()[0].workspace_id, "w1");
}

#[test]
fn an_unanswered_request_times_out() {
    let fake = fake(FakeOptions::default());
    let client = HerdrClient::new(fake.socket()).with_timeout(Duration::from_millis(300));
    fake.hang_next("pane.list");
    let started = Instant::now();
    let err = client.pane_list(None, None).unwrap_err();
    assert!(matches!(err, HerdrError::TimedOut { .. }), "{err}");
    assert!(err.to_string().contains("`pane.list`"), "{err}");
    assert!(started.elapsed() < WAIT);
    // A caller's nearer deadline wins over the client's timeout.
    fake.hang_next("ping");
    let slow = HerdrClient::new(fake.socket()).with_timeout(WAIT);
    let err = slow
        .ping(Some(Instant::now() + Duration::from_millis(200)))
        .unwrap_err();
    assert!(matches!(err, HerdrError::TimedOut { .. }), "{err}");
}

#[test]
fn a_connection_closed_without_a_reply_is_reported_except_for_a_stop() {
    let fake = fake(FakeOptions::default());
    let client = client(&fake);
    fake.close_next("pane.list");
    let err = client.pane_list(None, None).unwrap_err();
    assert!(matches!(err, HerdrError::NoReply { .. }), "{err}");
    assert!(err.to_string().contains("`pane.list`"), "{err}");
    // A server that goes away before answering `server.stop` did what was asked.
    fake.close_next("server.stop");
    client.server_stop(None).unwrap();
    assert!(!fake.inspect(FakeState::stopped));
}

#[test]
fn a_socket_nobody_listens_on_is_unreachable() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("none.sock");
    let err = HerdrClient::new(&path).ping(None).unwrap_err();
    assert!(err.is_unreachable(), "{err}");
    assert!(err.to_string().contains("none.sock"), "{err}");
    let refused = HerdrBackend::connect(herdr_support::config(&path)).unwrap_err();
    assert!(matches!(
        TermError::from(refused),
        TermError::Unavailable(_)
    ));
}

#[test]
fn unknown_fields_and_values_are_tolerated() {
    let fake = fake(FakeOptions {
        odd_values: true,
        ..FakeOptions::with_user_session()
    });
    let client = client(&fake);
    let panes = client.pane_list(None, None).unwrap();
    assert_eq!(panes[0].pane_id, "w1:p1");
    assert_eq!(panes[0].agent_status, AgentStatus::Unknown);
    let info = client.pane_process_info("w1:p1", None).unwrap();
    assert_eq!(info.shell_in_foreground(), Some(true));
    let read = client
        .pane_read("w1:p1", ReadSource::Visible, 80, None)
        .unwrap();
    assert_eq!(read.text, "", "an empty screen reads as blank");
}

#[test]
fn requests_use_the_apis_spellings() {
    let fake = fake(FakeOptions::with_user_session());
    let client = client(&fake);
    client
        .pane_read("w1:p1", ReadSource::RecentUnwrapped, 120, None)
        .unwrap();
    let new = shepherd_term::herdr::NewPane {
        cwd: "/tmp",
        label: Some("ignored for splits"),
        env: &[("K".into(), "V".into())],
    };
    client.pane_split("w1:p1", "right", &new, None).unwrap();
    fake.inspect(|state| {
        let read = state.requests_for("pane.read")[0];
        assert_eq!(read["source"], "recent_unwrapped");
        assert_eq!(read["lines"], 120);
        let split = state.requests_for("pane.split")[0];
        assert_eq!(split["target_pane_id"], "w1:p1");
        assert_eq!(split["focus"], false);
        assert_eq!(split["env"], json!({"K": "V"}));
        assert!(split.get("label").is_none(), "pane.split takes no label");
    });
}

#[test]
fn small_recent_reads_come_back_blank_as_herdr_does() {
    // The fake reproduces the observed gotcha that the backend works around.
    let fake = fake(FakeOptions::with_user_session());
    fake.set_screen("w1:p1", "one\ntwo\nthree\n");
    let client = client(&fake);
    let small = client
        .pane_read("w1:p1", ReadSource::Recent, 3, None)
        .unwrap();
    assert_eq!((small.text.as_str(), small.truncated), ("", true));
    let large = client
        .pane_read("w1:p1", ReadSource::Recent, 80, None)
        .unwrap();
    assert!(
        large.text.starts_with("one\ntwo\nthree"),
        "{:?}",
        large.text
    );
}
