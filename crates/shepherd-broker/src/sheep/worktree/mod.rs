//! Isolated tasks and sheep: each runs in its own worktree on its own branch, so parallel
//! writers cannot trample each other, and what they leave is a branch to land (`shepherd
//! merge`), reported with its patch (files, diffstat, commits) — or nothing.
//!
//! A worktree lives outside every working tree, under the user's state directory and keyed by
//! its repository (`<state>/worktrees/<repo>-<hash>/<run>-t<N>-<agent>`; an isolated sheep's
//! is named after its agent, label and id instead), so `git status` in the project never shows
//! it. It is a repository of its own (the layout [`crate::git::own_repo`] describes) on branch
//! `shepherd/<its name>`, made from the project's `HEAD`: the sheep commits there and nowhere
//! else, and its sandbox ([`binds`]) holds that directory and the project's objects read-only,
//! no more of the project's `.git`. When its sheep's close is confirmed the worktree goes
//! ([`release`]): its branch is fetched into the project, uncommitted changes are committed in
//! the project to a ref of their own, `refs/shepherd/preserved/<owner>` (on top of the branch,
//! so landing it lands them too), and the branch stays when it holds any work; a clean worktree
//! with no new commits goes with its branch. A close that was not confirmed keeps the worktree
//! as it is.
//!
//! Worktrees made before each got a repository of its own — `git worktree` linked ones, here or
//! under `<git-common-dir>-wt/` — are found where they are and released the way they were made
//! ([`legacy`]).

mod binds;
mod legacy;
mod patch;
mod release;
#[cfg(test)]
mod tests;

use shepherd_core::error_code::ErrorCode;
use std::path::{Path, PathBuf};

use crate::error::BrokerError;
use crate::git::own_repo::{self, Borrowed, Head};
use crate::git::{Git, discover};

pub(crate) use crate::git::GitError;
pub(crate) use binds::{GitBinds, for_cwd as sandbox_binds};
pub(crate) use release::release;
pub(crate) use shepherd_core::worktree::{
    LocalWorktreeReport as WorktreeReport, Patch, Repo, Worktree,
};

/// The file in a repository's worktrees folder that names its shared git directory, written by
/// the broker (a sheep's sandbox holds only its own worktree inside the folder): how a sheep's
/// sandbox learns whose objects it may read.
const RECORD: &str = ".repository";

/// Checks that `cwd` is inside a git working tree with at least one commit.
pub(crate) fn probe(cwd: &Path, number: usize) -> Result<Repo, BrokerError> {
    probe_for(cwd, &format!("task {number}"))
}

/// Like [`probe`], for `who` (`task 2`, `this spawn`). The `.git` the directory is found
/// through is checked first ([`discover`]): one a sheep could have planted is refused.
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
    match discover::find(cwd) {
        Ok(Some(_)) => {}
        Ok(None) => return Err(refuse("is not inside a git working tree".to_owned())),
        Err(untrusted) => {
            return Err(BrokerError::new(
                ErrorCode::NotAGitRepository,
                format!("{who} asks for isolate, but {untrusted}"),
            ));
        }
    }
    let git = Git::at(cwd);
    let lines = git
        .run(&[
            "rev-parse",
            "--path-format=absolute",
            "--show-toplevel",
            "--git-common-dir",
        ])
        .map_err(|_| refuse("is not inside a git working tree".to_owned()))?;
    let mut lines = lines.lines();
    let (Some(top), Some(common)) = (lines.next(), lines.next()) else {
        return Err(refuse("is not inside a git working tree".to_owned()));
    };
    git.run(&["rev-parse", "--verify", "--quiet", "HEAD"])
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
/// for refs, and parallel tasks doing it at once can trip over them.
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
/// it, or a resume finds it again) is taken as it is, once put back to what Shepherd made; a
/// branch of its name brought home earlier (a resumed sheep whose worktree went) is where it
/// starts again.
pub(crate) fn create(repo: &Repo, path: PathBuf) -> Result<Worktree, GitError> {
    let _serialised = git_changes();
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let branch = format!("shepherd/{name}");
    record(repo, &path)?;
    let project = Git::at(&repo.top);
    let (head, kept, base_branch) = project_heads(&project, &name)?;
    let base = match fs_err::symlink_metadata(path.join(".git")) {
        Ok(meta) if meta.file_type().is_dir() => {
            own_repo::sanitise(&path, &Borrowed::from(&repo.common_dir)?)?;
            Git::own(&path).run(&["merge-base", &head, &format!("refs/heads/{branch}")])?
        }
        Ok(meta) if meta.file_type().is_file() => legacy::existing(repo, &path, &branch)?,
        Ok(_) => {
            return Err(GitError::layout(
                &path.join(".git"),
                "is not the repository Shepherd made",
            ));
        }
        Err(_) => {
            let (start, base) = match kept {
                Some(tip) => {
                    let base = project.run(&["merge-base", &head, &tip])?;
                    (tip, base)
                }
                None => (head.clone(), head.clone()),
            };
            let made = own_repo::make(
                &path,
                &Borrowed::from(&repo.common_dir)?,
                Head::Branch {
                    name: &branch,
                    at: &start,
                },
            );
            if let Err(err) = made {
                // Half a repository is not a worktree to find again.
                let _gone = fs_err::remove_dir_all(&path);
                return Err(err);
            }
            base
        }
    };
    let worktree = Worktree {
        repo: repo.clone(),
        path,
        branch,
        base,
        base_branch,
    };
    fs_err::create_dir_all(worktree.cwd())
        .map_err(|err| GitError::layout(&worktree.cwd(), format!("cannot be made ({err})")))?;
    Ok(worktree)
}

