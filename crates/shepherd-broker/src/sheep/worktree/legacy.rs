//! Worktrees made before each isolated sheep got a repository of its own: `git worktree`
//! linked ones, whose sheep could write the project's shared git directory. They are found
//! again and released the way they were made (preserve, report, `git worktree remove`), with
//! two checks first, since their sheep may have planted what git runs:
//!
//! - the worktree's `.git` file must be the one `git worktree add` wrote for it, naming
//!   `<the project's common dir>/worktrees/<name>`, which names it back ([`discover`]);
//! - the configuration git reads there (the project's, and the worktree's own) must set no
//!   key that runs a program ([`program_keys`]); one that does keeps the worktree, naming the
//!   key and the file, for the user to look at.
//!
//! Every command names its git directory and work tree outright, so a `.git` changed since
//! decides nothing.

use std::path::{Path, PathBuf};

use crate::git::{Git, GitError, discover, program_keys};

use super::{Patch, Repo, Worktree, WorktreeReport, git_changes, patch, preserved_ref};

/// The per-worktree git directory of the linked worktree at `path`, when its `.git` file is
/// the one git wrote for this repository.
fn git_dir_of(repo: &Repo, path: &Path) -> Result<PathBuf, GitError> {
    let dot_git = path.join(".git");
    let found = discover::find(path).map_err(|err| GitError::layout(&err.path, err.why))?;
    let common = fs_err::canonicalize(&repo.common_dir).unwrap_or_else(|_| repo.common_dir.clone());
    match found {
        Some(discover::Found::Linked { file, git_dir })
            if file == dot_git
                && git_dir.parent().and_then(Path::parent) == Some(common.as_path()) =>
        {
            Ok(git_dir)
        }
        _ => Err(GitError::layout(
            &dot_git,
            format!(
                "is not the worktree file git made for {}",
                repo.common_dir.display()
            ),
        )),
    }
}

/// git in the linked worktree at `path`, its directories named.
fn in_worktree(path: &Path, git_dir: &Path) -> Git {
    Git::at(path)
        .env("GIT_DIR", git_dir.display().to_string())
        .env("GIT_WORK_TREE", path.display().to_string())
}

/// The base of a linked worktree found again (a resume), when it is on its branch.
pub(super) fn existing(repo: &Repo, path: &Path, branch: &str) -> Result<String, GitError> {
    let git_dir = git_dir_of(repo, path)?;
    let head = in_worktree(path, &git_dir).run(&["rev-parse", "--abbrev-ref", "HEAD"])?;
    if head != branch {
        return Err(GitError::layout(
            path,
            format!("is a worktree on {head}, not on {branch}"),
        ));
    }
    Git::at(&repo.top).run(&["merge-base", "HEAD", branch])
}

/// Releases a linked worktree whose close was confirmed (see [`super::release`]).
pub(super) fn release(worktree: &Worktree, owner: &str) -> WorktreeReport {
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
    let keep = |why: String| report(true, Some(why), None, None);
    let git_dir = match git_dir_of(&worktree.repo, &worktree.path) {
        Ok(git_dir) => git_dir,
        Err(err) => return keep(format!("its git directory is not trusted ({err})")),
    };
    let git = in_worktree(&worktree.path, &git_dir);
    if let Err(err) = program_keys::refuse(&git, &git_dir) {
        return keep(format!("its repository is not safe to run git in ({err})"));
    }
    let dirty = match git.run(&["status", "--porcelain", "--untracked-files=all"]) {
        Ok(status) => !status.trim().is_empty(),
        Err(err) => return keep(format!("its state could not be read ({err})")),
    };
    if !dirty && leftovers(worktree, &git).is_none() {
        // Nothing was done in it: it goes with its branch.
        return match removal_failure(worktree, true) {
            None => report(false, None, None, None),
            Some(why) => keep(why),
        };
    }
    let preserved = if dirty {
        match preserve(worktree, &git, &git_dir, owner) {
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
    let working = patch::working(&git, &worktree.base, &patch::untracked(&git));
    let tip = preserved.as_deref().unwrap_or("HEAD");
    let patch = patch::patch(
        working,
        &git,
        (&worktree.base, tip),
        &worktree.branch,
        preserved.as_deref(),
        &worktree.path,
    );
    match removal_failure(worktree, false) {
        None => report(false, None, Some(patch), preserved),
        Some(why) => report(true, Some(why), Some(patch), preserved),
    }
}

/// Commits everything uncommitted in the worktree on top of its `HEAD`, without touching its
/// index or its branch, and points `refs/shepherd/preserved/<owner>` at that commit.
fn preserve(
    worktree: &Worktree,
    git: &Git,
    git_dir: &Path,
    owner: &str,
) -> Result<String, GitError> {
    let index = git_dir.join("shepherd-preserve.index");
    let with_index = git
        .clone()
        .env("GIT_INDEX_FILE", index.display().to_string());
    let _fresh = fs_err::remove_file(&index);
    with_index.run(&["read-tree", "HEAD"])?;
    with_index.run(&["add", "--all", "."])?;
    let tree = with_index.run(&["write-tree"])?;
    let _done = fs_err::remove_file(&index);
    let message = format!(
        "Uncommitted work of {owner} on {}, preserved by Shepherd when its sheep was closed",
        worktree.branch
    );
    let commit = git.clone().envs(&super::IDENTITY).run(&[
        "commit-tree",
        &tree,
        "-p",
        "HEAD",
        "-m",
        &message,
    ])?;
    let name = preserved_ref(owner);
    git.run(&["update-ref", &name, &commit])?;
    Ok(name)
}

/// Why the worktree must stay, or `None` when it is clean and at its base.
fn leftovers(worktree: &Worktree, git: &Git) -> Option<String> {
    let range = format!("{}..HEAD", worktree.base);
    match git.run(&["rev-list", "--count", &range]) {
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
        git.run(&["rev-parse", "HEAD"]),
        git.run(&["rev-parse", &branch_ref]),
    ) {
        (Ok(head), Ok(tip)) if head == worktree.base && tip == worktree.base => None,
        (Ok(_), Ok(_)) => Some(format!("{} moved from its base", worktree.branch)),
        (Err(err), _) | (_, Err(err)) => Some(format!("its branch could not be read ({err})")),
    }
}

/// Removes the worktree (whatever it still holds: that was preserved first), then, with
/// `with_branch`, its branch; when either fails, says which.
fn removal_failure(worktree: &Worktree, with_branch: bool) -> Option<String> {
    let _serialised = git_changes();
    let project = Git::at(&worktree.repo.top);
    let shown = worktree.path.display().to_string();
    if let Err(err) = project.run(&["worktree", "remove", "--force", &shown]) {
        return Some(format!("it could not be removed ({err})"));
    }
    if with_branch && let Err(err) = project.run(&["branch", "-D", &worktree.branch]) {
        return Some(format!("its branch could not be deleted ({err})"));
    }
    None
}
