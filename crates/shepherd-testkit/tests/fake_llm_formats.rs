//! The fake model server's other agents' wire formats over real HTTP: OpenAI responses (Codex),
//! Gemini `generateContent` streamed and whole (Gemini CLI), Anthropic thinking (Claude Code);
//! tool calls resolved against the offered tools (MCP tools by suffix, the shell tool in its
//! own shape); each API's error shape; the request record read the same way in every format;
//! `toolless` side requests.

use std::time::Duration;

use serde_json::{Value, json};
use shepherd_testkit::fake_llm::client::{self, HttpReply};
use shepherd_testkit::fake_llm::{
    Api, FakeLlm, MismatchKind, NameMatch, Script, Step, TOOLLESS_QUEUE, ToolCall,
};

const T: Duration = Duration::from_secs(10);

fn post(fake: &FakeLlm, path: &str, body: &Value) -> HttpReply {
    client::post_json(&format!("{}{path}", fake.url()), body, T).unwrap()
}

fn sse_json(reply: &HttpReply) -> Vec<Value> {
    assert_eq!(reply.status, 200, "{}", reply.body);
    reply
        .sse_data()
        .iter()
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

/// What Codex offers: its shell tool, and the MCP server `test` as a namespace.
fn codex_tools() -> Value {
    json!([
        {"type": "function", "name": "exec_command", "strict": false,
         "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}},
                        "required": ["cmd"]}},
        {"type": "namespace", "name": "mcp__test", "description": "MCP server test",
         "tools": [{"type": "function", "name": "append_line",
                    "parameters": {"type": "object",
                                   "properties": {"line": {"type": "string"}}}}]},
        {"type": "web_search", "external_web_access": false},
    ])
}

fn responses_body(input: &Value, stream: bool) -> Value {
    json!({"model": "fake-model", "stream": stream, "instructions": "be a fake",
           "input": input, "tools": codex_tools()})
}

#[test]
fn responses_stream_shell_and_namespaced_mcp_calls_then_text() {
    let script = Script::new().with_responses([
        Step::shell("echo hi > out.txt"),
        Step::tool_call_suffix("append_line", json!({"line": "one"})).with_usage(30, 4),
        Step::text("All done, the line is written.").with_thinking("short"),
    ]);
    let fake = FakeLlm::start(script).unwrap();
    let user = json!([{"type": "message", "role": "user",
                       "content": [{"type": "input_text", "text": "write it"}]}]);

    let events = sse_json(&post(&fake, "/v1/responses", &responses_body(&user, true)));
    let mut kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    kinds.dedup();
    assert_eq!(
        kinds,
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.function_call_arguments.delta",
            "response.function_call_arguments.done",
            "response.output_item.done",
            "response.completed"
        ]
    );
    let numbers: Vec<u64> = events
        .iter()
        .map(|e| e["sequence_number"].as_u64().unwrap())
        .collect();
    assert_eq!(numbers, (0..events.len() as u64).collect::<Vec<u64>>());
    let call = &events[events.len() - 2]["item"];
    assert_eq!(call["type"], "function_call");
    assert_eq!(call["name"], "exec_command");
    assert_eq!(call["call_id"], "call_0_0");
    assert!(call.get("namespace").is_none());
    assert_eq!(
        serde_json::from_str::<Value>(call["arguments"].as_str().unwrap()).unwrap(),
        json!({"cmd": "echo hi > out.txt"})
    );
    let completed = events.last().unwrap();
    assert_eq!(completed["response"]["output"][0], *call);
    assert_eq!(completed["response"]["usage"]["input_tokens"], 10);

    // Codex sends the call and its output back with the whole history.
    let mut input = user.as_array().unwrap().clone();
    input.push(call.clone());
    input.push(
        json!({"type": "function_call_output", "call_id": "call_0_0",
                      "output": "Process exited with code 0"}),
    );
    let events = sse_json(&post(
        &fake,
        "/v1/responses",
        &responses_body(&json!(input), true),
    ));
    let done = events
        .iter()
        .find(|e| e["type"] == "response.output_item.done")
        .unwrap();
    assert_eq!(done["item"]["namespace"], "mcp__test");
    assert_eq!(done["item"]["name"], "append_line");
    assert_eq!(done["item"]["arguments"], r#"{"line":"one"}"#);
    let completed = events.last().unwrap();
    assert_eq!(completed["response"]["usage"]["output_tokens"], 4);
    assert_eq!(completed["response"]["usage"]["total_tokens"], 34);

    input.push(done["item"].clone());
    input.push(
        json!({"type": "function_call_output", "call_id": "call_1_0",
                      "output": [{"type": "input_text", "text": "Wall time: 0.1 s"},
                                 {"type": "input_text", "text": "appended line 1: one"}]}),
    );
    let events = sse_json(&post(
        &fake,
        "/v1/responses",
        &responses_body(&json!(input), true),
    ));
    let text: String = events
        .iter()
        .filter(|e| e["type"] == "response.output_text.delta")
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    assert_eq!(text, "All done, the line is written.");
    let summary: String = events
        .iter()
        .filter(|e| e["type"] == "response.reasoning_summary_text.delta")
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    assert_eq!(summary, "short");
    let output = &events.last().unwrap()["response"]["output"];
    assert_eq!(output[0]["type"], "reasoning");
    assert_eq!(
        output[1]["content"][0]["text"],
        "All done, the line is written."
    );

    let requests = fake.requests();
    assert!(requests.iter().all(|r| r.api == Api::Responses));
    assert_eq!(
        requests[2].tool_names(),
        ["exec_command", "mcp__test__append_line"]
    );
    assert_eq!(
        requests[2].tool_results(),
        [
            "Process exited with code 0",
            "Wall time: 0.1 s\nappended line 1: one"
        ]
    );
    assert_eq!(
        requests[2].last_input_text(),
        "Wall time: 0.1 s\nappended line 1: one"
    );
    assert_eq!(requests[0].last_input_text(), "write it");
    assert_eq!(requests[0].system_prompt().as_deref(), Some("be a fake"));
    assert!(fake.mismatches().is_empty(), "{:?}", fake.mismatches());
}

