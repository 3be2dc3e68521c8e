//! The patch a released worktree reports: what its work tree holds against its base (files,
//! diffstat, untracked files), its commits, and how to land or discard it. What cannot be read
//! is left out rather than failing the report.
//!
//! The caller says which git reads it: for a repository of the sheep's own, the project's
//! repository with the worktree as its work tree and a temporary index holding the branch's
//! tip, so no configuration or index of the sheep's is read.

use std::path::Path;

use crate::git::Git;

use super::Patch;

/// What the work tree holds against `base`: its changed and untracked files and the diffstat.
#[derive(Debug, Clone, Default)]
pub(super) struct Working {
    files: Vec<String>,
    diffstat: String,
}

fn lines(git: &Git, args: &[&str]) -> Vec<String> {
    git.run(args)
        .map(|out| {
            out.lines()
                .filter(|l| !l.trim().is_empty())
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// The files `git` (run at the worktree's top, with its index) sees untracked and not ignored.
pub(super) fn untracked(git: &Git) -> Vec<String> {
    lines(git, &["ls-files", "--others", "--exclude-standard"])
}

/// What `git` (run at the worktree's top, with its index) sees changed against `base`, with
/// the `untracked` files it listed.
pub(super) fn working(git: &Git, base: &str, untracked: &[String]) -> Working {
    let mut files = lines(git, &["diff", "--name-only", base]);
    files.extend(untracked.iter().cloned());
    files.sort();
    files.dedup();
    let mut diffstat = git
        .run(&["diff", "--shortstat", base])
        .map(|s| s.trim().to_owned())
        .unwrap_or_default();
    if !untracked.is_empty() {
        if !diffstat.is_empty() {
            diffstat.push_str(", ");
        }
        diffstat.push_str(&format!("{} untracked file(s)", untracked.len()));
    }
    Working { files, diffstat }
}

/// The whole patch: the work tree's changes, the commits from `base` to `tip` as `git` (in a
/// repository holding them) lists them, and how to land it.
pub(super) fn patch(
    working: Working,
    git: &Git,
    (base, tip): (&str, &str),
    branch: &str,
    preserved: Option<&str>,
    path: &Path,
) -> Patch {
    let commits = lines(
        git,
        &[
            "log",
            "--reverse",
            "--format=%h %s",
            &format!("{base}..{tip}"),
        ],
    );
    let shown = path.display();
    let integrate = match preserved {
        Some(preserved) => format!(
            "land it with `shepherd merge {branch}` (its commits and the changes preserved on \
             {preserved}), or by hand with `git merge {preserved}`; to discard, \
             `git branch -D {branch} && git update-ref -d {preserved}`"
        ),
        None => format!(
            "land it with `shepherd merge {branch}`, or by hand with `git merge {branch}` (or \
             cherry-pick its commits); to discard, `git branch -D {branch}` (and remove \
             {shown} while the worktree is there)"
        ),
    };
    Patch {
        files: working.files,
        diffstat: working.diffstat,
        commits,
        integrate,
    }
}
