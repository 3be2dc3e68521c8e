//! Landing the herd's work: the merge queue's request, where each branch stands while it runs,
//! and its outcome.
//!
//! Isolated sheep and tasks each leave a branch (with the changes preserved when their sheep
//! closed on top of it). A merge lands them one by one, in order, into a target branch: each
//! merge is made in a worktree of the target made for the purpose, a check command may gate it,
//! a conflict stops the queue or goes to a resolver sheep, a failing check may go to a fixer
//! sheep, and the target moves only when a step's result is verified to be what its strategy
//! says ([`verify`]). The broker carries it out; these are the shapes on the wire, so every
//! front end reads the same record. [`preview`] is what a dry run answers, and [`message`] the
//! commit message a landing carries.

pub mod message;
pub mod preview;
pub mod verify;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::spawn::CallerContext;

pub use crate::strategy::Strategy;

/// `merge.submit` and `merge.preview` parameters.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MergeParams {
    /// What to land, in order: run ids (`run-…`: the run's branches in its input order), sheep
    /// (agent ids: the branch each one's worktree left) and branch names (`shepherd/…`).
    #[serde(default)]
    pub targets: Vec<String>,
    /// Every branch of this fieldnotes session not landed yet, after the targets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// Of those, only these (branches or agent ids).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub only: Vec<String>,
    /// Of those, all but these (branches or agent ids).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skip: Vec<String>,
    /// Also land branches whose sheep's last task did not complete (each is marked).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub include_failed: bool,
    /// The branch to land into (made from the branches' base branch when missing); default:
    /// the branch the project had checked out when their work began.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub into: Option<String>,
    /// How each branch lands (default: the `mergeStrategy` setting).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<Strategy>,
    /// A shell command that must pass in the merge worktree after each merge.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<String>,
    /// Minutes the check may run (default: the `mergeCheckTimeout` setting).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check_timeout: Option<f64>,
    /// An agent definition whose sheep resolves a conflict; without it a conflict stops the
    /// queue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolve: Option<String>,
    /// An agent definition whose sheep fixes what makes the check fail; without it a failing
    /// check leaves the branch unlanded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
    /// How many fixers a failing check gets at most (default 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fix_attempts: Option<u32>,
    /// Delete each landed branch and its preserved changes once it landed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub prune: bool,
    /// Discard the branches instead of landing them (their branches and preserved changes go).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub discard: bool,
    /// The caller's terminal, for a resolver or fixer in a pane.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caller: Option<CallerContext>,
    /// `merge.preview` only: each branch's patch as well (at most
    /// [`preview::PATCH_LIMIT`] bytes of it), for a page that shows the diff.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub patch: bool,
}

/// The fixers a failing check gets unless the merge says otherwise.
pub const DEFAULT_FIX_ATTEMPTS: u32 = 2;
/// The most fixers a merge may ask for.
pub const MAX_FIX_ATTEMPTS: u32 = 10;

/// `merge.attach` and `merge.cancel` parameters.
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
    /// Being merged (or its resolver works).
    Merging,
    /// Its check runs.
    Checking,
    /// Its check failed and a fixer works on it.
    Fixing,
    /// Landed: the target holds it (`commit`), verified.
    Merged,
    /// A merge of this queue's target landed it before (`commit`): nothing was done again.
    AlreadyLanded,
    /// Its merge conflicted and no resolver landed it.
    Conflict,
    /// Its check failed: the target stayed where it was.
    CheckFailed,
    /// What a resolver or fixer left is not a landing of the branch on the target (`why`
    /// says what was found): the target stayed where it was.
    Rejected,
    /// Thrown away on purpose (its branch and preserved changes are gone).
    Discarded,
    /// Not tried: left out by choice, or the queue stopped (or was cancelled) before it.
    Skipped,
    /// Refused (the target moved, the branch is gone, …).
    Refused,
}

