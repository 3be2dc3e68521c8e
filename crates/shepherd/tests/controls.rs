//! The controls from the command line with command sheep: `maxSheep` refuses a spawn over the
//! limit; `spawn --isolate` runs a sheep in its own worktree of a real git repository and its
//! close reports the patch (or removes a clean worktree); budgets and resumes are refused for
//! a harness that cannot honour them; bad values are refused naming them, changing nothing.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::herd_support;

use std::path::Path;

use herd_support::World;
use serde_json::Value;
use shepherd_testkit::git::git;

fn repository(world: &World) {
    git(&world.project, &["init", "-q", "-b", "main"]);
    std::fs::write(world.project.join("README.md"), "# project\n").unwrap();
    git(&world.project, &["add", "README.md"]);
    git(&world.project, &["commit", "-q", "-m", "start"]);
}

/// The herd without its timestamps, to show a refusal changed nothing.
fn herd(world: &World) -> Value {
    let mut herd = world.json(&["herd"]);
    // The broker's clock when the view was taken moves on by itself, and what a sheep last
    // printed is its output, not herd state.
    herd.as_object_mut().unwrap().remove("now");
    for sheep in herd["sheep"].as_array_mut().unwrap() {
        sheep.as_object_mut().unwrap().remove("createdAt");
        sheep.as_object_mut().unwrap().remove("lastLine");
    }
    herd
}

