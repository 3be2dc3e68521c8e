//! `shepherd_merge` through the real pi: the parent's pi runs an isolated task with
//! `subagent`, then lands its branch with `shepherd_merge` and a check, and the project's
//! branch holds the sheep's work; a merge whose check fails is a failed tool call and leaves the
//! branch where it was. Both pi versions.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::pi_support;

use pi_support::{Backend, Options, Shepherd};
use serde_json::json;
use shepherd_testkit::git::git;
use shepherd_testkit::pi::PiBinary;

/// The run id a tool result names (`run-…`).
fn run_id(details: &serde_json::Value) -> String {
    let text = details.to_string();
    let at = text.find("run-").expect("the run names itself");
    text[at..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
        .collect()
}

fn a_runs_branch_lands_through_the_parents_pi(pi: &PiBinary) {
    // The parent's run tool, `subagent`, is offered when the setting turns it on.
    let options = Options {
        settings: json!({"subagentCompatibility": true}),
        ..Options::default()
    };
    let mut s = Shepherd::start(pi, Backend::Headless, &options);
    let project = s.project();
    git(&project, &["init", "-q", "-b", "main"]);
    std::fs::write(project.join("a"), "base\n").unwrap();
    git(&project, &["add", "a"]);
    git(&project, &["commit", "-q", "-m", "start"]);
    // A shell sheep: it writes what its task says into `a`, uncommitted, and is done.
    let script = r#"while true; do
  t=$(shepherd inbox --wait 30) || continue
  [ -n "$t" ] || continue
  printf '%s\n' "$(printf '%s\n' "$t" | head -n 1)" > a
  shepherd done --status completed --summary "changed a"
done"#;
    std::fs::write(
        s.env.agent_dir().join("agents/writer.md"),
        format!(
            "---\nname: writer\ndescription: writes a\ncommand: {}\n---\nwriter\n",
            json!(["sh", "-c", script])
        ),
    )
    .unwrap();

    let ran = s.call_tool(
        "subagent",
        json!({"tasks": [{"agent": "writer", "task": "landed", "isolate": true}]}),
    );
    let run = run_id(&ran);
    // A check that fails: the tool fails and the project's branch does not move.
    let before = git(&project, &["rev-parse", "main"]);
    let failed = s.call_tool_failing(
        "shepherd_merge",
        json!({"targets": [run], "check": "grep -q never a"}),
    );
    assert!(failed.contains("check failed"), "{failed}");
    assert_eq!(git(&project, &["rev-parse", "main"]), before);
    // With a check that passes it lands.
    let merged = s.call_tool(
        "shepherd_merge",
        json!({"targets": [run], "check": "grep -q landed a"}),
    );
    assert_eq!(merged["merge"]["exitCode"], 0, "{merged}");
    assert_eq!(
        merged["merge"]["branches"][0]["state"], "merged",
        "{merged}"
    );
    assert_eq!(git(&project, &["show", "main:a"]), "landed");
}

shepherd_testkit::pi_tests!(a_runs_branch_lands_through_the_parents_pi);
