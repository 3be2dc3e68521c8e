//! Steering a pi sheep, in the real pi: a message the parent sends with `delivery: steer`
//! while the sheep's turn runs reaches that turn — the sheep's next model request, the one
//! carrying the result of the tool call it was making, holds it — where a follow-up would wait
//! until the turn had ended. Headless sheep; both pi versions. (A sheep that cannot be steered
//! is told apart in `herd_messaging`.)

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::pi_support;

use std::time::Instant;

use pi_support::{Backend, Options, Shepherd, TURN};
use serde_json::{Value, json};
use shepherd_testkit::fake_llm::Step;
use shepherd_testkit::pi::PiBinary;

const STEER: &str = "Use the staging database, not production.";

/// Waits until the sheep's extension has taken `message` (its receipt reads `read`): from then
/// on the message is pi's to deliver. Each `status` answer is the event waited for.
fn taken(s: &Shepherd, message: &str) -> Value {
    let deadline = Instant::now() + TURN;
    loop {
        let receipt = s.shepherd(&["status", message]);
        if receipt["state"] == "read" {
            return receipt;
        }
        assert!(Instant::now() < deadline, "never taken: {receipt}");
    }
}

fn a_steer_reaches_the_turn_it_is_sent_into(pi: &PiBinary) {
    let mut s = Shepherd::start(pi, Backend::Headless, &Options::default());
    std::fs::write(s.project().join("notes.txt"), "the notes file\n").unwrap();
    let worker = s.spawn("worker", "steered");
    // The sheep's turn: it reads a file (the model's answer held until the test has steered
    // it), then — told mid-turn — finishes saying what it was told.
    s.fake.append(
        "worker-model",
        [
            Step::tool_call("read", json!({"path": "notes.txt"})).held_until("steer"),
            Step::tool_call(
                "shepherd_done",
                json!({"status": "completed", "summary": "used staging"}),
            )
            .expecting(STEER),
            Step::text("Done."),
        ],
    );
    s.delegate(&worker, "Look at the notes.", None);
    s.wait_requests("worker-model", 1);

    let sent = s.call_tool(
        "shepherd_message",
        json!({"target": worker, "message": STEER, "delivery": "steer"}),
    );
    assert!(
        sent["deliveryChanged"].is_null(),
        "a pi sheep is steered: {sent}"
    );
    let message = sent["messageId"].as_str().unwrap().to_owned();
    taken(&s, &message);
    s.fake.release("steer");

    // The request after the tool call carries both its result and the steer: the same turn.
    let second = s.wait_requests("worker-model", 2).remove(1);
    let results = second.tool_results().join("\n");
    assert!(results.contains("the notes file"), "{results}");
    assert!(
        second.contains(STEER),
        "the steer reached the turn it was sent into: {}",
        second.body
    );
    s.wait_requests("worker-model", 3);
    s.assert_no_mismatches();
}

shepherd_testkit::pi_tests!(a_steer_reaches_the_turn_it_is_sent_into);
