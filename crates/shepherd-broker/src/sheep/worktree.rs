//! Isolated tasks and sheep: each runs in its own git worktree on its own branch, so parallel
//! writers cannot trample each other, and what they leave is either nothing (the worktree goes)
//! or kept, with its patch (files, diffstat, commits), for the user to integrate or discard.
//!
//! Everything goes through the `git` CLI. A worktree lives at
//! `<git-common-dir>-wt/<run>-t<N>-<agent>` (for a repository at `/repo`:
//! `/repo/.git-wt/…`) on branch `shepherd/<run>-t<N>-<agent>`, made from the repository's
//! `HEAD` (an isolated sheep's is named after its agent, label and id instead). Afterwards it is
//! removed — with its branch — only when it is clean (no changes, no untracked files), its
//! branch gained no commits and still points where it started, and the sheep's close was
//! confirmed; otherwise it is kept and reported.

// This module owns the git processes that make, inspect and remove worktrees.
#![allow(clippy::disallowed_types)]

use shepherd_core::error_code::ErrorCode;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::BrokerError;

pub(crate) use shepherd_core::worktree::{
    LocalWorktreeReport as WorktreeReport, Patch, Repo, Worktree,
};

/// Why a git command about a worktree did not do its work.
#[derive(Debug, thiserror::Error)]
pub(crate) enum GitError {
    /// git could not be started.
    #[error("cannot run git: {0}")]
    Start(#[source] std::io::Error),
    /// git ran and refused; its first line of complaint.
    #[error("git {args} failed: {message}")]
    Failed {
        /// The arguments, as typed.
        args: String,
        /// The first line git printed on stderr.
        message: String,
    },
    /// The worktree's working directory could not be made.
    #[error("cannot make {path}: {source}")]
    Directory {
        /// The directory.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

fn git(dir: &Path, args: &[&str]) -> Result<String, GitError> {
    let output = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .output()
        .map_err(GitError::Start)?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout)
            .trim_end()
            .to_owned())
    } else {
        let stderr = String::from_utf8_lossy(&output.stderr);
        Err(GitError::Failed {
            args: args.join(" "),
            message: stderr
                .lines()
                .next()
                .unwrap_or("no message")
                .trim()
                .to_owned(),
        })
    }
}

/// Checks that `cwd` is inside a git working tree with at least one commit.
pub(crate) fn probe(cwd: &Path, number: usize) -> Result<Repo, BrokerError> {
    probe_for(cwd, &format!("task {number}"))
}

/// Like [`probe`], for `who` (`task 2`, `this spawn`).
pub(crate) fn probe_for(cwd: &Path, who: &str) -> Result<Repo, BrokerError> {
    let refuse = |why: String| {
        BrokerError::new(
            ErrorCode::NotAGitRepository,
            format!(
                "{who} asks for isolate, but its directory `{}` {why}; isolation needs a git repository with a commit",
                cwd.display()
            ),
        )
    };
    let lines = git(
        cwd,
        &[
            "rev-parse",
            "--path-format=absolute",
            "--show-toplevel",
            "--git-common-dir",
        ],
    )
    .map_err(|_| refuse("is not inside a git working tree".to_owned()))?;
    let mut lines = lines.lines();
    let (Some(top), Some(common)) = (lines.next(), lines.next()) else {
        return Err(refuse("is not inside a git working tree".to_owned()));
    };
    git(cwd, &["rev-parse", "--verify", "--quiet", "HEAD"])
        .map_err(|_| refuse("is in a repository without any commit".to_owned()))?;
    let top = PathBuf::from(top);
    let subdir = cwd
        .strip_prefix(&top)
        .unwrap_or(Path::new(""))
        .to_path_buf();
    Ok(Repo {
        top,
        common_dir: PathBuf::from(common),
        subdir,
    })
}

