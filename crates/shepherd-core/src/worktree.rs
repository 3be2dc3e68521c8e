//! Isolated work as data: the git worktree a task or sheep runs in, here or on a host, and what
//! became of it once released.
//!
//! The broker makes and removes worktrees (through git, on this machine or through a host's
//! link); these are the shapes it keeps in the herd, journals and reports on the wire, so that
//! the herd model, the protocol schema, the generated TypeScript and every front end read one
//! typed record instead of re-reading loose JSON. The JSON spellings are the ones journals and
//! `shepherd run --json` have always carried.

use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A repository an isolated task's working directory belongs to, probed before anything runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Repo {
    /// The working tree's top directory.
    pub top: PathBuf,
    /// The shared git directory (`/repo/.git`).
    pub common_dir: PathBuf,
    /// The task's working directory relative to `top`.
    pub subdir: PathBuf,
}

/// A worktree made on this machine for one task or sheep.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Worktree {
    /// The repository it belongs to.
    pub repo: Repo,
    /// Where it is.
    pub path: PathBuf,
    /// Its branch (`shepherd/…`).
    pub branch: String,
    /// The commit it started from.
    pub base: String,
    /// The branch the project had checked out when it was made (absent: a detached `HEAD`, or
    /// a record from before this was kept): where its work lands by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_branch: Option<String>,
}

impl Worktree {
    /// Where the task runs: its working directory's twin inside the worktree.
    pub fn cwd(&self) -> PathBuf {
        self.path.join(&self.repo.subdir)
    }
}

/// An isolated remote sheep's worktree, in the host's checkout.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RemoteWorktree {
    /// The host.
    pub host: String,
    /// The host's checkout.
    pub repo: PathBuf,
    /// The worktree's name there.
    pub name: String,
    /// The worktree on the host.
    pub path: PathBuf,
    /// Its branch (`shepherd/…`), which comes home under the same name.
    pub branch: String,
    /// The commit it started from.
    pub base: String,
    /// The host checkout's object directories, which the worktree (a repository of its own)
    /// borrows and its sheep's sandbox reads (absent: a worktree of the older, linked layout).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub objects: Vec<PathBuf>,
}

/// The worktree an isolated sheep was given.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum MadeWorktree {
    /// On a host (recorded under `remote`).
    Remote {
        /// The worktree there.
        remote: RemoteWorktree,
    },
    /// On this machine.
    Here(Worktree),
}

/// An isolated sheep's worktree as its herd record keeps it: what was made, and once the sheep
/// was closed, what became of it (a resume takes the release back).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SheepWorktree {
    /// What was made.
    #[serde(flatten)]
    pub made: MadeWorktree,
    /// What became of it, once released.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub released: Option<WorktreeReport>,
}

impl SheepWorktree {
    /// A worktree just made, not released.
    pub fn made(made: MadeWorktree) -> Self {
        Self {
            made,
            released: None,
        }
    }

    /// Where it is, as spawn, status and the herd show it.
    pub fn place(&self) -> WorktreePlace {
        match &self.made {
            MadeWorktree::Remote { remote } => WorktreePlace {
                host: Some(remote.host.clone()),
                path: remote.path.display().to_string(),
                branch: remote.branch.clone(),
            },
            MadeWorktree::Here(made) => WorktreePlace {
                host: None,
                path: made.path.display().to_string(),
                branch: made.branch.clone(),
            },
        }
    }
}

/// Where a sheep's worktree is: its path and branch, and its host when not this machine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WorktreePlace {
    /// The host it is on (absent: this machine).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// The worktree's directory.
    pub path: String,
    /// Its branch.
    pub branch: String,
}

/// What a kept worktree holds against its base: the patch to integrate or discard.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Patch {
    /// Every file changed, added or left untracked, relative to the worktree.
    pub files: Vec<String>,
    /// `git diff --shortstat` against the base, with untracked files counted.
    pub diffstat: String,
    /// The new commits, `<short hash> <subject>`, oldest first.
    pub commits: Vec<String>,
    /// How to integrate or discard it.
    pub integrate: String,
}

/// What became of a worktree on this machine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LocalWorktreeReport {
    /// The worktree's directory.
    pub path: String,
    /// Its branch.
    pub branch: String,
    /// The commit it started from.
    pub base: String,
    /// Whether it is still there.
    pub kept: bool,
    /// Why it was kept (absent when it was removed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// What it holds against its base, and what to do with it (absent when it held nothing).
    #[serde(default, flatten, skip_serializing_if = "Option::is_none")]
    pub patch: Option<Patch>,
    /// The ref its uncommitted changes were committed to when its sheep was closed
    /// (`refs/shepherd/preserved/<owner>`, a commit on top of its branch), so removing the
    /// worktree lost nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preserved: Option<String>,
    /// The branch the project had checked out when it was made: where its work lands by
    /// default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_branch: Option<String>,
}

impl LocalWorktreeReport {
    /// What lands when this worktree's work is merged: its preserved changes when there are
    /// some (they sit on top of its branch), else its branch.
    pub fn landing_ref(&self) -> &str {
        self.preserved.as_deref().unwrap_or(&self.branch)
    }
}

