//! The real pi, every installed version, in RPC mode against the fake model: prompts, the
//! version's run-finished signal, `get_last_assistant_text`, a second prompt in the same
//! session, separate model queues, and an orderly exit when stdin closes. Skipped (one line
//! each) when `scripts/setup` has not installed pi.

use std::time::Duration;

use serde_json::{Value, json};
use shepherd_testkit::fake_llm::{FakeLlm, Script, Step};
use shepherd_testkit::pi::{PiBinary, PiEnv, PiRpc, PiVersion};

const T: Duration = Duration::from_secs(120);

fn types(records: &[Value]) -> Vec<&str> {
    records.iter().filter_map(|r| r["type"].as_str()).collect()
}

fn rpc_prompt_tool_turn_and_follow_up(pi: &PiBinary) {
    let script = Script::new().with_queue(
        "sheep-1",
        [
            Step::tool_call("bash", json!({"command": "echo rpc-$((40 + 2))"})),
            Step::text("The answer is 42.").expecting("rpc-42"),
            Step::echo(),
        ],
    );
    let fake = FakeLlm::start(script).unwrap();
    let env = PiEnv::builder(&fake)
        .model("parent")
        .model("sheep-1")
        .build()
        .unwrap();
    let mut rpc = PiRpc::spawn(&env, pi, &["--model", "fake/sheep-1", "--no-session"]).unwrap();

    let state = rpc.call(json!({"type": "get_state"}), T).unwrap();
    assert_eq!(state["success"], json!(true), "{state}");
    assert_eq!(state["data"]["model"]["id"], "sheep-1");
    assert_eq!(state["data"]["isStreaming"], json!(false));

    rpc.prompt("compute it", T).unwrap();
    let run = rpc.wait_run_finished(T).unwrap();
    let kinds = types(&run);
    for expected in [
        "agent_start",
        "tool_execution_start",
        "tool_execution_end",
        "agent_end",
    ] {
        assert!(
            kinds.contains(&expected),
            "{expected} missing from {kinds:?}"
        );
    }
    let last = *kinds.last().unwrap();
    match pi.version {
        PiVersion::V1 => assert_eq!(last, "agent_settled", "{kinds:?}"),
        PiVersion::V0_73 => {
            assert_eq!(last, "agent_end", "{kinds:?}");
            assert!(!kinds.contains(&"agent_settled"));
        }
    }
    let end = run.iter().rfind(|r| r["type"] == "agent_end").unwrap();
    let final_message = end["messages"].as_array().unwrap().last().unwrap();
    assert_eq!(final_message["stopReason"], "stop");
    assert_eq!(
        rpc.last_assistant_text(T).unwrap().as_deref(),
        Some("The answer is 42.")
    );

    // A second prompt continues the same conversation.
    rpc.prompt("say it back", T).unwrap();
    rpc.wait_run_finished(T).unwrap();
    assert_eq!(
        rpc.last_assistant_text(T).unwrap().as_deref(),
        Some("ECHO: say it back")
    );

    let requests = fake.requests();
    assert_eq!(requests.len(), 3);
    assert!(
        requests
            .iter()
            .all(|r| r.model == "sheep-1" && r.queue == "sheep-1")
    );
    assert!(requests[1].tool_results()[0].contains("rpc-42"));
    assert!(requests[2].messages().len() > requests[1].messages().len());
    assert!(requests[2].contains("The answer is 42."));
    assert!(fake.mismatches().is_empty(), "{:?}", fake.mismatches());
    assert!(fake.requests_for("parent").is_empty());

    let status = rpc.close(Duration::from_secs(30)).unwrap();
    assert!(status.success(), "{status}");
    assert!(env.home_entries().is_empty(), "{:?}", env.home_entries());
}

fn rpc_refuses_a_second_prompt_while_running(pi: &PiBinary) {
    // The reply is held until the test has tried a second prompt mid-run.
    let held = Step::text("slow answer").held_until("reply");
    let fake = FakeLlm::start(Script::new().with_responses([held])).unwrap();
    let env = PiEnv::new(&fake).unwrap();
    let mut rpc = PiRpc::spawn(&env, pi, &["--no-session"]).unwrap();
    rpc.prompt("first", T).unwrap();
    fake.wait_for_requests(1, T).unwrap();
    let refused = rpc
        .call(json!({"type": "prompt", "message": "second"}), T)
        .unwrap();
    assert_eq!(refused["success"], json!(false), "{refused}");
    assert!(
        refused["error"]
            .as_str()
            .is_some_and(|e| e.contains("streamingBehavior")),
        "{refused}"
    );
    fake.release("reply");
    rpc.wait_run_finished(T).unwrap();
    assert_eq!(
        rpc.last_assistant_text(T).unwrap().as_deref(),
        Some("slow answer")
    );
    assert_eq!(fake.requests().len(), 1);
    assert!(rpc.close(Duration::from_secs(30)).unwrap().success());
}

fn rpc_model_error_ends_the_run_without_retries(pi: &PiBinary) {
    let fake =
        FakeLlm::start(Script::new().with_responses([Step::error(500, "fake outage")])).unwrap();
    let env = PiEnv::new(&fake).unwrap();
    let mut rpc = PiRpc::spawn(&env, pi, &["--no-session"]).unwrap();
    rpc.prompt("hello?", T).unwrap();
    let run = rpc.wait_run_finished(T).unwrap();
    let kinds = types(&run);
    assert!(!kinds.contains(&"auto_retry_start"), "{kinds:?}");
    let end = run.iter().rfind(|r| r["type"] == "agent_end").unwrap();
    let message = end["messages"].as_array().unwrap().last().unwrap();
    assert_eq!(message["stopReason"], "error", "{message}");
    assert!(
        message["errorMessage"]
            .as_str()
            .is_some_and(|e| e.contains("fake outage")),
        "{message}"
    );
    // Retries are off (settings), so the run ended after one request.
    assert_eq!(fake.requests().len(), 1);
    assert!(rpc.close(Duration::from_secs(30)).unwrap().success());
}

shepherd_testkit::pi_tests!(
    rpc_prompt_tool_turn_and_follow_up,
    rpc_refuses_a_second_prompt_while_running,
    rpc_model_error_ends_the_run_without_retries,
);
