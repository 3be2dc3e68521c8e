//! What a person sees of Shepherd in pi's own terminal UI, read from a real tmux pane: the tool
//! rows (calls with display names instead of ids, `✓ spawned`, `✓ delegated`, `watching…`,
//! `✗ failed · <error>`), and, after Ctrl+O, the expanded `call` / `return` sections and the
//! structured notifications: a completion, a sheep's message and question, its reply, and a
//! stale wait. The parent's model is scripted; the sheep is a headless pi.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::pi_support;

use std::path::Path;

use pi_support::{Backend, Options, PARENT_MODEL, Shepherd, TURN};
use serde_json::{Value, json};
use shepherd_testkit::agents::TmuxPane;
use shepherd_testkit::fake_llm::Step;
use shepherd_testkit::pi::PiBinary;

/// The pane's size: tall enough that the whole conversation, expanded, stays on screen.
const WIDTH: u16 = 160;
const HEIGHT: u16 = 200;

/// The id in the header of the one session file under `dir`.
fn session_id(dir: &Path) -> Option<String> {
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if let Some(id) = session_id(&path) {
                return Some(id);
            }
        } else if path.extension().is_some_and(|e| e == "jsonl") {
            let text = std::fs::read_to_string(&path).ok()?;
            let header: Value = serde_json::from_str(text.lines().next()?).ok()?;
            return header["id"].as_str().map(str::to_owned);
        }
    }
    None
}

/// Types a prompt into pi's editor and submits it.
fn say(pane: &TmuxPane, prompt: &str) {
    pane.type_text(prompt).unwrap();
    pane.press(&["Enter"]).unwrap();
}

/// Waits until the screen shows all of `texts` at once (a redraw in progress may not).
fn wait(pane: &TmuxPane, texts: &[&str]) -> String {
    pane.wait_for_all(texts, TURN)
        .unwrap_or_else(|err| panic!("waiting for {texts:?}: {err}"))
}

/// The screen line that contains `needle`.
fn line_with<'s>(screen: &'s str, needle: &str) -> &'s str {
    screen
        .lines()
        .find(|line| line.contains(needle))
        .unwrap_or_else(|| panic!("no line with {needle:?} in:\n{screen}"))
}

fn rows_and_expanded_views(pi: &PiBinary) {
    let mut s = Shepherd::prepare(pi, Backend::Headless, &Options::default());
    let pane = TmuxPane::start(&s.tui_launch(), WIDTH, HEIGHT).expect("tmux starts pi");
    wait(&pane, &[PARENT_MODEL]);

    s.parent_says([
        Step::tool_call(
            "shepherd_spawn",
            json!({"agent": "worker", "label": "scout"}),
        ),
        Step::text("Spawned the scout."),
    ]);
    say(&pane, "Spawn a scout.");
    wait(
        &pane,
        &[
            "shepherd_spawn worker · scout",
            "✓ spawned",
            "Spawned the scout.",
        ],
    );

    s.session_id = session_id(&s.env.sessions_dir()).expect("the parent's session file");
    let herd = s.shepherd(&["herd"]);
    let id = herd["sheep"][0]["agentId"]
        .as_str()
        .unwrap_or_else(|| panic!("one sheep in {herd}"))
        .to_owned();

    s.fake.append(
        "worker-model",
        [
            Step::tool_call(
                "shepherd_done",
                json!({"status": "completed", "summary": "said done"}),
            )
            .held_until("finish"),
            Step::text("Done: said done."),
        ],
    );
    s.parent_says([
        Step::tool_call(
            "shepherd_delegate",
            json!({"target": id, "task": "Say done.\nStatus: pending is part of the task."}),
        ),
        Step::text("Delegated to the scout."),
    ]);
    say(&pane, "Delegate.");
    let screen = wait(&pane, &["✓ delegated", "Delegated to the scout."]);
    let row = line_with(&screen, "shepherd_delegate");
    assert!(
        row.contains("shepherd_delegate worker: scout · Say done."),
        "{row}"
    );
    assert!(
        !row.contains(&id),
        "the row names the sheep, not its id: {row}"
    );

    let status = s.shepherd(&["status", &id]);
    let task = status["task"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("a task in {status}"))
        .to_owned();
    s.parent_says([
        Step::tool_call("shepherd_watch", json!({"id": [task]})),
        Step::text("Watching the task."),
    ]);
    say(&pane, "Watch it.");
    let watch_row = format!("shepherd_watch {task}");
    wait(&pane, &[&watch_row, "watching…", "Watching the task."]);

    s.parent_says([Step::text("The scout finished.")]);
    s.fake.release("finish");
    wait(
        &pane,
        &[
            "shepherd_watcher completion: worker: scout completed",
            "The scout finished.",
        ],
    );

    pane.press(&["C-o"]).unwrap();
    let screen = pane
        .wait_for_all(
            &[
                "status: spawned",
                "status: delegated",
                "status: watching…",
                "Shepherd watcher",
                "completions:",
                "status: completed",
                "The scout finished.",
            ],
            TURN,
        )
        .unwrap_or_else(|err| panic!("the expanded views: {err}"));
    // The task is a raw block: its lines as written, the second not read as a field.
    let lines: Vec<&str> = screen.lines().map(str::trim).collect();
    let task_at = lines
        .iter()
        .position(|line| *line == "task:")
        .unwrap_or_else(|| panic!("a task: block in:\n{screen}"));
    assert_eq!(lines[task_at + 1], "Say done.", "{screen}");
    assert_eq!(
        lines[task_at + 2],
        "Status: pending is part of the task.",
        "{screen}"
    );
    assert!(screen.contains("target: "), "the call section: {screen}");
}

