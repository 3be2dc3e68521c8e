//! Contract tests of the Herdr event stream against the fake server: both event-name
//! spellings, one base subscription that is never replaced (a replacement would replay
//! Herdr's whole event ring), only the watched panes' events reported and under their
//! recorded reference, a moved pane followed, reconnecting after the stream drops without
//! losing a close, a server that is gone taking its panes with it, and ending when the
//! backend goes away.

use crate::herdr_support;

use std::time::Duration;

use herdr_support::{WAIT, backend, events_until, fake, next_event, spec};
use serde_json::json;
use shepherd_term::herdr::wire::AgentStatus;
use shepherd_term::herdr::{HerdrClient, HerdrEvent, PaneRef};
use shepherd_term::{Backend, LaunchRecord, Placement, Presence};
use shepherd_testkit::fake_herdr::{EventStyle, FakeHerdr, FakeOptions};

fn closed(record: &LaunchRecord) -> HerdrEvent {
    HerdrEvent::PaneClosed {
        pane: record.pane.clone().unwrap(),
    }
}

fn pane_id(record: &LaunchRecord) -> String {
    PaneRef::parse(record.pane.as_deref().unwrap()).pane_id
}

fn launch(backend: &shepherd_term::herdr::HerdrBackend) -> LaunchRecord {
    let dir = tempfile::tempdir().unwrap();
    backend
        .launch(&spec(dir.path(), Placement::Tab, None))
        .unwrap()
}

#[test]
fn status_exit_and_close_arrive_in_every_spelling() {
    for style in [
        EventStyle::Observed,
        EventStyle::Dotted,
        EventStyle::Underscore,
    ] {
        let fake = fake(FakeOptions {
            event_style: style,
            ..FakeOptions::with_user_session()
        });
        let backend = backend(&fake);
        let mut events = backend.events().expect("the first caller gets the events");
        assert!(backend.events().is_none(), "only once");
        let record = launch(&backend);
        let pane = pane_id(&record);
        let reference = record.pane.clone().unwrap();
        // The status subscription starts at the present: wait until it is there.
        assert!(fake.wait_until(WAIT, |state| state.subscriber_count() == 2));
        fake.set_agent_status(&pane, "working", "pi");
        fake.set_agent_status(&pane, "working", "pi");
        fake.set_agent_status(&pane, "idle", "pi");
        let seen = events_until(&mut events, |event| {
            matches!(
                event,
                HerdrEvent::AgentStatus {
                    status: AgentStatus::Idle,
                    ..
                }
            )
        });
        let working = HerdrEvent::AgentStatus {
            pane: reference.clone(),
            status: AgentStatus::Working,
            agent: Some("pi".into()),
        };
        assert_eq!(seen.first(), Some(&working), "{style:?}: {seen:?}");
        assert_eq!(
            seen.iter().filter(|e| **e == working).count(),
            1,
            "{style:?}"
        );
        fake.exit_pane(&pane);
        let seen = events_until(&mut events, |event| *event == closed(&record));
        assert_eq!(
            seen,
            vec![
                HerdrEvent::PaneExited {
                    pane: reference.clone()
                },
                closed(&record)
            ],
            "{style:?}"
        );
    }
}

#[test]
fn one_base_subscription_serves_every_pane_and_is_never_replaced() {
    let fake = fake(FakeOptions::with_user_session());
    let backend = backend(&fake);
    let first = launch(&backend);
    let second = launch(&backend);
    // The status subscription is replaced in the background.
    assert!(fake.wait_until(WAIT, |state| {
        state
            .requests_for("events.subscribe")
            .last()
            .is_some_and(|s| {
                s["subscriptions"]
                    .as_array()
                    .is_some_and(|l| l.len() == 2 && l[1]["pane_id"] == pane_id(&second).as_str())
            })
    }));
    fake.inspect(|state| {
        let subscribes = state.requests_for("events.subscribe");
        assert_eq!(
            subscribes[0]["subscriptions"],
            json!([{"type": "pane.closed"}, {"type": "pane.exited"}, {"type": "pane.moved"}])
        );
        let bases = subscribes
            .iter()
            .filter(|s| s["subscriptions"][0]["type"] == "pane.closed")
            .count();
        assert_eq!(
            bases, 1,
            "the base subscription is made once: {subscribes:?}"
        );
        let last = subscribes.last().unwrap();
        assert_eq!(
            last["subscriptions"],
            json!([
                {"type": "pane.agent_status_changed", "pane_id": pane_id(&first)},
                {"type": "pane.agent_status_changed", "pane_id": pane_id(&second)},
            ])
        );
    });
    // The replaced status subscription was let go: the base and one status stream remain.
    assert!(fake.wait_until(WAIT, |state| state.subscriber_count() == 2));
}

