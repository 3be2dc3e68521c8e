//! With the real pi: a pi sheep lists its herd-mates with `shepherd_herd`, messages one by its
//! display name, and asks `shepherd_status` whether that message was read; the parent's
//! `shepherd_status` answers the same message id. Every model is scripted on the fake model
//! server; `pi_1_tests!` runs this on the newest pi.

use crate::pi_support;

use std::time::{Duration, Instant};

use pi_support::{Backend, Options, Shepherd};
use serde_json::json;
use shepherd_testkit::fake_llm::Step;
use shepherd_testkit::pi::PiBinary;

/// The message id in a `shepherd_message` result (`… delivery (shepherd-message-…). …`).
fn message_id(text: &str) -> String {
    let start = text
        .find("shepherd-message-")
        .unwrap_or_else(|| panic!("no message id in {text}"));
    text[start..]
        .split(|c: char| c == ')' || c == '"' || c.is_whitespace())
        .next()
        .unwrap()
        .to_owned()
}

fn mates_and_receipts(pi: &PiBinary) {
    let options = Options {
        agents: vec![("planner", "planner-model"), ("worker", "worker-model")],
        settings: json!({"doneNudges": 0}),
        ..Options::default()
    };
    let mut s = Shepherd::start(pi, Backend::Headless, &options);
    let planner = s.spawn("planner", "ping");
    let worker = s.spawn("worker", "pong");
    s.fake.append(
        "worker-model",
        [
            Step::tool_call("shepherd_herd", json!({})),
            Step::tool_call(
                "shepherd_message",
                json!({"target": "planner: ping", "message": "the list is ready"}),
            ),
            // Asked only once the test saw the planner acknowledge the message.
            Step::tool_call("shepherd_status", json!({"messageId": "MESSAGE"}))
                .filling("MESSAGE", "shepherd-message-")
                .held_until("read"),
            Step::tool_call(
                "shepherd_done",
                json!({"status": "completed", "summary": "told the planner"}),
            ),
            Step::text("Told the planner."),
        ],
    );
    s.delegate(
        &worker,
        "List your herd, tell the planner the list is ready, check it read that, then finish.",
        None,
    );

    // The herd as the worker sees it: both sheep, itself marked, no task text.
    let requests = s.wait_requests("worker-model", 3);
    let herd = requests[1].tool_results().join("\n");
    assert!(
        herd.contains(&format!("- planner: ping ({planner}): idle, pi\n")),
        "{herd}"
    );
    assert!(
        herd.contains(&format!("- worker: pong ({worker}): working, pi (you)")),
        "{herd}"
    );
    assert!(!herd.contains("tell the planner"), "{herd}");
    let told = requests[2].tool_results().join("\n");
    let message = message_id(&told);
    assert!(
        told.contains(&format!(
            "shepherd_status {{messageId: \"{message}\"}} shows whether it was delivered and read"
        )),
        "{told}"
    );

    // The planner's extension takes the push and acknowledges it: the receipt turns `read`.
    // Each `status` answer is the event waited for, within a deadline.
    let deadline = Instant::now() + Duration::from_secs(30);
    let read = loop {
        let receipt = s.shepherd(&["status", &message]);
        if receipt["state"] == "read" {
            break receipt;
        }
        assert!(Instant::now() < deadline, "never read: {receipt}");
        std::thread::yield_now();
    };
    assert_eq!(read["sender"], json!(worker), "{read}");
    assert_eq!(read["target"], json!(planner), "{read}");
    s.fake.release("read");

    let requests = s.wait_requests("worker-model", 4);
    let asked = requests[3].tool_results().join("\n");
    assert!(
        asked.contains(&format!(
            "Message {message} from worker: pong to planner: ping is read (acknowledged by its recipient): sent "
        )),
        "{asked}"
    );

    // The parent asks about the same message through its own tool.
    let shown = s.call_tool("shepherd_status", json!({"id": message}));
    assert_eq!(shown["status"]["state"], "read", "{shown}");
    assert_eq!(shown["status"]["messageId"], json!(message), "{shown}");
}

shepherd_testkit::pi_1_tests!(mates_and_receipts);
