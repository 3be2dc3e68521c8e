//! The git a merge queue runs, each command through the hardened runner (a deadline, no hook,
//! no fsmonitor, no diff driver): the merge worktree (a repository of its own detached at the
//! target and borrowing the project's objects, outside every working tree, so a resolver
//! confined in it never holds the project's `.git`), one merge (or one replayed commit) and
//! what its conflict holds, the commit Shepherd makes of what a resolver or fixer left,
//! bringing the result home, and moving the target only from the commit the queue last saw.
//! The check is `check`'s.
//!
//! Nothing here runs in the user's working tree except the one step that keeps it true: when
//! the target branch is checked out in a clean worktree, moving the branch fast-forwards that
//! worktree too (a dirty one is refused before anything is merged), so its `HEAD`, index and
//! files never disagree.

use std::path::{Path, PathBuf};

use shepherd_core::worktree::Repo;

use crate::git::Git;
use crate::git::GitError;
use crate::git::own_repo::{self, Borrowed};

/// The longest stretch of conflicting hunks a report carries.
const MAX_HUNKS: usize = 8 * 1024;

/// `git` in `dir`: its output, or its first line of complaint.
pub(crate) fn git(dir: &Path, args: &[&str]) -> Result<String, GitError> {
    crate::git::git(dir, args)
}

/// The commit `name` points at, if it exists.
pub(crate) fn resolve(repo: &Path, name: &str) -> Option<String> {
    git(
        repo,
        &[
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("{name}^{{commit}}"),
        ],
    )
    .ok()
}

/// The identity a merge commit is made with: the project's (a merge worktree reads none of its
/// configuration), else Shepherd's.
pub(crate) fn identity(repo: &Path) -> Vec<(&'static str, String)> {
    let project = |key: &str| git(repo, &["config", key]).ok().filter(|v| !v.is_empty());
    match (project("user.name"), project("user.email")) {
        (Some(name), Some(email)) => vec![
            ("GIT_AUTHOR_NAME", name.clone()),
            ("GIT_AUTHOR_EMAIL", email.clone()),
            ("GIT_COMMITTER_NAME", name),
            ("GIT_COMMITTER_EMAIL", email),
        ],
        _ => crate::sheep::worktree::IDENTITY
            .iter()
            .map(|(key, value)| (*key, (*value).to_owned()))
            .collect(),
    }
}

/// A worktree checked out on a branch, as `git worktree list` sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CheckedOut {
    pub(crate) path: PathBuf,
}

/// The worktree that has `branch` checked out, if one does.
pub(crate) fn checked_out(repo: &Path, branch: &str) -> Result<Option<CheckedOut>, GitError> {
    let listed = git(repo, &["worktree", "list", "--porcelain"])?;
    let wanted = format!("branch refs/heads/{branch}");
    let mut path = None;
    for line in listed.lines() {
        if let Some(p) = line.strip_prefix("worktree ") {
            path = Some(PathBuf::from(p));
        } else if line == wanted
            && let Some(path) = path.take()
        {
            return Ok(Some(CheckedOut { path }));
        }
    }
    Ok(None)
}

/// Whether the worktree at `path` has uncommitted changes to tracked files. Untracked files
/// (the fieldnotes folder among them) do not count: a fast-forward keeps them, and refuses by
/// itself, naming it, should one stand where a landed file goes.
pub(crate) fn dirty(path: &Path) -> Result<bool, GitError> {
    let status = git(path, &["status", "--porcelain", "--untracked-files=no"])?;
    Ok(!status.trim().is_empty())
}

/// A worktree made for merging: a repository of its own, detached at the target's tip,
/// outside every working tree.
#[derive(Debug)]
pub(crate) struct MergeWorktree {
    repo: Repo,
    pub(crate) path: PathBuf,
    /// Whom its commits are made as ([`identity`]), read once for the queue.
    identity: Vec<(&'static str, String)>,
}

impl MergeWorktree {
    /// Makes it at `path`, detached at `tip`.
    pub(crate) fn make(repo: &Repo, path: PathBuf, tip: &str) -> Result<Self, GitError> {
        crate::sheep::worktree::create_detached(repo, &path, tip)?;
        Ok(Self {
            identity: identity(&repo.top),
            repo: repo.clone(),
            path,
        })
    }

    /// git in it.
    fn git(&self) -> Git {
        Git::own(&self.path)
    }

    /// git in it, committing as the project's identity.
    fn committing(&self) -> Git {
        self.identity
            .iter()
            .fold(self.git(), |git, (key, value)| git.env(key, value.as_str()))
    }

