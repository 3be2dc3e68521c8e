//! Messages, tracked questions, peer replies, done re-anchoring and forgotten-done reminders,
//! through the real binary with scripted test sheep.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::herd_support;

use herd_support::{World, read};
use serde_json::Value;

fn task_of(value: &Value) -> String {
    value["taskId"].as_str().unwrap().to_owned()
}

/// The parent's inbox items (acknowledged as they are read).
fn parent_inbox(world: &World, wait: &str) -> Vec<Value> {
    let (_, doc) = world.json_status(&["inbox", "--wait", wait]);
    doc["items"].as_array().cloned().unwrap_or_default()
}

/// Reads the parent's inbox until `enough` holds for what arrived, for at most 30 s.
fn parent_items_until(world: &World, enough: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let mut items = Vec::new();
    while !enough(&items) {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        assert!(
            !left.is_zero(),
            "expected items did not arrive; got {items:?}"
        );
        items.extend(parent_inbox(world, &format!("{:.3}", left.as_secs_f64())));
    }
    items
}

#[test]
fn ping_pong_between_peers_completes_both_tasks() {
    let world = World::new();
    world.define_test_sheep(
        "planner",
        "answer pong; done completed answered the worker",
        None,
    );
    world.define_test_sheep(
        "worker",
        "ask {task} Reply with exactly pong; done completed Planner reply: {reply}",
        None,
    );
    let planner = world.spawn("planner", "ping");
    let worker = world.spawn("worker", "pong");
    let planner_task = task_of(&world.delegate(&planner, "Watch for one request and reply to it."));
    let worker_task = task_of(&world.delegate(&worker, &planner));
    let watched = world.json(&["watch", &worker_task, &planner_task, "--wait", "30"]);
    let settled = watched["settled"].as_array().unwrap();
    assert_eq!(settled.len(), 2);
    assert_eq!(
        settled[0]["taskId"],
        worker_task.as_str(),
        "results come in the caller's order"
    );
    assert_eq!(settled[0]["summary"], "Planner reply: pong");
    assert_eq!(settled[1]["summary"], "answered the worker");
}

#[test]
fn a_parent_question_holds_the_task_waiting_until_answered() {
    let world = World::new();
    world.define_test_sheep(
        "asker",
        "ask shepherd Which file should I edit?; done completed edited {reply}",
        None,
    );
    let agent = world.spawn("asker", "");
    let task = task_of(&world.delegate(&agent, "edit something"));
    let items = parent_items_until(&world, |items| {
        items.iter().any(|i| i["expectsReply"] == true)
    });
    let question = items.iter().find(|i| i["expectsReply"] == true).unwrap();
    assert_eq!(question["content"], "Which file should I edit?");
    assert_eq!(question["taskId"], task.as_str());
    let status = world.json(&["status", &agent]);
    assert_eq!(status["task"]["state"], "waiting");
    assert_eq!(status["task"]["waitingOn"], "shepherd");
    let answer = world.json(&[
        "message",
        &agent,
        "main.rs",
        "--reply-to",
        question["messageId"].as_str().unwrap(),
    ]);
    assert_eq!(answer["targetTaskState"], "running");
    let watched = world.json(&["watch", &task, "--wait", "30"]);
    assert_eq!(watched["settled"][0]["summary"], "edited main.rs");
}

#[test]
fn a_tracked_question_to_a_sheep_makes_its_task_wait_for_the_reply() {
    let world = World::new();
    world.define_test_sheep("helper", "idle", Some("fine, thanks"));
    let agent = world.spawn("helper", "");
    let task = task_of(&world.delegate(&agent, "stand by"));
    let sent = world.json(&[
        "message",
        &agent,
        "How is it going?",
        "--task",
        &task,
        "--expects-reply",
    ]);
    assert_eq!(sent["requestId"], sent["messageId"]);
    let items = parent_items_until(&world, |items| items.iter().any(|i| i["kind"] == "reply"));
    let reply = items.iter().find(|i| i["kind"] == "reply").unwrap();
    assert_eq!(reply["content"], "fine, thanks");
    assert_eq!(reply["replyTo"], sent["messageId"]);
    assert_eq!(world.json(&["status", &agent])["task"]["state"], "running");
    // A plain message never creates a task or a note.
    let plain = world.json(&["message", &agent, "just so you know"]);
    assert!(plain.get("requestId").is_none());
    let sessions = world.project.join(".shepherd/sessions");
    let notes: Vec<_> = std::fs::read_dir(&sessions)
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_dir() && !e.file_name().to_string_lossy().starts_with('.'))
        .flat_map(|dir| std::fs::read_dir(dir.path()).unwrap().flatten())
        .filter(|f| {
            f.file_name().to_string_lossy().ends_with(".md")
                && f.file_name() != "shepherd.md"
                && f.file_name() != "shepherds-note.md"
        })
        .collect();
    assert_eq!(
        notes.len(),
        1,
        "one note for the one task, none for messages"
    );
}

#[test]
fn a_forgotten_done_is_reminded_once_then_completes() {
    let world = World::new();
    world.define_test_sheep("forgetful", "forget; done completed remembered", None);
    let agent = world.spawn("forgetful", "");
    let task = task_of(&world.delegate(&agent, "do it"));
    let watched = world.json(&["watch", &task, "--wait", "30"]);
    assert_eq!(watched["settled"][0]["summary"], "remembered");
}