/// Held while this run adds or removes worktrees and branches: git takes its own lock files
/// for those (`.git/worktrees`, refs), and parallel tasks doing it at once can trip over them.
static GIT_CHANGES: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn git_changes() -> std::sync::MutexGuard<'static, ()> {
    GIT_CHANGES
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Makes the worktree `name` (on branch `shepherd/<name>`) from the repository's HEAD. A
/// worktree already made under that name for this run (the broker restarted after making it)
/// is taken as it is.
pub(crate) fn create(repo: &Repo, name: &str) -> Result<Worktree, GitError> {
    let _serialised = git_changes();
    let mut parent = repo.common_dir.clone().into_os_string();
    parent.push("-wt");
    let path = PathBuf::from(parent).join(name);
    let branch = format!("shepherd/{name}");
    let shown = path.display().to_string();
    let existing = git(&path, &["rev-parse", "--abbrev-ref", "HEAD"])
        .ok()
        .filter(|head| *head == branch);
    let base = if existing.is_some() {
        // Its base is where the branch began: the merge base with the repository's HEAD.
        git(&repo.top, &["merge-base", "HEAD", &branch])?
    } else {
        let base = git(&repo.top, &["rev-parse", "HEAD"])?;
        git(
            &repo.top,
            &["worktree", "add", "-b", &branch, &shown, &base],
        )?;
        base
    };
    let worktree = Worktree {
        repo: repo.clone(),
        path,
        branch,
        base,
    };
    fs_err::create_dir_all(worktree.cwd()).map_err(|source| GitError::Directory {
        path: worktree.cwd().display().to_string(),
        source,
    })?;
    Ok(worktree)
}

/// Removes the worktree and its branch when nothing is left in them (and `close_confirmed`);
/// otherwise keeps them and says why.
pub(crate) fn release(worktree: &Worktree, close_confirmed: bool) -> WorktreeReport {
    let reason = if close_confirmed {
        leftovers(worktree)
    } else {
        Some("its sheep's close was not confirmed".to_owned())
    };
    let reason = match reason {
        Some(reason) => Some(reason),
        None => removal_failure(worktree),
    };
    WorktreeReport {
        path: worktree.path.display().to_string(),
        branch: worktree.branch.clone(),
        base: worktree.base.clone(),
        kept: reason.is_some(),
        patch: reason.as_ref().map(|_| patch(worktree)),
        reason,
    }
}

