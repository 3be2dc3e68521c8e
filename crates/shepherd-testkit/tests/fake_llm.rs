//! The fake model server over real HTTP: the OpenAI and Anthropic wire formats pi parses, the
//! per-model queues, the exhausted policies, `expect`, errors, the control endpoints and the
//! deadline-bound waits.

use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use shepherd_testkit::fake_llm::client::{self, HttpReply};
use shepherd_testkit::fake_llm::{
    Exhausted, FakeLlm, FakeLlmError, MismatchKind, Script, Step, ToolCall,
};

const T: Duration = Duration::from_secs(10);

fn chat(fake: &FakeLlm, body: &Value) -> HttpReply {
    let url = format!("{}/chat/completions", fake.openai_base_url());
    client::post_json(&url, body, T).unwrap()
}

fn user(model: &str, text: &str, stream: bool) -> Value {
    json!({"model": model, "stream": stream,
           "messages": [{"role": "system", "content": "be brief"},
                        {"role": "user", "content": text}]})
}

/// The parsed `data:` chunks before `[DONE]`, checking that `[DONE]` ends the stream.
fn chunks(reply: &HttpReply) -> Vec<Value> {
    assert_eq!(reply.status, 200, "{}", reply.body);
    let data = reply.sse_data();
    assert_eq!(data.last(), Some(&"[DONE]"), "{}", reply.body);
    data[..data.len() - 1]
        .iter()
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

#[test]
fn streams_text_in_small_deltas_with_finish_and_usage() {
    let text = "Hello from the fake model, in several small pieces.";
    let fake =
        FakeLlm::start(Script::new().with_responses([Step::text(text).with_usage(7, 3)])).unwrap();
    let mut body = user("m", "hi", true);
    body["stream_options"] = json!({"include_usage": true});
    let chunks = chunks(&chat(&fake, &body));

    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    let deltas: Vec<&str> = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .filter(|s| !s.is_empty())
        .collect();
    assert!(deltas.len() > 3 && deltas.iter().all(|d| d.chars().count() <= 12));
    assert_eq!(deltas.concat(), text);
    let finish = &chunks[chunks.len() - 2];
    assert_eq!(finish["choices"][0]["finish_reason"], "stop");
    let usage = chunks.last().unwrap();
    assert_eq!(usage["choices"], json!([]));
    assert_eq!(usage["usage"]["prompt_tokens"], 7);
    assert_eq!(usage["usage"]["completion_tokens"], 3);
}

#[test]
fn streams_tool_calls_as_a_head_then_argument_fragments() {
    let arguments = json!({"command": "echo hello > out.txt && cat out.txt"});
    let step = Step::tool_call("bash", arguments.clone())
        .with_text("Let me run that.")
        .with_tool_call(ToolCall::new("read", json!({"path": "out.txt"})).with_id("mine"));
    let fake = FakeLlm::start(Script::new().with_responses([step])).unwrap();
    let chunks = chunks(&chat(&fake, &user("m", "go", true)));

    let calls: Vec<&Value> = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["tool_calls"].get(0))
        .collect();
    let heads: Vec<&&Value> = calls.iter().filter(|c| c.get("id").is_some()).collect();
    assert_eq!(heads.len(), 2);
    assert_eq!(heads[0]["function"]["name"], "bash");
    assert_eq!(heads[0]["id"], "call_0_0");
    assert_eq!(heads[1]["id"], "mine");
    let first_args: String = calls
        .iter()
        .filter(|c| c["index"] == 0)
        .filter_map(|c| c["function"]["arguments"].as_str())
        .collect();
    assert_eq!(
        serde_json::from_str::<Value>(&first_args).unwrap(),
        arguments
    );
    assert!(
        calls.iter().filter(|c| c["index"] == 0).count() > 2,
        "arguments in pieces"
    );
    assert_eq!(
        chunks.last().unwrap()["choices"][0]["finish_reason"],
        "tool_calls"
    );
    // No usage chunk unless asked for.
    assert!(chunks.iter().all(|c| c.get("usage").is_none()));
}

#[test]
fn answers_without_streaming_in_one_json_body() {
    let step = Step::tool_call("bash", json!({"command": "ls"})).with_text("Looking.");
    let fake = FakeLlm::start(Script::new().with_responses([step, Step::text("Done.")])).unwrap();
    let reply = chat(&fake, &user("m", "list", false)).json().unwrap();
    let message = &reply["choices"][0]["message"];
    assert_eq!(message["content"], "Looking.");
    assert_eq!(message["tool_calls"][0]["function"]["name"], "bash");
    assert_eq!(
        message["tool_calls"][0]["function"]["arguments"],
        r#"{"command":"ls"}"#
    );
    assert_eq!(reply["choices"][0]["finish_reason"], "tool_calls");
    let reply = chat(&fake, &user("m", "and?", false)).json().unwrap();
    assert_eq!(reply["choices"][0]["message"]["content"], "Done.");
    assert_eq!(reply["choices"][0]["finish_reason"], "stop");
}

