//! Reads, in the project's repository, the facts a step's result is verified on (its parents,
//! its tree, the tree a merge of the branch gives, the patches on each side), and checks them
//! with the strategy's rule ([`shepherd_core::land::verify`]). The result has been fetched
//! home first: nothing is asked of the repository a resolver or fixer held.

use std::path::Path;

use shepherd_core::land::Strategy;
use shepherd_core::land::verify::{Facts, verify};

use super::git;
use crate::git::{Git, GitError};

/// Checks that `new` lands `tip` on `old` as `strategy` says; `expected_tree` is the tree a
/// squash must hold when a sheep resolved or fixed it (else the tree `git merge-tree` gives).
/// `Err` says what was found.
pub(super) fn landing(
    repo: &Path,
    strategy: Strategy,
    old: &str,
    tip: &str,
    new: &str,
    expected_tree: Option<&str>,
) -> Result<(), String> {
    let facts = facts(repo, strategy, old, tip, new, expected_tree).map_err(|e| e.to_string())?;
    verify(strategy, &facts)
}

fn facts(
    repo: &Path,
    strategy: Strategy,
    old: &str,
    tip: &str,
    new: &str,
    expected_tree: Option<&str>,
) -> Result<Facts, GitError> {
    let listed = git::git(repo, &["rev-list", "--parents", "-n", "1", new])?;
    let parents: Vec<String> = listed
        .split_whitespace()
        .skip(1)
        .map(str::to_owned)
        .collect();
    let mut facts = Facts {
        old: old.to_owned(),
        tip: tip.to_owned(),
        new: new.to_owned(),
        parents,
        ..Facts::default()
    };
    match strategy {
        Strategy::Merge => {}
        Strategy::Squash => {
            facts.tree = Some(git::git(repo, &["rev-parse", &format!("{new}^{{tree}}")])?);
            facts.expected_tree = match expected_tree {
                Some(tree) => Some(tree.to_owned()),
                None => merge_tree(repo, old, tip)?,
            };
        }
        Strategy::Rebase | Strategy::FfOnly => {
            facts.old_is_ancestor = is_ancestor(repo, old, new);
            if strategy == Strategy::Rebase {
                facts.patches = patch_ids(repo, &format!("{old}..{new}"))?;
                facts.expected_patches = branch_patches(repo, old, tip)?;
            }
        }
    }
    Ok(facts)
}

/// Whether `ancestor` is `commit` or one of its ancestors.
pub(super) fn is_ancestor(repo: &Path, ancestor: &str, commit: &str) -> bool {
    git::git(repo, &["merge-base", "--is-ancestor", ancestor, commit]).is_ok()
}

/// The tree a merge of `theirs` into `ours` gives, when it merges without a conflict.
pub(super) fn merge_tree(
    repo: &Path,
    ours: &str,
    theirs: &str,
) -> Result<Option<String>, GitError> {
    let ran = Git::at(repo).output(&[
        "merge-tree",
        "--write-tree",
        "--name-only",
        "--no-messages",
        ours,
        theirs,
    ])?;
    match ran.code {
        Some(0) => Ok(ran.stdout.lines().next().map(str::to_owned)),
        Some(1) => Ok(None),
        _ => Err(GitError::Failed {
            args: format!("merge-tree {ours} {theirs}"),
            message: ran.complaint(),
        }),
    }
}

/// The branch's commits the target does not hold by patch (`git cherry`), oldest first.
pub(super) fn commits_to_replay(
    repo: &Path,
    target: &str,
    tip: &str,
) -> Result<Vec<String>, GitError> {
    let listed = git::git(repo, &["cherry", target, tip])?;
    Ok(listed
        .lines()
        .filter_map(|line| line.strip_prefix("+ "))
        .map(str::to_owned)
        .collect())
}

/// The patch ids of the branch's commits a rebase replays.
fn branch_patches(repo: &Path, target: &str, tip: &str) -> Result<Vec<String>, GitError> {
    let mut ids = Vec::new();
    for commit in commits_to_replay(repo, target, tip)? {
        ids.extend(patch_ids(repo, &format!("{commit}^!"))?);
    }
    Ok(ids)
}

/// The stable patch ids of the commits of `range`, oldest first (a commit without changes has
/// none).
fn patch_ids(repo: &Path, range: &str) -> Result<Vec<String>, GitError> {
    let diff = git::git(
        repo,
        &[
            "log",
            "-p",
            "--reverse",
            "--no-merges",
            "--no-color",
            "--format=commit %H",
            range,
        ],
    )?;
    if diff.trim().is_empty() {
        return Ok(Vec::new());
    }
    let ids = Git::at(repo).run_with_input(&["patch-id", "--stable"], diff.into_bytes())?;
    Ok(ids
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .map(str::to_owned)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn sh(dir: &Path, script: &str) -> String {
        let out = Command::new("sh")
            .args(["-c", script])
            .current_dir(dir)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
            .output()
            .unwrap();
        assert!(out.status.success(), "{script}: {out:?}");
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    #[test]
    fn each_strategy_accepts_what_it_makes_and_rejects_what_a_sheep_made_instead() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path();
        sh(
            repo,
            "git init -q -b main && echo a > a && git add a && git commit -qm a && \
             git checkout -qb work && echo b > b && git add b && git commit -qm b && \
             echo c > c && git add c && git commit -qm c && git checkout -q main && \
             echo d > d && git add d && git commit -qm d",
        );
        let old = sh(repo, "git rev-parse main");
        let tip = sh(repo, "git rev-parse work");
        // A merge, as the queue makes it.
        let merged = sh(
            repo,
            "git merge -q --no-ff --no-edit work && git rev-parse HEAD && git reset -q --hard HEAD~1",
        );
        assert_eq!(
            landing(repo, Strategy::Merge, &old, &tip, &merged, None),
            Ok(())
        );
        // Something else committed on the target: its parent is the old target alone.
        let other = sh(
            repo,
            "echo x > x && git add x && git commit -qm x && git rev-parse HEAD && git reset -q --hard HEAD~1",
        );
        let found = landing(repo, Strategy::Merge, &old, &tip, &other, None).unwrap_err();
        assert!(found.contains("is not a merge"), "{found}");
        // A squash of the branch, and one with a tree of its own.
        let squashed = sh(
            repo,
            "git merge -q --squash work >/dev/null && git commit -qm s && git rev-parse HEAD && git reset -q --hard HEAD~1",
        );
        assert_eq!(
            landing(repo, Strategy::Squash, &old, &tip, &squashed, None),
            Ok(())
        );
        assert!(landing(repo, Strategy::Squash, &old, &tip, &other, None).is_err());
        // A rebase of the branch, and the rebase less one of its commits.
        let rebased = sh(
            repo,
            "git checkout -q --detach main && git cherry-pick main..work >/dev/null && git rev-parse HEAD",
        );
        assert_eq!(
            landing(repo, Strategy::Rebase, &old, &tip, &rebased, None),
            Ok(())
        );
        let short = sh(repo, "git rev-parse HEAD~1");
        assert!(landing(repo, Strategy::Rebase, &old, &tip, &short, None).is_err());
        // A fast-forward only where there is one.
        sh(repo, "git checkout -q main");
        assert!(landing(repo, Strategy::FfOnly, &old, &tip, &tip, None).is_err());
        assert_eq!(
            landing(repo, Strategy::FfOnly, &old, &rebased, &rebased, None),
            Ok(())
        );
    }
}
