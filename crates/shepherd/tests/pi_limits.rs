//! A provider key that stays limited, with real pi sheep: three pi sheep of one `shepherd run
//! --parallel` share the fake model's key, which refuses every request with a 429 that says
//! "try again in 2s". Shepherd holds the key at the first refusal and, at each reset, lets one
//! sheep probe: while the key is still limited, each reset draws one refusal, not one per held
//! sheep (pi sheep used to be refused twice per window: the refused probe's turn let the next
//! held sheep go). Once the key is lifted, every task completes.
//!
//! The first refusals are each sheep's first request, sent before any of them had heard of the
//! limit; the refusals that count are the probes', the requests that carry Shepherd's "continue"
//! after a wait.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::time::{Duration, Instant};

use serde_json::json;
use shepherd_testkit::fake_llm::{FakeLlm, Limits, Script, Step};
use shepherd_testkit::pi::PiBinary;

use crate::herd_support::Background;
use crate::run_pi::pi_herd_world;

/// The sheep, each on a model id of its own.
const SHEEP: [(&str, &str); 3] = [("s0", "m0"), ("s1", "m1"), ("s2", "m2")];
/// The wait each 429 announces: the reset window.
const RETRY_AFTER: Duration = Duration::from_secs(2);
/// Probe refusals to see before the key is lifted.
const PROBES: usize = 3;
/// How long the test waits for them.
const SEEN: Duration = Duration::from_secs(180);

/// When the fake refused each probe: a request that carried Shepherd's "continue" after a wait.
fn probe_refusals(fake: &FakeLlm) -> Vec<Duration> {
    let requests = fake.requests();
    let mut times: Vec<Duration> = fake
        .limited_replies()
        .iter()
        .filter(|reply| {
            requests.iter().any(|r| {
                r.seq == reply.request && r.last_input_text().contains("[Shepherd rate limit]")
            })
        })
        .map(|reply| reply.at)
        .collect();
    times.sort();
    times
}

fn a_still_limited_key_draws_one_refusal_per_reset(pi: &PiBinary) {
    let mut script = Script::new();
    for (_, model) in SHEEP {
        script = script.with_queue(
            model,
            [
                Step::tool_call(
                    "shepherd_done",
                    json!({"status": "completed", "summary": "done after the wait"}),
                ),
                Step::text("Finished once the key was free."),
            ],
        );
    }
    let (world, fake, _env) = pi_herd_world(pi, script, &SHEEP);
    fake.set_limits(
        Limits::new()
            .with_max_in_flight(0)
            .with_retry_after(RETRY_AFTER),
    );
    let tasks: Vec<String> = SHEEP
        .iter()
        .map(|(name, _)| format!("{name}=Report that you are done."))
        .collect();
    let mut args = vec!["--parallel"];
    args.extend(tasks.iter().map(String::as_str));
    args.extend(["--timeout", "4"]);
    let run = Background::start(&world, &args);

    let deadline = Instant::now() + SEEN;
    while probe_refusals(&fake).len() < PROBES {
        assert!(
            Instant::now() < deadline,
            "{PROBES} probes were not refused within {} s: {:?}",
            SEEN.as_secs(),
            fake.limited_replies()
        );
        // Polled by design: the fake's log is read with a deadline.
        std::thread::sleep(Duration::from_millis(100));
    }
    fake.set_limits(Limits::new());
    let probes = probe_refusals(&fake);
    let (code, doc) = run.finish();
    assert_eq!(code, 0, "{doc}");
    for result in doc["results"].as_array().unwrap() {
        assert_eq!(result["status"], "completed", "{doc}");
    }
    // Each refused probe closes the key until the reset its 429 named: the next refusal comes
    // a window later. Two sheep let go at one reset would be refused within a moment of each
    // other.
    let gaps: Vec<Duration> = probes.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(
        gaps.iter().all(|gap| *gap >= RETRY_AFTER / 2),
        "at most one refusal per {} s reset after the first: probes refused at {probes:?}, \
         {gaps:?} apart",
        RETRY_AFTER.as_secs()
    );
}

shepherd_testkit::pi_1_tests!(a_still_limited_key_draws_one_refusal_per_reset);