/// A failed call's row, and the notifications a sheep's words become: a plain message, a
/// question, a stale wait on that question (a minute without an answer) and a reply, each as a
/// title and its body, and expanded into its fields.
fn failures_messages_replies_and_stale_waits(pi: &PiBinary) {
    let options = Options {
        settings: json!({"staleWaitThreshold": 1}),
        ..Options::default()
    };
    let mut s = Shepherd::prepare(pi, Backend::Headless, &options);
    let pane = TmuxPane::start(&s.tui_launch(), WIDTH, 300).expect("tmux starts pi");
    wait(&pane, &[PARENT_MODEL]);

    s.parent_says([
        Step::tool_call(
            "shepherd_delegate",
            json!({"target": "shepherd-agent-nope", "task": "Anything."}),
        ),
        Step::text("That failed."),
    ]);
    say(&pane, "Delegate to nobody.");
    let screen = wait(&pane, &["✗ failed · ", "That failed."]);
    let row = line_with(&screen, "✗ failed · ");
    assert!(
        row.contains("shepherd-agent-nope"),
        "the error is on the row: {row}"
    );

    s.parent_says([
        Step::tool_call(
            "shepherd_spawn",
            json!({"agent": "worker", "label": "asker"}),
        ),
        Step::text("Spawned the asker."),
    ]);
    say(&pane, "Spawn an asker.");
    wait(&pane, &["✓ spawned", "Spawned the asker."]);
    s.session_id = session_id(&s.env.sessions_dir()).expect("the parent's session file");
    let id = s.shepherd(&["herd"])["sheep"][0]["agentId"]
        .as_str()
        .expect("one sheep")
        .to_owned();

    // The sheep tells, then asks and waits; a reply to it gets an answer in return.
    s.fake.append(
        "worker-model",
        [
            Step::tool_call(
                "shepherd_message",
                json!({"target": "shepherd", "message": "Halfway through the notes."}),
            ),
            Step::tool_call(
                "shepherd_message",
                json!({"target": "shepherd", "message": "Which database should I use?", "expectsReply": true}),
            ),
            Step::text("Waiting for the answer."),
            Step::tool_call(
                "shepherd_message",
                json!({"target": "shepherd", "message": "Found two bugs with staging.", "replyTo": "PARENT_MESSAGE"}),
            )
            .filling("PARENT_MESSAGE", "shepherd-message-"),
            Step::text("Answered."),
        ],
    );
    s.parent_says([
        Step::tool_call(
            "shepherd_delegate",
            json!({"target": id, "task": "Read the notes."}),
        ),
        Step::text("Delegated the notes."),
        // Woken by the question.
        Step::text("I will answer later."),
    ]);
    say(&pane, "Delegate the notes.");
    wait(
        &pane,
        &[
            "Shepherd message from worker: asker",
            "Halfway through the notes.",
            "Which database should I use?",
            "Shepherd message from worker: asker · expects a reply",
            "I will answer later.",
        ],
    );
    // A minute without an answer: the stale-wait reminder.
    let stale = pane
        .wait_for(
            "Shepherd stale wait: worker: asker has waited",
            TURN + std::time::Duration::from_secs(60),
        )
        .unwrap_or_else(|err| panic!("the stale wait: {err}"));
    assert!(
        stale.contains("Question: Which database should I use?"),
        "{stale}"
    );

    let status = s.shepherd(&["status", &id]);
    let question = status["task"]["pendingRequest"]
        .as_str()
        .unwrap_or_else(|| panic!("a pending request in {status}"))
        .to_owned();
    let task = status["task"]["id"].as_str().unwrap().to_owned();
    s.parent_says([
        Step::tool_call(
            "shepherd_message",
            json!({"target": id, "message": "Use staging.", "replyTo": question, "taskId": task}),
        ),
        Step::text("Answered the asker."),
        // Woken by the sheep's reply.
        Step::text("Two bugs, noted."),
    ]);
    say(&pane, "Answer it.");
    wait(
        &pane,
        &[
            "Shepherd reply from worker: asker",
            "Found two bugs with staging.",
            "Two bugs, noted.",
        ],
    );

    pane.press(&["C-o"]).unwrap();
    let screen = pane
        .wait_for_all(
            &[
                "Shepherd stale wait",
                "waiting: worker: asker for 1 min (stale after 1 min)",
                "pending request: ",
                "actions:",
                "message:",
                "expects reply: yes",
                "reply to: ",
                "Two bugs, noted.",
            ],
            TURN,
        )
        .unwrap_or_else(|err| panic!("the expanded notifications: {err}"));
    // Each message is a raw block under `message:`.
    let lines: Vec<&str> = screen.lines().map(str::trim).collect();
    for said in [
        "Halfway through the notes.",
        "Which database should I use?",
        "Found two bugs with staging.",
    ] {
        let at = lines
            .iter()
            .position(|line| *line == said)
            .unwrap_or_else(|| panic!("{said:?} on a line of its own in:\n{screen}"));
        assert_eq!(lines[at - 1], "message:", "{screen}");
    }
    assert!(
        screen.contains(&format!(
            "pending request: {question} (waiting on Shepherd)"
        )) || screen.contains(&format!("pending request: {question}")),
        "{screen}"
    );
}

