//! The host's side of an isolated remote sheep's branch (`shepherd remote branch`): its
//! worktree made, reported on and removed on the host, in the isolation layout a local
//! isolated sheep gets (a repository of its own borrowing the host checkout's objects, see
//! [`crate::git::own_repo`]).
//!
//! `create` makes it from the checkout's `HEAD`; `report` first puts its `.git` back to what
//! Shepherd made (the sheep is closed by then), then says where its branch stands, so the
//! broker fetches that branch from the worktree itself and runs nothing the sheep configured;
//! `remove` removes it once nothing uncommitted is left. A worktree of the older, linked layout
//! (made before, in the checkout's shared git directory) is reported and removed the way it was
//! made, once its configuration is checked for keys that run a program. Every git here goes
//! through the hardened runner.

use std::path::{Path, PathBuf};
use std::time::Duration;

use shepherd_core::dirs::UserDirs;

use super::ops::{BranchAction, BranchReply, BranchRequest};
use crate::git::own_repo::{self, Borrowed, Head};
use crate::git::{Git, GitError, discover, program_keys};

/// Why a step failed, in one line for the broker to show.
fn failed(err: impl std::fmt::Display) -> String {
    err.to_string()
}

/// Carries out a `branch` request on this host.
pub(super) fn branch(request: &BranchRequest, dirs: &UserDirs) -> Result<BranchReply, String> {
    // Two sheep of one run get their worktrees at once: branch steps on this host take turns.
    shepherd_client::paths::ensure_private_dir(&dirs.runtime_dir)
        .map_err(|err| failed(format!("making the runtime directory: {err}")))?;
    let _turn = shepherd_fs::lock_exclusive(
        &dirs.runtime_dir.join("branch.lock"),
        Duration::from_secs(60),
    )
    .map_err(|err| failed(format!("waiting for another branch step: {err}")))?;
    // Outside the host's checkout, under the host user's state directory; a worktree made
    // before worktrees moved there is found where it was.
    let earlier = request
        .repo
        .join(".shepherd")
        .join("worktrees")
        .join(&request.name);
    let worktree = if earlier.is_dir() {
        earlier
    } else {
        host_worktree_path(&dirs.state_dir, &request.repo, &request.name)
    };
    if let Some(parent) = worktree.parent() {
        fs_err::create_dir_all(parent)
            .map_err(|err| failed(format!("making the worktrees directory: {err}")))?;
    }
    let branch = format!("shepherd/{}", request.name);
    let checkout = Git::at(&request.repo);
    if request.action == BranchAction::Create {
        let base = checkout.run(&["rev-parse", "HEAD"]).map_err(failed)?;
        let borrowed = borrowed(&checkout)?;
        own_repo::make(
            &worktree,
            &borrowed,
            Head::Branch {
                name: &branch,
                at: &base,
            },
        )
        .map_err(failed)?;
        return Ok(BranchReply {
            worktree: worktree.clone(),
            head: base.clone(),
            base,
            commits: Vec::new(),
            dirty: false,
            objects: borrowed.objects,
            fetch_from: Some(worktree),
        });
    }
    match fs_err::symlink_metadata(worktree.join(".git")) {
        Ok(meta) if meta.file_type().is_file() => linked(request, &worktree, &branch),
        _ => own(request, &checkout, &worktree, &branch),
    }
}

/// What the host checkout lends its worktrees.
fn borrowed(checkout: &Git) -> Result<Borrowed, String> {
    let common = checkout
        .run(&["rev-parse", "--path-format=absolute", "--git-common-dir"])
        .map_err(failed)?;
    Borrowed::from(Path::new(&common)).map_err(failed)
}

