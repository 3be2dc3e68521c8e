//! What `merge.preview` (`shepherd merge --dry-run`) answers: the branches a merge would land,
//! in order, each with its commits and diffstat, whether the queue would land it at all, and
//! which would conflict — with the target, or with a branch landed before it in the same
//! queue. It is read from git without a worktree (`git merge-tree`), and nothing changes.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::Strategy;

/// One commit of a branch.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommitLine {
    /// Its id.
    pub commit: String,
    /// Its subject.
    pub subject: String,
}

/// A branch landed earlier in the same queue that one conflicts with.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PairConflict {
    /// The other branch.
    pub branch: String,
    /// The files both change in ways that conflict.
    pub files: Vec<String>,
}

/// One branch as the merge would take it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BranchPreview {
    /// The branch.
    pub branch: String,
    /// What would be merged: the branch, or the changes preserved on top of it.
    pub landing_ref: String,
    /// Whose work it is (display name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// How its sheep's last task ended, when it did not complete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_status: Option<String>,
    /// Whether the merge would try it (it is not left out).
    pub lands: bool,
    /// Why it would not be tried, or how it stands (already landed at …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// Its commits the target does not hold, oldest first.
    #[serde(default)]
    pub commits: Vec<CommitLine>,
    /// `git diff --stat` of what it would bring.
    #[serde(default)]
    pub diffstat: String,
    /// The files it conflicts in with the target as the queue would find it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conflicts: Vec<String>,
    /// The files it conflicts in with the target as it is now (before the queue lands
    /// anything).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conflicts_with_target: Vec<String>,
    /// The branches before it in the queue it conflicts with.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conflicts_with: Vec<PairConflict>,
    /// What it would bring as a patch (`git diff` from where it forked), when the preview was
    /// asked for it; cut at [`PATCH_LIMIT`] bytes, on a line's end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch: Option<String>,
    /// Whether `patch` was cut short.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub patch_cut: bool,
}

/// The most of a branch's patch a preview carries: enough for any review a page can show, and
/// a bound on the answer a branch of generated files would otherwise make.
pub const PATCH_LIMIT: usize = 512 * 1024;

/// `patch` cut to at most [`PATCH_LIMIT`] bytes at a line's end, and whether it was cut.
pub fn cut_patch(mut patch: String) -> (String, bool) {
    if patch.len() <= PATCH_LIMIT {
        return (patch, false);
    }
    let mut end = PATCH_LIMIT;
    while !patch.is_char_boundary(end) {
        end -= 1;
    }
    let end = patch[..end].rfind('\n').map_or(end, |newline| newline + 1);
    patch.truncate(end);
    (patch, true)
}

/// A merge as it would go.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MergePreview {
    /// The branch it would land into.
    pub target: String,
    /// Whether that branch would be made (from `from`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_from: Option<String>,
    /// How each branch would land.
    pub strategy: Strategy,
    /// The check that would gate each step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<String>,
    /// Each branch, in order.
    pub branches: Vec<BranchPreview>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_patch_is_cut_at_a_lines_end_within_the_limit() {
        let short = "+a\n".to_owned();
        assert_eq!(cut_patch(short.clone()), (short, false));
        let line = format!("+{}é\n", "x".repeat(97));
        let long = line.repeat(PATCH_LIMIT / line.len() + 10);
        let (cut, was_cut) = cut_patch(long);
        assert!(was_cut);
        assert!(cut.len() <= PATCH_LIMIT, "{}", cut.len());
        assert!(cut.ends_with('\n'));
        assert_eq!(cut.len() % line.len(), 0, "only whole lines are kept");
    }
}
