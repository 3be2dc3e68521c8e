//! A merge conflict resolved by the real Claude Code, offline: two branches that change the
//! same line, landed with `shepherd merge --resolve resolver` where `resolver` is a Claude Code
//! definition. Its sheep is started in the merge worktree, told the conflict, and — scripted
//! against the fake model — edits the file with its shell tool, commits the merge and calls
//! `shepherd_done`; both branches then land, and its note is in the session. Skipped (one line)
//! when Claude Code is missing; a missing agent fails under `SHEPHERD_REQUIRE_AGENTS=1`.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::harness_support;

use harness_support::World;
use serde_json::json;
use shepherd_testkit::agents::{Host, installed_or_skip};
use shepherd_testkit::fake_llm::{Exhausted, FakeLlm, Script, Step};
use shepherd_testkit::git::git;

/// The resolver's turn: keep both lines, commit the merge, report.
fn script() -> Script {
    Script::new()
        .with_responses([
            Step::shell(
                "printf 'left\\nright\\n' > line.txt && git add line.txt && \
                 git -c user.name=Resolver -c user.email=r@example.invalid commit -q --no-edit",
            )
            .expecting("line.txt"),
            Step::tool_call_suffix(
                "shepherd_done",
                json!({"status": "completed", "summary": "kept both sides"}),
            ),
            Step::text("Resolved: both lines kept.").expecting("completed"),
        ])
        .with_toolless(Step::text("Fake title"))
        .with_exhausted(Exhausted::Step(Box::new(Step::text(
            "fake-llm: the script is finished",
        ))))
}

#[test]
fn claude_code_resolves_a_conflict_and_both_branches_land() {
    let Some(claude) = installed_or_skip(Host::ClaudeCode, "harness_merge::claude_code_resolves")
    else {
        return;
    };
    let fake = FakeLlm::start(script()).unwrap();
    let world = World::new(&claude, &fake);
    let project = world.project().to_path_buf();
    git(&project, &["init", "-q", "-b", "main"]);
    std::fs::write(project.join("line.txt"), "base\n").unwrap();
    git(&project, &["add", "line.txt"]);
    git(&project, &["commit", "-q", "-m", "start"]);
    for (branch, line) in [("shepherd/left", "left"), ("shepherd/right", "right")] {
        git(&project, &["checkout", "-q", "-b", branch, "main"]);
        std::fs::write(project.join("line.txt"), format!("{line}\n")).unwrap();
        git(&project, &["commit", "-q", "-am", line]);
    }
    git(&project, &["checkout", "-q", "main"]);
    let agents = world.env.home().join(".pi/agent/agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        agents.join("resolver.md"),
        "---\nname: resolver\ndescription: Resolves merge conflicts.\nharness: claude-code\n---\nYou resolve merge conflicts.\n",
    )
    .unwrap();

    let output = world.run(&[
        "merge",
        "shepherd/left",
        "shepherd/right",
        "--resolve",
        "resolver",
        "--check",
        "! grep -q '<<<<<<<' line.txt",
        "--json",
    ]);
    let merge: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|err| {
        panic!(
            "no JSON ({err}): {}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    });
    assert_eq!(output.status.code(), Some(0), "{merge}");
    let branches = merge["branches"].as_array().unwrap();
    assert_eq!(branches[0]["state"], "merged", "{merge}");
    assert_eq!(branches[1]["state"], "merged", "{merge}");
    let resolver = &branches[1]["resolver"];
    assert_eq!(resolver["status"], "completed", "{merge}");
    assert_eq!(resolver["summary"], "kept both sides", "{merge}");
    assert_eq!(git(&project, &["show", "main:line.txt"]), "left\nright");
    // The resolver was told the conflict, and its note is in the project's fieldnotes.
    assert!(fake.mismatches().is_empty(), "{:#?}", fake.mismatches());
    let note = resolver["note"].as_str().expect("the resolver has a note");
    let note = std::fs::read_to_string(project.join(note)).unwrap();
    assert!(
        note.contains("Resolve a merge conflict") && note.contains("completed"),
        "{note}"
    );
    world.stop_and_check_nothing_left();
}
