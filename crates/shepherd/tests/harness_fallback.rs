//! A limit that lasts, with real agents: a Codex sheep whose provider says its usage limit
//! resets two hours ahead hands its task to a fresh Claude Code sheep, the `fallback:` its
//! definition names, instead of waiting. The run completes on the fallback, the session holds
//! both notes, the first linking the second, the session reads completed, and nothing is left
//! running. A limited account goes on on another account of the same provider, and a fallback
//! whose own account is limited too falls back to the next one, under a name of its own (the
//! account in it, the role said once).

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

    let (status, report, progress) = world.run_plan_with_progress(plan, &claude, &claude_env);
    assert!(status.success(), "{report}");
    assert!(
        progress.contains("patient: fell back to patient (fallback, claude-code) (anthropic)"),
        "the run's progress says which fallback took the task over: {progress}"
    );
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

/// A credential pool: a Claude Code sheep whose account stays refused (Claude Code names no
/// reset) hands its task, once it has waited `fallbackAfterMinutes`, to a Claude Code sheep on
/// another account of the same provider, the one a `fallback:` entry names by the variable
/// that holds its key. The fallback's requests carry
/// that key, the notes name the account by its variable, and no note holds the key itself.
#[test]
fn a_limited_account_hands_the_task_to_another_account_of_the_same_provider() {
    let test = "harness_fallback::credential_pool";
    let Some(claude) = installed_or_skip(Host::ClaudeCode, test) else {
        return;
    };
    // The test kit gives Claude Code this key; the second account's is the herd's
    // WORK_ANTHROPIC_KEY.
    const FIRST: &str = "sk-ant-fake-key-0000000000000000";
    const WORK: &str = "sk-ant-work-key-1111111111111111";
    let model = FakeLlm::start(scripted([
        Step::tool_call_suffix(
            "shepherd_done",
            json!({"status": "completed", "summary": "done on the work account"}),
        ),
        Step::text("Finished on the second account.").expecting("completed"),
    ]))
    .unwrap();
    model.set_limits(Limits::new().with_usage_limit(
        UsageLimit::next(1_000, Duration::from_secs(2 * 3600)).for_credential(FIRST),
    ));
    let mut world = World::new(&claude, &model);
    world
        .extra_env
        .push(("WORK_ANTHROPIC_KEY".to_owned(), WORK.to_owned()));
    // Claude Code names no reset for this refusal, so the task falls back once it has waited
    // fallbackAfterMinutes: the time spent waiting counts, not a reset Shepherd guessed.
    let set = world.run(&["settings", "set", "fallbackAfterMinutes", "0.05"]);
    assert!(
        set.status.success(),
        "{}",
        String::from_utf8_lossy(&set.stderr)
    );
    let agents = world.env.home().join(".agents/agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        agents.join("pooled.md"),
        "---\nname: pooled\ndescription: Goes on on the work account when its own is limited.\n\
         harness: claude-code\nfallback:\n  - {harness: claude-code, credential: WORK_ANTHROPIC_KEY}\n\
         ---\nYou do what you are asked.\n",
    )
    .unwrap();
    let id = world.json(&["spawn", "pooled", "--label", "pool", "--json"])["agentId"]
        .as_str()
        .expect("spawn returns an id")
        .to_owned();
    let task = world.delegate(&id, "Report that you are done.", &[]);
    let watched = world.json(&["watch", &task, "--wait", "240", "--json"]);
    assert_eq!(watched["settled"][0]["status"], "completed", "{watched}");
    let credentials: Vec<String> = model
        .requests()
        .iter()
        .filter(|r| r.limited.is_none())
        .map(|r| shepherd_testkit::fake_llm::credential(&r.headers, &r.query))
        .collect();
    assert!(
        !credentials.is_empty() && credentials.iter().all(|c| c == WORK),
        "every answered request spent the second account: {credentials:?}"
    );
    assert!(
        !model.limited_replies().is_empty(),
        "the first account was refused"
    );
    let inbox = world.run(&["inbox", "--json"]);
    let inbox: serde_json::Value = serde_json::from_slice(&inbox.stdout).unwrap();
    let fell_back = inbox["items"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|item| item["notice"] == "fell_back")
        .unwrap_or_else(|| panic!("the parent heard the fallback take over: {inbox}"));
    let text = fell_back["text"].as_str().unwrap_or_default();
    assert!(
        text.contains("handed to pooled (fallback, claude-code, WORK_ANTHROPIC_KEY): pool")
            && text.contains("on anthropic, account WORK_ANTHROPIC_KEY"),
        "the notice names the fallback and its account: {text}"
    );
    assert!(
        !inbox.to_string().contains(WORK),
        "no notice holds the key: {inbox}"
    );
    world.run(&["close", &id]);
    let notes = notes(&world.session());
    assert_eq!(notes.len(), 2, "two notes in one session: {notes:#?}");
    let (_, first) = &notes[0];
    assert!(
        first.contains("pooled (fallback, claude-code, WORK_ANTHROPIC_KEY): pool"),
        "the fallback is named `<agent> (fallback, <harness>, <account>): <label>`: {first}"
    );
    for (name, note) in &notes {
        assert!(!note.contains(WORK), "{name} holds no key: {note}");
    }
    assert!(
        notes
            .iter()
            .any(|(_, note)| note.contains("account WORK_ANTHROPIC_KEY")),
        "a note names the account by its variable: {notes:#?}"
    );
    world.stop_and_check_nothing_left();
}

