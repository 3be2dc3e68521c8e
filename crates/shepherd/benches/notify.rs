//! Notification latency (a bench binary, not a timed test): run with
//! `cargo bench -p shepherd --bench notify` (`SHEPHERD_NOTIFY_BENCH_SAMPLES=N` for more or fewer
//! than 20 questions). Needs dbus-daemon, Xvfb and dunst (`scripts/setup` installs them).
//!
//! A sheep asks the parent a question; the figure is the time from the broker opening the
//! question (the moment's `at`, the broker's wall clock in ms, which the webhook's body carries)
//! to the notification's arrival: at a real HTTP receiver on loopback (the webhook) and at a real
//! notification server (dunst, on a D-Bus session bus of the bench's own, printing what it gets).
//! A notifier tells at most five moments a minute, so the samples run in herds of five, each
//! with a broker of its own. p50 and p99 over the samples.

// Benches set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

#[path = "../tests/herd_support/mod.rs"]
mod herd_support;
#[path = "../tests/notify_support/mod.rs"]
mod notify_support;

use herd_support::World;
use notify_support::{Desktop, Receiver, told_on_both};

/// Questions per herd: the notifier's burst.
const PER_HERD: usize = 5;

fn percentile(sorted: &[i64], p: f64) -> i64 {
    let rank = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    assert!(
        notify_support::required(),
        "the notification bench needs dbus-daemon, Xvfb and dunst"
    );
    let samples: usize = std::env::var("SHEPHERD_NOTIFY_BENCH_SAMPLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20);
    let scratch = tempfile::tempdir().unwrap();
    let desktop = Desktop::start(scratch.path());
    let receiver = Receiver::start();
    let (mut webhook, mut shown) = (Vec::new(), Vec::new());
    let mut asked = 0;
    while asked < samples {
        let mut world = World::new();
        notify_support::notify_both(&mut world, &desktop, &receiver);
        world.define_test_sheep("asker", "ask shepherd Which one?; idle", None);
        for _ in 0..PER_HERD.min(samples - asked) {
            let label = format!("q{asked}");
            let agent = world.spawn("asker", &label);
            world.delegate(&agent, "choose");
            let title = format!("asker: {label} asks you a question");
            told_on_both(&desktop, &receiver, &title);
            let posts = receiver.posts.lock().unwrap().clone();
            let index = posts
                .iter()
                .position(|p| p["title"] == title.as_str())
                .unwrap();
            let at = posts[index]["at"].as_i64().unwrap();
            webhook.push(receiver.arrived.lock().unwrap()[index] - at);
            shown.push(desktop.shown_at(&title).unwrap() - at);
            world.json(&["close", &agent]);
            asked += 1;
        }
    }
    for (name, mut ms) in [("webhook", webhook), ("desktop", shown)] {
        ms.sort_unstable();
        println!(
            "question to {name} notification: p50 {} ms, p99 {} ms, max {} ms ({} samples)",
            percentile(&ms, 0.5),
            percentile(&ms, 0.99),
            ms.last().unwrap(),
            ms.len()
        );
    }
}