/// `/shepherd` opens the settings inline, as a list of every setting: typing searches it, Enter
/// moves the selected row to its next value and saves it, Esc closes the list.
fn settings_list(pi: &PiBinary) {
    let s = Shepherd::prepare(pi, Backend::Headless, &Options::default());
    let pane = TmuxPane::start(&s.tui_launch(), WIDTH, 60).expect("tmux starts pi");
    wait(&pane, &[PARENT_MODEL]);
    pane.type_text("/shepherd").unwrap();
    pane.press(&["Escape"]).unwrap();
    pane.press(&["Enter"]).unwrap();
    let screen = wait(
        &pane,
        &[
            "Shepherd settings (saving to the user file)",
            "Settings scope",
            "Default run timeout",
            "Type to search",
        ],
    );
    assert!(
        line_with(&screen, "Settings scope").contains("user"),
        "{screen}"
    );
    pane.type_text("remote").unwrap();
    let found = pane
        .wait_until("the search down to one row", TURN, |screen| {
            screen.contains("Remote host unreachable for")
                && !screen.contains("Default run timeout")
        })
        .unwrap_or_else(|err| panic!("searching the settings: {err}"));
    assert!(
        line_with(&found, "Remote host unreachable for").contains("10 min"),
        "{found}"
    );
    assert!(
        found.contains("remoteLinkTimeoutMinutes"),
        "the key of the selected row: {found}"
    );
    pane.press(&["Enter"]).unwrap();
    let saved = wait(
        &pane,
        &["Saved Remote host unreachable for: 30 min (user file)."],
    );
    assert!(
        line_with(&saved, "Remote host unreachable for:").contains("30 min"),
        "{saved}"
    );
    pane.press(&["Escape"]).unwrap();
    pane.wait_until("the list closed", TURN, |screen| {
        !screen.contains("Shepherd settings (saving")
    })
    .unwrap_or_else(|err| panic!("closing the settings: {err}"));
    let doc = s.shepherd_project(&["settings"]);
    assert_eq!(doc["settings"]["remoteLinkTimeoutMinutes"], 30, "{doc}");
    assert_eq!(doc["sources"]["remoteLinkTimeoutMinutes"], "user", "{doc}");
}

// How pi draws the widget and the rows differs between the versions; the failures, replies and
// stale waits are Shepherd's own and wait a real minute, so they run on the newest pi only.
shepherd_testkit::pi_tests!(rows_and_expanded_views, settings_list);
shepherd_testkit::pi_1_tests!(failures_messages_replies_and_stale_waits);
