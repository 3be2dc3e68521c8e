//! A session's branches: the work its isolated sheep left, and what became of it — open, merged
//! at which commit, conflict, check failed, rejected (and why) or discarded — shown in
//! `shepherd.md`'s Branches section, each beside the note of the sheep that made it, in the
//! order of their notes (a run's input order). The broker records a branch when its worktree
//! is released with work on it, and the merge queue records each step.

use serde::{Deserialize, Serialize};

use crate::land::BranchState;

/// One branch of a session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BranchRecord {
    /// The branch (`shepherd/…`).
    pub branch: String,
    /// The note of the sheep whose work it is (a file of the session), when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Where it stands.
    pub state: BranchState,
    /// The commit that landed it, once merged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// Why it did not land, when a step was rejected or refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

impl BranchRecord {
    /// Its state in words, with the commit it landed at.
    pub fn state_words(&self) -> String {
        match (&self.state, &self.commit) {
            (BranchState::Merged, Some(commit)) => {
                format!("merged at {}", &commit[..commit.len().min(10)])
            }
            (state @ (BranchState::Rejected | BranchState::Refused), _) => match &self.why {
                Some(why) => format!("{} ({why})", state.words()),
                None => state.words().to_owned(),
            },
            (state, _) => state.words().to_owned(),
        }
    }
}

/// Records `record` among `branches`: a branch already there takes its new state (and keeps
/// its note when the new record has none); a new one is added at the end.
pub fn upsert(branches: &mut Vec<BranchRecord>, record: BranchRecord) {
    match branches.iter_mut().find(|b| b.branch == record.branch) {
        Some(known) => {
            let note = record.note.clone().or_else(|| known.note.take());
            *known = BranchRecord { note, ..record };
        }
        None => branches.push(record),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(branch: &str, state: BranchState, note: Option<&str>) -> BranchRecord {
        BranchRecord {
            branch: branch.to_owned(),
            note: note.map(str::to_owned),
            state,
            commit: None,
            why: None,
        }
    }

    #[test]
    fn a_branch_is_recorded_once_and_keeps_its_note() {
        let mut branches = Vec::new();
        upsert(
            &mut branches,
            record("shepherd/a", BranchState::Open, Some("a-01.md")),
        );
        upsert(&mut branches, record("shepherd/b", BranchState::Open, None));
        let mut merged = record("shepherd/a", BranchState::Merged, None);
        merged.commit = Some("0123456789abcdef".to_owned());
        upsert(&mut branches, merged);
        assert_eq!(branches.len(), 2);
        assert_eq!(branches[0].note.as_deref(), Some("a-01.md"));
        assert_eq!(branches[0].state_words(), "merged at 0123456789");
        assert_eq!(branches[1].state_words(), "open");
        let mut rejected = record("shepherd/b", BranchState::Rejected, None);
        rejected.why = Some("its parents are 0123456789".to_owned());
        assert_eq!(
            rejected.state_words(),
            "rejected (its parents are 0123456789)"
        );
    }
}