#[test]
fn a_fallback_of_a_fallback_on_another_account_has_a_name_of_its_own() {
    let test = "harness_fallback::fallback_of_a_fallback";
    let Some(claude) = installed_or_skip(Host::ClaudeCode, test) else {
        return;
    };
    // The test kit's key and the first work account are both out of their plan; the second
    // work account answers.
    const FIRST: &str = "sk-ant-fake-key-0000000000000000";
    const WORK_A: &str = "sk-ant-work-key-aaaaaaaaaaaaaaaa";
    const WORK_B: &str = "sk-ant-work-key-bbbbbbbbbbbbbbbb";
    let model = FakeLlm::start(scripted([
        Step::tool_call_suffix(
            "shepherd_done",
            json!({"status": "completed", "summary": "done on the third account"}),
        ),
        Step::text("Finished on the third account.").expecting("completed"),
    ]))
    .unwrap();
    let limited =
        |key: &str| UsageLimit::next(1_000, Duration::from_secs(2 * 3600)).for_credential(key);
    model.set_limits(
        Limits::new()
            .with_usage_limit(limited(FIRST))
            .with_usage_limit(limited(WORK_A)),
    );
    let mut world = World::new(&claude, &model);
    for (var, key) in [("WORK_A_KEY", WORK_A), ("WORK_B_KEY", WORK_B)] {
        world.extra_env.push((var.to_owned(), key.to_owned()));
    }
    let set = world.run(&["settings", "set", "fallbackAfterMinutes", "0.05"]);
    assert!(
        set.status.success(),
        "{}",
        String::from_utf8_lossy(&set.stderr)
    );
    let agents = world.env.home().join(".agents/agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        agents.join("pooled.md"),
        "---\nname: pooled\ndescription: Goes on on the work accounts when its own is limited.\n\
         harness: claude-code\nfallback:\n  - {harness: claude-code, credential: WORK_A_KEY}\n  \
         - {harness: claude-code, credential: WORK_B_KEY}\n---\nYou do what you are asked.\n",
    )
    .unwrap();
    let id = world.json(&["spawn", "pooled", "--label", "pool", "--json"])["agentId"]
        .as_str()
        .expect("spawn returns an id")
        .to_owned();
    let task = world.delegate(&id, "Report that you are done.", &[]);
    // The first fallback, on WORK_A, is limited too: its own fallback takes the task over.
    let watched = world.json(&["watch", &task, "--wait", "120", "--json"]);
    assert_eq!(watched["settled"][0]["status"], "completed", "{watched}");
    let herd = world.json(&["herd", "--json"]);
    let mut names: Vec<String> = herd["sheep"]
        .as_array()
        .unwrap_or_else(|| panic!("{herd}"))
        .iter()
        .filter_map(|s| s["displayName"].as_str().map(str::to_owned))
        .collect();
    names.sort();
    // Each says its role once, from the definition, with the account it runs on.
    assert_eq!(
        names,
        [
            "pooled (fallback, claude-code, WORK_A_KEY): pool",
            "pooled (fallback, claude-code, WORK_B_KEY): pool",
            "pooled: pool",
        ],
        "{herd}"
    );
    let answered: Vec<String> = model
        .requests()
        .iter()
        .filter(|r| r.limited.is_none())
        .map(|r| shepherd_testkit::fake_llm::credential(&r.headers, &r.query))
        .collect();
    assert!(
        !answered.is_empty() && answered.iter().all(|c| c == WORK_B),
        "every answered request spent the third account: {answered:?}"
    );
    world.run(&["close", &id]);
    world.stop_and_check_nothing_left();
}