/// The patch a kept worktree holds: its files, diffstat and commits against its base (what
/// cannot be read is left out rather than failing the report).
fn patch(worktree: &Worktree) -> Patch {
    let path = &worktree.path;
    let base = worktree.base.as_str();
    let lines = |args: &[&str]| -> Vec<String> {
        git(path, args)
            .map(|out| {
                out.lines()
                    .filter(|l| !l.trim().is_empty())
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    };
    let untracked = lines(&["ls-files", "--others", "--exclude-standard"]);
    let mut files = lines(&["diff", "--name-only", base]);
    files.extend(untracked.iter().cloned());
    files.sort();
    files.dedup();
    let mut diffstat = git(path, &["diff", "--shortstat", base])
        .map(|s| s.trim().to_owned())
        .unwrap_or_default();
    if !untracked.is_empty() {
        if !diffstat.is_empty() {
            diffstat.push_str(", ");
        }
        diffstat.push_str(&format!("{} untracked file(s)", untracked.len()));
    }
    let range = format!("{base}..HEAD");
    let commits = lines(&["log", "--reverse", "--format=%h %s", &range]);
    let shown = path.display();
    let branch = &worktree.branch;
    let integrate = format!(
        "integrate or discard: commit what is left in {shown}, then `git merge {branch}` (or          cherry-pick its commits); to discard, `git worktree remove --force {shown} && git branch -D {branch}`"
    );
    Patch {
        files,
        diffstat,
        commits,
        integrate,
    }
}

/// Why the worktree must stay, or `None` when it is clean and at its base.
fn leftovers(worktree: &Worktree) -> Option<String> {
    let path = &worktree.path;
    let status = match git(path, &["status", "--porcelain", "--untracked-files=all"]) {
        Ok(status) => status,
        Err(err) => return Some(format!("its state could not be read ({err})")),
    };
    if !status.trim().is_empty() {
        let files = status.lines().count();
        return Some(format!("uncommitted changes in {files} file(s)"));
    }
    let range = format!("{}..HEAD", worktree.base);
    match git(path, &["rev-list", "--count", &range]) {
        Ok(count) if count.trim() != "0" => {
            return Some(format!(
                "{} new commit(s) on {}",
                count.trim(),
                worktree.branch
            ));
        }
        Ok(_) => {}
        Err(err) => return Some(format!("its commits could not be read ({err})")),
    }
    let branch_ref = format!("refs/heads/{}", worktree.branch);
    match (
        git(path, &["rev-parse", "HEAD"]),
        git(path, &["rev-parse", &branch_ref]),
    ) {
        (Ok(head), Ok(tip)) if head == worktree.base && tip == worktree.base => None,
        (Ok(_), Ok(_)) => Some(format!("{} moved from its base", worktree.branch)),
        (Err(err), _) | (_, Err(err)) => Some(format!("its branch could not be read ({err})")),
    }
}

/// Removes the worktree, then its branch; when either fails, says which, in the words the
/// report gives as the reason the worktree was kept.
fn removal_failure(worktree: &Worktree) -> Option<String> {
    let _serialised = git_changes();
    let top = &worktree.repo.top;
    let shown = worktree.path.display().to_string();
    if let Err(err) = git(top, &["worktree", "remove", &shown]) {
        return Some(format!("it could not be removed ({err})"));
    }
    if let Err(err) = git(top, &["branch", "-D", &worktree.branch]) {
        return Some(format!("its branch could not be deleted ({err})"));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let run = |args: &[&str]| {
            let status = Command::new("git")
                .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
                .args(args)
                .current_dir(dir.path())
                .output()
                .unwrap();
            assert!(status.status.success(), "git {args:?}: {status:?}");
        };
        run(&["init", "-q", "-b", "main"]);
        std::fs::write(dir.path().join("a.txt"), "a\n").unwrap();
        run(&["add", "a.txt"]);
        run(&["commit", "-q", "-m", "first"]);
        dir
    }

    #[test]
    fn a_clean_worktree_goes_and_a_dirty_one_stays() {
        let dir = repo();
        let root = dir.path().canonicalize().unwrap();
        let repo = probe(&root, 1).unwrap();
        let clean = create(&repo, "r1-t1-a").unwrap();
        assert!(clean.cwd().join("a.txt").is_file());
        let report = release(&clean, true);
        assert!(!report.kept, "{report:?}");
        assert!(!clean.path.exists());
        assert!(
            git(
                &root,
                &[
                    "rev-parse",
                    "--verify",
                    "--quiet",
                    "refs/heads/shepherd/r1-t1-a"
                ]
            )
            .is_err()
        );

        let dirty = create(&repo, "r1-t2-b").unwrap();
        std::fs::write(dirty.cwd().join("new.txt"), "x").unwrap();
        std::fs::write(dirty.cwd().join("a.txt"), "a\nb\n").unwrap();
        let commit = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
            .args(["commit", "-q", "-am", "grow a"])
            .current_dir(dirty.cwd())
            .output()
            .unwrap();
        assert!(commit.status.success(), "{commit:?}");
        let report = release(&dirty, true);
        assert!(report.kept);
        assert_eq!(
            report.reason.as_deref(),
            Some("uncommitted changes in 1 file(s)")
        );
        let patch = report
            .patch
            .as_ref()
            .expect("a kept worktree reports its patch");
        assert_eq!(patch.files, ["a.txt", "new.txt"]);
        assert_eq!(
            patch.diffstat,
            "1 file changed, 1 insertion(+), 1 untracked file(s)"
        );
        assert_eq!(patch.commits.len(), 1);
        assert!(patch.commits[0].ends_with(" grow a"), "{:?}", patch.commits);
        assert!(patch.integrate.starts_with("integrate or discard: "));
        assert!(dirty.path.is_dir());
        assert_eq!(
            dirty.path,
            root.join(".git-wt").join("r1-t2-b"),
            "worktrees live beside the git directory"
        );

        let unconfirmed = create(&repo, "r1-t3-c").unwrap();
        assert!(release(&unconfirmed, false).kept);
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
}