    /// Puts its `.git` back to what Shepherd made, after a resolver (a sheep) worked in it, so
    /// nothing it configured runs in the git that follows (merge state and objects stay).
    pub(crate) fn sanitise(&self) -> Result<(), GitError> {
        own_repo::sanitise(&self.path, &Borrowed::from(&self.repo.common_dir)?)
    }

    /// Its `HEAD`.
    pub(crate) fn head(&self) -> Result<String, GitError> {
        self.git().run(&["rev-parse", "HEAD"])
    }

    /// Merges `landing` (a commit of the project's, known as `name`: its conflict markers say
    /// so) with a merge commit saying what landed. `Ok(None)`: it merged; `Ok(Some(conflict))`:
    /// it stopped on conflicts, left for a resolver or [`MergeWorktree::abort`].
    pub(crate) fn merge(
        &self,
        landing: &str,
        name: &str,
        message: &str,
    ) -> Result<Option<shepherd_core::land::ConflictView>, GitError> {
        // git's markers name the side merged in as it was given on the command line (it sets
        // `GITHEAD_<commit>` itself), so it is given by a branch of that name, made in this
        // repository of Shepherd's for the merge alone; a commit id when no such branch can be.
        let named = self.name_for_merge(landing, name);
        let theirs = named.as_deref().unwrap_or(landing);
        let ran = self
            .committing()
            // This repository is Shepherd's, made for one queue: it needs no housekeeping.
            .output(&[
                "-c",
                "maintenance.auto=false",
                "merge",
                "--no-ff",
                "--no-edit",
                "-m",
                message,
                theirs,
            ]);
        if named.is_some() {
            let _gone =
                self.git()
                    .run(&["update-ref", "-d", &format!("refs/heads/{name}"), landing]);
        }
        let ran = ran?;
        if ran.success {
            return Ok(None);
        }
        self.conflict_or(&ran, &format!("merge {landing}"))
    }

    /// Makes branch `name` at `landing` in the merge worktree's repository, when `name` is a
    /// branch name that then means exactly that commit there; returns it.
    fn name_for_merge(&self, landing: &str, name: &str) -> Option<String> {
        self.git()
            .run(&["check-ref-format", "--branch", name])
            .ok()?;
        self.git()
            .run(&["update-ref", &format!("refs/heads/{name}"), landing, ""])
            .ok()?;
        let means = self
            .git()
            .run(&[
                "rev-parse",
                "--verify",
                "--quiet",
                &format!("{name}^{{commit}}"),
            ])
            .ok();
        if means.as_deref() == Some(landing) {
            Some(name.to_owned())
        } else {
            let _gone =
                self.git()
                    .run(&["update-ref", "-d", &format!("refs/heads/{name}"), landing]);
            None
        }
    }

    /// Replays `commit` on its `HEAD` (a rebase's step), keeping its author and message.
    /// `Ok(Some(conflict))`: it stopped on conflicts.
    pub(crate) fn pick(
        &self,
        commit: &str,
    ) -> Result<Option<shepherd_core::land::ConflictView>, GitError> {
        let ran = self
            .committing()
            .output(&["cherry-pick", "--allow-empty", commit])?;
        if ran.success {
            return Ok(None);
        }
        self.conflict_or(&ran, &format!("cherry-pick {commit}"))
    }

    /// What a merge or pick that failed left: its conflict, or the failure itself.
    fn conflict_or(
        &self,
        ran: &crate::git::Ran,
        args: &str,
    ) -> Result<Option<shepherd_core::land::ConflictView>, GitError> {
        let conflicted = self.unmerged()?;
        if conflicted.is_empty() {
            // It failed for another reason: say it.
            return Err(GitError::Failed {
                args: args.to_owned(),
                message: ran.complaint(),
            });
        }
        let mut hunks = self.git().run(&["diff", "--no-color"]).unwrap_or_default();
        if hunks.len() > MAX_HUNKS {
            let mut cut = MAX_HUNKS;
            while !hunks.is_char_boundary(cut) {
                cut -= 1;
            }
            hunks.truncate(cut);
            hunks.push_str("\n[… cut at 8 KiB]");
        }
        Ok(Some(shepherd_core::land::ConflictView {
            files: conflicted,
            hunks,
        }))
    }

    /// The files still unmerged.
    pub(crate) fn unmerged(&self) -> Result<Vec<String>, GitError> {
        let listed = self
            .git()
            .run(&["diff", "--name-only", "--diff-filter=U"])?;
        Ok(listed
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(str::to_owned)
            .collect())
    }

    /// Whether a merge is under way (its commit not made yet).
    pub(crate) fn merging(&self) -> bool {
        self.git()
            .run(&["rev-parse", "--verify", "--quiet", "MERGE_HEAD"])
            .is_ok()
    }

