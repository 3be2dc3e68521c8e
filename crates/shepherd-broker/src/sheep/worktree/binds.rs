//! What of git a confined sheep's sandbox holds. The broker says it, because the broker made
//! the worktree; nothing is derived from a `.git` in the sheep's working directory, which the
//! sheep (or one before it) could have written.
//!
//! - A sheep in a worktree of the isolation layout (its working directory inside
//!   `<state>/worktrees/<repo>-<hash>/<name>`, whose `.git` is a directory): that worktree
//!   writable, whole (its `.git` too, when the sheep works in a subdirectory of it), and the
//!   project's object directories read-only, named by the record the broker keeps beside its
//!   worktrees. Nothing else of the project's `.git`.
//! - A worktree of the older, linked kind: its `.git` file read-only; its sheep edits but cannot
//!   commit while confined (that would need the project's shared git directory writable).
//! - Any other sheep: the `.git` of its working directory, and the project's when the project
//!   lies inside it, read-only, so it edits files but cannot change the repository.

use std::path::{Path, PathBuf};

use crate::git::own_repo;

use super::RECORD;

/// The sandbox's git mounts: made writable, made read-only.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct GitBinds {
    /// Directories the sheep may change beyond its working directory.
    pub(crate) write: Vec<PathBuf>,
    /// Paths the sheep may read but not change (bound over what is writable).
    pub(crate) read: Vec<PathBuf>,
}

/// The git mounts of a sheep working in `cwd` here, for the broker of `project_root` whose
/// worktrees are under `state_dir`.
pub(crate) fn for_cwd(state_dir: &Path, project_root: &Path, cwd: &Path) -> GitBinds {
    if let Some(worktree) = worktree_of(state_dir, cwd) {
        return isolated(&worktree, cwd);
    }
    let mut read = Vec::new();
    for dot_git in [cwd.join(".git"), project_root.join(".git")] {
        if dot_git.starts_with(cwd)
            && fs_err::symlink_metadata(&dot_git).is_ok()
            && !read.contains(&dot_git)
        {
            read.push(dot_git);
        }
    }
    GitBinds {
        write: Vec::new(),
        read,
    }
}

/// The worktree `<state>/worktrees/<folder>/<name>` that `cwd` is in, if it is in one.
fn worktree_of(state_dir: &Path, cwd: &Path) -> Option<PathBuf> {
    let worktrees = state_dir.join("worktrees");
    let canonical = fs_err::canonicalize(&worktrees).ok();
    let cwd_canonical = fs_err::canonicalize(cwd).ok();
    [Some(worktrees), canonical]
        .into_iter()
        .flatten()
        .find_map(|root| {
            let inside = [Some(cwd.to_path_buf()), cwd_canonical.clone()]
                .into_iter()
                .flatten()
                .find_map(|cwd| cwd.strip_prefix(&root).ok().map(Path::to_path_buf))?;
            let mut parts = inside.components();
            let (folder, name) = (parts.next()?, parts.next()?);
            Some(root.join(folder).join(name))
        })
}

fn isolated(worktree: &Path, cwd: &Path) -> GitBinds {
    let dot_git = worktree.join(".git");
    match fs_err::symlink_metadata(&dot_git) {
        Ok(meta) if meta.file_type().is_dir() => {
            let write = if worktree == cwd {
                Vec::new()
            } else {
                vec![worktree.to_path_buf()]
            };
            let read = worktree
                .parent()
                .and_then(|folder| fs_err::read_to_string(folder.join(RECORD)).ok())
                .and_then(|common| own_repo::object_dirs(Path::new(common.trim())).ok())
                .unwrap_or_default();
            GitBinds { write, read }
        }
        Ok(meta) if meta.file_type().is_file() => GitBinds {
            write: Vec::new(),
            read: vec![dot_git],
        },
        _ => GitBinds::default(),
    }
}