#[test]
fn only_watched_panes_are_reported_and_replays_change_nothing() {
    let fake = fake(FakeOptions::with_user_session());
    let client = HerdrClient::new(fake.socket());
    // Events from before the backend connected: the ring replays them to it.
    let shell = shepherd_term::herdr::NewPane {
        cwd: "/",
        label: None,
        env: &[],
    };
    let old = client.tab_create("w1", &shell, None).unwrap();
    fake.exit_pane(&old.pane_id);
    let backend = backend(&fake);
    let mut events = backend.events().unwrap();
    let record = launch(&backend);
    let stranger = client.tab_create("w1", &shell, None).unwrap();
    fake.exit_pane(&stranger.pane_id);
    fake.exit_pane(&pane_id(&record));
    let seen = events_until(&mut events, |event| *event == closed(&record));
    assert_eq!(
        seen,
        vec![
            HerdrEvent::PaneExited {
                pane: record.pane.clone().unwrap()
            },
            closed(&record)
        ]
    );
}

#[test]
fn a_moved_pane_keeps_being_reported() {
    let fake = fake(FakeOptions::with_user_session());
    let backend = backend(&fake);
    let mut events = backend.events().unwrap();
    let record = launch(&backend);
    let moved = HerdrClient::new(fake.socket())
        .request(
            "pane.move",
            &json!({"pane_id": pane_id(&record), "destination": {"type": "new_workspace"}}),
            None,
        )
        .unwrap();
    let now = moved["move_result"]["pane"]["pane_id"]
        .as_str()
        .unwrap()
        .to_owned();
    // Once the move is seen, the status subscription names the new id.
    assert!(fake.wait_until(WAIT, |state| {
        state
            .requests_for("events.subscribe")
            .last()
            .is_some_and(|s| s["subscriptions"][0]["pane_id"] == now.as_str())
            && state.subscriber_count() == 2
    }));
    fake.set_agent_status(&now, "working", "custom");
    let seen = events_until(&mut events, |event| {
        matches!(event, HerdrEvent::AgentStatus { .. })
    });
    assert_eq!(
        seen.last(),
        Some(&HerdrEvent::AgentStatus {
            pane: record.pane.clone().unwrap(),
            status: AgentStatus::Working,
            agent: Some("custom".into()),
        })
    );
    fake.exit_pane(&now);
    events_until(&mut events, |event| *event == closed(&record));
}

#[test]
fn a_dropped_stream_reconnects_and_reports_closes_from_the_gap() {
    let fake = fake(FakeOptions::with_user_session());
    let backend = backend(&fake);
    let mut events = backend.events().unwrap();
    let record = launch(&backend);
    // Keep the stream down until the close has happened unseen.
    fake.fail_times("events.subscribe", "invalid_request", "not now", u32::MAX);
    fake.drop_subscribers();
    let dropped = next_event(&mut events, WAIT).unwrap();
    assert!(
        matches!(dropped, HerdrEvent::Disconnected { .. }),
        "{dropped:?}"
    );
    fake.exit_pane(&pane_id(&record));
    fake.clear_failures();
    let seen = events_until(&mut events, |event| *event == HerdrEvent::Reconnected);
    assert!(seen.contains(&closed(&record)), "{seen:?}");
    assert_eq!(backend.presence(&record), Presence::Gone);
    // And the new stream works: a later pane's close arrives as an event.
    let later = launch(&backend);
    fake.exit_pane(&pane_id(&later));
    events_until(&mut events, |event| *event == closed(&later));
}

#[test]
fn a_server_that_is_gone_took_its_panes_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("herdr.sock");
    let fake = FakeHerdr::start_at(&socket, FakeOptions::with_user_session()).unwrap();
    let backend = backend(&fake);
    let mut events = backend.events().unwrap();
    let record = launch(&backend);
    drop(fake);
    let seen = events_until(&mut events, |event| *event == closed(&record));
    assert!(
        matches!(seen[0], HerdrEvent::Disconnected { .. }),
        "{seen:?}"
    );
}

#[test]
fn the_stream_ends_when_the_backend_is_dropped() {
    let fake = fake(FakeOptions::with_user_session());
    let backend = backend(&fake);
    let mut events = backend.events().unwrap();
    assert!(fake.wait_until(WAIT, |state| state.subscriber_count() == 1));
    drop(backend);
    assert_eq!(next_event(&mut events, WAIT), None);
    assert!(fake.wait_until(WAIT, |state| state.subscriber_count() == 0));
    // Nothing is waiting to be delivered either.
    assert_eq!(next_event(&mut events, Duration::from_millis(1)), None);
}