impl BranchState {
    /// Its spelling (`check_failed`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Open => "open",
            Self::Merging => "merging",
            Self::Checking => "checking",
            Self::Fixing => "fixing",
            Self::Merged => "merged",
            Self::AlreadyLanded => "already_landed",
            Self::Conflict => "conflict",
            Self::CheckFailed => "check_failed",
            Self::Rejected => "rejected",
            Self::Discarded => "discarded",
            Self::Skipped => "skipped",
            Self::Refused => "refused",
        }
    }

    /// In words, as `shepherd.md` and the CLI say it.
    pub fn words(self) -> &'static str {
        match self {
            Self::CheckFailed => "check failed",
            Self::AlreadyLanded => "already landed",
            other => other.as_str(),
        }
    }

    /// Whether the queue is done with it (a branch in any other state is still to be tried,
    /// or being tried).
    pub fn is_settled(self) -> bool {
        !matches!(
            self,
            Self::Open | Self::Merging | Self::Checking | Self::Fixing
        )
    }

    /// Whether the target holds it (landed now or before).
    pub fn is_landed(self) -> bool {
        matches!(self, Self::Merged | Self::AlreadyLanded)
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

/// A sheep the queue handed a branch's step to: a resolver (a conflict) or a fixer (a failing
/// check).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResolverView {
    /// Its agent id.
    pub agent_id: String,
    /// Its display name (`claude-resolver (resolver): fix-login`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
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
    /// How that sheep's last task ended, when it did not complete (it lands only with
    /// `includeFailed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_status: Option<String>,
    /// Where it stands.
    pub state: BranchState,
    /// The target's commit that landed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// Its conflict, when its merge had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conflict: Option<ConflictView>,
    /// How the check ended when it failed (`exit 3`, `stopped after 30 s`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check_status: Option<String>,
    /// The end of the check's output, when the check failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check_output: Option<String>,
    /// The sheep that resolved (or tried to resolve) its conflict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolver: Option<ResolverView>,
    /// The sheep that tried to fix its failing check, in turn.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fixers: Vec<ResolverView>,
    /// Why it did not land, or how it was found landed, in one line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

/// A merge as its followers see it: pushed (`merge` event) whenever it changes, and the answer
/// to `merge.submit`, `merge.attach` and `merge.cancel`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MergeView {
    /// The merge.
    pub merge_id: String,
    /// The branch it lands into.
    pub target: String,
    /// How each branch lands.
    #[serde(default)]
    pub strategy: Strategy,
    /// Whether it throws the branches away instead.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub discard: bool,
    /// The check that gates each step, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<String>,
    /// Each branch, in order.
    pub branches: Vec<BranchLanding>,
    /// The merge landing into the same branch that this one waits for, while it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting_for: Option<String>,
    /// Why it was cancelled, once it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancelled: Option<String>,
    /// Whether it is over.
    #[serde(default)]
    pub finished: bool,
    /// Once over: 0 when every branch landed (or was discarded), 1 when a check failed, 2 when
    /// a conflict was not resolved, a result was rejected or a step was refused, 130 when it
    /// was cancelled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<u8>,
}

impl MergeView {
    /// The exit status its branches call for: 130 when cancelled, else 2 for a conflict, a
    /// rejected result or a refusal, else 1 for a failed check, else 0.
    pub fn exit_status(&self) -> u8 {
        let any = |state: BranchState| self.branches.iter().any(|b| b.state == state);
        if self.cancelled.is_some() {
            130
        } else if any(BranchState::Conflict)
            || any(BranchState::Refused)
            || any(BranchState::Rejected)
        {
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
            view(&[
                BranchState::Merged,
                BranchState::AlreadyLanded,
                BranchState::Discarded
            ])
            .exit_status(),
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
        assert_eq!(view(&[BranchState::Rejected]).exit_status(), 2);
        let mut cancelled = view(&[BranchState::Merged, BranchState::Skipped]);
        cancelled.cancelled = Some("cancelled".into());
        assert_eq!(cancelled.exit_status(), 130);
    }

    #[test]
    fn strategies_are_spelt_one_way_and_a_bad_one_names_the_good_ones() {
        for strategy in Strategy::ALL {
            assert_eq!(Strategy::parse(strategy.as_str()), Ok(strategy));
            assert_eq!(
                serde_json::to_value(strategy).unwrap(),
                serde_json::json!(strategy.as_str())
            );
        }
        let err = Strategy::parse("octopus").unwrap_err();
        assert!(
            err.contains("`octopus`") && err.contains("ff-only"),
            "{err}"
        );
        assert!(Strategy::Squash.takes_sheep() && !Strategy::Rebase.takes_sheep());
    }
}