#[test]
fn max_sheep_refuses_a_spawn_over_the_limit_in_one_clear_line() {
    let world = World::new();
    world.settings(r#"{"backend": "headless", "maxSheep": 2}"#);
    world.define_test_sheep("idler", "idle", None);
    let first = world.spawn("idler", "one");
    world.spawn("idler", "two");
    let before = herd(&world);
    let (code, error, message) = world.error(&["spawn", "idler", "--label", "three"]);
    assert_eq!(code, 1);
    assert_eq!(error, "max_sheep");
    assert_eq!(
        message,
        "this herd already runs 2 sheep and maxSheep is 2; close one (shepherd close <id>) or \
         raise maxSheep (shepherd settings set maxSheep <n>, 0 for no limit)"
    );
    assert_eq!(herd(&world), before, "the refusal changed nothing");
    world.json(&["close", &first]);
    world.spawn("idler", "three");
}

#[test]
fn without_max_sheep_a_herd_runs_as_many_as_it_is_given() {
    let world = World::new();
    world.settings(r#"{"backend": "headless"}"#);
    world.define_test_sheep("idler", "idle", None);
    for label in ["a", "b", "c", "d"] {
        world.spawn("idler", label);
    }
    assert_eq!(herd(&world)["sheep"].as_array().unwrap().len(), 4);
}

/// A shell sheep that, for each task, writes `made.txt` and commits it, then writes
/// `notes.txt` without committing it.
fn define_committer(world: &World) {
    let script = r#"while true; do
  item=$(shepherd inbox --wait 30 --json) || continue
  case "$item" in *'"kind":"task"'*)
    echo made > made.txt
    git add made.txt && git -c user.name=Sheep -c user.email=sheep@example.invalid commit -q -m "make made.txt"
    echo draft > notes.txt
    shepherd done --status completed --summary "made it in $(pwd)" ;;
  esac
done"#;
    world.define("committer", &["sh".into(), "-c".into(), script.into()]);
}

#[test]
fn an_isolated_sheep_works_in_its_own_worktree_and_its_close_reports_the_patch() {
    let world = World::new();
    world.settings(r#"{"backend": "headless"}"#);
    repository(&world);
    define_committer(&world);
    let spawned = world.json(&["spawn", "committer", "--label", "fix", "--isolate"]);
    let id = spawned["agentId"].as_str().unwrap().to_owned();
    let path = spawned["worktree"]["path"].as_str().unwrap().to_owned();
    let branch = spawned["worktree"]["branch"].as_str().unwrap().to_owned();
    assert!(
        !Path::new(&path).starts_with(&world.project),
        "worktrees live outside the project: {path}"
    );
    assert!(branch.starts_with("shepherd/committer-fix-"), "{branch}");
    assert_eq!(world.json(&["status", &id])["worktree"]["path"], path);

    let task = world.delegate(&id, "make made.txt")["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    let watched = world.json(&["watch", &task, "--wait", "30"]);
    let summary = watched["settled"][0]["summary"].as_str().unwrap();
    assert_eq!(summary, format!("made it in {path}"));
    assert!(
        !world.project.join("made.txt").exists(),
        "the checkout is untouched"
    );

    let closed = world.json(&["close", &id]);
    let report = &closed["worktree"];
    // Its uncommitted file was preserved on a ref of its own; the worktree went, the branch
    // holds the work.
    assert_eq!(report["kept"], false, "{closed}");
    assert_eq!(
        report["preserved"],
        format!("refs/shepherd/preserved/{id}"),
        "{closed}"
    );
    assert_eq!(
        report["files"],
        serde_json::json!(["made.txt", "notes.txt"])
    );
    assert_eq!(
        report["diffstat"],
        "1 file changed, 1 insertion(+), 1 untracked file(s)"
    );
    let commits = report["commits"].as_array().unwrap();
    assert_eq!(commits.len(), 2, "{commits:?}");
    assert!(
        commits[0].as_str().unwrap().ends_with(" make made.txt"),
        "{commits:?}"
    );
    assert!(
        report["integrate"]
            .as_str()
            .unwrap()
            .starts_with("land it with `shepherd merge "),
        "{report}"
    );
    assert!(!Path::new(&path).exists(), "its worktree went");

    // The note of the sheep's last task carries the same report.
    let note = watched["settled"][0]["note"].as_str().unwrap();
    let text = std::fs::read_to_string(note).unwrap();
    assert!(text.contains(r#"worktree: {"#), "{text}");
    assert!(text.contains("shepherd merge"), "{text}");
    assert!(text.contains("make made.txt"), "{text}");

    // Closing again says it once more without redoing it; human output lists the patch.
    let again = world.run(&["close", &id]);
    assert!(again.status.success());
    let text = String::from_utf8_lossy(&again.stdout);
    assert!(
        text.contains(&format!(
            "worktree {path} removed; its work stays on branch {branch}"
        )) && text.contains("file notes.txt")
            && text.contains("make made.txt"),
        "{text}"
    );
    assert!(!Path::new(&path).exists());
}

#[test]
fn a_clean_isolated_sheep_leaves_no_worktree_and_no_branch() {
    let world = World::new();
    world.settings(r#"{"backend": "headless"}"#);
    repository(&world);
    world.define_test_sheep("looker", "done completed nothing to change", None);
    let spawned = world.json(&["spawn", "looker", "--isolate"]);
    let id = spawned["agentId"].as_str().unwrap().to_owned();
    let path = spawned["worktree"]["path"].as_str().unwrap().to_owned();
    let task = world.delegate(&id, "look around")["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    world.json(&["watch", &task, "--wait", "30"]);
    let output = world.run(&["close", &id]);
    assert!(output.status.success());
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        text.contains(&format!("worktree {path} removed (clean, no new commits)")),
        "{text}"
    );
    assert!(!Path::new(&path).exists());
    assert_eq!(
        git(&world.project, &["branch", "--list", "shepherd/*"]).trim(),
        ""
    );
}

#[test]
fn isolate_outside_git_is_refused_and_starts_nothing() {
    let world = World::new();
    world.settings(r#"{"backend": "headless"}"#);
    world.define_test_sheep("looker", "idle", None);
    let (code, error, message) = world.error(&["spawn", "looker", "--isolate"]);
    assert_eq!(code, 1);
    assert_eq!(error, "not_a_git_repository");
    assert!(
        message.starts_with("this spawn asks for isolate, but its directory"),
        "{message}"
    );
    assert!(herd(&world)["sheep"].as_array().unwrap().is_empty());
}

#[test]
fn budgets_and_resumes_are_refused_where_the_sheep_cannot_honour_them() {
    let world = World::new();
    world.settings(r#"{"backend": "headless"}"#);
    world.define_test_sheep("idler", "idle", None);
    let id = world.spawn("idler", "x");
    let (_, error, message) = world.error(&["delegate", &id, "work", "--max-turns", "2"]);
    assert_eq!(error, "budget_unsupported");
    assert!(message.contains("is a command sheep"), "{message}");
    assert_eq!(world.json(&["status", &id])["state"], "idle", "no task");

    let (code, error, message) = world.error(&["delegate", &id, "work", "--max-turns", "0"]);
    assert_eq!((code, error.as_str()), (2, "invalid_budget"));
    assert_eq!(
        message,
        "--max-turns: invalid budget turns `0`: expected a whole number, 1 or more"
    );
    let (_, error, _) = world.error(&["delegate", &id, "work", "--stall=-2"]);
    assert_eq!(error, "invalid_stall");

    let (_, error, message) = world.error(&["resume", &id]);
    assert_eq!(error, "resume_unsupported");
    assert!(message.contains("keeps no session"), "{message}");
    world.json(&["close", &id]);
    let (_, error, _) = world.error(&["resume", &id]);
    assert_eq!(error, "resume_unsupported");
    let (_, error, _) = world.error(&["resume", "shepherd-agent-nobody"]);
    assert_eq!(error, "invalid_target");
}

#[test]
fn a_run_checks_its_budgets_before_anything_starts() {
    let world = World::new();
    world.settings(r#"{"backend": "headless"}"#);
    world.define_test_sheep("idler", "done completed ok", None);
    let (code, error, _) = world.error(&["run", "idler", "x", "--max-cost", "0"]);
    assert_eq!((code, error.as_str()), (2, "invalid_budget"));
    let plan = world.dir.path().join("plan.yaml");
    std::fs::write(
        &plan,
        "budget: {turns: 5}\ntasks:\n  - {agent: idler, task: a}\n  - {agent: idler, task: b, budget: {toolCalls: 3}}\n",
    )
    .unwrap();
    let (_, error, message) = world.error(&["run", "--plan", plan.to_str().unwrap()]);
    assert_eq!(error, "budget_unsupported");
    assert!(
        message.starts_with("task 1 (idler) is a command sheep"),
        "{message}"
    );
    assert!(!world.project.join(".shepherd").exists(), "nothing started");
}
