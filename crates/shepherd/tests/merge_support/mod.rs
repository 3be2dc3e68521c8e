//! What the merge-queue scenarios share: a repository on `main`, shell sheep that write a
//! file per task (the work to land) or run a script in the merge worktree (a resolver or a
//! fixer), finished isolated runs to land, and reading back what landed.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::path::PathBuf;

use serde_json::Value;
use shepherd_testkit::git::git;

use crate::herd_support::World;

/// A repository on `main` holding `files` (each with `base` in it).
pub(crate) fn repository(world: &World, files: &[&str]) {
    git(&world.project, &["init", "-q", "-b", "main"]);
    for file in files {
        std::fs::write(world.project.join(file), "base\n").unwrap();
    }
    std::fs::write(world.project.join("README.md"), "# project\n").unwrap();
    git(&world.project, &["add", "."]);
    git(&world.project, &["commit", "-q", "-m", "start"]);
}

/// A shell sheep: for each task it writes the task's first line into the file named by the
/// line's first word, leaves it uncommitted, and is done.
pub(crate) fn define_writer(world: &World, name: &str) {
    let script = r#"while true; do
  t=$(shepherd inbox --wait 30) || continue
  [ -n "$t" ] || continue
  line=$(printf '%s\n' "$t" | head -n 1)
  printf '%s\n' "$line" > "${line%% *}"
  shepherd done --status completed --summary "wrote ${line%% *}"
done"#;
    world.define(name, &["sh".into(), "-c".into(), script.into()]);
}

/// A command sheep that runs `script` in its working folder (the merge worktree, for a
/// resolver or a fixer) for each task, then says `done completed`.
pub(crate) fn define_resolver(world: &World, name: &str, script: &str) {
    let body = format!(
        r#"while true; do
  t=$(shepherd inbox --wait 30) || continue
  [ -n "$t" ] || continue
  {script}
  shepherd done --status completed --summary "done as asked"
done"#
    );
    world.define(name, &["sh".into(), "-c".into(), body]);
}

/// Runs `shepherd` with `--json` and returns its exit status and document.
pub(crate) fn run_json(world: &World, args: &[&str]) -> (i32, Value) {
    world.json_status(args)
}

/// `file` as `branch` holds it.
pub(crate) fn file_on(world: &World, branch: &str, file: &str) -> String {
    git(&world.project, &["show", &format!("{branch}:{file}")])
}

/// A finished isolated run of `tasks` (`agent=task` each), side by side; its id and session
/// folder.
pub(crate) fn isolated_run(world: &World, tasks: &[&str]) -> (String, PathBuf) {
    let mut args = vec!["run", "--isolate", "--parallel"];
    args.extend(tasks);
    let (code, doc) = run_json(world, &args);
    assert_eq!(code, 0, "{doc}");
    (
        doc["runId"].as_str().unwrap().to_owned(),
        PathBuf::from(doc["sessionPath"].as_str().unwrap()),
    )
}

/// R: a finished isolated run whose two tasks change the same line of `same`; its id and
/// session folder.
pub(crate) fn conflicting_run(world: &World) -> (String, PathBuf) {
    repository(world, &["same"]);
    define_writer(world, "writer");
    isolated_run(world, &["writer=same one", "writer=same two"])
}
