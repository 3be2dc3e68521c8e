//! Landing the herd's work, against real git: isolated tasks' branches merged one by one into
//! the branch the project had checked out, a check gating each step, a conflict stopping the
//! queue with its file named or handed to a resolver sheep that lands it, a failing check
//! leaving the target where it was, a target moved mid-queue refused, and a sheep closed with
//! uncommitted work keeping it on a ref of its own.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::path::Path;

use crate::herd_support::World;
use crate::merge_support::{define_writer, file_on, repository, run_json};
use shepherd_testkit::git::git;

#[test]
fn a_parallel_isolated_run_lands_every_task_with_the_check_passing_after_each() {
    let world = World::new();
    repository(&world, &["a", "b", "c"]);
    define_writer(&world, "writer");
    let before = git(&world.project, &["rev-parse", "main"]);
    let (code, doc) = run_json(
        &world,
        &[
            "run",
            "--parallel",
            "writer=a from one",
            "writer=b from two",
            "writer=c from three",
            "--isolate",
            "--merge",
            "--check",
            "test -f a && test -f b && test -f c",
        ],
    );
    assert_eq!(code, 0, "{doc}");
    let merge = &doc["merge"];
    assert_eq!(merge["target"], "main", "{merge}");
    assert_eq!(merge["exitCode"], 0, "{merge}");
    let branches = merge["branches"].as_array().unwrap();
    assert_eq!(branches.len(), 3, "{merge}");
    for branch in branches {
        assert_eq!(branch["state"], "merged", "{merge}");
    }
    // One target holding all three: each task's work, its own commit, on main.
    assert_eq!(file_on(&world, "main", "a"), "a from one");
    assert_eq!(file_on(&world, "main", "b"), "b from two");
    assert_eq!(file_on(&world, "main", "c"), "c from three");
    let landed = git(
        &world.project,
        &[
            "rev-list",
            "--count",
            "--no-merges",
            &format!("{before}..main"),
        ],
    );
    assert_eq!(landed, "3", "three commits of work landed");
    // The project's own checkout followed (it was clean), so nothing looks changed there.
    assert_eq!(
        std::fs::read_to_string(world.project.join("a")).unwrap(),
        "a from one\n"
    );
    let status = git(
        &world.project,
        &["status", "--porcelain", "--untracked-files=no"],
    );
    assert!(status.is_empty(), "{status}");
    // The session shows what landed: each branch beside its sheep's note, merged.
    let session = Path::new(doc["run"]["sessionPath"].as_str().unwrap());
    let index = std::fs::read_to_string(session.join("shepherd.md")).unwrap();
    let section = index
        .split("## Branches")
        .nth(1)
        .unwrap_or_else(|| panic!("{index}"));
    for branch in branches {
        let name = branch["branch"].as_str().unwrap();
        let line = section
            .lines()
            .find(|l| l.contains(name))
            .unwrap_or_else(|| panic!("{name} not listed:\n{index}"));
        assert!(
            line.contains("merged at ") && line.contains("](./writer-"),
            "{line}"
        );
    }
}