    /// Makes the merge commit a resolver left staged but uncommitted.
    pub(crate) fn conclude(&self) -> Result<(), GitError> {
        let ran = self.committing().output(&["commit", "--no-edit"])?;
        if ran.success {
            Ok(())
        } else {
            Err(GitError::Failed {
                args: "commit --no-edit".to_owned(),
                message: ran.complaint(),
            })
        }
    }

    /// Gives up the merge (or replay) under way.
    pub(crate) fn abort(&self) {
        let _aborted = self.git().run(&["merge", "--abort"]);
        let _aborted = self.git().run(&["cherry-pick", "--abort"]);
    }

    /// Goes back to `commit`, dropping everything since.
    pub(crate) fn reset(&self, commit: &str) -> Result<(), GitError> {
        self.abort();
        self.git()
            .run(&["reset", "--hard", "--quiet", commit])
            .map(drop)?;
        self.git().run(&["clean", "-fdq"]).map(drop)
    }

    /// Points `HEAD` at `commit`, whose tree is the one checked out (a commit Shepherd made of
    /// it).
    pub(crate) fn set_head(&self, commit: &str) -> Result<(), GitError> {
        self.git()
            .run(&["update-ref", "--no-deref", "HEAD", commit])
            .map(drop)
    }

    /// Everything in its working tree (changes, new files, deletions) as a tree.
    pub(crate) fn tree_of_work(&self) -> Result<String, GitError> {
        self.git().run(&["add", "-A"])?;
        self.git().run(&["write-tree"])
    }

    /// Makes a commit of `tree` with `parents` and `message`, as the project's identity.
    pub(crate) fn commit_tree(
        &self,
        tree: &str,
        parents: &[&str],
        message: &str,
    ) -> Result<String, GitError> {
        let mut args = vec!["commit-tree", tree];
        for parent in parents {
            args.extend(["-p", parent]);
        }
        args.extend(["-m", message]);
        self.committing().run(&args)
    }

    /// The ref its results are brought home under.
    pub(crate) fn landing_ref(&self) -> String {
        landing_ref_of(&self.path)
    }

    /// Brings its `HEAD` into the project's repository, under [`MergeWorktree::landing_ref`]
    /// until the merge is over; returns the commit. Its `.git` is Shepherd's own (made, or
    /// sanitised after a sheep), and the project's git writes what it fetches.
    pub(crate) fn bring_home(&self) -> Result<String, GitError> {
        let head = self.head()?;
        let refspec = format!("+HEAD:{}", self.landing_ref());
        own_repo::fetch(&self.repo.top, &self.path, &refspec)?;
        Ok(head)
    }
}

/// The ref the results of the merge worktree at `path` are brought home under.
pub(crate) fn landing_ref_of(path: &Path) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    format!("refs/shepherd/landing/{name}")
}

/// Removes the merge worktree at `path` (made by this broker or one before it) and the ref its
/// results were brought home under; nothing there is fine.
pub(crate) fn remove_at(repo: &Path, path: &Path) {
    let _gone = git(repo, &["update-ref", "-d", &landing_ref_of(path)]);
    // A directory of Shepherd's; `remove_dir_all` never follows a link out of it.
    let _removed = fs_err::remove_dir_all(path);
}

/// Moves `branch` from `expected` to `new`: only if it still points at `expected`, so work
/// committed to it meanwhile is never dropped. When it is checked out in a clean worktree,
/// that worktree is fast-forwarded with it. `Err` names what stood in the way.
pub(crate) fn advance(repo: &Path, branch: &str, expected: &str, new: &str) -> Result<(), String> {
    let now = resolve(repo, &format!("refs/heads/{branch}")).unwrap_or_default();
    if now != expected {
        return Err(format!(
            "the target branch {branch} moved while the queue ran (it is at {}, the queue had \
             it at {}): land again to merge onto its new tip",
            short(&now),
            short(expected)
        ));
    }
    match checked_out(repo, branch).map_err(|err| err.to_string())? {
        Some(worktree) => {
            if dirty(&worktree.path).map_err(|err| err.to_string())? {
                return Err(format!(
                    "{branch} is checked out in {} with uncommitted changes",
                    worktree.path.display()
                ));
            }
            git(&worktree.path, &["merge", "--ff-only", "--quiet", new])
                .map(drop)
                .map_err(|err| err.to_string())
        }
        None => git(
            repo,
            &["update-ref", &format!("refs/heads/{branch}"), new, expected],
        )
        .map(drop)
        .map_err(|err| err.to_string()),
    }
}

/// A commit's short form.
pub(crate) fn short(commit: &str) -> &str {
    &commit[..commit.len().min(10)]
}
