//! Isolated tasks and sheep: each runs in its own git worktree on its own branch, so parallel
//! writers cannot trample each other, and what they leave is a branch to land (`shepherd
//! merge`), reported with its patch (files, diffstat, commits) — or nothing.
//!
//! Everything goes through the `git` CLI. A worktree lives outside every working tree, under
//! the user's state directory and keyed by its repository
//! (`<state>/worktrees/<repo>-<hash>/<run>-t<N>-<agent>`), on branch
//! `shepherd/<run>-t<N>-<agent>` made from the repository's `HEAD` (an isolated sheep's is named
//! after its agent, label and id instead): `git status` in the project never shows it, and no
//! `git add -A` there takes it in. Worktrees made before (`<git-common-dir>-wt/…`) keep working
//! where they are. When its sheep's close is confirmed the worktree goes: uncommitted changes
//! are first committed to a ref of their own, `refs/shepherd/preserved/<owner>` (on top of the
//! branch, so landing it lands them too), and the branch stays when it holds any work; a clean
//! worktree with no new commits goes with its branch. A close that was not confirmed keeps the
//! worktree as it is.

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
    git_env(dir, args, &[])
}

/// `git` with extra variables in its environment.
fn git_env(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Result<String, GitError> {
    let output = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .envs(env.iter().copied())
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

/// Where the worktree `name` of `repo` goes: under the user's state directory, in a folder of
/// that repository's (named after it, with a digest of its git directory).
pub(crate) fn path_for(state_dir: &Path, repo: &Repo, name: &str) -> PathBuf {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(repo.common_dir.to_string_lossy().as_bytes());
    let named = repo
        .top
        .file_name()
        .map(|n| shepherd_core::slug::slugify(&n.to_string_lossy(), 24))
        .filter(|slug| !slug.is_empty())
        .unwrap_or_else(|| "repo".to_owned());
    state_dir
        .join("worktrees")
        .join(format!("{named}-{}", &hex::encode(digest)[..12]))
        .join(name)
}

/// Makes the worktree at `path` (on branch `shepherd/<its name>`) from the repository's HEAD.
/// A worktree already made there for this task or sheep (the broker restarted after making
/// it, or a resume finds it again) is taken as it is.
pub(crate) fn create(repo: &Repo, path: PathBuf) -> Result<Worktree, GitError> {
    let _serialised = git_changes();
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let branch = format!("shepherd/{name}");
    let shown = path.display().to_string();
    if let Some(parent) = path.parent() {
        fs_err::create_dir_all(parent).map_err(|source| GitError::Directory {
            path: parent.display().to_string(),
            source,
        })?;
    }
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
    // The branch the project has checked out now: where this work lands by default.
    let base_branch = git(&repo.top, &["symbolic-ref", "--short", "-q", "HEAD"]).ok();
    let worktree = Worktree {
        repo: repo.clone(),
        path,
        branch,
        base,
        base_branch,
    };
    fs_err::create_dir_all(worktree.cwd()).map_err(|source| GitError::Directory {
        path: worktree.cwd().display().to_string(),
        source,
    })?;
    Ok(worktree)
}

/// Releases a worktree whose task or sheep (`owner`) is done with it. Once its close is
/// confirmed the worktree goes: its uncommitted changes first go to
/// `refs/shepherd/preserved/<owner>`, and its branch stays when it holds any work (commits or
/// those changes), else goes too. An unconfirmed close, or a step that fails, keeps the
/// worktree as it is and says why.
pub(crate) fn release(worktree: &Worktree, close_confirmed: bool, owner: &str) -> WorktreeReport {
    let report =
        |kept: bool, reason: Option<String>, patch: Option<Patch>, preserved| WorktreeReport {
            path: worktree.path.display().to_string(),
            branch: worktree.branch.clone(),
            base: worktree.base.clone(),
            kept,
            reason,
            patch,
            preserved,
            base_branch: worktree.base_branch.clone(),
        };
    let keep = |why: String| report(true, Some(why), Some(patch(worktree, None)), None);
    if !close_confirmed {
        return keep("its sheep's close was not confirmed".to_owned());
    }
    let dirty = match git(
        &worktree.path,
        &["status", "--porcelain", "--untracked-files=all"],
    ) {
        Ok(status) => !status.trim().is_empty(),
        Err(err) => return keep(format!("its state could not be read ({err})")),
    };
    if !dirty && leftovers(worktree).is_none() {
        // Nothing was done in it: it goes with its branch.
        return match removal_failure(worktree, true) {
            None => report(false, None, None, None),
            Some(why) => keep(why),
        };
    }
    let preserved = if dirty {
        match preserve(worktree, owner) {
            Ok(preserved) => Some(preserved),
            Err(err) => {
                return keep(format!(
                    "its uncommitted changes could not be preserved ({err})"
                ));
            }
        }
    } else {
        None
    };
    let patch = patch(worktree, preserved.as_deref());
    match removal_failure(worktree, false) {
        None => report(false, None, Some(patch), preserved),
        Some(why) => report(true, Some(why), Some(patch), preserved),
    }
}

/// The ref that holds `owner`'s uncommitted changes once its worktree is released.
pub(crate) fn preserved_ref(owner: &str) -> String {
    format!("refs/shepherd/preserved/{owner}")
}

/// Commits everything uncommitted in the worktree — changes, new files, deletions — on top of
/// its `HEAD`, without touching its index or its branch, and points `refs/shepherd/preserved/
/// <owner>` at that commit.
fn preserve(worktree: &Worktree, owner: &str) -> Result<String, GitError> {
    let git_dir = git(&worktree.path, &["rev-parse", "--absolute-git-dir"])?;
    let index = PathBuf::from(git_dir).join("shepherd-preserve.index");
    let index_text = index.display().to_string();
    let with_index = [("GIT_INDEX_FILE", index_text.as_str())];
    let _fresh = fs_err::remove_file(&index);
    git_env(&worktree.path, &["read-tree", "HEAD"], &with_index)?;
    git_env(&worktree.path, &["add", "--all", "."], &with_index)?;
    let tree = git_env(&worktree.path, &["write-tree"], &with_index)?;
    let _done = fs_err::remove_file(&index);
    let message = format!(
        "Uncommitted work of {owner} on {}, preserved by Shepherd when its sheep was closed",
        worktree.branch
    );
    // A machine without a git identity still preserves: the commit is Shepherd's.
    let identity = [
        ("GIT_AUTHOR_NAME", "Shepherd"),
        ("GIT_AUTHOR_EMAIL", "shepherd@localhost"),
        ("GIT_COMMITTER_NAME", "Shepherd"),
        ("GIT_COMMITTER_EMAIL", "shepherd@localhost"),
    ];
    let commit = git_env(
        &worktree.path,
        &["commit-tree", &tree, "-p", "HEAD", "-m", &message],
        &identity,
    )?;
    let name = preserved_ref(owner);
    git(&worktree.path, &["update-ref", &name, &commit])?;
    Ok(name)
}

/// The work a worktree holds against its base: its files, diffstat and commits (with the
/// commit of its `preserved` changes, when there is one), and how to land or discard it (what
/// cannot be read is left out rather than failing the report).
fn patch(worktree: &Worktree, preserved: Option<&str>) -> Patch {
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
    let tip = preserved.unwrap_or("HEAD");
    let range = format!("{base}..{tip}");
    let commits = lines(&["log", "--reverse", "--format=%h %s", &range]);
    let shown = path.display();
    let branch = &worktree.branch;
    let integrate = match preserved {
        Some(preserved) => format!(
            "land it with `shepherd merge {branch}` (its commits and the changes preserved on \
             {preserved}), or by hand with `git merge {preserved}`; to discard, \
             `git branch -D {branch} && git update-ref -d {preserved}`"
        ),
        None => format!(
            "land it with `shepherd merge {branch}`, or by hand with `git merge {branch}` (or \
             cherry-pick its commits); to discard, `git branch -D {branch}` (and \
             `git worktree remove --force {shown}` while the worktree is there)"
        ),
    };
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

/// Removes the worktree (whatever it still holds: that was preserved first), then, with
/// `with_branch`, its branch; when either fails, says which, in the words the report gives as
/// the reason the worktree was kept.
fn removal_failure(worktree: &Worktree, with_branch: bool) -> Option<String> {
    let _serialised = git_changes();
    let top = &worktree.repo.top;
    let shown = worktree.path.display().to_string();
    if let Err(err) = git(top, &["worktree", "remove", "--force", &shown]) {
        return Some(format!("it could not be removed ({err})"));
    }
    if with_branch && let Err(err) = git(top, &["branch", "-D", &worktree.branch]) {
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
    fn a_clean_worktree_goes_and_work_stays_on_its_branch() {
        let dir = repo();
        let state = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let repo = probe(&root, 1).unwrap();
        let made = |name: &str| create(&repo, path_for(state.path(), &repo, name)).unwrap();
        let branch_exists = |branch: &str| {
            git(
                &root,
                &[
                    "rev-parse",
                    "--verify",
                    "--quiet",
                    &format!("refs/heads/{branch}"),
                ],
            )
            .is_ok()
        };

        let clean = made("r1-t1-a");
        assert!(clean.cwd().join("a.txt").is_file());
        assert!(
            clean.path.starts_with(state.path().join("worktrees")),
            "worktrees live outside the project: {}",
            clean.path.display()
        );
        assert_eq!(clean.base_branch.as_deref(), Some("main"));
        let status = git(&root, &["status", "--porcelain", "--untracked-files=all"]).unwrap();
        assert!(status.is_empty(), "the project does not see it: {status}");
        let report = release(&clean, true, "a");
        assert!(!report.kept && report.patch.is_none(), "{report:?}");
        assert!(!clean.path.exists());
        assert!(!branch_exists("shepherd/r1-t1-a"));

        // A commit and uncommitted changes: the changes are preserved on top of the branch,
        // the worktree goes, the branch stays.
        let dirty = made("r1-t2-b");
        std::fs::write(dirty.cwd().join("a.txt"), "a\nb\n").unwrap();
        let commit = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
            .args(["commit", "-q", "-am", "grow a"])
            .current_dir(dirty.cwd())
            .output()
            .unwrap();
        assert!(commit.status.success(), "{commit:?}");
        std::fs::write(dirty.cwd().join("new.txt"), "x").unwrap();
        std::fs::write(dirty.cwd().join("a.txt"), "a\nb\nc\n").unwrap();
        let report = release(&dirty, true, "shepherd-agent-b");
        assert!(!report.kept, "{report:?}");
        assert!(!dirty.path.exists(), "its worktree is gone");
        assert!(
            branch_exists("shepherd/r1-t2-b"),
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
        assert_eq!(patch.commits.len(), 2, "{:?}", patch.commits);
        assert!(patch.commits[0].ends_with(" grow a"), "{:?}", patch.commits);
        assert!(
            patch.integrate.contains("shepherd merge shepherd/r1-t2-b"),
            "{}",
            patch.integrate
        );
        assert_eq!(report.landing_ref(), preserved);

        let unconfirmed = made("r1-t3-c");
        let kept = release(&unconfirmed, false, "c");
        assert!(kept.kept && unconfirmed.path.is_dir(), "{kept:?}");
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
