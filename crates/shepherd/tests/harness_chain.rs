//! A `shepherd run --chain` across coding agents, offline: a Claude Code step then a Codex step
//! of the bundled `worker`, each on its own harness from the plan, both against the one fake
//! model (which speaks each agent's wire format). The Codex step's task carries the Claude
//! step's result through `{previous}`, the run completes, and each step leaves a complete note
//! with its harness, model and token counts. Skipped (one line) when either agent is missing;
//! a missing agent fails under `SHEPHERD_REQUIRE_AGENTS=1`.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::harness_support;

use harness_support::{World, field};
use serde_json::json;
use shepherd_testkit::agents::{AgentEnv, Host, installed_or_skip};
use shepherd_testkit::fake_llm::{Exhausted, FakeLlm, Script, Step, TOOLLESS_QUEUE};

const CODE_WORD: &str = "ALPHA-7";
const PLAN: &str = "backend: headless
timeout: 5
chain:
  - {agent: worker, harness: claude-code, task: \"Find the code word.\"}
  - {agent: worker, harness: codex, task: \"Use what the scout found: {previous}\"}
";

/// The scripted model: the first step finds the code word, the second is asked with it.
fn script() -> Script {
    Script::new()
        .with_responses([
            Step::tool_call_suffix(
                "shepherd_done",
                json!({"status": "completed", "summary": format!("the code word is {CODE_WORD}")}),
            ),
            Step::text(format!("Found it: {CODE_WORD}.")).expecting("completed"),
            Step::tool_call_suffix(
                "shepherd_done",
                json!({"status": "completed", "summary": format!("used {CODE_WORD}")}),
            )
            .expecting(CODE_WORD),
            Step::text("Used the code word.").expecting("completed"),
        ])
        .with_toolless(Step::text("Fake title"))
        .with_exhausted(Exhausted::Step(Box::new(Step::text(
            "fake-llm: the script is finished",
        ))))
}

#[test]
fn a_claude_code_step_then_a_codex_step_carry_previous_and_leave_two_notes() {
    let test = "harness_chain::a_claude_code_step_then_a_codex_step";
    let (Some(claude), Some(codex)) = (
        installed_or_skip(Host::ClaudeCode, test),
        installed_or_skip(Host::Codex, test),
    ) else {
        return;
    };
    let fake = FakeLlm::start(script()).unwrap();
    // The user has both agents configured: Claude Code's settings in the world's HOME, Codex's
    // in a home of its own that `CODEX_HOME` names.
    let world = World::new(&claude, &fake);
    let codex_env = AgentEnv::builder(Host::Codex, &fake).build().unwrap();

    let (status, report) = world.run_plan(PLAN, &codex, &codex_env);
    assert!(status.success(), "{report}");
    assert_eq!(report["mode"], "chain", "{report}");
    let results = report["results"].as_array().expect("results");
    assert_eq!(results.len(), 2, "{report}");
    for result in results {
        assert_eq!(result["status"], "completed", "{report}");
    }

    // The Codex step was asked with the Claude Code step's result.
    let requests = fake.requests();
    let second_task = requests
        .iter()
        .filter(|r| r.queue != TOOLLESS_QUEUE)
        .find(|r| r.last_input_text().contains("Use what the scout found"))
        .unwrap_or_else(|| panic!("the second step never reached the model"));
    assert!(
        second_task.last_input_text().contains(CODE_WORD),
        "{{previous}} carried the first result: {}",
        second_task.last_input_text()
    );
    // The first step's result is its final words and its done summary, as for any sheep.
    assert!(
        second_task.last_input_text().contains(&format!(
            "Found it: {CODE_WORD}.\n\nSummary: the code word is {CODE_WORD}"
        )),
        "{{previous}} is the final words and the summary: {}",
        second_task.last_input_text()
    );
    assert!(fake.mismatches().is_empty(), "{:#?}", fake.mismatches());

    // Two complete notes, one per harness, each with its model and token counts.
    for (result, harness) in results.iter().zip(["claude-code", "codex"]) {
        let note_path = result["note"]
            .as_str()
            .unwrap_or_else(|| panic!("{harness}: no note in {result}"));
        let path = world.project().join(note_path);
        let path = if path.exists() {
            path
        } else {
            note_path.into()
        };
        let note = std::fs::read_to_string(&path)
            .unwrap_or_else(|err| panic!("{harness}: {}: {err}", path.display()));
        assert_eq!(field(&note, "status"), Some("completed"), "{note}");
        assert_eq!(field(&note, "harness"), Some(harness), "{note}");
        assert!(
            field(&note, "model").is_some_and(|m| !m.is_empty()),
            "{harness}: model in {note}"
        );
        let number = |key: &str| {
            field(&note, key)
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0)
        };
        assert!(
            number("tokensIn") + number("tokensOut") > 0,
            "{harness}: tokens in {note}"
        );
    }
    world.stop_and_check_nothing_left();
}
