//! The broker with the Herdr backend, end to end against the in-repo fake Herdr server (which
//! runs its panes' programs, so the real supervisor and test sheep run there): a caller
//! inside Herdr gets sheep in background tabs named after them, focus never moves, `read` shows
//! the pane, `close` closes it, and the lifecycle works as everywhere else.

use crate::herd_support;

use std::time::Duration;

use herd_support::World;
use shepherd_testkit::fake_herdr::{FakeHerdr, FakeOptions};

fn herdr_world() -> (World, FakeHerdr) {
    let mut world = World::new();
    let fake = FakeHerdr::start(FakeOptions {
        run_processes: true,
        ..FakeOptions::with_user_session()
    })
    .unwrap();
    world.extra_env.push((
        "HERDR_SOCKET_PATH".into(),
        fake.socket().display().to_string(),
    ));
    world.extra_env.push(("HERDR_ENV".into(), "1".into()));
    world
        .extra_env
        .push(("HERDR_PANE_ID".into(), "w1:p1".into()));
    world
        .extra_env
        .push(("HERDR_WORKSPACE_ID".into(), "w1".into()));
    (world, fake)
}

#[test]
fn inside_herdr_auto_puts_sheep_in_background_tabs_and_closes_them() {
    let (world, fake) = herdr_world();
    world.define_test_sheep(
        "worker",
        "print herdr sheep working on {task}; done completed done in herdr",
        None,
    );
    let spawned = world.json(&["spawn", "worker", "--label", "code review"]);
    assert_eq!(spawned["backend"], "herdr", "{spawned}");
    let agent = spawned["agentId"].as_str().unwrap();
    let pane = fake.inspect(|state| {
        let pane = state
            .panes()
            .iter()
            .find(|p| p.label.as_deref() == Some("worker: code review"))
            .expect("a labelled pane");
        assert!(
            pane.env.contains_key("SHEPHERD_TOKEN"),
            "the capability travels in the pane's environment"
        );
        assert!(
            !pane.typed.contains(pane.env["SHEPHERD_TOKEN"].as_str()),
            "the token is never typed"
        );
        assert_eq!(
            state.focused_pane(),
            Some("w1:p1"),
            "focus stays with the caller"
        );
        assert_eq!(state.focus_changes(), 0);
        pane.id.clone()
    });
    let task = world.delegate(agent, "the review")["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    let watched = world.json(&["watch", &task, "--wait", "30"]);
    assert_eq!(watched["settled"][0]["summary"], "done in herdr");
    let screen = world.json(&["read", agent, "--source", "visible"]);
    assert!(
        screen["text"]
            .as_str()
            .unwrap()
            .contains("herdr sheep working on the review"),
        "{screen}"
    );
    world.json(&["close", agent]);
    assert!(
        fake.wait_until(Duration::from_secs(10), |state| state
            .pane(&pane)
            .is_some_and(|p| p.closed)),
        "the pane was closed"
    );
    let registry = world.home.join(".pi/agent/pi-shepherd/created-panes.json");
    assert!(!herd_support::read(&registry).contains(&pane));
}

#[test]
fn asking_for_herdr_without_a_reachable_server_is_a_clear_error() {
    let mut world = World::new();
    world.extra_env.push((
        "HERDR_SOCKET_PATH".into(),
        world.dir.path().join("no-herdr.sock").display().to_string(),
    ));
    // No `herdr` binary here either, so none can be started.
    world
        .extra_env
        .push(("PATH".into(), "/usr/bin:/bin".into()));
    world.define_test_sheep("worker", "idle", None);
    let (_, code, message) = world.error(&["spawn", "worker", "--backend", "herdr"]);
    assert_eq!(code, "backend_unavailable", "{message}");
    assert!(message.contains("Herdr"), "{message}");
}
