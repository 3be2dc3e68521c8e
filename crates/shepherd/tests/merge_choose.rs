//! Seeing and choosing before anything lands, and refusals that say what is wrong, against
//! real git: `--dry-run` names the conflicting pair and changes nothing; a failed task's
//! branch lands only with `--include-failed` (B7); each refusal before the queue has a code of
//! its own (B8), `--into` is a plain branch name (B9), an unknown `--resolve` agent is refused
//! up front (B12), a deleted branch stops the merge before anything lands (B13); a resolver
//! shows as `<agent> (resolver): <label>` and writes its note into the parent's one session
//! (P1-4), and a sheep is named by its agent id, never its display name.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::herd_support::World;
use crate::merge_support::{
    conflicting_run, define_resolver, define_writer, file_on, repository, run_json,
};
use shepherd_testkit::git::git;

#[test]
fn a_dry_run_names_the_conflicting_pair_and_changes_nothing() {
    let world = World::new();
    let (run_id, _) = conflicting_run(&world);
    let before = git(&world.project, &["rev-parse", "main"]);
    let refs = git(&world.project, &["for-each-ref"]);
    let (code, preview) = run_json(&world, &["merge", &run_id, "--dry-run"]);
    assert_eq!(code, 0, "{preview}");
    let branches = preview["branches"].as_array().unwrap();
    assert_eq!(branches.len(), 2, "{preview}");
    let (first, second) = (&branches[0], &branches[1]);
    assert_eq!(first["commits"].as_array().unwrap().len(), 1, "{preview}");
    assert!(
        first["diffstat"].as_str().unwrap().contains("same"),
        "{preview}"
    );
    // Neither conflicts with main alone; each conflicts with the other, in `same`.
    let none = serde_json::json!([]);
    let with_target = second.get("conflictsWithTarget").unwrap_or(&none);
    assert_eq!(with_target, &none, "{preview}");
    assert_eq!(
        second["conflictsWith"][0]["branch"], first["branch"],
        "{preview}"
    );
    assert_eq!(second["conflictsWith"][0]["files"][0], "same", "{preview}");
    let text = String::from_utf8(world.run(&["merge", &run_id, "--dry-run"]).stdout).unwrap();
    assert!(
        text.contains(first["branch"].as_str().unwrap()) && text.contains("conflict"),
        "{text}"
    );
    assert_eq!(git(&world.project, &["rev-parse", "main"]), before);
    assert_eq!(git(&world.project, &["for-each-ref"]), refs);
    let worktrees = git(&world.project, &["worktree", "list"]);
    assert_eq!(worktrees.lines().count(), 1, "{worktrees}");
}

#[test]
fn b7_a_failed_tasks_branch_lands_only_when_asked_and_is_marked() {
    let world = World::new();
    repository(&world, &["a", "b"]);
    define_writer(&world, "writer");
    // It writes its file, leaves it uncommitted, and fails.
    let failing = r#"while true; do
  t=$(shepherd inbox --wait 30) || continue
  [ -n "$t" ] || continue
  echo half-done > b
  shepherd done --status failed --summary "gave up"
done"#;
    world.define("quitter", &["sh".into(), "-c".into(), failing.into()]);
    let (code, doc) = run_json(
        &world,
        &[
            "run",
            "--isolate",
            "--merge",
            "--parallel",
            "writer=a one",
            "quitter=b",
        ],
    );
    assert_eq!(code, 1, "{doc}");
    let merge = &doc["merge"];
    assert_eq!(merge["branches"][0]["state"], "merged", "{merge}");
    assert_eq!(merge["branches"][1]["state"], "skipped", "{merge}");
    assert_eq!(merge["branches"][1]["taskStatus"], "failed", "{merge}");
    assert_eq!(file_on(&world, "main", "b"), "base");
    // Asked for, it lands, marked as the failed task's.
    let run_id = doc["run"]["runId"].as_str().unwrap();
    let (code, again) = run_json(&world, &["merge", run_id, "--include-failed"]);
    assert_eq!(code, 0, "{again}");
    assert_eq!(again["branches"][1]["state"], "merged", "{again}");
    assert_eq!(again["branches"][1]["taskStatus"], "failed", "{again}");
    assert_eq!(file_on(&world, "main", "b"), "half-done");
    let text = String::from_utf8(world.run(&["merge", run_id]).stdout).unwrap();
    assert!(text.contains("failed"), "{text}");
}

