//! A limit that lasts, with real agents: a Codex sheep whose provider says its usage limit
//! resets two hours ahead hands its task to a fresh Claude Code sheep, the `fallback:` its
//! definition names, instead of waiting. The run completes on the fallback, the session holds
//! both notes, the first linking the second, the session reads completed, and nothing is left
//! running.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::harness_support;

use harness_support::{World, field, scripted};
use serde_json::json;
use shepherd_testkit::agents::{AgentEnv, Host, installed_or_skip};
use shepherd_testkit::fake_llm::{FakeLlm, Limits, Step, UsageLimit};
use std::time::Duration;

/// The note files of a session directory, in order.
fn notes(session: &std::path::Path) -> Vec<(String, String)> {
    let mut notes: Vec<_> = std::fs::read_dir(session)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.extension().is_some_and(|e| e == "md")
                && p.file_name()
                    .is_some_and(|n| n != "shepherd.md" && n != "shepherds-note.md")
        })
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(&p).unwrap())
        })
        .collect();
    notes.sort();
    notes
}

#[test]
fn a_usage_limit_hours_away_falls_back_to_another_agent() {
    let test = "harness_fallback::falls_back";
    let (Some(codex), Some(claude)) = (
        installed_or_skip(Host::Codex, test),
        installed_or_skip(Host::ClaudeCode, test),
    ) else {
        return;
    };
    // Codex's provider refuses every request: its usage limit resets in two hours.
    let codex_model = FakeLlm::start(scripted([])).unwrap();
    codex_model.set_limits(
        Limits::new().with_usage_limit(UsageLimit::next(1_000, Duration::from_secs(2 * 3600))),
    );
    let claude_model = FakeLlm::start(scripted([
        Step::tool_call_suffix(
            "shepherd_done",
            json!({"status": "completed", "summary": "done on the fallback"}),
        ),
        Step::text("Finished where the first sheep could not.").expecting("completed"),
    ]))
    .unwrap();
    let world = World::new(&codex, &codex_model);
    let claude_env = AgentEnv::builder(Host::ClaudeCode, &claude_model)
        .build()
        .unwrap();
    let agents = world.env.home().join(".agents/agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        agents.join("patient.md"),
        "---\nname: patient\ndescription: Works on, on another agent when its own is limited.\n\
         fallback:\n  - claude-code\n---\nYou do what you are asked.\n",
    )
    .unwrap();
    let plan = "backend: headless\ntimeout: 240\ntasks:\n  - {agent: patient, harness: codex, \
                task: \"Report that you are done.\"}\n";

    let (status, report) = world.run_plan(plan, &claude, &claude_env);
    assert!(status.success(), "{report}");
    let result = &report["results"][0];
    assert_eq!(result["status"], "completed", "{report}");
    assert_eq!(
        result["text"],
        "Finished where the first sheep could not.\n\nSummary: done on the fallback",
        "the fallback's words and summary: {report}"
    );
    assert!(
        !codex_model.limited_replies().is_empty(),
        "Codex's provider refused it"
    );
    assert!(
        claude_model.requests().iter().any(|r| {
            let text = r.last_input_text();
            text.contains("Report that you are done.") && text.contains("you take it over")
        }),
        "the fallback was given the task, and told whose it was"
    );

    let notes = notes(&world.session());
    assert_eq!(notes.len(), 2, "two notes in one session: {notes:#?}");
    let (first_name, first) = &notes[0];
    let (second_name, second) = &notes[1];
    assert_eq!(field(first, "status"), Some("cancelled"), "{first}");
    assert_eq!(field(first, "taskStatus"), Some("fell_back"), "{first}");
    assert!(
        first.contains("### Continued in") && first.contains(second_name.as_str()),
        "the first note links the second: {first}"
    );
    assert!(
        first.contains("### Rate limits") && first.contains("fell back"),
        "the first note records the limit it fell back on: {first}"
    );
    assert!(
        first.contains("patient (fallback, claude-code)"),
        "the fallback is named `<agent> (<role>): <label>`: {first}"
    );
    assert_eq!(field(second, "status"), Some("completed"), "{second}");
    let index = std::fs::read_to_string(world.session().join("shepherd.md")).unwrap();
    assert!(
        index.contains("- **Status:** completed"),
        "a task its fallback completed leaves the session completed: {index}"
    );
    assert!(
        second.contains("### Continues") && second.contains(first_name.as_str()),
        "the second note links back: {second}"
    );
    world.stop_and_check_nothing_left();
    let left = claude_env.reap_processes(Duration::from_secs(30));
    assert!(left.is_empty(), "left running: {left:?}");
}