#[test]
fn conflicting_branches_stop_with_the_file_named_and_a_resolver_lands_them() {
    let world = World::new();
    repository(&world, &["same"]);
    define_writer(&world, "writer");
    let (code, doc) = run_json(
        &world,
        &[
            "run",
            "--parallel",
            "writer=same one",
            "writer=same two",
            "--isolate",
        ],
    );
    assert_eq!(code, 0, "{doc}");
    let run_id = doc["runId"].as_str().unwrap().to_owned();
    let target = git(&world.project, &["rev-parse", "main"]);

    // Without a resolver the queue stops at the conflict, naming the file; the first landed.
    let (code, merge) = run_json(&world, &["merge", &run_id]);
    assert_eq!(code, 2, "{merge}");
    assert_eq!(merge["branches"][0]["state"], "merged", "{merge}");
    assert_eq!(merge["branches"][1]["state"], "conflict", "{merge}");
    assert_eq!(
        merge["branches"][1]["conflict"]["files"][0], "same",
        "{merge}"
    );
    let session = Path::new(doc["sessionPath"].as_str().unwrap());
    let index = std::fs::read_to_string(session.join("shepherd.md")).unwrap();
    let conflicted = merge["branches"][1]["branch"].as_str().unwrap();
    assert!(
        index
            .lines()
            .any(|l| l.contains(conflicted) && l.ends_with("— conflict")),
        "{index}"
    );
    let human = String::from_utf8(world.run(&["merge", &run_id]).stdout).unwrap();
    assert!(human.contains("conflicting files: same"), "{human}");
    assert_ne!(git(&world.project, &["rev-parse", "main"]), target);

    // A resolver sheep that keeps both lines, commits the merge and is done: both land.
    let resolve = r#"while true; do
  t=$(shepherd inbox --wait 30) || continue
  [ -n "$t" ] || continue
  printf 'same one\nsame two\n' > same
  git add same
  git -c user.name=Resolver -c user.email=r@example.invalid commit -q --no-edit
  shepherd done --status completed --summary "kept both"
done"#;
    world.define("resolver", &["sh".into(), "-c".into(), resolve.into()]);
    let (code, merge) = run_json(&world, &["merge", &run_id, "--resolve", "resolver"]);
    assert_eq!(code, 0, "{merge}");
    assert_eq!(merge["branches"][1]["state"], "merged", "{merge}");
    assert_eq!(
        merge["branches"][1]["resolver"]["status"], "completed",
        "{merge}"
    );
    assert!(
        merge["branches"][1]["resolver"]["note"].is_string(),
        "{merge}"
    );
    assert_eq!(file_on(&world, "main", "same"), "same one\nsame two");
}

#[test]
fn a_failing_check_leaves_the_target_where_it_was() {
    let world = World::new();
    repository(&world, &["a"]);
    define_writer(&world, "writer");
    let (code, doc) = run_json(&world, &["run", "writer", "a changed", "--isolate"]);
    assert_eq!(code, 0, "{doc}");
    let run_id = doc["runId"].as_str().unwrap().to_owned();
    let target = git(&world.project, &["rev-parse", "main"]);
    let (code, merge) = run_json(
        &world,
        &["merge", &run_id, "--check", "echo the suite failed; exit 3"],
    );
    assert_eq!(code, 1, "{merge}");
    let branch = &merge["branches"][0];
    assert_eq!(branch["state"], "check_failed", "{merge}");
    assert!(
        branch["checkOutput"]
            .as_str()
            .unwrap()
            .contains("the suite failed"),
        "{merge}"
    );
    assert_eq!(
        git(&world.project, &["rev-parse", "main"]),
        target,
        "main did not move"
    );
}

#[test]
fn a_plan_lands_its_tasks_with_its_own_check() {
    let world = World::new();
    repository(&world, &["a"]);
    define_writer(&world, "writer");
    let plan = world.dir.path().join("plan.yaml");
    std::fs::write(
        &plan,
        "merge: true\nmergeCheck: grep -q planned a\ntasks:\n  - {agent: writer, task: a planned, isolate: true}\n",
    )
    .unwrap();
    let (code, doc) = run_json(&world, &["run", "--plan", plan.to_str().unwrap()]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["merge"]["check"], "grep -q planned a", "{doc}");
    assert_eq!(doc["merge"]["branches"][0]["state"], "merged", "{doc}");
    assert_eq!(file_on(&world, "main", "a"), "a planned");
}

#[test]
fn a_target_moved_while_the_queue_runs_is_refused() {
    let world = World::new();
    repository(&world, &["a"]);
    define_writer(&world, "writer");
    let (code, doc) = run_json(&world, &["run", "writer", "a changed", "--isolate"]);
    assert_eq!(code, 0, "{doc}");
    let run_id = doc["runId"].as_str().unwrap().to_owned();
    // The check commits to main in the project meanwhile, as a person would.
    let check = format!(
        "git -C '{}' -c user.name=P -c user.email=p@example.invalid commit -q --allow-empty -m mine",
        world.project.display()
    );
    let (code, merge) = run_json(&world, &["merge", &run_id, "--check", &check]);
    assert_eq!(code, 2, "{merge}");
    let branch = &merge["branches"][0];
    assert_eq!(branch["state"], "refused", "{merge}");
    assert!(
        branch["why"].as_str().unwrap().contains("main moved"),
        "{merge}"
    );
    assert_eq!(
        git(&world.project, &["log", "-1", "--format=%s", "main"]),
        "mine",
        "the person's commit stands"
    );
}