#[test]
fn b8_b9_b12_b13_each_refusal_names_its_own_cause_before_anything_lands() {
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
    let before = git(&world.project, &["rev-parse", "main"]);
    let heads = || git(&world.project, &["for-each-ref", "refs/heads"]);
    let branches = heads();

    // B9: --into is a plain branch name, nothing git reads as something else.
    for into in ["refs/heads/x", "@", "@{-1}", "bad..name", "HEAD", "-D"] {
        let into = format!("--into={into}");
        let (code, error, message) = world.error(&["merge", &run_id, &into]);
        assert_eq!(
            (code, error.as_str()),
            (2, "invalid_into"),
            "{into}: {message}"
        );
    }
    assert_eq!(heads(), branches, "no branch was made");

    // B12: an unknown resolver or fixer agent is refused before the first step.
    let (_, error, message) = world.error(&["merge", &run_id, "--resolve", "no-such-agent"]);
    assert_eq!(error, "unknown_agent", "{message}");
    let (_, error, message) = world.error(&["merge", &run_id, "--fix", "no-such-agent"]);
    assert_eq!(error, "unknown_agent", "{message}");

    // B8: a dirty checked-out target has a code of its own.
    std::fs::write(world.project.join("a"), "mine\n").unwrap();
    let (_, error, message) = world.error(&["merge", &run_id]);
    assert_eq!(error, "dirty_target", "{message}");
    git(&world.project, &["checkout", "--", "a"]);

    // B13: a branch the user deleted stops the merge before anything lands.
    // (Its branch and the changes preserved beside it: every one of them, here.)
    let made = git(
        &world.project,
        &[
            "for-each-ref",
            "--format=%(refname)",
            "refs/heads/shepherd",
            "refs/shepherd/preserved",
        ],
    );
    for name in made.lines() {
        git(&world.project, &["update-ref", "-d", name]);
    }
    let (_, error, message) = world.error(&["merge", &run_id]);
    assert_eq!(error, "branch_gone", "{message}");
    assert!(message.contains("does not exist"), "{message}");
    assert_eq!(git(&world.project, &["rev-parse", "main"]), before);
}

#[test]
fn p1_4_a_resolver_shows_its_role_and_writes_its_note_into_the_parents_one_session() {
    let world = World::new();
    repository(&world, &["same"]);
    define_writer(&world, "writer");
    // Two isolated sheep spawned by hand with labels (no run), both changing `same`.
    let one = world.json(&["spawn", "writer", "--label", "fix-login", "--isolate"]);
    let two = world.json(&["spawn", "writer", "--label", "fix-logout", "--isolate"]);
    let (one, two) = (
        one["agentId"].as_str().unwrap().to_owned(),
        two["agentId"].as_str().unwrap().to_owned(),
    );
    for (agent, task) in [(&one, "same one"), (&two, "same two")] {
        let task = world.delegate(agent, task)["taskId"]
            .as_str()
            .unwrap()
            .to_owned();
        world.json(&["watch", &task, "--wait", "30"]);
    }
    world.json(&["close", &one]);
    world.json(&["close", &two]);
    let sessions = |world: &World| -> Vec<std::path::PathBuf> {
        let root = world.project.join(".shepherd/sessions");
        let mut found: Vec<_> = std::fs::read_dir(&root)
            .map(|d| {
                d.map(|e| e.unwrap().path())
                    .filter(|p| {
                        p.is_dir() && !p.file_name().unwrap().to_string_lossy().starts_with('.')
                    })
                    .collect()
            })
            .unwrap_or_default();
        found.sort();
        found
    };
    let before = sessions(&world);
    assert_eq!(before.len(), 1, "{before:?}");
    define_resolver(
        &world,
        "resolver",
        "printf 'same one\\nsame two\\n' > same; git add same; \
         git -c user.name=R -c user.email=r@example.invalid commit -q --no-edit",
    );
    // A display name is not a lifecycle id (seed 004): only agent ids name sheep to land.
    let (_, error, message) = world.error(&["merge", "writer: fix-login"]);
    assert_eq!(error, "unknown_landing", "{message}");
    let (code, merge) = run_json(&world, &["merge", &one, &two, "--resolve", "resolver"]);
    assert_eq!(code, 0, "{merge}");
    let resolver = &merge["branches"][1]["resolver"];
    assert_eq!(
        resolver["displayName"], "resolver (resolver): fix-logout",
        "{merge}"
    );
    // Its note is in the one session the parent has, not a second one.
    assert_eq!(sessions(&world), before);
    let note = resolver["note"].as_str().unwrap();
    assert!(
        world.project.join(note).starts_with(&before[0]),
        "{note} is outside {}",
        before[0].display()
    );
}
