//! Runs: `run.submit` refuses what it cannot carry out before anything launches, and carries a
//! run out through spawn, delegate, wait and close, pushing its view to the client that
//! submitted it.

use serde_json::{Value, json};
use shepherd_core::error_code::ErrorCode;
use shepherd_core::protocol::{Role, event, method};

use crate::support::{DEADLINE, Herd, only_envelope};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_that_cannot_be_carried_out_is_refused_before_anything_launches() {
    let mut herd = Herd::start().await;
    herd.define_worker();
    let step = |agent: &str| json!({ "agent": agent, "task": "x" });
    let cases = [
        (
            json!({ "mode": "single", "steps": [step("nobody")] }),
            ErrorCode::UnknownAgent,
        ),
        (
            json!({ "mode": "single", "steps": [step("worker"), step("worker")] }),
            ErrorCode::InvalidRun,
        ),
        (
            json!({ "mode": "parallel", "steps": [] }),
            ErrorCode::InvalidRun,
        ),
    ];
    for (params, expected) in cases {
        let (code, message) = herd.refused(method::RUN_SUBMIT, params.clone()).await;
        assert_eq!(code, expected, "{params}: {message}");
    }
    let listed = herd.call(method::HERD, json!({})).await;
    assert_eq!(listed["sheep"], json!([]), "{listed}");
    herd.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_single_run_reports_once_its_sheep_is_done() {
    let mut herd = Herd::start().await;
    herd.define_worker();
    let submitted = herd
        .call(
            method::RUN_SUBMIT,
            json!({
                "mode": "single",
                "backend": "headless",
                "steps": [{ "agent": "worker", "task": "list the crates" }],
            }),
        )
        .await;
    let run_id = submitted["runId"].as_str().unwrap().to_owned();
    assert_eq!(submitted["mode"], "single", "{submitted}");

    // The run's sheep is spawned and handed its task; then the test speaks for it.
    let running = next_view(&mut herd, &run_id, |step| step["taskId"].is_string()).await;
    let agent_id = running["steps"][0]["agentId"].as_str().unwrap().to_owned();
    let token = herd.sheep_token(&agent_id);
    let mut sheep = herd
        .connect(Role::Sheep, Some(&agent_id), Some(&token))
        .await
        .unwrap();
    let wait_ms = u64::try_from(DEADLINE.as_millis()).unwrap();
    let inbox = sheep
        .call_value(method::INBOX, json!({ "waitMs": wait_ms }))
        .await
        .unwrap();
    let task = only_envelope(inbox["items"].as_array().unwrap());
    assert_eq!(task["kind"], "task", "{task}");
    assert!(
        task["content"]
            .as_str()
            .unwrap()
            .contains("list the crates"),
        "{task}"
    );
    sheep
        .call_value(
            method::DONE,
            json!({ "status": "completed", "summary": "nine crates" }),
        )
        .await
        .unwrap();

    let finished = next_view(&mut herd, &run_id, |step| step["phase"] == "done").await;
    let step = &finished["steps"][0];
    assert_eq!(step["status"], "completed", "{finished}");
    assert_eq!(step["taskId"], task["taskId"], "{finished}");
    // The run closes its sheep when its task is over.
    let listed = herd.call(method::HERD, json!({})).await;
    assert_eq!(listed["sheep"], json!([]), "{listed}");
    herd.stop().await;
}

/// The first `run` view pushed for `run_id` whose step satisfies `wanted`.
async fn next_view(herd: &mut Herd, run_id: &str, wanted: impl Fn(&Value) -> bool) -> Value {
    tokio::time::timeout(DEADLINE, async {
        loop {
            let (name, data) = herd.parent.next_push().await.unwrap();
            if name == event::RUN && data["runId"] == run_id && wanted(&data["steps"][0]) {
                return data;
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no such view of {run_id} within {DEADLINE:?}"))
}