/// What became of an isolated remote sheep's worktree: its commits brought home (or not), and
/// its worktree on the host removed (or kept, and why).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RemoteWorktreeReport {
    /// The host.
    pub host: String,
    /// The worktree on the host.
    pub path: String,
    /// Its branch (here too, once brought home).
    pub branch: String,
    /// The commit it started from.
    pub base: String,
    /// Whether the worktree is still on the host.
    pub kept: bool,
    /// Why it was kept.
    #[serde(default)]
    pub reason: Option<String>,
    /// Its commits, `<short hash> <subject>`, oldest first.
    #[serde(default)]
    pub commits: Vec<String>,
    /// Whether its commits are on its branch here.
    pub brought_home: bool,
    /// How to integrate or discard it.
    pub integrate: String,
}

impl RemoteWorktreeReport {
    /// `1 commit brought home on branch shepherd/w`, `3 commits …`: the one wording every
    /// front end gives a remote worktree whose commits came home; `None` when they did not.
    pub fn brought_home_phrase(&self) -> Option<String> {
        self.brought_home.then(|| {
            let count = self.commits.len();
            let noun = if count == 1 { "commit" } else { "commits" };
            format!("{count} {noun} brought home on branch {}", self.branch)
        })
    }
}

/// What became of a worktree, here or on a host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum WorktreeReport {
    /// A remote sheep's worktree.
    Remote(RemoteWorktreeReport),
    /// A worktree on this machine.
    Local(LocalWorktreeReport),
}

impl WorktreeReport {
    /// Whether the worktree is still there.
    pub fn kept(&self) -> bool {
        match self {
            Self::Remote(report) => report.kept,
            Self::Local(report) => report.kept,
        }
    }

    /// Whether a remote worktree's commits came home (never, for a local one: they are here).
    pub fn brought_home(&self) -> bool {
        matches!(self, Self::Remote(report) if report.brought_home)
    }

    /// Whether the report is one the user has something to do about: a worktree kept, a
    /// branch with work on it (commits, or changes preserved at close), or a branch brought
    /// home to integrate.
    pub fn needs_integrating(&self) -> bool {
        let has_work = matches!(self, Self::Local(report) if report.patch.is_some());
        self.kept() || self.brought_home() || has_work
    }

    /// Its branch.
    pub fn branch(&self) -> &str {
        match self {
            Self::Remote(report) => &report.branch,
            Self::Local(report) => &report.branch,
        }
    }

    /// The worktree's directory (on the host, for a remote one).
    pub fn path(&self) -> &Path {
        match self {
            Self::Remote(report) => Path::new(&report.path),
            Self::Local(report) => Path::new(&report.path),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn here() -> Worktree {
        Worktree {
            repo: Repo {
                top: "/repo".into(),
                common_dir: "/repo/.git".into(),
                subdir: "crates".into(),
            },
            path: "/repo/.git-wt/w".into(),
            branch: "shepherd/w".into(),
            base: "abc".into(),
            base_branch: None,
        }
    }

    /// The records journals hold read back as they were written, released or not.
    #[test]
    fn sheep_records_keep_their_journal_spelling() {
        let local = SheepWorktree::made(MadeWorktree::Here(here()));
        let written = serde_json::to_value(&local).unwrap();
        assert_eq!(
            written,
            json!({"repo": {"top": "/repo", "commonDir": "/repo/.git", "subdir": "crates"},
                   "path": "/repo/.git-wt/w", "branch": "shepherd/w", "base": "abc"})
        );
        assert_eq!(
            serde_json::from_value::<SheepWorktree>(written).unwrap(),
            local
        );

        let remote = RemoteWorktree {
            host: "box".into(),
            repo: "/srv/p".into(),
            name: "w".into(),
            path: "/srv/p.git-wt/w".into(),
            branch: "shepherd/w".into(),
            base: "abc".into(),
            objects: vec!["/srv/p/.git/objects".into()],
        };
        let mut record = SheepWorktree::made(MadeWorktree::Remote {
            remote: remote.clone(),
        });
        record.released = Some(WorktreeReport::Remote(RemoteWorktreeReport {
            host: "box".into(),
            path: "/srv/p.git-wt/w".into(),
            branch: "shepherd/w".into(),
            base: "abc".into(),
            kept: false,
            reason: None,
            commits: vec!["1234567 add a".into()],
            brought_home: true,
            integrate: "merge it".into(),
        }));
        let written = serde_json::to_value(&record).unwrap();
        assert_eq!(written["remote"]["host"], "box");
        assert_eq!(written["released"]["broughtHome"], true);
        assert_eq!(
            serde_json::from_value::<SheepWorktree>(written).unwrap(),
            record
        );
        assert_eq!(record.place().host.as_deref(), Some("box"));
    }

    #[test]
    fn local_and_remote_reports_are_told_apart() {
        let local: WorktreeReport = serde_json::from_value(json!({
            "path": "/w", "branch": "b", "base": "c", "kept": true, "reason": "it has work",
            "files": ["a"], "diffstat": "1 file changed", "commits": [], "integrate": "merge"
        }))
        .unwrap();
        let WorktreeReport::Local(report) = &local else {
            panic!("{local:?}")
        };
        assert_eq!(report.patch.as_ref().unwrap().files, ["a"]);
        assert!(local.needs_integrating());
        let removed: WorktreeReport = serde_json::from_value(
            json!({"path": "/w", "branch": "b", "base": "c", "kept": false}),
        )
        .unwrap();
        assert!(!removed.needs_integrating());
        assert_eq!(
            serde_json::to_value(&removed).unwrap(),
            json!({"path": "/w", "branch": "b", "base": "c", "kept": false})
        );
    }
}
