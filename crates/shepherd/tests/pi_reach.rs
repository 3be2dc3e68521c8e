//! What the parent extension offers beyond its nine tools, in the real pi: the opt-in
//! `subagent` tool running a `shepherd run` (and an aborted call cancelling it), review events
//! on pi's event bus for other extensions, and a spawn's progress before its result. Headless
//! sheep; both pi versions.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::pi_support;

use pi_support::{Backend, Options, Shepherd, TURN, result_text, tool_end};
use serde_json::{Value, json};
use shepherd_testkit::fake_llm::Step;
use shepherd_testkit::pi::PiBinary;

/// The opt-in `subagent` tool runs `shepherd run` and answers with the sheep's final text; an
/// aborted call cancels the run.
fn subagent_single_run(pi: &PiBinary) {
    let options = Options {
        settings: json!({"subagentCompatibility": true}),
        ..Options::default()
    };
    let mut s = Shepherd::start(pi, Backend::Headless, &options);
    s.fake.append(
        "worker-model",
        [
            Step::tool_call(
                "shepherd_done",
                json!({"status": "completed", "summary": "did it"}),
            ),
            Step::text("Subagent result: all done."),
        ],
    );
    let records = s.parent_turn(
        "run a subagent",
        vec![
            Step::tool_call("subagent", json!({"agent": "worker", "task": "Do it."})),
            Step::text("ok"),
        ],
    );
    let end = tool_end(&records, "subagent").expect("subagent ran");
    let text = result_text(&end["result"]);
    assert_eq!(end["isError"], false, "{text}");
    assert!(text.starts_with("Subagent result: all done."), "{text}");
    let details = &end["result"]["details"];
    assert_eq!(details["mode"], "single", "{details}");
    assert_eq!(details["results"][0]["status"], "completed", "{details}");
    assert_eq!(details["compatibility"], "shepherd", "{details}");
    let herd = s.shepherd(&["herd"]);
    assert_eq!(herd["sheep"], json!([]), "the run closed its sheep: {herd}");

    // Aborting the tool call interrupts `shepherd run`: the task is cancelled, the sheep closed.
    s.fake
        .append("worker-model", [Step::text("Working.").held_until("never")]);
    s.parent_says([
        Step::tool_call(
            "subagent",
            json!({"agent": "worker", "task": "Never ends."}),
        ),
        Step::text("aborted"),
    ]);
    s.parent().prompt("run another", TURN).expect("prompt");
    s.wait_requests("worker-model", 3);
    let aborted = s
        .parent()
        .call(json!({"type": "abort"}), TURN)
        .expect("abort answers");
    assert_eq!(aborted["success"], true, "{aborted}");
    let end = s
        .parent()
        .wait_for("the aborted subagent call", TURN, |r| {
            r["type"] == "tool_execution_end" && r["toolName"] == "subagent"
        })
        .expect("the call ends");
    let text = result_text(&end["result"]);
    assert_eq!(end["isError"], true, "{end}");
    assert!(text.contains("cancelled"), "{text}");
    let herd = s.shepherd(&["herd"]);
    assert_eq!(herd["sheep"], json!([]), "the run closed its sheep: {herd}");
}

shepherd_testkit::pi_tests!(subagent_single_run);

/// Review-reach events: a task handed to a reviewer emits `pi-shepherd:review-started` on pi's
/// event bus, and its settlement `pi-shepherd:review-complete`, for other extensions to hear.
fn review_events(pi: &PiBinary) {
    let dir = tempfile::tempdir().unwrap();
    let heard = dir.path().join("heard.jsonl");
    let listener = dir.path().join("listener.ts");
    std::fs::write(
        &listener,
        format!(
            r#"import * as fs from "node:fs";
export default function (pi: any) {{
  for (const channel of ["pi-shepherd:review-started", "pi-shepherd:review-complete"]) {{
    pi.events.on(channel, (data: any) => fs.appendFileSync({path:?}, JSON.stringify({{ channel, data }}) + "\n"));
  }}
}}
"#,
            path = heard.display().to_string()
        ),
    )
    .unwrap();
    let options = Options {
        agents: vec![("reviewer", "reviewer-model"), ("worker", "worker-model")],
        extensions: vec![listener],
        ..Options::default()
    };
    let mut s = Shepherd::start(pi, Backend::Headless, &options);
    let reviewer = s.spawn("reviewer", "code");
    s.fake.append(
        "reviewer-model",
        [
            Step::tool_call(
                "shepherd_done",
                json!({"status": "completed", "summary": "looks good"}),
            )
            .held_until("review"),
            Step::text("Reviewed."),
        ],
    );
    let delegated = s.delegate(&reviewer, "Review the change.", None);
    let task = delegated["taskId"].as_str().unwrap().to_owned();
    s.watch(&[&task]);
    // The settlement is held until the parent is idle, so that it starts a run of its own.
    s.parent_says([Step::text("Thanks.")]);
    s.fake.release("review");
    s.parent_woken();
    s.wait_parent_input("reviewer: code completed");
    let events: Vec<Value> = std::fs::read_to_string(&heard)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(events[0]["channel"], "pi-shepherd:review-started");
    assert_eq!(events[0]["data"]["taskId"], task.as_str());
    assert_eq!(events[0]["data"]["agent"], "reviewer");
    assert_eq!(events[0]["data"]["task"], "Review the change.");
    assert_eq!(events[1]["channel"], "pi-shepherd:review-complete");
    assert_eq!(events[1]["data"]["taskId"], task.as_str());
    assert_eq!(events[1]["data"]["ok"], true);
    assert_eq!(events[1]["data"]["returnCode"], 0);
    // A worker's task is not a review: nothing is emitted for it.
    let worker = s.spawn("worker", "plain");
    s.fake.append(
        "worker-model",
        [
            Step::tool_call("shepherd_done", json!({"status": "completed"})).held_until("plain"),
            Step::text("Done."),
        ],
    );
    let plain = s.delegate(&worker, "Not a review.", None)["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    s.watch(&[&plain]);
    s.parent_says([Step::text("Thanks.")]);
    s.fake.release("plain");
    s.parent_woken();
    s.wait_parent_input("worker: plain completed");
    let count = std::fs::read_to_string(&heard).unwrap().lines().count();
    assert_eq!(count, 2, "no review events for a worker");
}

shepherd_testkit::pi_tests!(review_events);

/// A spawn reports progress while the sheep starts (pi shows `spawning…` on its row), then its
/// result.
fn spawn_reports_progress(pi: &PiBinary) {
    let mut s = Shepherd::start(pi, Backend::Headless, &Options::default());
    let records = s.parent_turn(
        "spawn",
        vec![
            Step::tool_call(
                "shepherd_spawn",
                json!({"agent": "worker", "label": "progress"}),
            ),
            Step::text("spawned"),
        ],
    );
    let update = records
        .iter()
        .find(|r| r["type"] == "tool_execution_update" && r["toolName"] == "shepherd_spawn")
        .unwrap_or_else(|| panic!("no progress update: {}", pi_support::summary(&records)));
    assert_eq!(
        update["partialResult"]["details"]["agent"], "worker",
        "{update}"
    );
    assert_eq!(
        update["partialResult"]["details"]["label"], "progress",
        "{update}"
    );
    let end = tool_end(&records, "shepherd_spawn").expect("the spawn ends");
    let at = |r: &Value| records.iter().position(|x| x == r).unwrap();
    assert!(at(update) < at(end), "progress comes before the result");
    assert_eq!(end["isError"], json!(false), "{end}");
}

shepherd_testkit::pi_tests!(spawn_reports_progress);