#[test]
fn with_no_reminders_left_the_parent_is_told_once() {
    let world = World::new();
    world.settings(r#"{"doneNudges": 0}"#);
    world.define("quiet", &[
        "sh".into(),
        "-c".into(),
        "shepherd inbox --wait 30 >/dev/null; shepherd report run_settled --stop-reason stop; shepherd report run_settled --stop-reason stop; sleep 30".into(),
    ]);
    let agent = world.spawn("quiet", "");
    let task = task_of(&world.delegate(&agent, "do it"));
    let is_stall = |i: &Value| i["notice"] == "completion_stalled";
    let items = parent_items_until(&world, |items| items.iter().any(is_stall));
    let stalled: Vec<_> = items.iter().filter(|i| is_stall(i)).collect();
    assert_eq!(stalled.len(), 1);
    assert_eq!(stalled[0]["taskId"], task.as_str());
    assert_eq!(
        world.json(&["status", &agent])["task"]["state"],
        "running",
        "a reminder never settles"
    );
}

#[test]
fn done_naming_the_wrong_task_settles_the_senders_own_task() {
    let world = World::new();
    let again = world.dir.path().join("again.json");
    let script = format!(
        "shepherd inbox --wait 30 >/dev/null; shepherd done --status completed --summary mine --task shepherd-task-00000000-0000; \
         shepherd done --status completed --summary again --json > {}; shepherd tell shepherd finished; sleep 30",
        again.display()
    );
    world.define("mislabel", &["sh".into(), "-c".into(), script]);
    let agent = world.spawn("mislabel", "");
    let task = task_of(&world.delegate(&agent, "go"));
    let watched = world.json(&["watch", &task, "--wait", "30"]);
    assert_eq!(watched["settled"][0]["summary"], "mine");
    let items = parent_items_until(&world, |items| {
        items.iter().any(|i| i["content"] == "finished")
    });
    let notices: Vec<&str> = items.iter().filter_map(|i| i["notice"].as_str()).collect();
    // The plain second done names the task `inbox` delivered, which has settled: it changes
    // nothing and says so, and the parent hears of no dropped completion.
    assert_eq!(notices, ["task_done_mismatch"]);
    let again: Value = serde_json::from_str(&read(&again)).unwrap();
    assert_eq!(again["duplicate"], true, "{again}");
    assert_eq!(again["taskId"], task.as_str());
    assert_eq!(
        world.json(&["watch", &task])["settled"][0]["summary"],
        "mine",
        "the first result stands"
    );
}

#[test]
fn a_done_with_no_task_delivered_is_dropped_and_the_parent_told() {
    let world = World::new();
    let script = "shepherd done --status completed --summary nothing 2>/dev/null; shepherd tell shepherd finished; sleep 30";
    world.define("eager", &["sh".into(), "-c".into(), script.into()]);
    world.spawn("eager", "");
    let items = parent_items_until(&world, |items| {
        items.iter().any(|i| i["content"] == "finished")
    });
    let notices: Vec<&str> = items.iter().filter_map(|i| i["notice"].as_str()).collect();
    assert_eq!(notices, ["task_done_dropped"]);
}

#[test]
fn late_messages_after_settlement_are_delivered_and_change_nothing() {
    let world = World::new();
    world.define_test_sheep(
        "chatty",
        "done completed finished; tell shepherd one more thing",
        None,
    );
    let agent = world.spawn("chatty", "");
    let task = task_of(&world.delegate(&agent, "go"));
    world.json(&["watch", &task, "--wait", "30"]);
    let items = parent_items_until(&world, |items| {
        items.iter().any(|i| i["content"] == "one more thing")
    });
    let late = items
        .iter()
        .find(|i| i["content"] == "one more thing")
        .unwrap();
    assert_eq!(late["taskId"], task.as_str());
    let again = world.json(&["watch", &task]);
    assert_eq!(again["settled"][0]["summary"], "finished");
}

/// A message asked to steer a sheep that cannot be steered mid-turn (a command sheep here) goes
/// as a follow-up, and the answer says so, in `--json` and in words.
#[test]
fn a_steer_to_a_sheep_that_cannot_be_steered_says_it_went_as_a_follow_up() {
    let world = World::new();
    world.define_test_sheep("worker", "idle", None);
    let worker = world.spawn("worker", "shell");
    let sent = world.json(&["message", &worker, "Look at this now.", "--steer"]);
    assert_eq!(sent["delivery"], "followUp", "{sent}");
    let why = sent["deliveryChanged"].as_str().unwrap_or_default();
    assert_eq!(
        why,
        "worker: shell is a command sheep, which cannot be steered: the message waits in its \
         inbox as a follow-up, for the next time it reads it.",
        "{sent}"
    );
    let output = world.run(&["message", &worker, "And this.", "--steer"]);
    let said = String::from_utf8_lossy(&output.stdout);
    assert!(said.contains(why), "{said}");
    // Asked as a follow-up, nothing is said.
    let plain = world.json(&["message", &worker, "Later."]);
    assert_eq!(plain["delivery"], "followUp", "{plain}");
    assert!(plain.get("deliveryChanged").is_none(), "{plain}");
}
