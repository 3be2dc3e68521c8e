//! The controls with the real pi: a task budget reached by a pi sheep on the fake model stops
//! its run and blocks its task; a closed pi sheep resumed on its own session answers from its
//! own context, and its new note links the note it continues; a pi sheep killed mid-task is
//! resumed the same way. Headless sheep, both pi versions,
//! driven through the parent's own pi tools.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::pi_support;

use pi_support::{Backend, Options, Shepherd, message_text, read};
use serde_json::{Value, json};
use shepherd_testkit::fake_llm::Step;
use shepherd_testkit::pi::PiBinary;

/// A pi sheep whose task has a two-turn budget is stopped after its second turn (the model
/// never gets a third request), and the task settles blocked naming the budget, in its result
/// and in its note.
fn a_two_turn_budget_stops_the_sheep(pi: &PiBinary) {
    let mut s = Shepherd::start(pi, Backend::Headless, &Options::default());
    let worker = s.spawn("worker", "busy");
    s.fake.append(
        "worker-model",
        [
            Step::tool_call("bash", json!({"command": "echo one >> turns.txt"})),
            Step::tool_call("bash", json!({"command": "echo two >> turns.txt"})),
            // Were the sheep not stopped, its third request would wait here for ever.
            Step::tool_call("bash", json!({"command": "echo three >> turns.txt"}))
                .held_until("never"),
            Step::text("not reached"),
        ],
    );
    let delegated = s.call_tool(
        "shepherd_delegate",
        json!({"target": worker, "task": "Keep appending lines to turns.txt.", "maxTurns": 2}),
    );
    let task = delegated["taskId"].as_str().unwrap().to_owned();
    let note = s.project().join(delegated["note"].as_str().unwrap());

    let watched = s.shepherd(&["watch", &task, "--wait", "90"]);
    let settled = &watched["settled"][0];
    assert_eq!(settled["status"], "blocked", "{watched}");
    assert_eq!(settled["returnCode"], 2);
    let error = settled["error"].as_str().unwrap();
    assert!(
        error.contains("budget reached: 2 of 2 turns used (budget turns = 2)"),
        "{error}"
    );
    // Close waits for the sheep's run to settle, which it does only because it was stopped.
    s.shepherd(&["close", &worker]);
    assert_eq!(
        s.requests("worker-model").len(),
        2,
        "no third model request"
    );
    assert_eq!(read(&s.project().join("turns.txt")), "one\ntwo\n");
    let text = read(&note);
    assert!(text.contains("taskStatus: blocked"), "{text}");
    assert!(text.contains(r#"budget: {"turns":2}"#), "{text}");
    assert!(text.contains("budget reached: 2 of 2 turns used"), "{text}");
}

/// A closed pi sheep is resumed on its own session: same id and name, and the model request of
/// its next task carries its earlier conversation, from which it answers. The new task's note
/// links the note it continues, and that note links the new one.
fn a_closed_sheep_resumes_with_its_context(pi: &PiBinary) {
    let mut s = Shepherd::start(pi, Backend::Headless, &Options::default());
    let worker = s.spawn("worker", "memory");
    s.fake.append(
        "worker-model",
        [
            Step::tool_call(
                "shepherd_done",
                json!({"status": "completed", "summary": "noted the code word"}),
            ),
            Step::text("Noted."),
        ],
    );
    let first = s.delegate(
        &worker,
        "Remember this code word for later: PAPAYA-7. Then call shepherd_done.",
        None,
    );
    let first_task = first["taskId"].as_str().unwrap().to_owned();
    let old_note = first["note"].as_str().unwrap().to_owned();
    let watched = s.shepherd(&["watch", &first_task, "--wait", "60"]);
    assert_eq!(watched["settled"][0]["status"], "completed", "{watched}");
    s.shepherd(&["close", &worker]);
    assert_eq!(s.shepherd(&["status", &worker])["state"], "closed");

    let resumed = s.call_tool("shepherd_resume", json!({"id": worker}));
    assert_eq!(resumed["id"], json!(worker), "{resumed}");
    assert_eq!(resumed["displayName"], "worker: memory");
    assert_eq!(resumed["resumes"], 1);

    s.fake.append(
        "worker-model",
        [
            Step::tool_call(
                "shepherd_done",
                json!({"status": "completed", "summary": "The code word is PAPAYA-7"}),
            )
            .expecting("What was the code word"),
            Step::text("It was PAPAYA-7."),
        ],
    );
    let second = s.delegate(&worker, "What was the code word I gave you earlier?", None);
    let second_task = second["taskId"].as_str().unwrap().to_owned();
    let new_note = second["note"].as_str().unwrap().to_owned();
    assert_ne!(new_note, old_note, "the next task has a note of its own");
    let watched = s.shepherd(&["watch", &second_task, "--wait", "60"]);
    assert_eq!(watched["settled"][0]["status"], "completed", "{watched}");
    s.assert_no_mismatches();

    // The question reached the model with the sheep's earlier conversation in its context.
    let requests = s.requests("worker-model");
    let asked = requests
        .iter()
        .find(|r| r.last_input_text().contains("What was the code word"))
        .expect("the question reached the model");
    let earlier: Vec<String> = asked.messages().iter().map(message_text).collect();
    assert!(
        earlier.iter().any(|m| m.contains("PAPAYA-7")),
        "the resumed sheep's request lacks its earlier task: {earlier:#?}"
    );
    let question = asked.last_input_text();
    assert!(
        question.contains("You were resumed: this task continues the work recorded in")
            && question.contains(&old_note),
        "the sheep is told which note it continues: {question}"
    );

    s.shepherd(&["close", &worker]);
    let new_text = read(&s.project().join(&new_note));
    assert!(
        new_text.contains(&format!("continues: \"{old_note}\"")),
        "{new_text}"
    );
    let old_text = read(&s.project().join(&old_note));
    assert!(
        old_text.contains(&format!("continuedIn: \"{new_note}\"")),
        "{old_text}"
    );
}

/// A pi sheep killed mid-task fails its task; resumed, it comes back on its own session and
/// still knows what it was told before it died.
fn a_crashed_sheep_resumes_on_its_session(pi: &PiBinary) {
    let mut s = Shepherd::start(pi, Backend::Headless, &Options::default());
    let worker = s.spawn("worker", "fragile");
    // One whole turn (pi 0.73 writes its session file from the first answer on), then it dies
    // waiting for the second.
    s.fake.append(
        "worker-model",
        [
            Step::tool_call("bash", json!({"command": "true"})),
            Step::tool_call("bash", json!({"command": "true"})).held_until("crash"),
        ],
    );
    let task = s.delegate(
        &worker,
        "The password is KIWI-3. Keep it in mind and wait.",
        None,
    )["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    s.wait_requests("worker-model", 2);
    let pid = s.shepherd(&["status", &worker])["pid"].as_u64().unwrap();
    let killed = std::process::Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let watched = s.shepherd(&["watch", &task, "--wait", "60"]);
    assert_eq!(watched["settled"][0]["status"], "failed", "{watched}");
    assert_eq!(watched["settled"][0]["returnCode"], 137);
    s.fake.release("crash");

    let resumed = s.shepherd(&["resume", &worker]);
    assert_eq!(resumed["agentId"], json!(worker), "{resumed}");
    assert_eq!(resumed["resumes"], 1);
    s.fake.append(
        "worker-model",
        [
            Step::tool_call(
                "shepherd_done",
                json!({"status": "completed", "summary": "The password is KIWI-3"}),
            )
            .expecting("Which password"),
            Step::text("KIWI-3."),
        ],
    );
    let next = s.delegate(&worker, "Which password did I give you?", None)["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    let watched = s.shepherd(&["watch", &next, "--wait", "60"]);
    assert_eq!(watched["settled"][0]["status"], "completed", "{watched}");
    let requests = s.requests("worker-model");
    let asked = requests
        .iter()
        .find(|r| r.last_input_text().contains("Which password"))
        .unwrap();
    assert!(
        asked
            .messages()
            .iter()
            .map(message_text)
            .any(|m| m.contains("KIWI-3")),
        "the resumed sheep's request lacks its earlier task"
    );
}

/// What a pi sheep's open task used so far is in the herd view while it runs, each turn as it
/// ends (the fake model reports 10 tokens in and 5 out per turn), with no budget set; once the
/// task settles, its run's record carries the same count, split into input and output.
fn the_herd_view_counts_an_open_tasks_tokens_turn_by_turn(pi: &PiBinary) {
    let mut s = Shepherd::start(pi, Backend::Headless, &Options::default());
    let worker = s.spawn("worker", "busy");
    s.fake.append(
        "worker-model",
        [
            Step::tool_call("bash", json!({"command": "echo one"})),
            Step::tool_call("bash", json!({"command": "echo two"})).held_until("second"),
            Step::tool_call(
                "shepherd_done",
                json!({"status": "completed", "summary": "two lines"}),
            ),
            Step::text("done"),
        ],
    );
    let delegated = s.call_tool(
        "shepherd_delegate",
        json!({"target": worker, "task": "Echo two lines, one per turn."}),
    );
    let task = delegated["taskId"].as_str().unwrap().to_owned();
    let tokens = |view: &Value| {
        view["sheep"]
            .as_array()
            .and_then(|sheep| sheep.iter().find(|s| s["agentId"] == worker.as_str()))
            .map(|s| s["usage"].clone())
            .unwrap_or(Value::Null)
    };
    let open = s.herd_until("15 tokens on the open task", |view| {
        tokens(view)["tokens"] == 15
    });
    let sheep = &open["sheep"][0];
    assert_eq!(sheep["task"]["id"], task.as_str(), "{open}");
    s.fake.release("second");
    let watched = s.shepherd(&["watch", &task, "--wait", "90"]);
    assert_eq!(watched["settled"][0]["status"], "completed", "{watched}");
    let settled = s.herd_until("the settled run's usage", |view| {
        tokens(view)["tokensIn"].as_u64().is_some_and(|n| n > 0)
    });
    let usage = tokens(&settled);
    assert_eq!(
        usage.get("tokens"),
        None,
        "no open task counts now: {usage}"
    );
    assert!(usage["tokensOut"].as_u64().unwrap() > 0, "{usage}");
    s.shepherd(&["close", &worker]);
}

shepherd_testkit::pi_tests!(
    the_herd_view_counts_an_open_tasks_tokens_turn_by_turn,
    a_two_turn_budget_stops_the_sheep,
    a_closed_sheep_resumes_with_its_context,
    a_crashed_sheep_resumes_on_its_session
);