#[test]
fn responses_answer_whole_when_not_streamed_and_take_a_string_input() {
    let fake = FakeLlm::start(Script::new().with_responses([Step::echo()])).unwrap();
    let reply = post(
        &fake,
        "/v1/responses",
        &responses_body(&json!("just a string"), false),
    );
    let body = reply.json().unwrap();
    assert_eq!(body["object"], "response");
    assert_eq!(body["status"], "completed");
    assert_eq!(
        body["output"][0]["content"][0]["text"],
        "ECHO: just a string"
    );
}

/// What Gemini CLI sends: tools as `functionDeclarations` with `parametersJsonSchema`.
fn gemini_body(contents: &Value) -> Value {
    json!({
        "contents": contents,
        "systemInstruction": {"parts": [{"text": "you are gemini"}]},
        "tools": [{"functionDeclarations": [
            {"name": "run_shell_command",
             "parametersJsonSchema": {"type": "object",
                                      "properties": {"command": {"type": "string"},
                                                     "description": {"type": "string"}}}},
            {"name": "mcp_test_append_line",
             "parametersJsonSchema": {"type": "object",
                                      "properties": {"line": {"type": "string"}}}}]}],
        "generationConfig": {"temperature": 1},
    })
}

#[test]
fn gemini_streams_sse_with_alt_sse_and_the_model_from_the_path_picks_the_queue() {
    let script = Script::new()
        .with_queue(
            "gemini-2.5-pro",
            [
                Step::tool_call_suffix("append_line", json!({"line": "two"})),
                Step::text("Finished the whole task.").with_thinking("hm"),
            ],
        )
        .with_responses([Step::text("default queue")]);
    let fake = FakeLlm::start(script).unwrap();
    let path = "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse";
    let user = json!([{"role": "user", "parts": [{"text": "append two"}]}]);
    let chunks = sse_json(&post(&fake, path, &gemini_body(&user)));
    assert_eq!(chunks.len(), 1);
    let candidate = &chunks[0]["candidates"][0];
    assert_eq!(
        candidate["content"]["parts"][0]["functionCall"],
        json!({"name": "mcp_test_append_line", "args": {"line": "two"}})
    );
    assert_eq!(candidate["finishReason"], "STOP");
    assert_eq!(chunks[0]["usageMetadata"]["totalTokenCount"], 15);

    let mut contents = user.as_array().unwrap().clone();
    contents.push(json!({"role": "model", "parts": [candidate["content"]["parts"][0].clone()]}));
    contents.push(json!({"role": "user", "parts": [{"functionResponse": {
        "name": "mcp_test_append_line", "id": "x1",
        "response": {"output": "appended line 1: two"}}}]}));
    let chunks = sse_json(&post(&fake, path, &gemini_body(&json!(contents))));
    let parts: Vec<&Value> = chunks
        .iter()
        .map(|c| &c["candidates"][0]["content"]["parts"][0])
        .collect();
    assert_eq!(parts[0], &json!({"text": "hm", "thought": true}));
    let text: String = parts[1..]
        .iter()
        .map(|p| p["text"].as_str().unwrap())
        .collect();
    assert_eq!(text, "Finished the whole task.");
    assert!(
        chunks[..chunks.len() - 1]
            .iter()
            .all(|c| c["candidates"][0].get("finishReason").is_none()
                && c.get("usageMetadata").is_none())
    );
    assert_eq!(
        chunks.last().unwrap()["candidates"][0]["finishReason"],
        "STOP"
    );

    let other = "/v1beta/models/gemini-flash:streamGenerateContent?alt=sse";
    let chunks = sse_json(&post(&fake, other, &gemini_body(&user)));
    let text: String = chunks
        .iter()
        .map(|c| {
            c["candidates"][0]["content"]["parts"][0]["text"]
                .as_str()
                .unwrap()
        })
        .collect();
    assert_eq!(text, "default queue");

    let requests = fake.requests();
    assert_eq!(requests[0].model, "gemini-2.5-pro");
    assert_eq!(requests[0].queue, "gemini-2.5-pro");
    assert_eq!(requests[0].query, "alt=sse");
    assert_eq!(requests[0].api, Api::Gemini);
    assert!(requests[0].is_stream());
    assert_eq!(requests[1].tool_results(), ["appended line 1: two"]);
    assert_eq!(requests[1].last_input_text(), "appended line 1: two");
    assert_eq!(requests[0].last_input_text(), "append two");
    assert_eq!(
        requests[0].system_prompt().as_deref(),
        Some("you are gemini")
    );
    assert_eq!(requests[2].queue, "default");
}

