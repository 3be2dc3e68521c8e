//! A sheep that runs `shepherd run` itself leads a herd of its own one level down, with its
//! notes in the same project's fieldnotes; past `maxDepth` its run is refused before anything
//! launches.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::herd_support;

use herd_support::World;
use serde_json::Value;

/// A shell sheep that, for each task, runs `shepherd run inner "nested job" --json` and reports
/// `<exit status> <its JSON>` as its result.
fn define_nesting_sheep(world: &World) {
    let script = r#"while true; do
  item=$(shepherd inbox --wait 30 --json) || continue
  case "$item" in *'"kind":"task"'*)
    out=$(shepherd run inner "nested job" --json --progress off 2>/dev/null); rc=$?
    shepherd done --status completed --summary "$rc $out" ;;
  esac
done"#;
    world.define("outer", &["sh".into(), "-c".into(), script.into()]);
    world.define_test_sheep("inner", "done completed inner did {task}", None);
}

/// The outer run's result: the nested run's exit status and JSON document.
fn nested(world: &World) -> (Value, i32, Value) {
    nested_with(world, &[])
}

/// [`nested`], with more arguments for the outer run.
fn nested_with(world: &World, extra: &[&str]) -> (Value, i32, Value) {
    let mut args = vec!["run", "outer", "run your own herd"];
    args.extend_from_slice(extra);
    let (code, doc) = world.json_status(&args);
    assert_eq!(code, 0, "{doc}");
    let text = doc["results"][0]["text"].as_str().unwrap().to_owned();
    let (rc, json) = text
        .split_once(' ')
        .unwrap_or_else(|| panic!("`<rc> <json>` expected, got {text}"));
    let inner = serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {json}"));
    (doc, rc.parse().unwrap(), inner)
}

#[test]
fn a_sheep_runs_its_own_herd_one_level_down() {
    let world = World::new();
    define_nesting_sheep(&world);
    let (outer, rc, inner) = nested(&world);
    assert_eq!(rc, 0, "{inner}");
    assert_eq!(inner["results"][0]["status"], "completed");
    assert_eq!(inner["results"][0]["text"], "inner did nested job");
    let inner_note = inner["results"][0]["note"].as_str().unwrap();
    assert!(
        inner_note.starts_with(world.project.join(".shepherd/sessions").to_str().unwrap()),
        "the nested notes go into the same project's fieldnotes: {inner_note}"
    );
    assert_ne!(inner["sessionPath"], outer["sessionPath"]);
    // The nested herd has its own broker (the outer sheep is its parent); stop it.
    let outer_sheep = outer["results"][0]["agentId"].as_str().unwrap();
    let stopped = world.run(&["broker", "stop", "--parent-session", outer_sheep]);
    assert!(
        stopped.status.success(),
        "{}",
        String::from_utf8_lossy(&stopped.stderr)
    );
}

#[test]
fn a_sheep_working_in_a_subdirectory_still_writes_into_the_projects_fieldnotes() {
    let world = World::new();
    define_nesting_sheep(&world);
    let sub = world.project.join("deep/inside");
    std::fs::create_dir_all(&sub).unwrap();
    let (outer, rc, inner) = nested_with(&world, &["--cwd", sub.to_str().unwrap()]);
    assert_eq!(rc, 0, "{inner}");
    let inner_note = inner["results"][0]["note"].as_str().unwrap();
    assert!(
        inner_note.starts_with(world.project.join(".shepherd/sessions/").to_str().unwrap()),
        "{inner_note}"
    );
    assert!(
        !sub.join(".shepherd").exists(),
        "no fieldnotes in the sheep's cwd"
    );
    let outer_sheep = outer["results"][0]["agentId"].as_str().unwrap();
    world.run(&["broker", "stop", "--parent-session", outer_sheep]);
}

#[test]
fn a_run_past_max_depth_is_refused_inside_the_sheep() {
    let world = World::new();
    world.settings(r#"{"maxDepth": 1}"#);
    define_nesting_sheep(&world);
    let (_, rc, inner) = nested(&world);
    assert_eq!(rc, 1, "{inner}");
    assert_eq!(inner["error"]["code"], "depth_exceeded");
    let message = inner["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("nested 1 deep") && message.contains("maxDepth is 1"),
        "{message}"
    );
}
