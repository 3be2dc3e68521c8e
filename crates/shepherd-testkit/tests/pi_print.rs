//! The real pi, every installed version, against the fake model in print and JSON mode: a
//! text turn, a bash tool turn whose result reaches the model, and a saved session that leaves
//! HOME untouched. Skipped (one line each) when `scripts/setup` has not installed pi.

use std::time::Duration;

use serde_json::{Value, json};
use shepherd_testkit::fake_llm::{FakeLlm, Script, Step};
use shepherd_testkit::pi::{self, PiBinary, PiEnv};

/// pi 0.73 alone takes about 2 s to start; parallel tests on two cores take longer.
const RUN: Duration = Duration::from_secs(120);

fn stdout(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

fn assert_ok(output: &std::process::Output) {
    assert!(
        output.status.success(),
        "pi failed ({}):\nstdout: {}\nstderr: {}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

fn print_text_turn(pi: &PiBinary) {
    let fake =
        FakeLlm::start(Script::new().with_responses([Step::text("Hello from the fake model.")]))
            .unwrap();
    let env = PiEnv::new(&fake).unwrap();
    let output = pi::run(
        env.command(pi).args(["--no-session", "-p", "say hello"]),
        RUN,
    )
    .unwrap();
    assert_ok(&output);
    assert_eq!(stdout(&output), "Hello from the fake model.");

    let requests = fake.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(request.model, "fake-model");
    assert_eq!(request.last_input_text(), "say hello");
    assert_eq!(request.headers["authorization"], "Bearer fake-key");
    assert_eq!(request.body["stream"], json!(true));
    assert!(request.tool_names().contains(&"bash".to_owned()));
    assert!(request.system_prompt().is_some_and(|s| !s.is_empty()));
    assert!(fake.mismatches().is_empty(), "{:?}", fake.mismatches());
}

fn print_tool_turn(pi: &PiBinary) {
    let script = Script::new().with_responses([
        Step::tool_call(
            "bash",
            json!({"command": "echo hello > out.txt && echo tool-ran-$((6 * 7))"}),
        )
        .with_text("I'll write the file."),
        Step::text("Done: wrote out.txt.").expecting("tool-ran-42"),
    ]);
    let fake = FakeLlm::start(script).unwrap();
    let env = PiEnv::new(&fake).unwrap();
    let output = pi::run(
        env.command(pi)
            .args(["--no-session", "-p", "write hello to out.txt"]),
        RUN,
    )
    .unwrap();
    assert_ok(&output);
    assert_eq!(stdout(&output), "Done: wrote out.txt.");
    let written = std::fs::read_to_string(env.work_dir().join("out.txt")).unwrap();
    assert_eq!(written, "hello\n");

    let requests = fake.requests();
    assert_eq!(requests.len(), 2);
    // The second request carries the tool call and bash's real output.
    let results = requests[1].tool_results();
    assert_eq!(results.len(), 1, "{results:?}");
    assert!(results[0].contains("tool-ran-42"), "{results:?}");
    assert!(requests[1].contains("echo hello > out.txt"));
    assert!(fake.mismatches().is_empty(), "{:?}", fake.mismatches());
}

fn print_tool_turn_over_anthropic_messages(pi: &PiBinary) {
    let script = Script::new().with_queue(
        "fake-claude",
        [
            Step::tool_call("bash", json!({"command": "echo claude-$((1 + 1))"})),
            Step::text("Two.").expecting("claude-2"),
        ],
    );
    let fake = FakeLlm::start(script).unwrap();
    let env = PiEnv::builder(&fake)
        .anthropic_model("fake-claude")
        .build()
        .unwrap();
    let output = pi::run(env.command(pi).args(["--no-session", "-p", "add"]), RUN).unwrap();
    assert_ok(&output);
    assert_eq!(stdout(&output), "Two.");
    let requests = fake.requests();
    assert_eq!(requests.len(), 2);
    assert!(requests.iter().all(|r| r.path == "/v1/messages"));
    assert_eq!(requests[0].headers["x-api-key"], "fake-key");
    assert!(requests[0].system_prompt().is_some_and(|s| !s.is_empty()));
    assert!(requests[1].tool_results()[0].contains("claude-2"));
    assert!(fake.mismatches().is_empty(), "{:?}", fake.mismatches());
}

fn json_mode_saves_the_session_and_leaves_home_alone(pi: &PiBinary) {
    let fake = FakeLlm::start(Script::new().with_responses([Step::text("Saved.")])).unwrap();
    let env = PiEnv::new(&fake).unwrap();
    let output = pi::run(
        env.command(pi)
            .args(["--mode", "json", "-p", "remember this"]),
        RUN,
    )
    .unwrap();
    assert_ok(&output);
    let events: Vec<Value> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(events[0]["type"], "session");
    let session_id = events[0]["id"].as_str().unwrap();
    let types: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
    assert!(
        types.contains(&"agent_start") && types.contains(&"agent_end"),
        "{types:?}"
    );

    // The session file lives under the agent directory, named after its id.
    let mut sessions = Vec::new();
    for dir in std::fs::read_dir(env.sessions_dir()).unwrap() {
        for file in std::fs::read_dir(dir.unwrap().path()).unwrap() {
            sessions.push(file.unwrap().path());
        }
    }
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    let name = sessions[0]
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    assert!(name.ends_with(&format!("_{session_id}.jsonl")), "{name}");
    let session = std::fs::read_to_string(&sessions[0]).unwrap();
    assert!(session.contains("remember this") && session.contains("Saved."));

    assert_eq!(env.home_entries(), Vec::<std::path::PathBuf>::new());
}

fn print_model_error_exits_non_zero(pi: &PiBinary) {
    let fake =
        FakeLlm::start(Script::new().with_responses([Step::error(401, "bad fake key")])).unwrap();
    let env = PiEnv::new(&fake).unwrap();
    let output = pi::run(env.command(pi).args(["--no-session", "-p", "hi"]), RUN).unwrap();
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("bad fake key"), "{stderr}");
    assert_eq!(fake.requests().len(), 1);
}

shepherd_testkit::pi_tests!(
    print_text_turn,
    print_model_error_exits_non_zero,
    print_tool_turn,
    print_tool_turn_over_anthropic_messages,
    json_mode_saves_the_session_and_leaves_home_alone,
);