#[test]
fn gemini_answers_generate_content_whole_and_a_stream_without_sse_as_an_array() {
    let step = Step::shell("ls").with_text("Listing the folder now.");
    let fake = FakeLlm::start(Script::new().with_responses([step.clone(), step])).unwrap();
    let user = json!([{"role": "user", "parts": [{"text": "list"}]}]);
    let whole = post(
        &fake,
        "/v1beta/models/m:generateContent",
        &gemini_body(&user),
    )
    .json()
    .unwrap();
    let parts = &whole["candidates"][0]["content"]["parts"];
    assert_eq!(parts[0], json!({"text": "Listing the folder now."}));
    assert_eq!(
        parts[1]["functionCall"],
        json!({"name": "run_shell_command",
               "args": {"command": "ls", "description": "Run a shell command"}})
    );
    assert_eq!(whole["candidates"][0]["finishReason"], "STOP");

    let array = post(
        &fake,
        "/v1beta/models/m:streamGenerateContent",
        &gemini_body(&user),
    )
    .json()
    .unwrap();
    let array = array.as_array().unwrap();
    assert!(array.len() > 2);
    assert!(
        array.last().unwrap()["candidates"][0]["content"]["parts"][0]
            .get("functionCall")
            .is_some()
    );
    assert!(!fake.requests()[0].is_stream());
}

