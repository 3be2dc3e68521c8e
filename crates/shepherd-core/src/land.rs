//! Landing the herd's work: the merge queue's request, where each branch stands while it runs,
//! and its outcome.
//!
//! Isolated sheep and tasks each leave a branch (with the changes preserved when their sheep
//! closed on top of it). A merge lands them one by one, in order, into a target branch: each
//! merge is made in a worktree of the target made for the purpose, a check command may gate it,
//! a conflict stops the queue or goes to a resolver sheep, and the target moves only when a
//! step succeeds. The broker carries it out; these are the shapes on the wire, so every front
//! end reads the same record.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::spawn::CallerContext;

/// `merge.submit` parameters.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MergeParams {
    /// What to land, in order: run ids (`run-…`: the run's branches in its input order), sheep
    /// (agent ids or display names: the branch each one's worktree left) and branch names
    /// (`shepherd/…`).
    #[serde(default)]
    pub targets: Vec<String>,
    /// Every branch of this fieldnotes session not landed yet, after the targets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// The branch to land into (made from the branches' base branch when missing); default:
    /// the branch the project had checked out when their work began.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub into: Option<String>,
    /// A shell command that must pass in the merge worktree after each merge (default: the
    /// `mergeCheck` setting).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<String>,
    /// An agent definition whose sheep resolves a conflict; without it a conflict stops the
    /// queue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolve: Option<String>,
    /// Discard the branches instead of landing them (their branches and preserved changes go).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub discard: bool,
    /// The caller's terminal, for a resolver in a pane.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caller: Option<CallerContext>,
}

/// `merge.attach` parameters.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MergeIdParams {
    /// The merge.
    pub merge_id: String,
}

/// Where one branch stands.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum BranchState {
    /// Not landed yet.
    #[default]
    Open,
    /// Being merged (or its check runs, or its resolver works).
    Merging,
    /// Landed: the target holds it (`commit`).
    Merged,
    /// Its merge conflicted and no resolver landed it.
    Conflict,
    /// Its check failed: the target stayed where it was.
    CheckFailed,
    /// Thrown away on purpose (its branch and preserved changes are gone).
    Discarded,
    /// Not tried: the queue stopped before it.
    Skipped,
    /// Refused before anything was merged (the target moved, the branch is gone, …).
    Refused,
}

impl BranchState {
    /// Its spelling (`check_failed`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Open => "open",
            Self::Merging => "merging",
            Self::Merged => "merged",
            Self::Conflict => "conflict",
            Self::CheckFailed => "check_failed",
            Self::Discarded => "discarded",
            Self::Skipped => "skipped",
            Self::Refused => "refused",
        }
    }

    /// In words, as `shepherd.md` and the CLI say it.
    pub fn words(self) -> &'static str {
        match self {
            Self::Open => "open",
            Self::Merging => "merging",
            Self::Merged => "merged",
            Self::Conflict => "conflict",
            Self::CheckFailed => "check failed",
            Self::Discarded => "discarded",
            Self::Skipped => "skipped",
            Self::Refused => "refused",
        }
    }
}

/// A merge that stopped on conflicts: the files and the conflicting hunks.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConflictView {
    /// The files with conflicts, relative to the repository.
    pub files: Vec<String>,
    /// The conflicting hunks (`git diff` of the unmerged files), cut at 8 KiB.
    pub hunks: String,
}

/// The sheep that was asked to resolve a conflict.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResolverView {
    /// Its agent id.
    pub agent_id: String,
    /// Its task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// How its task ended (`completed`, `blocked`, …), once it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// What it said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// Its note, relative to the project.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// One branch of a merge.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BranchLanding {
    /// The branch.
    pub branch: String,
    /// What is merged: the branch, or the changes preserved on top of it at close.
    pub landing_ref: String,
    /// The sheep whose work it is (display name), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// That sheep's note, relative to the project, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Where it stands.
    pub state: BranchState,
    /// The target's commit that landed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// Its conflict, when its merge had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conflict: Option<ConflictView>,
    /// The end of the check's output, when the check failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check_output: Option<String>,
    /// The sheep that resolved (or tried to resolve) its conflict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolver: Option<ResolverView>,
    /// Why it did not land, in one line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

/// A merge as its followers see it: pushed (`merge` event) whenever it changes, and the answer
/// to `merge.submit` and `merge.attach`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MergeView {
    /// The merge.
    pub merge_id: String,
    /// The branch it lands into.
    pub target: String,
    /// The check that gates each step, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<String>,
    /// Each branch, in order.
    pub branches: Vec<BranchLanding>,
    /// Whether it is over.
    #[serde(default)]
    pub finished: bool,
    /// Once over: 0 when every branch landed (or was discarded), 1 when a check failed, 2 when
    /// a conflict was not resolved or a step was refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<u8>,
}

impl MergeView {
    /// The exit status its branches call for: 2 for a conflict or a refusal, else 1 for a
    /// failed check, else 0.
    pub fn exit_status(&self) -> u8 {
        let any = |state: BranchState| self.branches.iter().any(|b| b.state == state);
        if any(BranchState::Conflict) || any(BranchState::Refused) {
            2
        } else if any(BranchState::CheckFailed) {
            1
        } else {
            0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn landing(state: BranchState) -> BranchLanding {
        BranchLanding {
            branch: "shepherd/x".into(),
            landing_ref: "shepherd/x".into(),
            state,
            ..BranchLanding::default()
        }
    }

    #[test]
    fn the_exit_status_says_the_worst_that_happened() {
        let view = |states: &[BranchState]| MergeView {
            branches: states.iter().copied().map(landing).collect(),
            ..MergeView::default()
        };
        assert_eq!(
            view(&[BranchState::Merged, BranchState::Discarded]).exit_status(),
            0
        );
        assert_eq!(
            view(&[BranchState::Merged, BranchState::CheckFailed]).exit_status(),
            1
        );
        assert_eq!(
            view(&[
                BranchState::CheckFailed,
                BranchState::Conflict,
                BranchState::Skipped
            ])
            .exit_status(),
            2
        );
        assert_eq!(view(&[BranchState::Refused]).exit_status(), 2);
    }
}
