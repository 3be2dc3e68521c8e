//! How branches land, against real git through the real binary and broker: `--strategy
//! squash`, `rebase` and `ff-only` each land a run's branches and what they made verifies by
//! the strategy's rule (one commit of the merge's tree on the old target; the branch's patches
//! replayed on it; the target moved to the tip), a result that does not is rejected or refused
//! and the target stays put; `--prune` deletes the landed branches and their preserved changes
//! and nothing else; `--fix AGENT` hands a failing check to a fixer sheep, runs the check again
//! after it is done, and lands what it made as a merge of the branch.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::collections::BTreeSet;

use serde_json::Value;
use shepherd_testkit::git::git;

use crate::herd_support::World;
use crate::merge_support::{
    conflicting_run, define_resolver, define_writer, file_on, isolated_run, repository, run_json,
};

/// A shell sheep: for each task it writes the task's first line into the file its first word
/// names and commits it, then appends `more` to it and leaves that uncommitted (kept on a
/// preserved ref): two commits of work on its branch.
fn define_committer(world: &World, name: &str) {
    let script = r#"while true; do
  t=$(shepherd inbox --wait 30) || continue
  [ -n "$t" ] || continue
  line=$(printf '%s\n' "$t" | head -n 1)
  file=${line%% *}
  printf '%s\n' "$line" > "$file"
  git add "$file"
  git -c user.name=Sheep -c user.email=sheep@example.invalid commit -q -m "write $file"
  printf 'more\n' >> "$file"
  shepherd done --status completed --summary "wrote $file"
done"#;
    world.define(name, &["sh".into(), "-c".into(), script.into()]);
}

fn rev(world: &World, name: &str) -> String {
    git(&world.project, &["rev-parse", name])
}

/// A commit's parents.
fn parents(world: &World, commit: &str) -> Vec<String> {
    git(
        &world.project,
        &["rev-list", "--parents", "-n", "1", commit],
    )
    .split_whitespace()
    .skip(1)
    .map(str::to_owned)
    .collect()
}

fn is_ancestor(world: &World, ancestor: &str, commit: &str) -> bool {
    std::process::Command::new("git")
        .args(["merge-base", "--is-ancestor", ancestor, commit])
        .current_dir(&world.project)
        .status()
        .unwrap()
        .success()
}

/// Branch `index` of a merge's answer: its field `key` as text.
fn field<'a>(merge: &'a Value, index: usize, key: &str) -> &'a str {
    merge["branches"][index][key]
        .as_str()
        .unwrap_or_else(|| panic!("branch {index} has no {key}: {merge}"))
}

#[test]
fn squash_lands_each_branch_as_one_commit_of_its_merge_on_the_old_target() {
    let world = World::new();
    repository(&world, &["a", "b"]);
    define_committer(&world, "committer");
    let (run_id, _) = isolated_run(&world, &["committer=a one", "committer=b two"]);
    let before = rev(&world, "main");
    let (code, merge) = run_json(
        &world,
        &[
            "merge",
            &run_id,
            "--strategy",
            "squash",
            "--check",
            "test -f a",
        ],
    );
    assert_eq!(code, 0, "{merge}");
    assert_eq!(merge["strategy"], "squash", "{merge}");
    let (first, second) = (field(&merge, 0, "commit"), field(&merge, 1, "commit"));
    // One commit per branch, each with one parent: the target as it was before it.
    assert_eq!(parents(&world, first), std::slice::from_ref(&before));
    assert_eq!(parents(&world, second), [first.to_owned()]);
    assert_eq!(rev(&world, "main"), second);
    for (index, old) in [(0, before.as_str()), (1, first)] {
        let commit = field(&merge, index, "commit");
        let tip = rev(&world, field(&merge, index, "landingRef"));
        // Its tree is the tree git's merge-tree gives of the branch onto that target.
        let merged = git(
            &world.project,
            &["merge-tree", "--write-tree", "--name-only", old, &tip],
        );
        assert_eq!(
            rev(&world, &format!("{commit}^{{tree}}")),
            merged.lines().next().unwrap()
        );
        // The branch's own commits are not on the target: only their changes are.
        assert!(!is_ancestor(&world, &tip, "main"), "{tip} is on main");
        let subject = git(&world.project, &["log", "-1", "--format=%s", commit]);
        assert!(
            subject.starts_with(&format!("Land {}", field(&merge, index, "branch"))),
            "{subject}"
        );
    }
    assert_eq!(file_on(&world, "main", "a"), "a one\nmore");
    assert_eq!(file_on(&world, "main", "b"), "b two\nmore");
}