fn content(reply: &HttpReply) -> String {
    reply.json().unwrap()["choices"][0]["message"]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn the_model_picks_its_queue_and_other_models_use_responses() {
    let script = Script::new()
        .with_responses([Step::text("default 1"), Step::text("default 2")])
        .with_queue("parent", [Step::text("parent 1")])
        .with_queue("sheep-1", [Step::text("sheep 1"), Step::text("sheep 2")]);
    let fake = FakeLlm::start(script).unwrap();
    assert_eq!(
        content(&chat(&fake, &user("sheep-1", "a", false))),
        "sheep 1"
    );
    assert_eq!(
        content(&chat(&fake, &user("parent", "b", false))),
        "parent 1"
    );
    assert_eq!(
        content(&chat(&fake, &user("other", "c", false))),
        "default 1"
    );
    assert_eq!(
        content(&chat(&fake, &user("sheep-1", "d", false))),
        "sheep 2"
    );
    // An empty model queue does not borrow from the default queue.
    let reply = chat(&fake, &user("parent", "e", false));
    assert_eq!(reply.status, 500);
    assert!(
        reply.body.contains("exhausted for queue parent"),
        "{}",
        reply.body
    );

    let requests = fake.requests();
    let models: Vec<&str> = requests.iter().map(|r| r.model.as_str()).collect();
    assert_eq!(models, ["sheep-1", "parent", "other", "sheep-1", "parent"]);
    assert_eq!(requests[2].queue, "default");
    assert_eq!(requests[3].last_input_text(), "d");
    assert_eq!(requests[3].system_prompt().as_deref(), Some("be brief"));
    assert_eq!(fake.requests_for("sheep-1").len(), 2);
    let pending = fake.pending();
    assert_eq!(
        (pending["default"], pending["parent"], pending["sheep-1"]),
        (1, 0, 0)
    );
    let mismatches = fake.mismatches();
    assert_eq!(mismatches.len(), 1);
    assert_eq!(mismatches[0].kind, MismatchKind::Exhausted);
    assert_eq!(
        (mismatches[0].request, mismatches[0].queue.as_str()),
        (4, "parent")
    );
}

#[test]
fn exhausted_can_repeat_the_last_step_or_answer_a_fixed_one() {
    let fake = FakeLlm::start(
        Script::new()
            .with_responses([Step::text("once")])
            .with_exhausted(Exhausted::RepeatLast),
    )
    .unwrap();
    for _ in 0..3 {
        assert_eq!(content(&chat(&fake, &user("m", "x", false))), "once");
    }
    assert!(fake.mismatches().is_empty());

    fake.set_script(
        Script::new().with_exhausted(Exhausted::Step(Box::new(Step::text("fallback")))),
    );
    assert_eq!(content(&chat(&fake, &user("m", "x", false))), "fallback");
    // Nothing served yet from a fresh script: repeat_last has nothing to repeat.
    fake.set_script(Script::new().with_exhausted(Exhausted::RepeatLast));
    assert_eq!(chat(&fake, &user("m", "x", false)).status, 500);
    assert_eq!(fake.mismatches().len(), 1);
}

#[test]
fn expect_records_a_mismatch_when_the_last_message_differs() {
    let script = Script::new().with_responses([
        Step::text("ok").expecting("hello"),
        Step::text("ok").expecting("(no output)"),
    ]);
    let fake = FakeLlm::start(script).unwrap();
    chat(&fake, &user("m", "well, hello there", false));
    let body = json!({"model": "m", "messages": [
        {"role": "user", "content": "run it"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "c", "type": "function",
            "function": {"name": "bash", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c", "content": "exit code 1"}]});
    chat(&fake, &body);
    let mismatches = fake.mismatches();
    assert_eq!(mismatches.len(), 1, "{mismatches:?}");
    assert_eq!(
        mismatches[0].kind,
        MismatchKind::Expect {
            expect: "(no output)".to_owned(),
            got: "exit code 1".to_owned()
        }
    );
    assert!(mismatches[0].to_string().contains("request 1"));
    assert_eq!(fake.requests()[1].tool_results(), ["exit code 1"]);
}

#[test]
fn error_steps_answer_with_their_status_and_echo_repeats_the_input() {
    let script = Script::new().with_responses([
        Step::error(503, "overloaded, try later"),
        Step::echo(),
        Step::echo(),
    ]);
    let fake = FakeLlm::start(script).unwrap();
    let reply = chat(&fake, &user("m", "x", true));
    assert_eq!(reply.status, 503);
    assert_eq!(
        reply.json().unwrap()["error"]["message"],
        "overloaded, try later"
    );
    assert_eq!(
        content(&chat(&fake, &user("m", "say this", false))),
        "ECHO: say this"
    );
    let streamed = chunks(&chat(&fake, &user("m", "and this", true)));
    let text: String = streamed
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(text, "ECHO: and this");
}

#[test]
fn control_endpoints_replace_append_and_report() {
    let fake = FakeLlm::start(Script::new()).unwrap();
    let url = fake.url();
    let script = json!({"responses": [{"text": "from script"}],
                        "queues": {"sheep": [{"text": "sheep says"}]}});
    assert_eq!(
        client::post_json(&format!("{url}/_script"), &script, T)
            .unwrap()
            .status,
        200
    );
    let append = json!({"queue": "sheep", "responses": [{"text": "appended"}]});
    assert_eq!(
        client::post_json(&format!("{url}/_append"), &append, T)
            .unwrap()
            .status,
        200
    );
    let append = json!({"responses": [{"text": "default appended"}]});
    assert_eq!(
        client::post_json(&format!("{url}/_append"), &append, T)
            .unwrap()
            .status,
        200
    );
    fake.append("sheep", [Step::text("appended in Rust")]);

    let answers: Vec<String> = ["sheep", "sheep", "sheep", "x", "x"]
        .iter()
        .map(|model| content(&chat(&fake, &user(model, "q", false))))
        .collect();
    assert_eq!(
        answers,
        [
            "sheep says",
            "appended",
            "appended in Rust",
            "from script",
            "default appended"
        ]
    );

    let state = client::get(&format!("{url}/_state"), T)
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(state["served"], 5);
    assert_eq!(state["pending"], json!({"default": 0, "sheep": 0}));
    assert_eq!(state["mismatches"], json!([]));
    let requests = client::get(&format!("{url}/_requests"), T)
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(requests.as_array().unwrap().len(), 5);
    assert_eq!(requests[0]["model"], "sheep");
    assert_eq!(requests[0]["body"]["messages"][1]["content"], "q");

    let models = client::get(&format!("{url}/v1/models"), T)
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(models["data"][0]["id"], "sheep");

    let bad = client::post_json(&format!("{url}/_script"), &json!({"respones": []}), T).unwrap();
    assert_eq!(bad.status, 400);
    assert!(bad.body.contains("respones"), "{}", bad.body);
    assert_eq!(client::get(&format!("{url}/nope"), T).unwrap().status, 404);
}

#[test]
fn waiting_for_requests_wakes_on_arrival_and_times_out_with_what_came() {
    let fake = FakeLlm::start(Script::new().with_exhausted(Exhausted::RepeatLast)).unwrap();
    fake.append_default([Step::text("hi")]);
    let url = format!("{}/chat/completions", fake.openai_base_url());
    let sender = thread::spawn(move || {
        client::post_json(&url, &user("worker", "first question", false), T).unwrap()
    });
    let requests = fake.wait_for_requests(1, T).unwrap();
    assert_eq!(requests[0].model, "worker");
    assert_eq!(sender.join().unwrap().status, 200);

    let started = Instant::now();
    let err = fake
        .wait_for_requests(2, Duration::from_millis(200))
        .unwrap_err();
    assert!(started.elapsed() >= Duration::from_millis(200));
    assert!(matches!(err, FakeLlmError::Timeout { .. }));
    let message = err.to_string();
    assert!(message.contains("2 model requests"), "{message}");
    assert!(
        message.contains("\"worker\"") && message.contains("first question"),
        "{message}"
    );
}

#[test]
fn a_delayed_reply_ends_when_the_server_is_dropped() {
    let step = Step::text("late").with_delay(Duration::from_secs(600));
    let fake = FakeLlm::start(Script::new().with_responses([step])).unwrap();
    let url = format!("{}/chat/completions", fake.openai_base_url());
    let waiting = thread::spawn(move || {
        client::post_json(&url, &user("m", "q", true), Duration::from_secs(60))
    });
    fake.wait_for_requests(1, T).unwrap();
    let started = Instant::now();
    drop(fake);
    let reply = waiting.join().unwrap();
    assert!(started.elapsed() < Duration::from_secs(30));
    // The connection closed without a reply.
    assert!(reply.is_err(), "{reply:?}");
}

#[test]
fn held_replies_wait_for_their_gate_which_stays_open() {
    let script = Script::new().with_responses([
        Step::text("was held").held_until("go"),
        Step::text("passes").held_until("go"),
    ]);
    let fake = FakeLlm::start(script).unwrap();
    let url = format!("{}/chat/completions", fake.openai_base_url());
    let (send, replies) = mpsc::channel();
    let held = thread::spawn(move || {
        drop(send.send(client::post_json(&url, &user("m", "q", false), T).unwrap()));
    });
    fake.wait_for_requests(1, T).unwrap();
    // Still held: nothing within a bounded look (the release below is what lets it go).
    assert!(replies.recv_timeout(Duration::from_millis(300)).is_err());
    let release = json!({"gate": "go"});
    let released = client::post_json(&format!("{}/_release", fake.url()), &release, T).unwrap();
    assert_eq!(released.status, 200);
    assert_eq!(content(&replies.recv_timeout(T).unwrap()), "was held");
    held.join().unwrap();
    assert_eq!(content(&chat(&fake, &user("m", "again", false))), "passes");
}

#[test]
fn speaks_anthropic_messages_streamed_and_whole() {
    let step = Step::tool_call("bash", json!({"command": "pwd"})).with_text("Checking.");
    let fake = FakeLlm::start(Script::new().with_responses([step.clone(), step])).unwrap();
    let url = format!("{}/v1/messages", fake.url());
    let body = json!({"model": "claude", "stream": true, "system": "sys", "max_tokens": 100,
                      "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]});
    let reply = client::post_json(&url, &body, T).unwrap();
    let events = reply.sse_events();
    assert_eq!(events.first(), Some(&"message_start"));
    assert_eq!(events.last(), Some(&"message_stop"));
    assert_eq!(
        events
            .iter()
            .filter(|e| **e == "content_block_start")
            .count(),
        2
    );
    let data: Vec<Value> = reply
        .sse_data()
        .iter()
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    let json_args: String = data
        .iter()
        .filter_map(|d| d["delta"]["partial_json"].as_str())
        .collect();
    assert_eq!(
        serde_json::from_str::<Value>(&json_args).unwrap(),
        json!({"command": "pwd"})
    );
    let stop = data.iter().find(|d| d["type"] == "message_delta").unwrap();
    assert_eq!(stop["delta"]["stop_reason"], "tool_use");
    assert_eq!(fake.requests()[0].system_prompt().as_deref(), Some("sys"));
    assert_eq!(fake.requests()[0].last_input_text(), "hi");

    let mut whole = body;
    whole["stream"] = json!(false);
    let reply = client::post_json(&url, &whole, T).unwrap().json().unwrap();
    assert_eq!(reply["content"][1]["name"], "bash");
    assert_eq!(reply["content"][1]["id"], "toolu_1_0");
}

#[test]
fn scripts_parse_from_the_prototype_format_and_refuse_typos() {
    let script = Script::from_json(
        r#"{"responses": [
              {"text": "I'll write the file.",
               "tool_calls": [{"name": "bash", "arguments": {"command": "echo hello > out.txt"}}]},
              {"expect": "(no output)", "text": "Done.", "delay_ms": 5, "chunk_delay_ms": 1,
               "usage": {"input": 120000, "output": 50}},
              {"error": {"status": 429, "message": "slow down"}}],
            "queues": {"sheep": [{"echo": true, "thinking": "hmm"}]},
            "exhausted": {"text": "no more"}}"#,
    )
    .unwrap();
    assert_eq!(script.responses.len(), 3);
    assert_eq!(script.responses[1].usage.unwrap().input, 120_000);
    assert_eq!(
        script.exhausted,
        Exhausted::Step(Box::new(Step::text("no more")))
    );
    assert_eq!(
        Script::from_json(r#"{"exhausted": "repeat_last"}"#)
            .unwrap()
            .exhausted,
        Exhausted::RepeatLast
    );
    assert!(Script::from_json(r#"{"exhausted": "loop"}"#).is_err());
    assert!(Script::from_json(r#"{"responses": [{"txt": "typo"}]}"#).is_err());
    // Round trip.
    let text = serde_json::to_string(&script).unwrap();
    assert_eq!(Script::from_json(&text).unwrap(), script);
}
