//! Contract tests of the Herdr event stream against the fake server: both event-name
//! spellings, the subscription's wire shape, dropping replayed duplicates, reconnecting after
//! the stream drops without losing a close, and ending when the backend goes away.

mod herdr_support;

use std::time::Duration;

use herdr_support::{WAIT, backend, events_until, fake, next_event, spec};
use serde_json::json;
use shepherd_term::herdr::HerdrEvent;
use shepherd_term::herdr::wire::AgentStatus;
use shepherd_term::{Backend, Placement};
use shepherd_testkit::fake_herdr::{EventStyle, FakeOptions};

fn closed(pane: &str) -> HerdrEvent {
    HerdrEvent::PaneClosed {
        pane_id: pane.into(),
    }
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
            ..FakeOptions::default()
        });
        let backend = backend(&fake);
        let mut events = backend.events().expect("the first caller gets the events");
        assert!(backend.events().is_none(), "only once");
        let dir = tempfile::tempdir().unwrap();
        let record = backend
            .launch(&spec(dir.path(), Placement::Tab, None))
            .unwrap();
        let pane = record.pane.clone().unwrap();
        fake.set_agent_status(&pane, "working", "pi");
        fake.set_agent_status(&pane, "working", "pi");
        fake.set_agent_status(&pane, "idle", "pi");
        fake.exit_pane(&pane);
        let seen = events_until(&mut events, |event| *event == closed(&pane));
        let expected = vec![
            HerdrEvent::AgentStatus {
                pane_id: pane.clone(),
                status: AgentStatus::Working,
                agent: Some("pi".into()),
            },
            HerdrEvent::AgentStatus {
                pane_id: pane.clone(),
                status: AgentStatus::Idle,
                agent: Some("pi".into()),
            },
            HerdrEvent::PaneExited {
                pane_id: pane.clone(),
            },
            closed(&pane),
        ];
        assert_eq!(seen, expected, "{style:?}");
    }
}

#[test]
fn the_subscription_names_every_close_and_the_watched_panes() {
    let fake = fake(FakeOptions::default());
    let backend = backend(&fake);
    let dir = tempfile::tempdir().unwrap();
    let record = backend
        .launch(&spec(dir.path(), Placement::Tab, None))
        .unwrap();
    let pane = record.pane.unwrap();
    fake.inspect(|state| {
        let subscribes = state.requests_for("events.subscribe");
        assert_eq!(
            subscribes[0]["subscriptions"],
            json!([{"type": "pane.closed"}])
        );
        let last = subscribes.last().unwrap();
        assert_eq!(
            last["subscriptions"],
            json!([
                {"type": "pane.closed"},
                {"type": "pane.exited", "pane_id": pane},
                {"type": "pane.agent_status_changed", "pane_id": pane},
            ])
        );
    });
    // The replaced subscription was let go: one live stream remains.
    assert!(fake.wait_until(WAIT, |state| state.subscriber_count() == 1));
}

#[test]
fn replayed_and_overlapping_events_are_reported_once() {
    let fake = fake(FakeOptions {
        replay_on_subscribe: true,
        ..FakeOptions::default()
    });
    let backend = backend(&fake);
    let mut events = backend.events().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let first = backend
        .launch(&spec(dir.path(), Placement::Tab, None))
        .unwrap();
    let first = first.pane.unwrap();
    fake.exit_pane(&first);
    assert_eq!(
        events_until(&mut events, |event| *event == closed(&first)),
        vec![
            HerdrEvent::PaneExited {
                pane_id: first.clone()
            },
            closed(&first)
        ]
    );
    // A new subscription replays the earlier close; it must not be reported again.
    let second = backend
        .launch(&spec(dir.path(), Placement::Tab, None))
        .unwrap();
    let second = second.pane.unwrap();
    assert!(fake.wait_until(WAIT, |state| state.subscriber_count() == 1));
    fake.exit_pane(&second);
    let seen = events_until(&mut events, |event| *event == closed(&second));
    assert!(!seen.contains(&closed(&first)), "{seen:?}");
}

#[test]
fn a_dropped_stream_reconnects_and_reports_closes_from_the_gap() {
    let fake = fake(FakeOptions::default());
    let backend = backend(&fake);
    let mut events = backend.events().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let record = backend
        .launch(&spec(dir.path(), Placement::Tab, None))
        .unwrap();
    let pane = record.pane.clone().unwrap();
    // Keep the stream down until the close has happened unseen.
    fake.fail_times("events.subscribe", "invalid_request", "not now", u32::MAX);
    fake.drop_subscribers();
    let dropped = next_event(&mut events, WAIT).unwrap();
    assert!(
        matches!(dropped, HerdrEvent::Disconnected { .. }),
        "{dropped:?}"
    );
    fake.exit_pane(&pane);
    fake.clear_failures();
    let seen = events_until(&mut events, |event| *event == HerdrEvent::Reconnected);
    assert!(seen.contains(&closed(&pane)), "{seen:?}");
    assert_eq!(backend.presence(&record), shepherd_term::Presence::Gone);
    // And the new stream works: a later pane's close arrives as an event.
    let later = backend
        .launch(&spec(dir.path(), Placement::Tab, None))
        .unwrap();
    let later = later.pane.unwrap();
    fake.exit_pane(&later);
    events_until(&mut events, |event| *event == closed(&later));
}

#[test]
fn the_stream_ends_when_the_backend_is_dropped() {
    let fake = fake(FakeOptions::default());
    let backend = backend(&fake);
    let mut events = backend.events().unwrap();
    assert!(fake.wait_until(WAIT, |state| state.subscriber_count() == 1));
    drop(backend);
    assert_eq!(next_event(&mut events, WAIT), None);
    assert!(fake.wait_until(WAIT, |state| state.subscriber_count() == 0));
    // Nothing is waiting to be delivered either.
    assert_eq!(next_event(&mut events, Duration::from_millis(1)), None);
}
