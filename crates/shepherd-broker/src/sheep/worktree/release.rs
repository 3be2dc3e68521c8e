//! Releasing a worktree once its sheep is done with it: its work comes into the project, then
//! the directory goes.
//!
//! For a repository of the sheep's own, in this order: its `.git` must be a real directory;
//! it is put back to what Shepherd made ([`own_repo::sanitise`]); its branch is fetched into
//! the project (`refs/heads/shepherd/<name>`); its uncommitted changes are committed **in the
//! project's repository** (the project's git directory, the worktree as work tree, a temporary
//! index starting from the branch's tip: `read-tree`, `add -A`, `write-tree`, `commit-tree`,
//! `update-ref refs/shepherd/preserved/<owner>`); the patch is read there too; and the
//! directory is removed (without following a link). No object or ref is ever written through a
//! directory the sheep held, and no configuration, hook or index of its is used.

use std::path::Path;

use crate::git::own_repo::{self, Borrowed};
use crate::git::{Git, GitError};

use super::{Patch, Worktree, WorktreeReport, git_changes, legacy, patch, preserved_ref};

/// Releases a worktree whose task or sheep (`owner`) is done with it. Once its close is
/// confirmed the worktree goes: its uncommitted changes first go to
/// `refs/shepherd/preserved/<owner>`, and its branch stays when it holds any work (commits or
/// those changes), else goes too. An unconfirmed close (its sheep may still be at work in it),
/// or a step that fails, keeps the worktree as it is and says why.
pub(crate) fn release(worktree: &Worktree, close_confirmed: bool, owner: &str) -> WorktreeReport {
    if !close_confirmed {
        return reported(
            worktree,
            Outcome::kept("its sheep's close was not confirmed"),
        );
    }
    let outcome = match fs_err::symlink_metadata(worktree.path.join(".git")) {
        Ok(meta) if meta.file_type().is_file() => return legacy::release(worktree, owner),
        Ok(meta) if meta.file_type().is_dir() => own(worktree, owner),
        Ok(_) => Outcome::kept(format!(
            "{} is not the repository Shepherd made",
            worktree.path.join(".git").display()
        )),
        Err(err) => Outcome::kept(format!("its state could not be read ({err})")),
    };
    reported(worktree, outcome)
}

/// What became of a worktree, before it is put in a report.
struct Outcome {
    kept: bool,
    reason: Option<String>,
    patch: Option<Patch>,
    preserved: Option<String>,
}

impl Outcome {
    fn kept(why: impl Into<String>) -> Self {
        Self {
            kept: true,
            reason: Some(why.into()),
            patch: None,
            preserved: None,
        }
    }
}

fn reported(worktree: &Worktree, outcome: Outcome) -> WorktreeReport {
    WorktreeReport {
        path: worktree.path.display().to_string(),
        branch: worktree.branch.clone(),
        base: worktree.base.clone(),
        kept: outcome.kept,
        reason: outcome.reason,
        patch: outcome.patch,
        preserved: outcome.preserved,
        base_branch: worktree.base_branch.clone(),
    }
}