#[test]
fn anthropic_streams_thinking_then_text_then_the_prefixed_mcp_tool() {
    let step = Step::tool_call_suffix("append_line", json!({"line": "three"}))
        .with_text("Appending.")
        .with_thinking("Let me think.");
    let fake = FakeLlm::start(Script::new().with_responses([step, Step::shell("pwd")])).unwrap();
    let body = json!({"model": "claude-sonnet-4-5", "stream": true, "max_tokens": 100,
        "tools": [
            {"name": "Bash", "input_schema": {"type": "object", "properties": {
                "command": {"type": "string"}, "description": {"type": "string"}}}},
            {"name": "mcp__test__append_line", "input_schema": {"type": "object"}}],
        "messages": [{"role": "user", "content": "go"}]});
    let data = sse_json(&post(&fake, "/v1/messages?beta=true", &body));
    let starts: Vec<&Value> = data
        .iter()
        .filter(|d| d["type"] == "content_block_start")
        .map(|d| &d["content_block"])
        .collect();
    assert_eq!(starts[0]["type"], "thinking");
    assert_eq!(starts[1]["type"], "text");
    assert_eq!(starts[2]["name"], "mcp__test__append_line");
    let thinking: String = data
        .iter()
        .filter_map(|d| d["delta"]["thinking"].as_str())
        .collect();
    assert_eq!(thinking, "Let me think.");
    assert!(data.iter().any(|d| d["delta"]["type"] == "signature_delta"));

    let whole = post(
        &fake,
        "/v1/messages",
        &json!({"model": "m", "tools": body["tools"], "messages": body["messages"]}),
    )
    .json()
    .unwrap();
    assert_eq!(whole["content"][0]["name"], "Bash");
    assert_eq!(
        whole["content"][0]["input"],
        json!({"command": "pwd", "description": "Run a shell command"})
    );
    assert_eq!(fake.requests()[0].query, "beta=true");
}

#[test]
fn chat_completions_call_opencode_style_names_and_bash_with_a_description() {
    let script = Script::new().with_responses([
        Step::shell("echo hi"),
        Step::tool_call_suffix("append_line", json!({"line": "four"})),
    ]);
    let fake = FakeLlm::start(script).unwrap();
    let function = |name: &str, properties: Value| {
        json!({"type": "function", "function": {"name": name, "parameters": {
            "type": "object", "properties": properties}}})
    };
    let body = json!({"model": "fake-model", "stream": false, "messages": [
            {"role": "user", "content": "go"}],
        "tools": [function("bash", json!({"command": {}, "description": {}})),
                  function("test_append_line", json!({"line": {}}))]});
    let call = |reply: HttpReply| {
        reply.json().unwrap()["choices"][0]["message"]["tool_calls"][0]["function"].clone()
    };
    let first = call(post(&fake, "/v1/chat/completions", &body));
    assert_eq!(first["name"], "bash");
    assert_eq!(
        serde_json::from_str::<Value>(first["arguments"].as_str().unwrap()).unwrap(),
        json!({"command": "echo hi", "description": "Run a shell command"})
    );
    assert_eq!(
        call(post(&fake, "/v1/chat/completions", &body))["name"],
        "test_append_line"
    );
}

#[test]
fn a_tool_the_request_does_not_offer_is_a_mismatch_answered_with_text() {
    let script = Script::new().with_responses([
        Step::tool_call_suffix("append_line", json!({})),
        Step::shell("true"),
    ]);
    let fake = FakeLlm::start(script).unwrap();
    // `xappend_line` ends with the name but not after a separator.
    let body = json!({"model": "m", "messages": [{"role": "user", "content": "go"}],
        "tools": [{"type": "function", "function": {"name": "xappend_line"}}]});
    for _ in 0..2 {
        let reply = post(&fake, "/v1/chat/completions", &body).json().unwrap();
        let message = &reply["choices"][0]["message"];
        assert!(message.get("tool_calls").is_none());
        assert!(
            message["content"]
                .as_str()
                .unwrap()
                .contains("no offered tool matches")
        );
    }
    let kinds: Vec<MismatchKind> = fake.mismatches().into_iter().map(|m| m.kind).collect();
    assert_eq!(
        kinds,
        [
            MismatchKind::NoSuchTool {
                wanted: "append_line".to_owned(),
                offered: vec!["xappend_line".to_owned()]
            },
            MismatchKind::NoSuchTool {
                wanted: "shell".to_owned(),
                offered: vec!["xappend_line".to_owned()]
            }
        ]
    );
}