/// `report` or `remove` of a worktree that is a repository of its own.
fn own(
    request: &BranchRequest,
    checkout: &Git,
    worktree: &Path,
    branch: &str,
) -> Result<BranchReply, String> {
    let borrowed = borrowed(checkout)?;
    own_repo::sanitise(worktree, &borrowed).map_err(failed)?;
    let base = request.base.clone().ok_or_else(|| {
        failed(format!(
            "the broker did not say where {branch} started; update the shepherd that asks"
        ))
    })?;
    let sheeps = Git::own(worktree);
    let head = sheeps
        .run(&[
            "rev-parse",
            "--verify",
            &format!("refs/heads/{branch}^{{commit}}"),
        ])
        .map_err(failed)?;
    let commits = sheeps
        .run(&[
            "log",
            "--reverse",
            "--format=%h %s",
            &format!("{base}..{head}"),
        ])
        .map_err(failed)?
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(str::to_owned)
        .collect();
    let dirty = !sheeps
        .run(&["status", "--porcelain", "--untracked-files=all"])
        .map_err(failed)?
        .is_empty();
    if request.action == BranchAction::Remove && !dirty {
        fs_err::remove_dir_all(worktree)
            .map_err(|err| failed(format!("removing {}: {err}", worktree.display())))?;
    }
    Ok(BranchReply {
        worktree: worktree.to_path_buf(),
        base,
        head,
        commits,
        dirty,
        objects: borrowed.objects,
        fetch_from: Some(worktree.to_path_buf()),
    })
}

/// `report` or `remove` of a linked worktree of the older layout, whose branch is in the
/// checkout itself; refused when its configuration (which its sheep could write) sets a key
/// that runs a program.
fn linked(request: &BranchRequest, worktree: &Path, branch: &str) -> Result<BranchReply, String> {
    let repo = &request.repo;
    let checkout = Git::at(repo);
    let git_dir = match discover::find(worktree).map_err(failed)? {
        Some(discover::Found::Linked { file, git_dir }) if file == worktree.join(".git") => git_dir,
        _ => {
            return Err(failed(format!(
                "{} is not a worktree git made",
                worktree.display()
            )));
        }
    };
    let in_worktree = Git::at(worktree)
        .env("GIT_DIR", git_dir.display().to_string())
        .env("GIT_WORK_TREE", worktree.display().to_string());
    program_keys::refuse(&in_worktree, &git_dir).map_err(failed)?;
    let base_key = format!("branch.{branch}.shepherdBase");
    let base = match &request.base {
        Some(base) => base.clone(),
        None => checkout.run(&["config", &base_key]).map_err(failed)?,
    };
    let head = checkout.run(&["rev-parse", branch]).map_err(failed)?;
    let commits = checkout
        .run(&[
            "log",
            "--reverse",
            "--format=%h %s",
            &format!("{base}..{branch}"),
        ])
        .map_err(failed)?
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(str::to_owned)
        .collect();
    let dirty = !in_worktree
        .run(&["status", "--porcelain", "--untracked-files=all"])
        .map_err(failed)?
        .is_empty();
    if request.action == BranchAction::Remove && !dirty {
        let path = worktree.display().to_string();
        checkout
            .run(&["worktree", "remove", &path])
            .map_err(failed)?;
        checkout.run(&["branch", "-D", branch]).map_err(failed)?;
        let _unset: Result<String, GitError> = checkout.run(&["config", "--unset", &base_key]);
    }
    Ok(BranchReply {
        worktree: worktree.to_path_buf(),
        base,
        head,
        commits,
        dirty,
        objects: Vec::new(),
        fetch_from: None,
    })
}

/// Where the worktree `name` of the host's checkout `repo` goes: under the host user's state
/// directory, in a folder of that checkout's.
fn host_worktree_path(state_dir: &Path, repo: &Path, name: &str) -> PathBuf {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(repo.to_string_lossy().as_bytes());
    let named = repo
        .file_name()
        .map(|n| shepherd_core::slug::slugify(&n.to_string_lossy(), 24))
        .filter(|slug| !slug.is_empty())
        .unwrap_or_else(|| "repo".to_owned());
    state_dir
        .join("worktrees")
        .join(format!("{named}-{}", &hex::encode(digest)[..12]))
        .join(name)
}