#[test]
fn a_squash_whose_resolver_committed_something_else_is_rejected_and_the_target_stays() {
    let world = World::new();
    let (run_id, _) = conflicting_run(&world);
    let before = rev(&world, "main");
    define_resolver(
        &world,
        "liar",
        "git merge --abort; echo other > OTHER.txt; git add OTHER.txt; \
         git -c user.name=Liar -c user.email=liar@example.invalid commit -qm x",
    );
    let (code, merge) = run_json(
        &world,
        &[
            "merge",
            &run_id,
            "--strategy",
            "squash",
            "--resolve",
            "liar",
        ],
    );
    assert_eq!(code, 2, "{merge}");
    assert_eq!(merge["branches"][0]["state"], "merged", "{merge}");
    assert_eq!(merge["branches"][1]["state"], "rejected", "{merge}");
    assert!(field(&merge, 1, "why").contains("not a landing"), "{merge}");
    // The target holds the first squash and nothing of the resolver's.
    let first = field(&merge, 0, "commit");
    assert_eq!(rev(&world, "main"), first);
    assert_eq!(parents(&world, first), [before]);
    let listed = git(&world.project, &["ls-tree", "--name-only", "main"]);
    assert!(!listed.contains("OTHER.txt"), "{listed}");
}

#[test]
fn rebase_replays_each_branchs_commits_on_the_target_with_their_patches() {
    let world = World::new();
    repository(&world, &["a", "b"]);
    define_committer(&world, "committer");
    let (run_id, _) = isolated_run(&world, &["committer=a one", "committer=b two"]);
    let before = rev(&world, "main");
    let (code, merge) = run_json(
        &world,
        &[
            "merge",
            &run_id,
            "--strategy",
            "rebase",
            "--check",
            "test -f b",
        ],
    );
    assert_eq!(code, 0, "{merge}");
    assert_eq!(merge["strategy"], "rebase", "{merge}");
    // Linear: two commits per branch, no merge among them, the old target below them.
    let range = format!("{before}..main");
    let count = |extra: &[&str]| {
        let mut args = vec!["rev-list", "--count"];
        args.extend(extra);
        args.push(&range);
        git(&world.project, &args)
    };
    assert_eq!(count(&[]), "4");
    assert_eq!(count(&["--merges"]), "0");
    assert_eq!(rev(&world, "main"), field(&merge, 1, "commit"));
    for index in 0..2 {
        let landing = field(&merge, index, "landingRef");
        // Every patch of the branch is on main (`git cherry` marks it `-`).
        let cherry = git(&world.project, &["cherry", "main", landing]);
        assert_eq!(cherry.lines().count(), 2, "{cherry}");
        assert!(cherry.lines().all(|l| l.starts_with("- ")), "{cherry}");
    }
    // The second branch began where the first did: its commits were replayed, not taken.
    let second_tip = rev(&world, field(&merge, 1, "landingRef"));
    assert!(!is_ancestor(&world, &second_tip, "main"));
    let subjects = git(&world.project, &["log", "--reverse", "--format=%s", &range]);
    assert_eq!(subjects.lines().filter(|s| *s == "write a").count(), 1);
    assert_eq!(subjects.lines().filter(|s| *s == "write b").count(), 1);
    assert_eq!(file_on(&world, "main", "a"), "a one\nmore");
    assert_eq!(file_on(&world, "main", "b"), "b two\nmore");
}

#[test]
fn ff_only_moves_the_target_to_the_tip_and_refuses_a_branch_that_is_not_a_fast_forward() {
    let world = World::new();
    repository(&world, &["a", "b"]);
    define_writer(&world, "writer");
    let (run_id, _) = isolated_run(&world, &["writer=a one", "writer=b two"]);
    let (code, merge) = run_json(&world, &["merge", &run_id, "--strategy", "ff-only"]);
    assert_eq!(code, 2, "{merge}");
    // The first branch began at main: main is now its very tip, no commit made.
    assert_eq!(merge["branches"][0]["state"], "merged", "{merge}");
    let tip = rev(&world, field(&merge, 0, "landingRef"));
    assert_eq!(field(&merge, 0, "commit"), tip);
    assert_eq!(rev(&world, "main"), tip);
    // The second began at the old main too: after the first it is no fast-forward.
    assert_eq!(merge["branches"][1]["state"], "refused", "{merge}");
    assert!(
        field(&merge, 1, "why").contains("not a fast-forward"),
        "{merge}"
    );
    assert_eq!(file_on(&world, "main", "b"), "base");
}

/// Every branch and preserved ref of the repository.
fn refs(world: &World) -> BTreeSet<String> {
    git(
        &world.project,
        &[
            "for-each-ref",
            "--format=%(refname)",
            "refs/heads",
            "refs/shepherd/preserved",
        ],
    )
    .lines()
    .map(str::to_owned)
    .collect()
}

