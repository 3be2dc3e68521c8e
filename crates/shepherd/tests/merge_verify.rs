//! A landing is verified before it is reported, against real git: a resolver that aborts the
//! merge and commits something else (B1), or resets it away so the target would move backwards
//! (B2), leaves a rejected step, the target where it was and `shepherd.md` saying why; a run
//! landed before is not checked or rewritten again (B3).

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::path::{Path, PathBuf};

use crate::herd_support::World;
use crate::merge_support::{
    conflicting_run, define_resolver, define_writer, file_on, repository, run_json,
};
use shepherd_testkit::git::git;

/// The line of the session's Branches section that names `branch`.
fn branches_line(session: &Path, branch: &str) -> String {
    let index = std::fs::read_to_string(session.join("shepherd.md")).unwrap();
    let section = index
        .split("## Branches")
        .nth(1)
        .unwrap_or_else(|| panic!("{index}"));
    section
        .lines()
        .find(|l| l.contains(branch))
        .unwrap_or_else(|| panic!("{branch} not listed:\n{index}"))
        .to_owned()
}

const IDENTITY: &str = "git -c user.name=Liar -c user.email=liar@example.invalid";

#[test]
fn b1_a_resolver_that_aborts_and_commits_something_else_is_rejected() {
    let world = World::new();
    let (run_id, session) = conflicting_run(&world);
    define_resolver(
        &world,
        "liar",
        &format!(
            "git merge --abort; echo other > OTHER.txt; git add OTHER.txt; {IDENTITY} commit -qm x"
        ),
    );
    let (code, merge) = run_json(&world, &["merge", &run_id, "--resolve", "liar"]);
    assert_eq!(code, 2, "{merge}");
    assert_eq!(merge["branches"][0]["state"], "merged", "{merge}");
    let first = merge["branches"][0]["commit"].as_str().unwrap().to_owned();
    let second = &merge["branches"][1];
    assert_eq!(second["state"], "rejected", "{merge}");
    let why = second["why"].as_str().unwrap();
    assert!(!why.is_empty(), "{merge}");
    // The target stayed at the first landing: the unrelated commit is not on it.
    assert_eq!(git(&world.project, &["rev-parse", "main"]), first);
    let ls = git(&world.project, &["ls-tree", "--name-only", "main"]);
    assert!(!ls.contains("OTHER.txt"), "{ls}");
    let line = branches_line(&session, second["branch"].as_str().unwrap());
    assert!(line.contains("rejected"), "{line}");
    assert!(!line.contains("merged"), "{line}");
}

#[test]
fn b2_a_resolver_that_resets_the_merge_away_cannot_move_the_target_backwards() {
    let world = World::new();
    let (run_id, session) = conflicting_run(&world);
    define_resolver(
        &world,
        "resetter",
        "git merge --abort; git reset -q --hard HEAD~1",
    );
    let (code, merge) = run_json(
        &world,
        &["merge", &run_id, "--into", "land", "--resolve", "resetter"],
    );
    assert_eq!(code, 2, "{merge}");
    assert_eq!(merge["branches"][0]["state"], "merged", "{merge}");
    let first = merge["branches"][0]["commit"].as_str().unwrap().to_owned();
    assert_eq!(merge["branches"][1]["state"], "rejected", "{merge}");
    // `land` keeps the first landing: it did not move back to where it began.
    assert_eq!(git(&world.project, &["rev-parse", "land"]), first);
    assert_eq!(file_on(&world, "land", "same"), "same one");
    let line = branches_line(&session, merge["branches"][1]["branch"].as_str().unwrap());
    assert!(line.contains("rejected"), "{line}");
}

#[test]
fn b3_landing_a_landed_run_again_checks_and_rewrites_nothing() {
    let world = World::new();
    repository(&world, &["a", "b"]);
    define_writer(&world, "writer");
    let (code, doc) = run_json(
        &world,
        &[
            "run",
            "--isolate",
            "--parallel",
            "writer=a one",
            "writer=b two",
        ],
    );
    assert_eq!(code, 0, "{doc}");
    let run_id = doc["runId"].as_str().unwrap().to_owned();
    let session = PathBuf::from(doc["sessionPath"].as_str().unwrap());
    let (code, first) = run_json(&world, &["merge", &run_id, "--check", "true"]);
    assert_eq!(code, 0, "{first}");
    let tip = git(&world.project, &["rev-parse", "main"]);
    let index = std::fs::read_to_string(session.join("shepherd.md")).unwrap();

    // Again, with a check that would fail and leaves a mark when it runs: it does not run.
    let mark = world.dir.path().join("checked");
    let check = format!("touch {}; false", mark.display());
    let (code, again) = run_json(&world, &["merge", &run_id, "--check", &check]);
    assert_eq!(code, 0, "{again}");
    for (i, branch) in again["branches"].as_array().unwrap().iter().enumerate() {
        assert_eq!(branch["state"], "already_landed", "{again}");
        assert_eq!(branch["commit"], first["branches"][i]["commit"], "{again}");
    }
    assert!(!mark.exists(), "the check ran for branches landed before");
    assert_eq!(git(&world.project, &["rev-parse", "main"]), tip);
    assert_eq!(
        std::fs::read_to_string(session.join("shepherd.md")).unwrap(),
        index,
        "shepherd.md was rewritten"
    );
}
