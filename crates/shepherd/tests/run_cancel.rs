//! Cancelling `shepherd run` with a signal mid-run: every open task ends cancelled (rc 130), its
//! sheep is closed before the command exits, every note of the run is final, and the command
//! exits 130.

use crate::herd_support;
use shepherd_testkit::procs;

use std::path::Path;

use herd_support::{Background, World, read};
use rustix::process::Signal;
use serde_json::Value;

fn note_status(result: &Value) -> String {
    let text = read(Path::new(result["note"].as_str().unwrap()));
    text.lines()
        .find_map(|line| line.strip_prefix("status: "))
        .unwrap_or_default()
        .to_owned()
}

fn assert_no_process_left(result: &Value) {
    if let Some(agent) = result["agentId"].as_str() {
        assert_eq!(
            procs::mentioning(agent),
            Vec::<u32>::new(),
            "sheep {agent} outlived the run"
        );
    }
}

#[test]
fn sigint_cancels_running_and_queued_tasks_closes_their_sheep_and_exits_130() {
    let world = World::new();
    world.settings(r#"{"maxConcurrency": 1}"#);
    world.define_test_sheep("sleeper", "idle", None);
    let mut run = Background::start(&world, &["--parallel", "sleeper=one", "sleeper=two"]);
    run.wait_for("[1/2] sleeper: running");
    let (code, doc) = run.signal_and_finish(Signal::INT);
    assert_eq!(code, 130, "{doc}");
    assert_eq!(doc["interrupted"], true);
    assert_eq!(doc["exitCode"], 130);
    let running = &doc["results"][0];
    assert_eq!(running["status"], "cancelled");
    assert_eq!(running["returnCode"], 130);
    assert!(running["agentId"].is_string(), "{running}");
    let queued = &doc["results"][1];
    assert_eq!(queued["status"], "cancelled");
    assert_eq!(queued["returnCode"], 130);
    assert!(
        queued["agentId"].is_null(),
        "the queued task never got a sheep: {queued}"
    );
    for result in doc["results"].as_array().unwrap() {
        assert_eq!(note_status(result), "cancelled", "{result}");
        assert_no_process_left(result);
    }
    let agent = running["agentId"].as_str().unwrap();
    assert_eq!(world.json(&["status", agent])["state"], "closed");
}

#[test]
fn sigterm_stops_a_chain_mid_step() {
    let world = World::new();
    world.define_test_sheep("first", "done completed first done", None);
    world.define_test_sheep("sleeper", "idle", None);
    world.define_test_sheep("last", "done completed never", None);
    let mut run = Background::start(
        &world,
        &[
            "--chain",
            "first=go",
            "sleeper=wait on {previous}",
            "last=end",
        ],
    );
    run.wait_for("[2/3] sleeper: running");
    let (code, doc) = run.signal_and_finish(Signal::TERM);
    assert_eq!(code, 130, "{doc}");
    let results = doc["results"].as_array().unwrap();
    assert_eq!(results[0]["status"], "completed");
    assert_eq!(note_status(&results[0]), "completed");
    assert_eq!(results[1]["status"], "cancelled");
    assert_eq!(note_status(&results[1]), "cancelled");
    assert_eq!(results[2]["status"], "skipped");
    assert_eq!(note_status(&results[2]), "cancelled");
    for result in results {
        assert_no_process_left(result);
    }
}
