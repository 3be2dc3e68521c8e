use std::path::Path;
use std::process::Command;

use super::*;
use crate::git::git;

fn repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    run(dir.path(), &["init", "-q", "-b", "main"]);
    std::fs::write(dir.path().join("a.txt"), "a\n").unwrap();
    run(dir.path(), &["add", "a.txt"]);
    run(dir.path(), &["commit", "-q", "-m", "first"]);
    dir
}

/// The user's own git, as they would run it (hooks and all).
fn run(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

fn branch_exists(root: &Path, branch: &str) -> bool {
    git(
        root,
        &[
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("refs/heads/{branch}"),
        ],
    )
    .is_ok()
}

#[test]
fn a_clean_worktree_goes_and_work_stays_on_its_branch() {
    let dir = repo();
    let state = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let repo = probe(&root, 1).unwrap();
    let made = |name: &str| create(&repo, path_for(state.path(), &repo, name)).unwrap();

    let clean = made("r1-t1-a");
    assert!(clean.cwd().join("a.txt").is_file());
    assert!(
        clean.path.starts_with(state.path().join("worktrees")),
        "worktrees live outside the project: {}",
        clean.path.display()
    );
    assert!(clean.path.join(".git").is_dir(), "a repository of its own");
    assert_eq!(clean.base_branch.as_deref(), Some("main"));
    let status = git(&root, &["status", "--porcelain", "--untracked-files=all"]).unwrap();
    assert!(status.is_empty(), "the project does not see it: {status}");
    let report = release(&clean, true, "a");
    assert!(!report.kept && report.patch.is_none(), "{report:?}");
    assert!(!clean.path.exists());
    assert!(!branch_exists(&root, "shepherd/r1-t1-a"));

    // A commit and uncommitted changes: the changes are preserved on top of the branch,
    // the worktree goes, the branch stays.
    let dirty = made("r1-t2-b");
    std::fs::write(dirty.cwd().join("a.txt"), "a\nb\n").unwrap();
    run(&dirty.cwd(), &["commit", "-q", "-am", "grow a"]);
    assert!(
        !branch_exists(&root, "shepherd/r1-t2-b"),
        "the sheep's commit is in its own repository until it is released"
    );
    std::fs::write(dirty.cwd().join("new.txt"), "x").unwrap();
    std::fs::write(dirty.cwd().join("a.txt"), "a\nb\nc\n").unwrap();
    let report = release(&dirty, true, "shepherd-agent-b");
    assert!(!report.kept, "{report:?}");
    assert!(!dirty.path.exists(), "its worktree is gone");
    assert!(
        branch_exists(&root, "shepherd/r1-t2-b"),
        "its branch holds its work"
    );
    let preserved = report
        .preserved
        .as_deref()
        .expect("its changes are preserved");
    assert_eq!(preserved, "refs/shepherd/preserved/shepherd-agent-b");
    assert_eq!(
        git(&root, &["show", &format!("{preserved}:new.txt")]).unwrap(),
        "x"
    );
    assert_eq!(
        git(&root, &["show", &format!("{preserved}:a.txt")]).unwrap(),
        "a\nb\nc"
    );
    assert_eq!(
        git(&root, &["rev-parse", &format!("{preserved}^")]).unwrap(),
        git(&root, &["rev-parse", "shepherd/r1-t2-b"]).unwrap(),
        "preserved on top of its branch"
    );
    let patch = report.patch.as_ref().expect("its work is reported");
    assert_eq!(patch.files, ["a.txt", "new.txt"]);
    assert_eq!(
        patch.diffstat,
        "1 file changed, 2 insertions(+), 1 untracked file(s)"
    );
    assert_eq!(patch.commits.len(), 2, "{:?}", patch.commits);
    assert!(patch.commits[0].ends_with(" grow a"), "{:?}", patch.commits);
    assert!(
        patch.integrate.contains("shepherd merge shepherd/r1-t2-b"),
        "{}",
        patch.integrate
    );
    assert_eq!(report.landing_ref(), preserved);
    // Resumed after its worktree went, the sheep goes on from its branch.
    let resumed = create(&repo, dirty.path.clone()).unwrap();
    assert_eq!(
        std::fs::read_to_string(resumed.cwd().join("a.txt")).unwrap(),
        "a\nb\n"
    );
    assert_eq!(resumed.base, dirty.base);
    assert_eq!(resumed.base_branch.as_deref(), Some("main"));
    assert!(!release(&resumed, true, "again").kept);

    // Only uncommitted changes: preserved on a branch made at the base.
    let loose = made("r1-t4-d");
    std::fs::write(loose.cwd().join("loose.txt"), "loose").unwrap();
    let report = release(&loose, true, "d");
    assert!(!report.kept && report.preserved.is_some(), "{report:?}");
    assert_eq!(
        git(&root, &["rev-parse", "shepherd/r1-t4-d"]).unwrap(),
        loose.base
    );

    let unconfirmed = made("r1-t3-c");
    let kept = release(&unconfirmed, false, "c");
    assert!(kept.kept && unconfirmed.path.is_dir(), "{kept:?}");
    // A resume finds it again, as it was.
    let again = create(&repo, unconfirmed.path.clone()).unwrap();
    assert_eq!(again.base, unconfirmed.base);
}

#[test]
fn nothing_a_sheep_plants_in_its_repository_runs_at_release_or_moves_the_project() {
    let dir = repo();
    let state = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    run(&root, &["branch", "other"]);
    let main = git(&root, &["rev-parse", "main"]).unwrap();
    let repo = probe(&root, 1).unwrap();
    let made = create(&repo, path_for(state.path(), &repo, "r2-t1-a")).unwrap();
    let proof = state.path().join("proof");
    let wt = made.cwd();
    let ran = format!("echo ran >> {}; cat", proof.display());
    for (key, value) in [
        ("core.fsmonitor", ran.as_str()),
        ("filter.x.clean", ran.as_str()),
        ("filter.x.smudge", ran.as_str()),
        ("diff.x.textconv", ran.as_str()),
        ("diff.external", ran.as_str()),
    ] {
        run(&wt, &["config", key, value]);
    }
    std::fs::write(wt.join(".gitattributes"), "* filter=x diff=x\n").unwrap();
    let hooks = wt.join(".git/hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    for hook in ["reference-transaction", "pre-commit", "post-index-change"] {
        let file = hooks.join(hook);
        std::fs::write(
            &file,
            format!("#!/bin/sh\necho {hook} >> {}\n", proof.display()),
        )
        .unwrap();
        std::fs::set_permissions(&file, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
    }
    std::fs::write(wt.join("a.txt"), "changed\n").unwrap();
    // It tries to move the project's branches from inside (its repository has none of them).
    let _moved = Command::new("git")
        .args(["update-ref", "refs/heads/main", "HEAD"])
        .current_dir(&wt)
        .output();
    std::fs::remove_file(&proof).ok();
    let report = release(&made, true, "a");
    assert!(!report.kept, "{report:?}");
    assert!(
        !proof.exists(),
        "{}",
        std::fs::read_to_string(&proof).unwrap_or_default()
    );
    assert_eq!(git(&root, &["rev-parse", "main"]).unwrap(), main);
    assert!(branch_exists(&root, "other"));
    let preserved = report.preserved.unwrap();
    assert_eq!(
        git(&root, &["show", &format!("{preserved}:a.txt")]).unwrap(),
        "changed",
        "its change came home unfiltered"
    );
}

#[test]
fn a_worktree_of_the_linked_layout_is_still_released() {
    let dir = repo();
    let state = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let repo = probe(&root, 1).unwrap();
    let path = path_for(state.path(), &repo, "r3-t1-a");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let shown = path.display().to_string();
    run(
        &root,
        &["worktree", "add", "-q", "-b", "shepherd/r3-t1-a", &shown],
    );
    let found = create(&repo, path.clone()).unwrap();
    assert_eq!(found.base, git(&root, &["rev-parse", "HEAD"]).unwrap());
    std::fs::write(path.join("new.txt"), "x").unwrap();
    let report = release(&found, true, "a");
    assert!(!report.kept, "{report:?}");
    assert!(!path.exists());
    let preserved = report.preserved.unwrap();
    assert_eq!(
        git(&root, &["show", &format!("{preserved}:new.txt")]).unwrap(),
        "x"
    );

    // One whose sheep planted a program key in the shared configuration is kept, naming it.
    let path = path_for(state.path(), &repo, "r3-t2-b");
    let shown = path.display().to_string();
    run(
        &root,
        &["worktree", "add", "-q", "-b", "shepherd/r3-t2-b", &shown],
    );
    let found = create(&repo, path.clone()).unwrap();
    run(&path, &["config", "filter.x.clean", "cat"]);
    let report = release(&found, true, "b");
    assert!(report.kept, "{report:?}");
    assert!(
        report.reason.as_deref().unwrap().contains("filter.x.clean"),
        "{report:?}"
    );
}

#[test]
fn a_directory_outside_git_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let err = probe(dir.path(), 2).unwrap_err();
    assert_eq!(err.code, "not_a_git_repository");
    assert!(
        err.message.contains("task 2 asks for isolate"),
        "{}",
        err.message
    );
}

#[test]
fn a_sandbox_binds_the_worktree_and_the_objects_and_a_git_directory_read_only() {
    let dir = repo();
    let state = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join("sub")).unwrap();
    std::fs::write(root.join("sub/s.txt"), "s").unwrap();
    run(&root, &["add", "sub/s.txt"]);
    run(&root, &["commit", "-q", "-m", "sub"]);
    let repo = probe(&root.join("sub"), 1).unwrap();
    let made = create(&repo, path_for(state.path(), &repo, "r4-t1-a")).unwrap();
    let binds = sandbox_binds(state.path(), &root, &made.cwd());
    assert_eq!(
        binds.write,
        std::slice::from_ref(&made.path),
        "its .git is outside its cwd"
    );
    assert_eq!(binds.read, [root.join(".git/objects")]);
    let at_top = sandbox_binds(state.path(), &root, &made.path);
    assert!(at_top.write.is_empty(), "{at_top:?}");

    let plain = sandbox_binds(state.path(), &root, &root);
    assert_eq!(plain.read, [root.join(".git")]);
    assert!(plain.write.is_empty());
    let below = sandbox_binds(state.path(), &root, &root.join("sub"));
    assert_eq!(
        below,
        GitBinds::default(),
        "the project's .git is not in its cwd"
    );
    // A `.git` file a sheep wrote widens nothing: it is bound read-only like any other.
    std::fs::write(root.join("sub/.git"), "gitdir: /worktrees/x\n").unwrap();
    let planted = sandbox_binds(state.path(), &root, &root.join("sub"));
    assert_eq!(planted.read, [root.join("sub/.git")]);
    assert!(planted.write.is_empty());
}