#[test]
fn every_api_answers_an_error_step_in_its_own_shape() {
    let error = || Step::error(400, "bad request from the script");
    let fake =
        FakeLlm::start(Script::new().with_responses([error(), error(), error(), error()])).unwrap();
    let anthropic = post(
        &fake,
        "/v1/messages",
        &json!({"model": "m", "stream": true}),
    );
    assert_eq!(anthropic.status, 400);
    assert_eq!(
        anthropic.json().unwrap(),
        json!({"type": "error", "error": {"type": "invalid_request_error",
                                          "message": "bad request from the script"}})
    );
    for path in ["/v1/chat/completions", "/v1/responses"] {
        let reply = post(&fake, path, &json!({"model": "m", "stream": true}));
        assert_eq!(reply.status, 400);
        let body = reply.json().unwrap();
        assert_eq!(body["error"]["message"], "bad request from the script");
        assert_eq!(body["error"]["type"], "invalid_request_error");
    }
    let gemini = post(
        &fake,
        "/v1beta/models/g:streamGenerateContent?alt=sse",
        &json!({"contents": []}),
    );
    assert_eq!(gemini.status, 400);
    assert_eq!(
        gemini.json().unwrap(),
        json!({"error": {"code": 400, "message": "bad request from the script",
                         "status": "INVALID_ARGUMENT"}})
    );
}

#[test]
fn toolless_requests_get_their_own_step_and_leave_the_queues_alone() {
    let script = Script::new()
        .with_responses([Step::text("the turn")])
        .with_toolless(Step::text("A title"));
    let fake = FakeLlm::start(script).unwrap();
    let title = json!({"model": "m", "messages": [{"role": "user", "content": "name it"}]});
    let turn = json!({"model": "m", "messages": [{"role": "user", "content": "do it"}],
                      "tools": [{"type": "function", "function": {"name": "bash"}}]});
    let content = |reply: HttpReply| {
        reply.json().unwrap()["choices"][0]["message"]["content"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert_eq!(
        content(post(&fake, "/v1/chat/completions", &title)),
        "A title"
    );
    assert_eq!(
        content(post(&fake, "/v1/chat/completions", &turn)),
        "the turn"
    );
    assert_eq!(
        content(post(&fake, "/v1/chat/completions", &title)),
        "A title"
    );
    let queues: Vec<String> = fake.requests().into_iter().map(|r| r.queue).collect();
    assert_eq!(queues, [TOOLLESS_QUEUE, "default", TOOLLESS_QUEUE]);
    assert!(fake.mismatches().is_empty());
}

#[test]
fn the_new_script_fields_parse_and_round_trip() {
    let script = Script::from_json(
        r#"{"responses": [
              {"tool_calls": [{"name": "append_line", "match": "suffix",
                               "arguments": {"line": "x"}}]},
              {"tool_calls": [{"match": "shell", "arguments": {"command": "ls"}}]}],
            "toolless": {"text": "title"}}"#,
    )
    .unwrap();
    assert_eq!(
        script.responses[0].tool_calls[0],
        ToolCall::suffix("append_line", json!({"line": "x"}))
    );
    assert_eq!(script.responses[1].tool_calls[0].matching, NameMatch::Shell);
    assert_eq!(script.toolless, Some(Step::text("title")));
    let text = serde_json::to_string(&script).unwrap();
    assert_eq!(Script::from_json(&text).unwrap(), script);
    assert!(
        Script::from_json(r#"{"responses": [{"tool_calls": [{"match": "prefix"}]}]}"#).is_err()
    );
}

#[test]
fn the_request_log_records_format_query_and_headers() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("requests.jsonl");
    let options = shepherd_testkit::fake_llm::Options {
        log: Some(log.clone()),
        ..Default::default()
    };
    let fake =
        FakeLlm::start_with(Script::new().with_responses([Step::text("hi")]), &options).unwrap();
    post(
        &fake,
        "/v1beta/models/gem:streamGenerateContent?alt=sse",
        &json!({"contents": [{"role": "user", "parts": [{"text": "hello"}]}]}),
    );
    let line = std::fs::read_to_string(&log).unwrap();
    let logged: Value = serde_json::from_str(line.trim()).unwrap();
    assert_eq!(logged["api"], "gemini");
    assert_eq!(logged["query"], "alt=sse");
    assert_eq!(logged["model"], "gem");
    assert_eq!(logged["headers"]["content-type"], "application/json");
    let recorded = &fake.requests()[0];
    assert_eq!(recorded.header("content-type"), Some("application/json"));
}
