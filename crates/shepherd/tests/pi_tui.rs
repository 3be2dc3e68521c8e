//! What a person sees of Shepherd in pi's own terminal UI, read from a real tmux pane: the tool
//! rows (calls with display names instead of ids, `✓ spawned`, `✓ delegated`, `watching…`), and,
//! after Ctrl+O, the expanded `call` / `return` sections and the structured completion
//! notification. The parent's model is scripted; the sheep is a headless pi.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

mod pi_support;

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

shepherd_testkit::pi_tests!(rows_and_expanded_views);