/// Releases a repository of the sheep's own.
fn own(worktree: &Worktree, owner: &str) -> Outcome {
    let path = &worktree.path;
    let repo = &worktree.repo;
    let base = worktree.base.as_str();
    let borrowed = match Borrowed::from(&repo.common_dir) {
        Ok(borrowed) => borrowed,
        Err(err) => {
            return Outcome::kept(format!("its project's objects are not readable ({err})"));
        }
    };
    if let Err(err) = own_repo::sanitise(path, &borrowed) {
        return Outcome::kept(format!("it is not the repository Shepherd made ({err})"));
    }
    // Its branch, else wherever its HEAD is (a sheep that left its branch), else its base.
    let sheeps = Git::own(path);
    let branch_ref = format!("refs/heads/{}", worktree.branch);
    let (source, tip) = [branch_ref.as_str(), "HEAD"]
        .into_iter()
        .find_map(|name| {
            let commit = format!("{name}^{{commit}}");
            sheeps
                .run(&["rev-parse", "--verify", "--quiet", &commit])
                .ok()
                .map(|tip| (name, tip))
        })
        .unwrap_or((branch_ref.as_str(), base.to_owned()));
    let project = Git::at(&repo.top);
    if tip != base {
        let refspec = format!("+{source}:{branch_ref}");
        let fetched = {
            let _serialised = git_changes();
            own_repo::fetch(&repo.top, path, &refspec)
        };
        if let Err(err) = fetched {
            return Outcome::kept(format!("its commits could not be brought home ({err})"));
        }
    }
    // The project's repository reads the work tree, through an index of Shepherd's.
    let index = path.with_file_name(format!(
        ".{}.index",
        path.file_name().unwrap_or_default().to_string_lossy()
    ));
    let reading = Git::at(path)
        .env("GIT_DIR", repo.common_dir.display().to_string())
        .env("GIT_WORK_TREE", path.display().to_string())
        .env("GIT_INDEX_FILE", index.display().to_string());
    let read = read_work_tree(&reading, &index, (&tip, base));
    let _done = fs_err::remove_file(&index);
    let read = match read {
        Ok(read) => read,
        Err(err) => return Outcome::kept(format!("its state could not be read ({err})")),
    };
    let (working, tree) = match read {
        Read::Clean => {
            // Nothing was done in it: it goes with its branch (one brought home before, at
            // its base).
            let _gone = project.run(&["update-ref", "-d", &branch_ref, base]);
            return match remove(path) {
                None => Outcome {
                    kept: false,
                    reason: None,
                    patch: None,
                    preserved: None,
                },
                Some(why) => Outcome::kept(why),
            };
        }
        Read::Work { working, tree } => (working, tree),
    };
    let preserved = if let Some(tree) = &tree {
        match preserve(worktree, &project, (tree, &tip), owner) {
            Ok(preserved) => Some(preserved),
            Err(err) => {
                return Outcome::kept(format!(
                    "its uncommitted changes could not be preserved ({err})"
                ));
            }
        }
    } else {
        None
    };
    let landing = preserved.as_deref().unwrap_or(&tip);
    let patch = patch::patch(
        working,
        &project,
        (base, landing),
        &worktree.branch,
        preserved.as_deref(),
        path,
    );
    let failure = remove(path);
    Outcome {
        kept: failure.is_some(),
        reason: failure,
        patch: Some(patch),
        preserved,
    }
}

/// What the work tree holds against the branch's tip.
enum Read {
    /// Nothing, and the tip is the base: nothing was done in it.
    Clean,
    /// Something, or commits: what it holds against the base, and the tree of everything in
    /// it when that differs from the tip's.
    Work {
        working: patch::Working,
        tree: Option<String>,
    },
}

/// Reads the work tree with `reading` (the project's repository, the worktree, Shepherd's
/// `index`) against an index holding the branch's `tip`; what it holds against `base` is read
/// only when there is something to report.
fn read_work_tree(
    reading: &Git,
    index: &Path,
    (tip, base): (&str, &str),
) -> Result<Read, GitError> {
    let _fresh = fs_err::remove_file(index);
    reading.run(&["read-tree", tip])?;
    // An index fresh from a tree knows no file's stat: refreshed once here, the commands after
    // it hash only what changed.
    reading.output(&["update-index", "-q", "--refresh"])?;
    let untracked = patch::untracked(reading);
    let compared = reading.output(&["diff", "--quiet", tip])?;
    let changed = match compared.code {
        Some(0) => false,
        Some(1) => true,
        _ => {
            return Err(GitError::Failed {
                args: format!("diff --quiet {tip}"),
                message: compared.complaint(),
            });
        }
    };
    let dirty = changed || !untracked.is_empty();
    if !dirty && tip == base {
        return Ok(Read::Clean);
    }
    let working = patch::working(reading, base, &untracked);
    let tree = if dirty {
        reading.run(&["add", "--all", "."])?;
        Some(reading.run(&["write-tree"])?)
    } else {
        None
    };
    Ok(Read::Work { working, tree })
}

/// Commits `tree` on top of `tip` in the project and points `refs/shepherd/preserved/<owner>`
/// at it; makes the branch (at `tip`) when no commit of the sheep's brought it home.
fn preserve(
    worktree: &Worktree,
    project: &Git,
    (tree, tip): (&str, &str),
    owner: &str,
) -> Result<String, GitError> {
    let message = format!(
        "Uncommitted work of {owner} on {}, preserved by Shepherd when its sheep was closed",
        worktree.branch
    );
    let commit = project.clone().envs(&super::IDENTITY).run(&[
        "commit-tree",
        tree,
        "-p",
        tip,
        "-m",
        &message,
    ])?;
    let _serialised = git_changes();
    let branch_ref = format!("refs/heads/{}", worktree.branch);
    if tip == worktree.base {
        project.run(&["update-ref", &branch_ref, tip])?;
    }
    let name = preserved_ref(owner);
    project.run(&["update-ref", &name, &commit])?;
    Ok(name)
}

/// Removes the worktree's directory (its work is in the project by now); says why not.
fn remove(path: &Path) -> Option<String> {
    // `remove_dir_all` removes a symbolic link it finds, never what it points at.
    fs_err::remove_dir_all(path)
        .err()
        .map(|err| format!("it could not be removed ({err})"))
}
