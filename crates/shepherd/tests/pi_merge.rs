//! `shepherd_merge` through the real pi: the parent's pi runs an isolated task with
//! `subagent`, then lands its branch with `shepherd_merge` and a check, and the project's
//! branch holds the sheep's work; a merge whose check fails is a failed tool call and leaves the
//! branch where it was. `dryRun` names two branches that would conflict and changes nothing;
//! `cancel` stops a merge under way (started from the CLI), its check killed and the branch
//! where it was; a discard answers in the CLI's words. On the newest pi.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::pi_support;

use pi_support::{Backend, Options, Shepherd, result_text, tool_end};
use serde_json::json;
use shepherd_testkit::fake_llm::Step;
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

/// A parent pi whose `subagent` is on, in a repository on `main` holding `a`, with `writer`: a
/// shell sheep that writes what its task says into `a`, uncommitted, and is done.
fn parent_with_a_writer(pi: &PiBinary) -> Shepherd {
    // The parent's run tool, `subagent`, is offered when the setting turns it on.
    let options = Options {
        settings: json!({"subagentCompatibility": true}),
        ..Options::default()
    };
    let s = Shepherd::start(pi, Backend::Headless, &options);
    let project = s.project();
    git(&project, &["init", "-q", "-b", "main"]);
    std::fs::write(project.join("a"), "base\n").unwrap();
    git(&project, &["add", "a"]);
    git(&project, &["commit", "-q", "-m", "start"]);
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
    s
}

fn a_runs_branch_lands_through_the_parents_pi(pi: &PiBinary) {
    let mut s = parent_with_a_writer(pi);
    let project = s.project();
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
    // It says how the check ended, as the CLI does.
    assert!(failed.contains("check failed (exit 1)"), "{failed}");
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
    // Landing it again lands nothing new, and says so.
    let records = s.parent_turn(
        "again",
        vec![
            Step::tool_call("shepherd_merge", json!({"targets": [run]})),
            Step::text("again"),
        ],
    );
    let end = tool_end(&records, "shepherd_merge").expect("the tool ran");
    let text = result_text(&end["result"]);
    assert!(
        text.contains("nothing new landed: 1 of 1 already in main"),
        "{text}"
    );
}

fn a_dry_run_and_a_cancel_through_the_parents_pi(pi: &PiBinary) {
    let mut s = parent_with_a_writer(pi);
    let project = s.project();
    let ran = s.call_tool(
        "subagent",
        json!({"tasks": [
            {"agent": "writer", "task": "one", "isolate": true},
            {"agent": "writer", "task": "two", "isolate": true},
        ]}),
    );
    let run = run_id(&ran);
    let before = git(&project, &["rev-parse", "main"]);
    let refs = git(&project, &["for-each-ref"]);

    // A dry run names the pair that would conflict, and changes nothing.
    let preview = s.call_tool("shepherd_merge", json!({"targets": [run], "dryRun": true}));
    let branches = preview["preview"]["branches"].as_array().unwrap();
    assert_eq!(branches.len(), 2, "{preview}");
    let pair = &branches[1]["conflictsWith"][0];
    assert_eq!(pair["branch"], branches[0]["branch"], "{preview}");
    assert_eq!(pair["files"][0], "a", "{preview}");
    assert_eq!(git(&project, &["rev-parse", "main"]), before);
    assert_eq!(git(&project, &["for-each-ref"]), refs);

    // A merge from the CLI whose check blocks (it tells the test through a pipe, with the
    // merge's id, which names the worktree it runs in), cancelled through the tool.
    let dir = tempfile::tempdir().unwrap();
    let (started, said) = (dir.path().join("started"), dir.path().join("said"));
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&started)
            .status()
            .unwrap()
            .success()
    );
    let check = format!(
        "echo \"$(basename \"$PWD\") $$\" > '{said}'; echo up > '{started}'; exec sleep 600",
        said = said.display(),
        started = started.display(),
    );
    let merging = s
        .shepherd_command(&["merge", &run, "--check", &check])
        .args(["--parent-session", &s.session_id])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _sent = tx.send(std::fs::read_to_string(started));
    });
    rx.recv_timeout(std::time::Duration::from_secs(60))
        .expect("the check did not start within 60 s")
        .unwrap();
    let said = std::fs::read_to_string(&said).unwrap();
    let (merge_id, pid) = said.trim().split_once(' ').unwrap();
    let pid: u32 = pid.parse().unwrap();
    let cancelled = s.call_tool_failing("shepherd_merge", json!({"cancel": merge_id}));
    assert!(cancelled.contains("Landing into main"), "{cancelled}");
    let ended = merging.wait_with_output().unwrap();
    assert_eq!(ended.status.code(), Some(130));
    let view: serde_json::Value = serde_json::from_slice(&ended.stdout).unwrap();
    assert_eq!(view["mergeId"], merge_id, "{view}");
    assert!(view["cancelled"].is_string(), "{view}");
    assert!(
        crate::herd_support::wait_gone(pid, std::time::Duration::from_secs(10)),
        "the check outlived its cancelled merge"
    );
    assert_eq!(git(&project, &["rev-parse", "main"]), before);

    // A discard says so in the CLI's words, not as a landing.
    let records = s.parent_turn(
        "discard",
        vec![
            Step::tool_call("shepherd_merge", json!({"targets": [run], "discard": true})),
            Step::text("discarded"),
        ],
    );
    let end = tool_end(&records, "shepherd_merge").expect("the tool ran");
    let text = result_text(&end["result"]);
    assert!(
        text.contains("Discarding\n") && text.contains("2 of 2 discarded"),
        "{text}"
    );
    assert!(!text.contains("Landing into"), "{text}");
}

shepherd_testkit::pi_1_tests!(
    a_runs_branch_lands_through_the_parents_pi,
    a_dry_run_and_a_cancel_through_the_parents_pi
);
