//! Shell scripts as sheep, the way the README shows them: the README's own `echo` definition,
//! taken from the README text, answers a task with its text; `inbox` prints texts a script can
//! use (a task without its context block, messages as written, NUL-separated on request) and
//! one JSON document with `--json`; `shepherd note` names the task's note.

use crate::herd_support;

use std::time::{Duration, Instant};

use herd_support::{World, read, release};
use serde_json::Value;

/// The definition the README gives for "a sheep in a dozen lines of shell".
fn readme_echo_definition() -> String {
    let readme = read(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md"));
    let after = readme
        .split_once("A sheep in a dozen lines of shell")
        .expect("the README shows a shell sheep")
        .1;
    let block = after
        .split_once("```markdown\n")
        .and_then(|(_, rest)| rest.split_once("```"))
        .expect("a markdown block follows")
        .0;
    assert!(block.contains("name: echo"), "{block}");
    block.to_owned()
}

fn settled(world: &World, task: &str) -> Value {
    let watched = world.json(&["watch", task, "--wait", "30"]);
    watched["settled"][0].clone()
}

#[test]
fn the_readme_shell_sheep_works_as_written() {
    let world = World::new();
    world.define_file("echo", &readme_echo_definition());
    let agent = world.spawn("echo", "");
    for words in ["hello there", "a second task"] {
        let task = world.delegate(&agent, words)["taskId"]
            .as_str()
            .unwrap()
            .to_owned();
        let done = settled(&world, &task);
        assert_eq!(done["status"], "completed", "{done}");
        assert_eq!(done["summary"], format!("you said: {words}"), "{done}");
    }
}

/// The parent's inbox, read until a message from a sheep starts with `prefix` (30 s at most);
/// returns the rest of that message.
fn sheep_says(world: &World, prefix: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(!left.is_zero(), "no message starting {prefix:?} came");
        let (_, doc) =
            world.json_status(&["inbox", "--wait", &format!("{:.3}", left.as_secs_f64())]);
        for item in doc["items"].as_array().into_iter().flatten() {
            if let Some(rest) = item["content"]
                .as_str()
                .and_then(|c| c.strip_prefix(prefix))
            {
                return rest.to_owned();
            }
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn inbox_prints_texts_nul_separated_or_one_json_document_and_note_names_the_note() {
    let world = World::new();
    let messages_sent = world.fifo("messages-sent");
    let third_sent = world.fifo("third-sent");
    // The sheep prints its task, then (once both are queued) two messages NUL-separated, then
    // (once it is queued) a third as JSON, and says in hex what each printed.
    let script = format!(
        r#"hex() {{ od -An -tx1 | tr -d ' \n'; }}
task=$(shepherd inbox --wait 30 --null | hex)
shepherd done --status completed --summary "$task|$(shepherd note)|$(shepherd note --relative)"
read _ < {messages_sent}
shepherd tell shepherd "messages:$(shepherd inbox --wait 30 --null | hex)"
read _ < {third_sent}
shepherd tell shepherd "json:$(shepherd inbox --wait 30 --json)"
sleep 60"#,
        messages_sent = messages_sent.display(),
        third_sent = third_sent.display(),
    );
    world.define("scripted", &["sh".into(), "-c".into(), script]);
    let agent = world.spawn("scripted", "");

    // A task whose text quotes the context block's heading: only the real block is cut off.
    let task_text = "Line one.\n\nShepherd session context:\n- quoted, not a block";
    let task = world.delegate(&agent, task_text)["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    let done = settled(&world, &task);
    assert_eq!(done["status"], "completed", "{done}");
    let summary = done["summary"].as_str().unwrap();
    let parts: Vec<&str> = summary.split('|').collect();
    assert_eq!(parts.len(), 3, "{summary}");
    assert_eq!(
        parts[0],
        hex(format!("{task_text}\0").as_bytes()),
        "{summary}"
    );
    assert_eq!(parts[1], done["note"].as_str().unwrap(), "{done}");
    assert!(std::path::Path::new(parts[1]).is_file(), "{summary}");
    assert!(
        parts[2].starts_with(".shepherd/sessions/") && parts[1].ends_with(parts[2]),
        "{summary}"
    );

    world.json(&["message", &agent, "first\nmessage"]);
    world.json(&["message", &agent, "second"]);
    release(&messages_sent);
    assert_eq!(
        sheep_says(&world, "messages:"),
        hex(b"first\nmessage\0second\0")
    );

    world.json(&["message", &agent, "third"]);
    release(&third_sent);
    let doc: Value = serde_json::from_str(&sheep_says(&world, "json:")).expect("one document");
    let items = doc["items"].as_array().expect("items");
    assert_eq!(items.len(), 1, "{doc}");
    assert_eq!(items[0]["kind"], "message", "{doc}");
    assert_eq!(items[0]["content"], "third", "{doc}");
    assert!(items[0]["messageId"].is_string(), "{doc}");
}

#[test]
fn note_without_a_task_says_why() {
    let world = World::new();
    let script = "shepherd note 2> /dev/stdout | { read -r line; shepherd tell shepherd \"said:$line\"; }; sleep 60";
    world.define("early", &["sh".into(), "-c".into(), script.into()]);
    world.spawn("early", "");
    let said = sheep_says(&world, "said:");
    assert!(said.contains("has not printed a task"), "{said}");
}