/// The project's `HEAD`, the tip of a branch `shepherd/<name>` brought home before (when there
/// is one), and the branch the project has checked out (where the work lands by default), in
/// one question to git: a spawn waits for it.
fn project_heads(
    project: &Git,
    name: &str,
) -> Result<(String, Option<String>, Option<String>), GitError> {
    let plain = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.');
    if !plain {
        let head = project.run(&["rev-parse", "HEAD"])?;
        let kept = project
            .run(&[
                "rev-parse",
                "--verify",
                "--quiet",
                &format!("refs/heads/shepherd/{name}^{{commit}}"),
            ])
            .ok();
        let checked_out = project.run(&["symbolic-ref", "--short", "-q", "HEAD"]).ok();
        return Ok((head, kept, checked_out));
    }
    // `--glob` lists the branch only when it exists; a pattern with a glob character in it
    // (its first letter as a class of one) matches that name alone, where a plain one would
    // match the refs below it. The answer: HEAD, the branch if any, then HEAD's full name.
    let mut first = name.chars();
    let pattern = format!(
        "--glob=refs/heads/shepherd/[{}]{}",
        first.next().unwrap_or_default(),
        first.as_str()
    );
    let asked = project.run(&[
        "rev-parse",
        "HEAD",
        &pattern,
        "--symbolic-full-name",
        "HEAD",
    ])?;
    let answers: Vec<&str> = asked.lines().collect();
    let head = answers.first().copied().unwrap_or_default().to_owned();
    let kept = (answers.len() == 3).then(|| answers[1].to_owned());
    let checked_out = answers
        .last()
        .and_then(|full| full.strip_prefix("refs/heads/"))
        .map(str::to_owned);
    Ok((head, kept, checked_out))
}

/// Makes a worktree at `path` with its `HEAD` detached at `tip` and no branch (the merge
/// queue's), a repository of its own like a sheep's.
pub(crate) fn create_detached(repo: &Repo, path: &Path, tip: &str) -> Result<(), GitError> {
    let _serialised = git_changes();
    record(repo, path)?;
    own_repo::make(
        path,
        &Borrowed::from(&repo.common_dir)?,
        Head::Detached(tip),
    )
}

/// Writes the repository's record beside its worktrees (once).
fn record(repo: &Repo, path: &Path) -> Result<(), GitError> {
    let Some(folder) = path.parent() else {
        return Err(GitError::layout(path, "has no folder"));
    };
    fs_err::create_dir_all(folder)
        .map_err(|err| GitError::layout(folder, format!("cannot be made ({err})")))?;
    let file = folder.join(RECORD);
    let text = repo.common_dir.display().to_string();
    if fs_err::read_to_string(&file).is_ok_and(|known| known == text) {
        return Ok(());
    }
    shepherd_fs::write_atomic(&file, text.as_bytes(), Some(0o600))
        .map_err(|err| GitError::layout(&file, format!("cannot be written ({err})")))
}

/// The ref that holds `owner`'s uncommitted changes once its worktree is released.
pub(crate) fn preserved_ref(owner: &str) -> String {
    format!("refs/shepherd/preserved/{owner}")
}

/// The identity Shepherd's own commits are made with when the user configured none: a machine
/// without a git identity still preserves and lands.
pub(crate) const IDENTITY: [(&str, &str); 4] = [
    ("GIT_AUTHOR_NAME", "Shepherd"),
    ("GIT_AUTHOR_EMAIL", "shepherd@localhost"),
    ("GIT_COMMITTER_NAME", "Shepherd"),
    ("GIT_COMMITTER_EMAIL", "shepherd@localhost"),
];
