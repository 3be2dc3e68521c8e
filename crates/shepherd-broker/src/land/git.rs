//! The git a merge queue runs, each command with a deadline: the merge worktree (detached at
//! the target, outside every working tree), one merge and what its conflict holds, the check,
//! and moving the target only from the commit the queue last saw.
//!
//! Nothing here runs in the user's working tree except the one step that keeps it true: when
//! the target branch is checked out in a clean worktree, moving the branch fast-forwards that
//! worktree too (a dirty one is refused before anything is merged), so its `HEAD`, index and
//! files never disagree.

// This module owns the git processes that land branches.
#![allow(clippy::disallowed_types)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// How long one git command may take.
const GIT_DEADLINE: Duration = Duration::from_secs(120);
/// The longest stretch of conflicting hunks a report carries.
const MAX_HUNKS: usize = 8 * 1024;
/// The end of a failing check's output a report carries.
const CHECK_TAIL: usize = 4 * 1024;

/// A git command that did not do its work, or could not run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("git {args}: {message}")]
pub(crate) struct GitFailure {
    /// The arguments, as typed.
    pub(crate) args: String,
    /// Its first line of complaint (or why it could not run).
    pub(crate) message: String,
}

/// What a finished git command printed, and whether it succeeded.
struct Ran {
    success: bool,
    stdout: String,
    stderr: String,
}

fn run(
    dir: &Path,
    args: &[&str],
    env: &[(&str, &str)],
    deadline: Duration,
) -> Result<Ran, GitFailure> {
    let mut command = Command::new("git");
    command
        .arg("-C")
        .arg(dir)
        .args(args)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .envs(env.iter().copied());
    let out = shepherd_term::process::run_with_deadline(&mut command, Instant::now() + deadline)
        .map_err(|err| GitFailure {
            args: args.join(" "),
            message: err.to_string(),
        })?;
    Ok(Ran {
        success: out.success,
        stdout: out.stdout,
        stderr: out.stderr,
    })
}

/// `git` in `dir`: its output, or its first line of complaint.
pub(crate) fn git(dir: &Path, args: &[&str]) -> Result<String, GitFailure> {
    let ran = run(dir, args, &[], GIT_DEADLINE)?;
    if ran.success {
        Ok(ran.stdout.trim_end().to_owned())
    } else {
        Err(GitFailure {
            args: args.join(" "),
            message: first_line(&ran.stderr),
        })
    }
}

fn first_line(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("no message")
        .to_owned()
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

/// The identity a merge commit is made with when the user configured none.
fn identity(repo: &Path) -> Vec<(&'static str, &'static str)> {
    if git(repo, &["config", "user.email"]).is_ok() {
        return Vec::new();
    }
    vec![
        ("GIT_AUTHOR_NAME", "Shepherd"),
        ("GIT_AUTHOR_EMAIL", "shepherd@localhost"),
        ("GIT_COMMITTER_NAME", "Shepherd"),
        ("GIT_COMMITTER_EMAIL", "shepherd@localhost"),
    ]
}

/// A worktree checked out on a branch, as `git worktree list` sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CheckedOut {
    pub(crate) path: PathBuf,
}

