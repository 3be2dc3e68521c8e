//! A merge as the herd keeps it: the branches it lands ([`MergeCandidate`], [`MergePlan`]), the
//! move it is about to make ([`Advance`]), the merge itself ([`Merge`]) and each landing it made
//! ([`Landed`]). The events that change them are recorded by `herd::merge`.

use serde::{Deserialize, Serialize};

use crate::land::{MergeView, Strategy};

/// One branch a merge lands, as planned.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MergeCandidate {
    /// The branch.
    pub branch: String,
    /// What is merged: the branch, or the changes preserved on top of it at close.
    pub landing_ref: String,
    /// The changes preserved at close, when there are some (pruning and discarding delete
    /// them too).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preserved: Option<String>,
    /// Whose work it is (display name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// That sheep's agent id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner_id: Option<String>,
    /// The label of the sheep whose work it is (a resolver or fixer of it carries it).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub owner_label: String,
    /// The first line of the task that made it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    /// How that task ended, when it did not complete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_status: Option<String>,
    /// Its note, relative to the project.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Its note, absolute: the session whose Branches section lists it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note_path: Option<String>,
    /// The session directory (`NNNN-slug`) its note is in: a resolver's or fixer's note goes
    /// there too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_dir: Option<String>,
    /// The branch the project had checked out when its work began.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_branch: Option<String>,
    /// Why the merge leaves it out (`--skip`, `--only`, a task that did not complete).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub left_out: Option<String>,
}

/// A merge as checked before it starts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MergePlan {
    /// The repository (its top directory).
    pub repo: String,
    /// The branch it lands into.
    pub target: String,
    /// Made for this merge from this commit-ish when it does not exist.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub create_from: Option<String>,
    /// How each branch lands.
    #[serde(default)]
    pub strategy: Strategy,
    /// The check, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<String>,
    /// How long the check may run (ms).
    pub check_timeout_ms: u64,
    /// The resolver's agent definition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolve: Option<String>,
    /// The fixer's agent definition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
    /// How many fixers a failing check gets at most.
    #[serde(default)]
    pub fix_attempts: u32,
    /// Whether landed branches are deleted.
    #[serde(default)]
    pub prune: bool,
    /// Whether the branches are thrown away instead.
    #[serde(default)]
    pub discard: bool,
    /// What lands, in order.
    pub candidates: Vec<MergeCandidate>,
    /// The caller's terminal, for a resolver or fixer in a pane.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caller: Option<crate::spawn::CallerContext>,
}

/// A move of the target, recorded before it is made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Advance {
    /// The branch it lands.
    pub index: usize,
    /// The target's tip now.
    pub from: String,
    /// The verified result.
    pub to: String,
    /// The branch's commit that lands.
    pub tip: String,
}

/// One merge.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Merge {
    /// `merge-xxxxxxxx`.
    pub id: String,
    /// The client request id of the submission, so a resent submission finds it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// When it was accepted (ms).
    pub created_at: i64,
    /// What it lands, and how.
    pub plan: MergePlan,
    /// Where each branch stands (as last recorded).
    pub view: MergeView,
    /// The target's tip after its last landed step (absent until it started).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tip: Option<String>,
    /// The move about to be made, until its outcome is recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub advancing: Option<Advance>,
}

impl Merge {
    /// Whether it is over.
    pub fn is_finished(&self) -> bool {
        self.view.finished
    }

    /// The key of the lane it lands in: one merge at a time per repository and target.
    pub fn lane(&self) -> String {
        lane(&self.plan.repo, &self.plan.target)
    }
}

/// The lane of `target` in `repo`.
fn lane(repo: &str, target: &str) -> String {
    format!("{repo}\n{target}")
}

/// A branch landed into a target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Landed {
    /// The target.
    pub target: String,
    /// The branch.
    pub branch: String,
    /// The branch's commit that landed.
    pub tip: String,
    /// The target's commit that holds it.
    pub commit: String,
    /// How it landed.
    pub strategy: Strategy,
    /// The merge that landed it.
    pub merge_id: String,
    /// When (ms).
    pub at: i64,
}

/// The key of a landing in [`crate::herd::Herd::landed`] (a space is in no ref name).
pub fn landed_key(target: &str, branch: &str) -> String {
    format!("{target} {branch}")
}
