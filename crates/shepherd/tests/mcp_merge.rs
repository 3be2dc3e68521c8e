//! `shepherd_merge` over MCP: a run's isolated task lands into the project's branch, in the
//! CLI's words; a dry run changes nothing; a display name is refused (ids only); a merge that
//! outlives its call says how to follow it.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::mcp_support;

use mcp_support::{HostOptions, Mcp, World};
use serde_json::json;
use shepherd_testkit::git::git;

#[tokio::test]
async fn a_runs_isolated_task_lands_through_shepherd_merge() {
    let world = World::new();
    git(&world.project, &["init", "-q", "-b", "main"]);
    std::fs::write(world.project.join("a"), "base\n").unwrap();
    git(&world.project, &["add", "a"]);
    git(&world.project, &["commit", "-q", "-m", "start"]);
    let script = r#"while true; do
  t=$(shepherd inbox --wait 30) || continue
  [ -n "$t" ] || continue
  printf 'landed\n' > a
  shepherd done --status completed --summary "changed a"
done"#;
    world.define("writer", &["sh".into(), "-c".into(), script.into()]);
    let mcp = Mcp::start(&world, &[], HostOptions::default()).await;
    let run = mcp
        .call(
            "shepherd_run",
            json!({"tasks": [{"agent": "writer", "task": "change a", "isolate": true}]}),
        )
        .await;
    assert!(!run.is_error, "{}", run.text);
    assert!(
        run.text.contains("Branches to land (shepherd_merge"),
        "{}",
        run.text
    );
    let run_id = mcp_support::word(&run.text, "run-").expect("the run names itself");
    // A dry run says what would land, and changes nothing.
    let before = git(&world.project, &["rev-parse", "main"]);
    let preview = mcp
        .call(
            "shepherd_merge",
            json!({"targets": [run_id.clone()], "dryRun": true}),
        )
        .await;
    assert!(!preview.is_error, "{}", preview.text);
    assert!(
        preview.text.starts_with("Would land into main") && preview.text.contains("shepherd/"),
        "{}",
        preview.text
    );
    assert_eq!(git(&world.project, &["rev-parse", "main"]), before);
    // A display name is not an id: refused.
    let by_name = mcp
        .call("shepherd_merge", json!({"targets": ["writer"]}))
        .await;
    assert!(by_name.is_error, "{}", by_name.text);
    assert!(by_name.text.contains("unknown_landing"), "{}", by_name.text);
    let merged = mcp
        .call(
            "shepherd_merge",
            json!({"targets": [run_id], "check": "grep -q landed a"}),
        )
        .await;
    assert!(!merged.is_error, "{}", merged.text);
    assert!(
        merged.text.contains("merged at") && merged.text.contains("1 of 1 landed into main"),
        "{}",
        merged.text
    );
    assert_eq!(git(&world.project, &["show", "main:a"]), "landed");
    // Nothing named: refused, saying what to name.
    let refused = mcp.call("shepherd_merge", json!({})).await;
    assert!(refused.is_error, "{}", refused.text);
    assert!(refused.text.contains("nothing_to_land"), "{}", refused.text);
    mcp.close().await;
}