/// The worktree that has `branch` checked out, if one does.
pub(crate) fn checked_out(repo: &Path, branch: &str) -> Result<Option<CheckedOut>, GitFailure> {
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
pub(crate) fn dirty(path: &Path) -> Result<bool, GitFailure> {
    let status = git(path, &["status", "--porcelain", "--untracked-files=no"])?;
    Ok(!status.trim().is_empty())
}

/// A worktree made for merging: detached at the target's tip, outside every working tree.
#[derive(Debug)]
pub(crate) struct MergeWorktree {
    repo: PathBuf,
    pub(crate) path: PathBuf,
}

impl MergeWorktree {
    /// Makes it at `path`, detached at `tip`.
    pub(crate) fn make(repo: &Path, path: PathBuf, tip: &str) -> Result<Self, GitFailure> {
        if let Some(parent) = path.parent() {
            fs_err::create_dir_all(parent).map_err(|err| GitFailure {
                args: "worktree add".to_owned(),
                message: err.to_string(),
            })?;
        }
        let shown = path.display().to_string();
        git(repo, &["worktree", "add", "--detach", &shown, tip])?;
        Ok(Self {
            repo: repo.to_path_buf(),
            path,
        })
    }

    /// Its `HEAD`.
    pub(crate) fn head(&self) -> Result<String, GitFailure> {
        git(&self.path, &["rev-parse", "HEAD"])
    }

    /// Merges `landing` (a commit-ish) with a merge commit saying what landed. `Ok(None)`: it
    /// merged; `Ok(Some(conflict))`: it stopped on conflicts, left for a resolver or
    /// [`MergeWorktree::abort`].
    pub(crate) fn merge(
        &self,
        landing: &str,
        message: &str,
    ) -> Result<Option<shepherd_core::land::ConflictView>, GitFailure> {
        let env = identity(&self.repo);
        let ran = run(
            &self.path,
            &["merge", "--no-ff", "--no-edit", "-m", message, landing],
            &env,
            GIT_DEADLINE,
        )?;
        if ran.success {
            return Ok(None);
        }
        let conflicted = self.unmerged()?;
        if conflicted.is_empty() {
            // It failed for another reason: say it.
            return Err(GitFailure {
                args: format!("merge {landing}"),
                message: first_line(&format!("{}\n{}", ran.stderr, ran.stdout)),
            });
        }
        let mut hunks = git(&self.path, &["diff", "--no-color"]).unwrap_or_default();
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
    pub(crate) fn unmerged(&self) -> Result<Vec<String>, GitFailure> {
        let listed = git(&self.path, &["diff", "--name-only", "--diff-filter=U"])?;
        Ok(listed
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(str::to_owned)
            .collect())
    }

    /// Whether a merge is under way (its commit not made yet).
    pub(crate) fn merging(&self) -> bool {
        git(
            &self.path,
            &["rev-parse", "--verify", "--quiet", "MERGE_HEAD"],
        )
        .is_ok()
    }

    /// Makes the merge commit a resolver left staged but uncommitted.
    pub(crate) fn conclude(&self) -> Result<(), GitFailure> {
        let env = identity(&self.repo);
        let ran = run(&self.path, &["commit", "--no-edit"], &env, GIT_DEADLINE)?;
        if ran.success {
            Ok(())
        } else {
            Err(GitFailure {
                args: "commit --no-edit".to_owned(),
                message: first_line(&format!("{}\n{}", ran.stderr, ran.stdout)),
            })
        }
    }

    /// Gives up the merge under way.
    pub(crate) fn abort(&self) {
        let _aborted = git(&self.path, &["merge", "--abort"]);
    }

    /// Goes back to `commit`, dropping everything since.
    pub(crate) fn reset(&self, commit: &str) -> Result<(), GitFailure> {
        self.abort();
        git(&self.path, &["reset", "--hard", "--quiet", commit]).map(drop)?;
        git(&self.path, &["clean", "-fdq"]).map(drop)
    }

    /// Runs the check (`sh -c`) here within `limit`: `Ok(())` when it passes, else the end of
    /// what it printed.
    pub(crate) fn check(&self, command: &str, limit: Duration) -> Result<(), String> {
        let mut shell = Command::new("sh");
        shell
            .arg("-c")
            .arg(command)
            .current_dir(&self.path)
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE");
        let out =
            match shepherd_term::process::run_with_deadline(&mut shell, Instant::now() + limit) {
                Ok(out) => out,
                Err(err) => return Err(format!("the check could not run: {err}")),
            };
        if out.success {
            return Ok(());
        }
        let said = format!("{}{}", out.stdout, out.stderr);
        let mut start = said.len().saturating_sub(CHECK_TAIL);
        while !said.is_char_boundary(start) {
            start += 1;
        }
        let status = out.code.map_or_else(
            || "it was stopped".to_owned(),
            |code| format!("exit {code}"),
        );
        Err(format!("{status}: {}", said[start..].trim()))
    }

    /// Removes it.
    pub(crate) fn remove(self) {
        let shown = self.path.display().to_string();
        let _removed = git(&self.repo, &["worktree", "remove", "--force", &shown]);
    }
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
