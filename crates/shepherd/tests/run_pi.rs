//! `shepherd run` with real pi sheep on a scripted fake model: a single run whose result is the
//! sheep's final words, and a two-step chain whose second step is handed the first step's final
//! words as `{previous}`. Each test runs on the newest pi and is skipped with one line when it is
//! not installed.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::herd_support;

use std::path::Path;

use herd_support::{World, read};
use serde_json::{Value, json};
use shepherd_testkit::fake_llm::{FakeLlm, Script, Step};
use shepherd_testkit::pi::{PiBinary, PiEnv};

const MODEL: &str = "sheep-model";

/// One sheep turn: run `bash`, settle the task with `shepherd_done`, then say `final_words`.
fn sheep_turn(summary: &str, final_words: &str) -> Vec<Step> {
    vec![
        Step::tool_call("bash", json!({"command": "echo checked"})),
        Step::tool_call(
            "shepherd_done",
            json!({"status": "completed", "summary": summary}),
        ),
        Step::text(final_words),
    ]
}

/// A world whose user agent `sheep` is a pi agent on the fake model, with pi's own files
/// (models, settings) in the world's pi agent directory.
fn pi_world(pi: &PiBinary, script: Script) -> (World, FakeLlm, PiEnv) {
    pi_herd_world(pi, script, &[("sheep", MODEL)])
}

/// A world whose user agents are pi agents on the fake model, each `(name, model)` on its own
/// model id (so the fake scripts each one apart), all through one provider and key.
pub(crate) fn pi_herd_world(
    pi: &PiBinary,
    script: Script,
    agents: &[(&str, &str)],
) -> (World, FakeLlm, PiEnv) {
    let fake = FakeLlm::start(script).expect("fake model server");
    let env = agents
        .iter()
        .fold(PiEnv::builder(&fake), |env, (_, model)| env.model(model))
        .build()
        .expect("pi environment");
    let mut world = World::new();
    let agent_dir = world.home.join(".pi/agent");
    std::fs::create_dir_all(agent_dir.join("agents")).unwrap();
    for file in ["models.json", "settings.json"] {
        std::fs::copy(env.agent_dir().join(file), agent_dir.join(file)).unwrap();
    }
    for (name, model) in agents {
        std::fs::write(
            agent_dir.join(format!("agents/{name}.md")),
            format!(
                "---\nname: {name}\ndescription: A pi sheep on a scripted model.\nmodel: fake/{model}\ntools: read, bash\n---\nYou are a test sheep.\n"
            ),
        )
        .unwrap();
    }
    world.extra_env.extend([
        (
            "PI_CODING_AGENT_DIR".to_owned(),
            agent_dir.display().to_string(),
        ),
        ("PI_OFFLINE".to_owned(), "1".to_owned()),
        ("NO_COLOR".to_owned(), "1".to_owned()),
        ("SHEPHERD_PI".to_owned(), pi.path.display().to_string()),
    ]);
    (world, fake, env)
}

/// A completed result: the sheep's final words, then its done summary (labelled), as for every
/// kind of sheep.
fn assert_completed(result: &Value, text: &str, summary: &str) {
    assert_eq!(result["status"], "completed", "{result}");
    assert_eq!(result["returnCode"], 0);
    assert_eq!(
        result["text"],
        format!("{text}\n\nSummary: {summary}"),
        "the result is the sheep's final words and its summary"
    );
    let note = read(Path::new(result["note"].as_str().unwrap()));
    assert!(note.contains("status: completed"), "{note}");
    assert!(
        note.contains(text),
        "the note holds the final words: {note}"
    );
}

fn single_run(pi: &PiBinary) {
    let script = Script::new().with_queue(MODEL, sheep_turn("checked it", "All checked: 1 file."));
    let (world, fake, _env) = pi_world(pi, script);
    let (code, doc) = world.json_status(&["run", "sheep", "check the file", "--timeout", "2"]);
    assert_eq!(code, 0, "{doc}");
    assert_completed(&doc["results"][0], "All checked: 1 file.", "checked it");
    assert!(fake.mismatches().is_empty(), "{:?}", fake.mismatches());
}

fn two_step_chain(pi: &PiBinary) {
    let mut second = sheep_turn("reviewed", "Review done.");
    second[0] = second[0]
        .clone()
        .expecting("review: Step one found 3 issues.\n\nSummary: found issues");
    let script = Script::new().with_queue(
        MODEL,
        sheep_turn("found issues", "Step one found 3 issues.")
            .into_iter()
            .chain(second),
    );
    let (world, fake, _env) = pi_world(pi, script);
    let (code, doc) = world.json_status(&[
        "run",
        "--chain",
        "sheep=find the issues",
        "sheep=review: {previous}",
        "--session-name",
        "pi-chain",
        "--timeout",
        "2",
    ]);
    assert_eq!(code, 0, "{doc}");
    assert_completed(
        &doc["results"][0],
        "Step one found 3 issues.",
        "found issues",
    );
    assert_completed(&doc["results"][1], "Review done.", "reviewed");
    assert!(
        fake.mismatches().is_empty(),
        "the second sheep was handed the first one's final words and summary: {:?}",
        fake.mismatches()
    );
    let index = read(&Path::new(doc["sessionPath"].as_str().unwrap()).join("shepherd.md"));
    assert!(
        index.contains("[sheep-01](./sheep-01.md) → [sheep-02](./sheep-02.md)"),
        "{index}"
    );
}

shepherd_testkit::pi_1_tests!(single_run, two_step_chain);
