//! Isolated tasks against a real git repository: each runs in its own worktree on a
//! `shepherd/…` branch; a clean worktree is removed with its branch, a dirty one is kept and
//! reported; isolation lifts the parallel write-conflict refusal; a directory outside git is
//! refused before anything launches.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::herd_support;

use std::path::Path;

use herd_support::World;
use shepherd_testkit::git::git;

fn repository(world: &World) {
    git(&world.project, &["init", "-q", "-b", "main"]);
    std::fs::write(world.project.join("README.md"), "# project\n").unwrap();
    git(&world.project, &["add", "README.md"]);
    git(&world.project, &["commit", "-q", "-m", "start"]);
}

/// A shell sheep that writes `made.txt` in its working directory for each task.
fn define_file_writer(world: &World, name: &str) {
    let script = r#"while true; do
  item=$(shepherd inbox --wait 30 --json) || continue
  case "$item" in *'"kind":"task"'*) echo made > made.txt; shepherd done --status completed --summary "wrote made.txt in $(pwd)" ;; esac
done"#;
    world.define(name, &["sh".into(), "-c".into(), script.into()]);
}

#[test]
fn a_clean_worktree_is_removed_and_a_dirty_one_is_kept_and_reported() {
    let world = World::new();
    repository(&world);
    world.define_test_sheep("looker", "done completed nothing to change", None);
    define_file_writer(&world, "writer");
    let (code, doc) = world.json_status(&[
        "run",
        "--parallel",
        "looker=look around",
        "writer=edit made.txt",
        "--isolate",
    ]);
    assert_eq!(code, 0, "{doc}");

    let clean = &doc["results"][0]["worktree"];
    assert_eq!(clean["kept"], false, "{clean}");
    assert!(!Path::new(clean["path"].as_str().unwrap()).exists());

    // The writer's uncommitted file is preserved on top of its branch; its worktree went.
    let dirty = &doc["results"][1]["worktree"];
    assert_eq!(dirty["kept"], false, "{dirty}");
    let preserved = dirty["preserved"]
        .as_str()
        .unwrap_or_else(|| panic!("{dirty}"));
    assert_eq!(
        git(&world.project, &["show", &format!("{preserved}:made.txt")]).trim(),
        "made"
    );
    let made = Path::new(dirty["path"].as_str().unwrap());
    assert!(!made.exists(), "its worktree went: {}", made.display());
    assert!(
        !made.starts_with(&world.project),
        "worktrees live outside the project: {}",
        made.display()
    );
    assert!(
        !world.project.join("made.txt").exists(),
        "the writer did not run in the main checkout"
    );
    let text = doc["results"][1]["text"].as_str().unwrap();
    assert!(text.contains(made.to_str().unwrap()), "{text}");
    assert_eq!(doc["worktrees"].as_array().unwrap().len(), 1);
    assert_eq!(doc["worktrees"][0]["branch"], dirty["branch"]);

    let branches = git(&world.project, &["branch", "--list", "shepherd/*"]);
    let dirty_branch = dirty["branch"].as_str().unwrap();
    assert_eq!(
        branches.trim().trim_start_matches(['*', '+', ' ']),
        dirty_branch,
        "{branches}"
    );
    assert!(dirty_branch.starts_with("shepherd/run-"), "{dirty_branch}");
}

#[test]
fn isolation_lifts_the_write_conflict_and_human_output_lists_kept_worktrees() {
    let world = World::new();
    repository(&world);
    define_file_writer(&world, "writer");
    let (_, code, _) = world.error(&[
        "run",
        "--parallel",
        "writer=edit made.txt",
        "writer=edit made.txt",
    ]);
    assert_eq!(code, "write_conflict");

    let plan = world.dir.path().join("plan.yaml");
    std::fs::write(
        &plan,
        "tasks:\n  - {agent: writer, task: edit made.txt, isolate: true}\n  - {agent: writer, task: edit made.txt}\n",
    )
    .unwrap();
    let output = world.run(&["run", "--plan", plan.to_str().unwrap()]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.starts_with("Parallel: 2/2 succeeded"), "{stdout}");
    assert!(
        stdout.contains("Branches to land (`shepherd merge run-"),
        "{stdout}"
    );
    assert!(
        world.project.join("made.txt").is_file(),
        "the second task ran in the checkout"
    );
}

#[test]
fn isolate_outside_git_is_refused_before_anything_launches() {
    let world = World::new();
    world.define_test_sheep("looker", "done completed ok", None);
    let (code, error, message) = world.error(&["run", "looker", "look", "--isolate"]);
    assert_eq!(code, 1);
    assert_eq!(error, "not_a_git_repository");
    assert!(message.contains("task 1 asks for isolate"), "{message}");
    assert!(!world.project.join(".shepherd").exists());
}
