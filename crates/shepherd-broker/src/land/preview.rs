//! `merge.preview` (`shepherd merge --dry-run`): what a merge would do, found without a
//! worktree and without moving anything — each branch's commits the target lacks, its
//! diffstat (and, when asked, its patch), and which would conflict: the queue is played out on
//! trees (`git merge-tree --write-tree`, each branch merged onto the tree the branches before
//! it would leave), and a branch that conflicts there is tried against the target as it is and
//! against each branch before it that touches the same files, so the report names the pair.
//!
//! Playing the queue out writes tree objects into the repository's object store (as any
//! `git merge-tree` does) and nothing else: no ref, no index, no working tree changes.

use std::collections::BTreeSet;
use std::path::Path;

use shepherd_core::herd::{Landed, MergePlan};
use shepherd_core::land::preview::{
    BranchPreview, CommitLine, MergePreview, PairConflict, cut_patch,
};

use super::git;
use crate::git::{Git, GitError};

/// What `git merge-tree` says of one merge: its tree, or the files that conflict.
enum Merged {
    Clean(String),
    Conflict(Vec<String>),
}

/// Merges `theirs` into `ours` (trees or commits) over `base`, on trees only.
fn merge_tree(repo: &Path, base: &str, ours: &str, theirs: &str) -> Result<Merged, GitError> {
    let base = format!("--merge-base={base}");
    let ran = Git::at(repo).output(&[
        "merge-tree",
        "--write-tree",
        "--name-only",
        "--no-messages",
        &base,
        ours,
        theirs,
    ])?;
    let mut lines = ran.stdout.lines();
    let tree = lines.next().unwrap_or_default().to_owned();
    match ran.code {
        Some(0) => Ok(Merged::Clean(tree)),
        Some(1) => Ok(Merged::Conflict(
            lines
                .filter(|l| !l.trim().is_empty())
                .map(str::to_owned)
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect(),
        )),
        _ => Err(GitError::Failed {
            args: "merge-tree".to_owned(),
            message: ran.complaint(),
        }),
    }
}

/// One branch as the queue would take it, before conflicts are looked for.
struct Branch {
    preview: BranchPreview,
    commit: Option<String>,
    base: Option<String>,
    files: BTreeSet<String>,
}

/// Plays the merge out. `landed` is, per branch, how a merge of this target landed it before;
/// with `patch`, each branch that would land carries its patch.
pub(super) fn preview(
    plan: &MergePlan,
    landed: &[Option<Landed>],
    patch: bool,
) -> Result<MergePreview, GitError> {
    let repo = Path::new(&plan.repo);
    let target = match &plan.create_from {
        Some(from) => from.clone(),
        None => plan.target.clone(),
    };
    let tip = git::resolve(repo, &target).unwrap_or_default();
    let mut branches = Vec::new();
    for (c, landed) in plan.candidates.iter().zip(landed) {
        let commit = git::resolve(repo, &c.landing_ref);
        let mut preview = BranchPreview {
            branch: c.branch.clone(),
            landing_ref: c.landing_ref.clone(),
            owner: c.owner.clone(),
            task_status: c.task_status.clone(),
            lands: c.left_out.is_none(),
            why: c.left_out.clone(),
            ..BranchPreview::default()
        };
        let mut base = None;
        let mut files = BTreeSet::new();
        match (&commit, landed) {
            (None, _) => {
                preview.lands = false;
                preview.why = Some(format!("{} does not exist (any more)", c.landing_ref));
            }
            (Some(commit), Some(landed)) if landed.tip == *commit => {
                preview.lands = false;
                preview.why = Some(format!(
                    "already landed at {} by {}",
                    git::short(&landed.commit),
                    landed.merge_id
                ));
            }
            (Some(commit), _) => {
                let range = format!("{tip}..{commit}");
                let log = git::git(repo, &["log", "--reverse", "--format=%H %s", &range])?;
                preview.commits = log
                    .lines()
                    .filter_map(|l| l.split_once(' '))
                    .map(|(commit, subject)| CommitLine {
                        commit: commit.to_owned(),
                        subject: subject.to_owned(),
                    })
                    .collect();
                let fork = git::git(repo, &["merge-base", &tip, commit])?;
                preview.diffstat = git::git(repo, &["diff", "--stat", &fork, commit])?;
                if patch {
                    let whole = git::git(repo, &["diff", "--no-color", "-M", &fork, commit])?;
                    let (cut, was_cut) = cut_patch(whole);
                    preview.patch = Some(cut);
                    preview.patch_cut = was_cut;
                }
                files = git::git(repo, &["diff", "--name-only", &fork, commit])?
                    .lines()
                    .map(str::to_owned)
                    .collect();
                if preview.commits.is_empty() && preview.lands {
                    preview.lands = false;
                    preview.why = Some(format!("{} already holds it", plan.target));
                }
                base = Some(fork);
            }
        }
        branches.push(Branch {
            preview,
            commit,
            base,
            files,
        });
    }
    conflicts(repo, &tip, &mut branches)?;
    Ok(MergePreview {
        target: plan.target.clone(),
        created_from: plan.create_from.clone(),
        strategy: plan.strategy,
        check: plan.check.clone(),
        branches: branches.into_iter().map(|b| b.preview).collect(),
    })
}

/// Plays the queue out on trees, and names what each conflicting branch conflicts with.
fn conflicts(repo: &Path, tip: &str, branches: &mut [Branch]) -> Result<(), GitError> {
    let mut tree = format!("{tip}^{{tree}}");
    for index in 0..branches.len() {
        let (Some(commit), Some(base), true) = (
            branches[index].commit.clone(),
            branches[index].base.clone(),
            branches[index].preview.lands,
        ) else {
            continue;
        };
        match merge_tree(repo, &base, &tree, &commit)? {
            Merged::Clean(merged) => tree = merged,
            Merged::Conflict(files) => {
                branches[index].preview.conflicts = files;
                if let Merged::Conflict(files) = merge_tree(repo, &base, tip, &commit)? {
                    branches[index].preview.conflicts_with_target = files;
                }
                for earlier in 0..index {
                    let other = &branches[earlier];
                    let (Some(theirs), true) = (&other.commit, other.preview.lands) else {
                        continue;
                    };
                    if other.files.is_disjoint(&branches[index].files) {
                        continue;
                    }
                    let pair_base = git::git(repo, &["merge-base", theirs, &commit])?;
                    if let Merged::Conflict(files) = merge_tree(repo, &pair_base, theirs, &commit)?
                    {
                        let branch = other.preview.branch.clone();
                        branches[index]
                            .preview
                            .conflicts_with
                            .push(PairConflict { branch, files });
                    }
                }
            }
        }
    }
    Ok(())
}