#[test]
fn a_sheep_closed_with_uncommitted_work_keeps_it_on_a_ref_of_its_own() {
    let world = World::new();
    repository(&world, &["a"]);
    define_writer(&world, "writer");
    let spawned = world.json(&["spawn", "writer", "--isolate"]);
    let agent = spawned["agentId"].as_str().unwrap().to_owned();
    let worktree = spawned["worktree"]["path"].as_str().unwrap().to_owned();
    assert!(
        !Path::new(&worktree).starts_with(&world.project),
        "worktrees live outside the project: {worktree}"
    );
    let task = world.delegate(&agent, "a from the sheep")["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    world.json(&["watch", &task, "--wait", "30"]);
    let closed = world.json(&["close", &agent]);
    let report = &closed["worktree"];
    let preserved = report["preserved"]
        .as_str()
        .unwrap_or_else(|| panic!("{closed}"));
    assert_eq!(preserved, format!("refs/shepherd/preserved/{agent}"));
    assert_eq!(
        git(&world.project, &["show", &format!("{preserved}:a")]),
        "a from the sheep"
    );
    assert!(
        !Path::new(&worktree).exists(),
        "its worktree is gone: nothing in it was lost"
    );
    let said = String::from_utf8(world.run(&["merge", &agent]).stdout).unwrap();
    assert!(said.contains("merged at"), "{said}");
    assert_eq!(file_on(&world, "main", "a"), "a from the sheep");
}

#[test]
fn a_session_lands_only_its_own_branches_and_landing_it_again_changes_nothing() {
    let world = World::new();
    repository(&world, &["a", "b", "c"]);
    define_writer(&world, "writer");
    for (session, tasks) in [
        ("alpha", ["writer=a from alpha", "writer=b from alpha"]),
        ("beta", ["writer=c from beta", "writer=c from beta again"]),
    ] {
        let mut args = vec!["run", "--parallel"];
        args.extend(tasks);
        args.extend(["--isolate", "--session-name", session]);
        let (code, doc) = run_json(&world, &args);
        assert_eq!(code, 0, "{doc}");
    }
    let (code, merge) = run_json(&world, &["merge", "--session", "alpha"]);
    assert_eq!(code, 0, "{merge}");
    let branches = merge["branches"].as_array().unwrap();
    assert_eq!(branches.len(), 2, "only alpha's two branches: {merge}");
    assert!(branches.iter().all(|b| b["state"] == "merged"), "{merge}");
    assert_eq!(file_on(&world, "main", "a"), "a from alpha");
    assert_eq!(file_on(&world, "main", "b"), "b from alpha");
    // Beta's work is still only on its own branches.
    assert_eq!(file_on(&world, "main", "c"), "base");
    // Landed once: landing the session again finds its branches landed and moves nothing.
    let landed = git(&world.project, &["rev-parse", "main"]);
    let (code, again) = run_json(&world, &["merge", "--session", "alpha"]);
    assert_eq!(code, 0, "{again}");
    let branches = again["branches"].as_array().unwrap();
    assert_eq!(branches.len(), 2, "{again}");
    assert!(
        branches.iter().all(|b| b["state"] == "already_landed"),
        "{again}"
    );
    assert_eq!(git(&world.project, &["rev-parse", "main"]), landed);
    // A session with no branches has nothing to land, and says so.
    let (code, none) = run_json(&world, &["merge", "--session", "gamma"]);
    assert_eq!(code, 2, "{none}");
    assert_eq!(none["error"]["code"], "nothing_to_land", "{none}");
}
