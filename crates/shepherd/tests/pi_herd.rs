//! End to end with the real pi: a parent pi session with our extension runs a herd of pi sheep,
//! every model scripted on the fake model server, on the headless and the tmux backends.
//!
//! Each scenario is one function of the pi version and the backend. Headless, it runs on both pi
//! versions (`pi_tests!`: how a run ends differs between them); in tmux, on the newest
//! (`pi_1_tests!`): the backend and the pi version are independent, so the pairs cover both.
//! A missing pi skips with one line, or fails with SHEPHERD_REQUIRE_PI=1.

use crate::pi_support;

use pi_support::{Backend, Options, Shepherd, read, tool_result};
use serde_json::json;
use shepherd_testkit::agents::{AgentEnv, Host, installed_or_skip};
use shepherd_testkit::fake_llm::{Script, Step};
use shepherd_testkit::pi::PiBinary;

/// a. Spawn, delegate, the worker runs bash, writes its note and calls `shepherd_done`; the
/// parent is woken by the completion and closes the worker; the fieldnotes are final.
fn worker_task(pi: &PiBinary, backend: Backend) {
    let mut s = Shepherd::start(pi, backend, &Options::default());
    let worker = s.spawn("worker", "fix");

    // The worker's first reply waits until the test knows the note path.
    s.fake.append(
        "worker-model",
        [Step::tool_call("bash", json!({"command": "true"})).held_until("note")],
    );
    let delegated = s.delegate(
        &worker,
        "Write hello to out.txt and record it in your note.",
        None,
    );
    let task = delegated["taskId"].as_str().unwrap().to_owned();
    let note_relative = delegated["note"].as_str().expect("the task has a note");
    let note = s.project().join(note_relative);
    let command = format!(
        "echo hello > out.txt && printf '\\n## Findings\\n\\nout.txt now says hello.\\n' >> '{}'",
        note.display()
    );
    s.fake.append(
        "worker-model",
        [
            Step::tool_call("bash", json!({ "command": command })),
            Step::tool_call(
                "shepherd_done",
                json!({"status": "completed", "summary": "wrote out.txt"}),
            ),
            Step::text("Final report: out.txt holds hello."),
        ],
    );
    let watched = s.watch(&[&task]);
    assert_eq!(watched["pending"], json!([task]), "{watched}");

    // The completion wakes the parent, whose model then closes the worker.
    s.parent_says([
        Step::tool_call("shepherd_close", json!({ "id": worker }))
            .expecting("shepherd_watcher completion: worker: fix completed"),
        Step::text("Closed the worker."),
    ]);
    s.fake.release("note");
    let woken = s.parent_woken();
    let closed = tool_result(&woken, "shepherd_close").expect("close succeeds");
    assert_eq!(closed["id"], json!(worker));
    s.assert_no_mismatches();

    // The completion reached the parent's model with the task's outcome and note.
    let wake = s.parent_requests_with("shepherd_watcher completion");
    let text = wake[0].last_input_text();
    assert!(text.contains(&task), "{text}");
    assert!(text.contains("wrote out.txt"), "{text}");
    assert!(text.contains(note_relative), "{text}");

    // The worker really ran bash, and its note is final with its findings and telemetry.
    assert_eq!(read(&s.project().join("out.txt")).trim(), "hello");
    let note_text = read(&note);
    assert!(note_text.contains("## Findings"), "{note_text}");
    assert!(note_text.contains("status: completed"), "{note_text}");
    assert!(
        note_text.contains("Final report: out.txt holds hello."),
        "{note_text}"
    );
    assert!(note_text.contains("worker-model"), "telemetry: {note_text}");
    let index = read(&note.parent().unwrap().join("shepherd.md"));
    let file_name = note.file_name().unwrap().to_string_lossy().into_owned();
    assert!(index.contains(&file_name), "{index}");

    // Reading a headless pi sheep shows a transcript, not pi's RPC events.
    if backend == Backend::Headless {
        let shown = s.shepherd(&["read", &worker, "--lines", "200"]);
        let transcript = shown["text"].as_str().unwrap();
        assert!(
            transcript.contains("» [Shepherd delegated task from Shepherd]"),
            "{transcript}"
        );
        assert!(transcript.contains("→ bash"), "{transcript}");
        assert!(transcript.contains("← shepherd_done: Task"), "{transcript}");
        assert!(
            transcript.contains("Final report: out.txt holds hello."),
            "{transcript}"
        );
        assert!(!transcript.contains(r#"{"type""#), "{transcript}");
    }

    // The widget showed the working sheep (walking) and was cleared once the herd went quiet.
    let shown = s.wait_ui("setWidget", |w| {
        let rows = w["widgetLines"].to_string();
        rows.contains("worker: fix") && rows.contains("🐑")
    });
    assert_eq!(shown["widgetPlacement"], "belowEditor", "{shown}");
    s.wait_ui("setWidget", |w| w["widgetLines"].is_null());
}

/// b. The original's ping-pong: a worker asks the planner (a herd-mate) a tracked question,
/// waits, gets the planner's reply relayed to it, and both tasks complete.
fn ping_pong(pi: &PiBinary, backend: Backend) {
    let options = Options {
        agents: vec![("planner", "planner-model"), ("worker", "worker-model")],
        // The planner ends a turn before the question comes; no reminder should interleave.
        settings: json!({"doneNudges": 0}),
        ..Options::default()
    };
    let mut s = Shepherd::start(pi, backend, &options);
    let planner = s.spawn("planner", "ping");
    let worker = s.spawn("worker", "pong");

    // The planner's first turn ends only once the parent is idle (that end tells the parent the
    // planner stalled, a notice that would otherwise extend a parent run). Its request that
    // carries the question is held until the test has read the question's id, which the
    // planner's reply must name.
    s.fake.append(
        "planner-model",
        [
            Step::text("Waiting for the worker's request.").held_until("planner"),
            Step::tool_call("bash", json!({"command": "true"})).held_until("reply"),
        ],
    );
    s.fake.append(
        "worker-model",
        [
            Step::tool_call(
                "shepherd_message",
                json!({"target": planner, "message": "Reply with exactly pong", "expectsReply": true}),
            ),
            Step::text("Waiting for the planner."),
            Step::tool_call(
                "shepherd_done",
                json!({"status": "completed", "summary": "Planner reply: pong"}),
            )
            .expecting("pong"),
            Step::text("Planner reply: pong"),
        ],
    );
    let planner_task = s.delegate(
        &planner,
        "Watch for one request from a herd-mate, answer it with shepherd_message and the exact replyTo, then call shepherd_done.",
        None,
    )["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    let worker_task = s.delegate(
        &worker,
        &format!(
            "Send the planner ({planner}) `Reply with exactly pong` with expectsReply true, wait for the answer, then call shepherd_done with `Planner reply: <answer>`."
        ),
        None,
    )["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    s.watch(&[&planner_task, &worker_task]);
    s.fake.release("planner");

    // The question reached the planner as a tracked request; the worker's task waits on it.
    let planner_requests = s.wait_requests("planner-model", 2);
    let question = planner_requests[1].last_input_text();
    assert!(question.contains("Reply with exactly pong"), "{question}");
    assert!(question.contains("Expects reply: yes"), "{question}");
    let question_id = question
        .lines()
        .find_map(|line| line.strip_prefix("Message ID: "))
        .expect("the question names its message id")
        .trim()
        .to_owned();
    let status = s.shepherd(&["status", &worker]);
    assert_eq!(status["task"]["state"], "waiting", "{status}");
    assert_eq!(status["task"]["waitingOn"], "planner: ping", "{status}");
    // The herd widget shows the wait too: the broker pushed it (the parent asked nothing).
    s.wait_ui("setWidget", |w| {
        let rows = w["widgetLines"].to_string();
        rows.contains("worker: pong") && rows.contains("←planner: ping") && rows.contains("waiting")
    });

    s.fake.append(
        "planner-model",
        [
            Step::tool_call(
                "shepherd_message",
                json!({"target": worker, "message": "pong", "replyTo": question_id}),
            ),
            Step::tool_call(
                "shepherd_done",
                json!({"status": "completed", "summary": "answered the worker"}),
            ),
            Step::text("Answered."),
        ],
    );
    // Two completions (together or apart) and the stall notice: at most three replies.
    s.parent_says([
        Step::text("Noted."),
        Step::text("Noted again."),
        Step::text("Noted once more."),
    ]);
    s.fake.release("reply");

    // The worker got the reply (relayed, naming the question) and both completions reached
    // the parent's model.
    let worker_requests = s.wait_requests("worker-model", 3);
    let reply = worker_requests[2].last_input_text();
    assert!(
        reply.contains(&format!("Reply to: {question_id}")),
        "{reply}"
    );
    assert!(reply.contains("pong"), "{reply}");
    s.wait_parent_input("worker: pong completed");
    s.wait_parent_input("planner: ping completed");
    let wake = s.wait_parent_input("Planner reply: pong");
    assert!(wake.contains(&worker_task), "{wake}");
    s.assert_no_mismatches();
}

/// c. A task that runs past its timeout settles timed_out (return code 124).
fn timeout(pi: &PiBinary, backend: Backend) {
    let mut s = Shepherd::start(pi, backend, &Options::default());
    let worker = s.spawn("worker", "slow");
    s.fake.append(
        "worker-model",
        [Step::text("Still thinking.").held_until("never")],
    );
    let delegated = s.delegate(&worker, "Take your time.", Some(0.1));
    let task = delegated["taskId"].as_str().unwrap().to_owned();
    let note = s.project().join(delegated["note"].as_str().unwrap());
    s.watch(&[&task]);
    s.parent_says([Step::text("Noted.")]);
    let text = s.wait_parent_input("worker: slow timed_out");
    assert!(text.contains(&task), "{text}");
    assert!(text.contains("(rc 124)"), "{text}");
    let note_text = read(&note);
    assert!(note_text.contains("taskStatus: timed_out"), "{note_text}");
}

/// d. `shepherd_close` cancels the open task (return code 130).
fn close_cancels(pi: &PiBinary, backend: Backend) {
    let mut s = Shepherd::start(pi, backend, &Options::default());
    let worker = s.spawn("worker", "busy");
    s.fake.append(
        "worker-model",
        [Step::text("Working on it.").held_until("never")],
    );
    let task = s.delegate(&worker, "Work until you are stopped.", None)["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    s.watch(&[&task]);
    // The worker is mid-run (its model request is held) when the parent closes it.
    s.wait_requests("worker-model", 1);
    // The cancellation's completion steers this run or starts the next: one reply each way.
    let records = s.parent_turn(
        "close the worker",
        vec![
            Step::tool_call("shepherd_close", json!({ "id": worker })),
            Step::text("Closed."),
            Step::text("Noted."),
        ],
    );
    let closed = tool_result(&records, "shepherd_close").expect("close succeeds");
    assert_eq!(closed["cancelled"]["taskId"], json!(task), "{closed}");
    assert_eq!(closed["cancelled"]["status"], "cancelled", "{closed}");
    assert_eq!(closed["cancelled"]["returnCode"], 130, "{closed}");
    let wake = s.wait_parent_input("worker: busy cancelled");
    assert!(wake.contains("(rc 130)"), "{wake}");
    let herd = s.shepherd(&["herd"]);
    assert_eq!(herd["sheep"], json!([]), "{herd}");
}

/// e. A sheep whose process dies fails its task, with the end of its output.
fn crash(pi: &PiBinary, backend: Backend) {
    let mut s = Shepherd::start(pi, backend, &Options::default());
    let worker = s.spawn("worker", "fragile");
    let task_id;
    {
        s.fake.append(
            "worker-model",
            [Step::tool_call(
                "bash",
                json!({"command": "echo 'about to crash'; kill -9 $PPID"}),
            )
            .held_until("crash")],
        );
        let task = s.delegate(&worker, "Crash.", None);
        task_id = task["taskId"].as_str().unwrap().to_owned();
    }
    s.watch(&[&task_id]);
    s.parent_says([Step::text("Noted.")]);
    s.fake.release("crash");
    let text = s.wait_parent_input("worker: fragile failed");
    assert!(text.contains(&task_id), "{text}");
    // Killed by SIGKILL: the task's return code is 128 + 9.
    assert!(text.contains("(rc 137)"), "{text}");
    assert!(text.contains("before the task completed"), "{text}");
    assert!(
        text.contains("last output"),
        "the failure carries the sheep's tail: {text}"
    );
    let status = s.shepherd(&["status", &worker]);
    assert_eq!(status["state"], "exited", "{status}");
}

/// g. A run that ends in a provider error (here a rejected key) fails the task at once with
/// that error, instead of leaving it to the deadline.
fn provider_error(pi: &PiBinary, backend: Backend) {
    let mut s = Shepherd::start(pi, backend, &Options::default());
    let worker = s.spawn("worker", "unlucky");
    s.fake.append(
        "worker-model",
        [Step::error(401, "invalid x-api-key").held_until("go")],
    );
    let delegated = s.delegate(&worker, "Do anything.", Some(30.0));
    let task = delegated["taskId"].as_str().unwrap().to_owned();
    let note = s.project().join(delegated["note"].as_str().unwrap());
    s.watch(&[&task]);
    s.parent_says([Step::text("Noted.")]);
    s.fake.release("go");
    let text = s.wait_parent_input("worker: unlucky failed");
    assert!(text.contains(&task), "{text}");
    assert!(text.contains("run ended with an error"), "{text}");
    assert!(text.contains("invalid x-api-key"), "{text}");
    let note_text = read(&note);
    assert!(note_text.contains("status: failed"), "{note_text}");
}

/// f. A sheep that ends its turn without `shepherd_done` is reminded once, then completes.
fn forgotten_done(pi: &PiBinary, backend: Backend) {
    let mut s = Shepherd::start(pi, backend, &Options::default());
    let worker = s.spawn("worker", "forgetful");
    s.fake.append(
        "worker-model",
        [
            Step::text("I wrote the file.").held_until("hold"),
            Step::tool_call(
                "shepherd_done",
                json!({"status": "completed", "summary": "done after the reminder"}),
            )
            .expecting("[Shepherd completion check]"),
            Step::text("Final words after the reminder."),
        ],
    );
    let task = s.delegate(&worker, "Write the file.", None)["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    s.watch(&[&task]);
    s.parent_says([Step::text("Noted.")]);
    s.fake.release("hold");
    let wake = s.wait_parent_input("worker: forgetful completed");
    assert!(wake.contains("done after the reminder"), "{wake}");
    let reminded = s.wait_requests("worker-model", 2);
    assert!(
        reminded[1]
            .last_input_text()
            .contains("[Shepherd completion check]")
    );
    s.assert_no_mismatches();
}

/// h. A message the parent sends the moment a task completes (the completion is pushed at
/// `shepherd_done`, before the sheep writes its final words) runs in the sheep's same pi run;
/// the task's note still records the task's own final words and telemetry, not the answer to
/// that message.
fn message_at_completion(pi: &PiBinary, backend: Backend) {
    let mut s = Shepherd::start(pi, backend, &Options::default());
    let worker = s.spawn("worker", "writer");
    s.fake.append(
        "worker-model",
        [
            Step::tool_call("bash", json!({"command": "echo written > child-out.txt"})),
            Step::tool_call(
                "shepherd_done",
                json!({"status": "completed", "summary": "wrote child-out.txt"}),
            ),
            Step::text("Done: wrote child-out.txt.").held_until("words"),
            // The turns that answer the parent's message, in the same run.
            Step::tool_call(
                "shepherd_message",
                json!({"target": "shepherd", "message": "pong"}),
            ),
            Step::text("Replied pong."),
        ],
    );
    let delegated = s.delegate(&worker, "Write child-out.txt.", None);
    // The parent's model is woken by the pong; it only acknowledges it.
    s.parent_says([Step::text("Noted.")]);
    let task = delegated["taskId"].as_str().unwrap().to_owned();
    let note = s.project().join(delegated["note"].as_str().unwrap());
    let settled = s.shepherd(&["watch", &task, "--wait", "60"]);
    assert_eq!(settled["settled"][0]["status"], "completed", "{settled}");
    // The worst moment: the sheep has settled its task and not written its last words yet.
    s.shepherd(&["message", &worker, "ping"]);
    s.fake.release("words");
    // Close waits for the sheep's run to settle before it ends the sheep.
    s.shepherd(&["close", &worker]);
    let text = read(&note);
    assert!(text.contains("Done: wrote child-out.txt."), "{text}");
    assert!(
        !text.contains("Replied pong."),
        "the note took the message's answer: {text}"
    );
    assert!(
        text.contains("turns: 3"),
        "the task's own three turns: {text}"
    );
    assert!(
        text.contains("toolCalls: 2"),
        "the task's own two tool calls: {text}"
    );
}

/// i. A rate limit ends the worker's turn without failing its task: the herd feed and the
/// widget show it rate-limited with its provider, the parent hears one notice (no turn of its
/// own), and after the reset the worker's next turn is told to go on and completes; the note
/// records the wait.
fn rate_limited(pi: &PiBinary, backend: Backend) {
    let mut s = Shepherd::start(pi, backend, &Options::default());
    let worker = s.spawn("worker", "patient");
    s.fake.append(
        "worker-model",
        [
            Step::error(
                429,
                "Rate limit reached for requests. Please try again in 3s.",
            )
            .held_until("go"),
            Step::tool_call(
                "shepherd_done",
                json!({"status": "completed", "summary": "done after the wait"}),
            )
            .expecting("[Shepherd rate limit]"),
            Step::text("Finished after the wait."),
        ],
    );
    let delegated = s.delegate(&worker, "Report that you are done.", Some(5.0));
    let task = delegated["taskId"].as_str().unwrap().to_owned();
    let note = s.project().join(delegated["note"].as_str().unwrap());
    s.watch(&[&task]);
    s.parent_says([Step::text("Noted.")]);
    s.fake.release("go");
    let herd = s.herd_until("the worker's task rate-limited", |herd| {
        herd["sheep"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|sheep| sheep["task"]["rateLimit"].is_object())
    });
    let limited = herd["sheep"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|sheep| sheep["task"]["rateLimit"].is_object())
        .unwrap();
    assert_eq!(limited["task"]["state"], "running", "{herd}");
    assert_eq!(
        limited["task"]["rateLimit"]["class"], "rate_limit",
        "{herd}"
    );
    s.wait_ui("setWidget", |w| {
        let rows = w["widgetLines"].to_string();
        rows.contains("worker: patient") && rows.contains("rate-limited until")
    });
    let text = s.wait_parent_input("worker: patient completed");
    assert!(text.contains(&task), "{text}");
    s.wait_parent_input("met a rate limit");
    let note_text = read(&note);
    assert!(note_text.contains("status: completed"), "{note_text}");
    assert!(note_text.contains("### Rate limits"), "{note_text}");
    s.assert_no_mismatches();
}

macro_rules! on_both_backends {
    ($($scenario:ident => $headless:ident, $tmux:ident;)+) => {
        $(
            fn $headless(pi: &PiBinary) {
                $scenario(pi, Backend::Headless);
            }

            fn $tmux(pi: &PiBinary) {
                $scenario(pi, Backend::Tmux);
            }

            shepherd_testkit::pi_tests!($headless);
            shepherd_testkit::pi_1_tests!($tmux);
        )+
    };
}

on_both_backends! {
    worker_task => a_worker_task_headless, a_worker_task_tmux;
    ping_pong => b_ping_pong_headless, b_ping_pong_tmux;
    timeout => c_timeout_headless, c_timeout_tmux;
    close_cancels => d_close_cancels_headless, d_close_cancels_tmux;
    crash => e_crash_headless, e_crash_tmux;
    forgotten_done => f_forgotten_done_headless, f_forgotten_done_tmux;
    provider_error => g_provider_error_headless, g_provider_error_tmux;
    message_at_completion => h_message_at_completion_headless, h_message_at_completion_tmux;
    rate_limited => i_rate_limited_headless, i_rate_limited_tmux;
}

/// A pi parent hands a task to a Claude Code sheep (the bundled `worker` on the `claude-code`
/// harness through `shepherd_spawn`'s `harness`): the real Claude Code runs a shell command
/// and calls `shepherd_done`, the completion wakes the parent with the sheep's summary, and
/// the note records the harness. Headless; skipped (one line) without Claude Code.
fn a_pi_parent_delegates_to_a_claude_code_sheep(pi: &PiBinary) {
    let test = "pi_herd::a_pi_parent_delegates_to_a_claude_code_sheep";
    let Some(claude) = installed_or_skip(Host::ClaudeCode, test) else {
        return;
    };
    // The user has Claude Code configured (the test kit's settings, pointed at the fake model),
    // so the broker the parent starts finds it.
    let claude_env = AgentEnv::builder_with_url(Host::ClaudeCode, "{fake}")
        .build()
        .unwrap();
    let mut env: Vec<(String, String)> = claude_env
        .vars()
        .into_iter()
        .filter(|(name, _)| {
            !["HOME", "TMPDIR", "NO_COLOR"].contains(&name.as_str()) && !name.starts_with("XDG_")
        })
        .map(|(name, value)| (name, value.to_string_lossy().into_owned()))
        .collect();
    env.push((
        Host::ClaudeCode.env_var().to_owned(),
        claude.path.display().to_string(),
    ));
    let options = Options {
        env,
        ..Options::default()
    };
    let mut s = Shepherd::start(pi, Backend::Headless, &options);
    // Claude Code may ask for a title without tools; that never takes a scripted step.
    s.fake
        .set_script(Script::new().with_toolless(Step::text("Fake title")));
    let spawned = s.call_tool(
        "shepherd_spawn",
        json!({"agent": "worker", "label": "cc", "harness": "claude-code"}),
    );
    let sheep = spawned["id"].as_str().expect("an id").to_owned();
    s.fake.append_default([
        Step::shell("printf hello > from-claude.txt"),
        Step::tool_call_suffix(
            "shepherd_done",
            json!({"status": "completed", "summary": "wrote from-claude.txt"}),
        )
        .held_until("claude"),
        Step::text("Claude Code wrote the file.").expecting("completed"),
    ]);
    let delegated = s.delegate(&sheep, "Write from-claude.txt, then report.", None);
    let task = delegated["taskId"].as_str().unwrap().to_owned();
    let note = s
        .project()
        .join(delegated["note"].as_str().expect("a note"));
    s.watch(&[&task]);
    // The settlement is held until the parent is idle, so that it starts a run of its own.
    s.parent_says([Step::text("Noted.")]);
    s.fake.release("claude");
    s.parent_woken();
    let told = s.wait_parent_input("worker: cc completed");
    assert!(told.contains("wrote from-claude.txt"), "{told}");
    assert_eq!(read(&s.project().join("from-claude.txt")), "hello");

    let closed = s.call_tool("shepherd_close", json!({ "id": sheep }));
    assert_eq!(closed["id"], json!(sheep), "{closed}");
    let note_text = read(&note);
    assert!(note_text.contains("harness: claude-code"), "{note_text}");
    assert!(note_text.contains("status: completed"), "{note_text}");
    assert!(
        note_text.contains("Claude Code wrote the file."),
        "final words: {note_text}"
    );
    s.assert_no_mismatches();
}

shepherd_testkit::pi_tests!(a_pi_parent_delegates_to_a_claude_code_sheep);