#[test]
fn prune_deletes_the_landed_branches_and_their_preserved_changes_and_nothing_else() {
    let world = World::new();
    repository(&world, &["a", "b", "c"]);
    define_writer(&world, "writer");
    let (run_id, _) = isolated_run(
        &world,
        &["writer=a one", "writer=b two", "writer=c fails its check"],
    );
    // Another run's branches and a branch of the user's, none of them landed.
    isolated_run(&world, &["writer=a elsewhere"]);
    git(&world.project, &["branch", "mine"]);
    let before = refs(&world);
    let (code, merge) = run_json(
        &world,
        &["merge", &run_id, "--prune", "--check", "! grep -q fails c"],
    );
    assert_eq!(code, 1, "{merge}");
    assert_eq!(merge["branches"][0]["state"], "merged", "{merge}");
    assert_eq!(merge["branches"][1]["state"], "merged", "{merge}");
    assert_eq!(merge["branches"][2]["state"], "check_failed", "{merge}");
    let mut gone = BTreeSet::new();
    for index in 0..2 {
        gone.insert(format!("refs/heads/{}", field(&merge, index, "branch")));
        let landing = field(&merge, index, "landingRef");
        // The writer leaves its work uncommitted: each branch lands from a preserved ref.
        assert!(landing.starts_with("refs/shepherd/preserved/"), "{landing}");
        gone.insert(landing.to_owned());
    }
    assert!(gone.is_subset(&before), "{gone:?} not in {before:?}");
    let expected: BTreeSet<String> = before.difference(&gone).cloned().collect();
    assert_eq!(refs(&world), expected);
    // What landed stays landed.
    assert_eq!(file_on(&world, "main", "a"), "a one");
    assert_eq!(file_on(&world, "main", "b"), "b two");
    assert_eq!(file_on(&world, "main", "c"), "base");
}

/// A check that counts its runs in `runs` and passes once the merge worktree holds `fixed`.
fn counting_check(world: &World) -> (String, std::path::PathBuf) {
    let runs = world.dir.path().join("check-runs");
    (
        format!("echo ran >> '{}'; test -f fixed", runs.display()),
        runs,
    )
}

#[test]
fn a_fixer_mends_a_failing_check_the_check_runs_again_and_the_branch_lands() {
    let world = World::new();
    repository(&world, &["a"]);
    define_writer(&world, "writer");
    let (run_id, session) = isolated_run(&world, &["writer=a one"]);
    let before = rev(&world, "main");
    define_resolver(
        &world,
        "fixer",
        "echo fixed > fixed; git add fixed; \
         git -c user.name=Fixer -c user.email=f@example.invalid commit -qm fix",
    );
    let (check, runs) = counting_check(&world);
    let (code, merge) = run_json(
        &world,
        &["merge", &run_id, "--check", &check, "--fix", "fixer"],
    );
    assert_eq!(code, 0, "{merge}");
    assert_eq!(merge["branches"][0]["state"], "merged", "{merge}");
    let fixers = merge["branches"][0]["fixers"].as_array().unwrap();
    assert_eq!(fixers.len(), 1, "{merge}");
    assert_eq!(fixers[0]["status"], "completed", "{merge}");
    let shown = fixers[0]["displayName"].as_str().unwrap();
    assert!(shown.starts_with("fixer (fixer)"), "{shown}");
    // Its note is in the session of the work it fixed.
    let note = fixers[0]["note"].as_str().unwrap();
    assert!(world.project.join(note).starts_with(&session), "{note}");
    // The check ran twice: failing, then on what the fixer committed.
    assert_eq!(std::fs::read_to_string(&runs).unwrap().lines().count(), 2);
    // What landed is a merge of the branch onto the old target, the fix part of it.
    let landed = field(&merge, 0, "commit");
    assert_eq!(rev(&world, "main"), landed);
    let tip = rev(&world, field(&merge, 0, "landingRef"));
    assert_eq!(parents(&world, landed), [before, tip]);
    assert_eq!(file_on(&world, "main", "fixed"), "fixed");
    assert_eq!(file_on(&world, "main", "a"), "a one");
    let trailers = git(
        &world.project,
        &[
            "log",
            "-1",
            "--format=%(trailers:key=Shepherd-Fixer)",
            landed,
        ],
    );
    assert!(trailers.contains(shown), "{trailers}");
}

#[test]
fn a_fixer_that_mends_nothing_leaves_the_check_failed_and_the_target_where_it_was() {
    let world = World::new();
    repository(&world, &["a"]);
    define_writer(&world, "writer");
    let (run_id, _) = isolated_run(&world, &["writer=a one"]);
    let before = rev(&world, "main");
    define_resolver(&world, "idler", "true");
    let (check, runs) = counting_check(&world);
    let (code, merge) = run_json(
        &world,
        &[
            "merge",
            &run_id,
            "--check",
            &check,
            "--fix",
            "idler",
            "--fix-attempts",
            "1",
        ],
    );
    assert_eq!(code, 1, "{merge}");
    assert_eq!(merge["branches"][0]["state"], "check_failed", "{merge}");
    assert_eq!(
        merge["branches"][0]["fixers"].as_array().unwrap().len(),
        1,
        "{merge}"
    );
    assert_eq!(std::fs::read_to_string(&runs).unwrap().lines().count(), 2);
    assert_eq!(rev(&world, "main"), before);
}
