//! Merges: a merge queue kept as herd state, so a broker killed mid-queue leaves a record the
//! next one resumes from, and a branch landed once is known as landed.
//!
//! The broker decides everything about a merge — what lands, in which worktree, whether a
//! result is verified — and records each step here: the merge as planned, the target's tip it
//! starts from, each branch's outcome, and, before the target moves, the move it is about to
//! make ([`Advance`], written ahead: a broker that dies between the record and the move finds
//! the target either still at `from` or already at `to`, and knows which happened). Every
//! landing is also kept in [`super::Herd::landed`], by target and branch: "already landed" is read
//! from there, not guessed from ancestry. Finished merges are kept (the newest
//! [`MAX_FINISHED_MERGES`]) so a client that reattaches still gets the result.

use indexmap::IndexMap;

use super::Tx;
use super::model::{Advance, Event, Landed, Merge, landed_key};
use crate::land::{BranchLanding, BranchState};

/// Finished merges kept for clients that come back for their result.
pub const MAX_FINISHED_MERGES: usize = 50;

impl super::Herd {
    /// How `branch` was landed into `target`, when a merge landed it.
    pub fn landed_into(&self, target: &str, branch: &str) -> Option<&Landed> {
        self.landed.get(&landed_key(target, branch))
    }

    /// The branch `task`'s isolated worktree left to land: its sheep's, once the sheep was
    /// closed and the worktree released with work in it, else its run step's.
    pub fn branch_of(&self, task: &super::Task) -> Option<String> {
        let of_sheep = self
            .sheep
            .get(&task.agent_id)
            .and_then(|sheep| sheep.worktree.as_ref())
            .and_then(|worktree| worktree.released.as_ref());
        let task_id = task.id.to_string();
        let of_run = || {
            self.runs
                .values()
                .filter_map(|run| run.finished.as_ref())
                .flat_map(|report| &report.results)
                .find(|result| result.task_id.as_deref() == Some(task_id.as_str()))
                .and_then(|result| result.worktree.as_ref())
        };
        of_sheep
            .or_else(of_run)
            .filter(|report| report.needs_integrating())
            .map(|report| report.branch().to_owned())
    }

    /// Where a merge last landed `branch`, verified: `<target> at <short commit>`.
    pub fn landing_of(&self, branch: &str) -> Option<String> {
        self.landed
            .values()
            .filter(|landed| landed.branch == branch)
            .max_by_key(|landed| landed.at)
            .map(|landed| {
                let short = landed.commit.get(..10).unwrap_or(&landed.commit);
                format!("{} at {short}", landed.target)
            })
    }

    /// Whether a merge is still under way.
    pub fn has_open_merges(&self) -> bool {
        self.merges.values().any(|m| !m.is_finished())
    }

    /// The merge a resent submission (client request id `request_id`) made.
    pub fn merge_by_request(&self, request_id: &str) -> Option<&Merge> {
        self.merges
            .values()
            .rev()
            .find(|m| m.request_id.as_deref() == Some(request_id))
    }
}

/// Applies a merge event to the herd's merges and landings.
pub(super) fn apply(
    merges: &mut IndexMap<String, Merge>,
    landed: &mut IndexMap<String, Landed>,
    event: &Event,
) {
    match event {
        Event::MergeSubmitted { merge } => {
            merges.insert(merge.id.clone(), (**merge).clone());
        }
        Event::MergeStarted { merge_id, tip } => {
            if let Some(merge) = merges.get_mut(merge_id) {
                merge.tip = Some(tip.clone());
            }
        }
        Event::MergeBranch {
            merge_id,
            index,
            landing,
        } => {
            if let Some(merge) = merges.get_mut(merge_id) {
                if landing.state == BranchState::Merged
                    && let Some(commit) = &landing.commit
                {
                    merge.tip = Some(commit.clone());
                }
                if merge.advancing.as_ref().is_some_and(|a| a.index == *index)
                    && landing.state.is_settled()
                {
                    merge.advancing = None;
                }
                if let Some(slot) = merge.view.branches.get_mut(*index) {
                    slot.clone_from(&**landing);
                }
            }
        }
        Event::MergeAdvancing { merge_id, advance } => {
            if let Some(merge) = merges.get_mut(merge_id) {
                merge.advancing = Some(advance.clone());
            }
        }
        Event::BranchLanded { landed: record } => {
            landed.insert(landed_key(&record.target, &record.branch), record.clone());
        }
        Event::MergeCancelled { merge_id, reason } => {
            if let Some(merge) = merges.get_mut(merge_id)
                && !merge.is_finished()
                && merge.view.cancelled.is_none()
            {
                merge.view.cancelled = Some(reason.clone());
            }
        }
        Event::MergeFinished { merge_id } => {
            if let Some(merge) = merges.get_mut(merge_id) {
                merge.view.finished = true;
                merge.view.waiting_for = None;
                merge.view.exit_code = Some(merge.view.exit_status());
                merge.advancing = None;
            }
            let finished: Vec<String> = merges
                .values()
                .filter(|m| m.is_finished())
                .map(|m| m.id.clone())
                .collect();
            for old in finished
                .iter()
                .take(finished.len().saturating_sub(MAX_FINISHED_MERGES))
            {
                merges.shift_remove(old);
            }
        }
        _ => {}
    }
}

/// Accepts a merge.
pub fn submit_merge(tx: &mut Tx<'_>, merge: Merge) {
    tx.emit(Event::MergeSubmitted {
        merge: Box::new(merge),
    });
}

fn open<'h>(tx: &'h Tx<'_>, merge_id: &str) -> Option<&'h Merge> {
    tx.herd().merges.get(merge_id).filter(|m| !m.is_finished())
}

/// Records the target's tip a merge starts from.
pub fn merge_started(tx: &mut Tx<'_>, merge_id: &str, tip: &str) {
    if open(tx, merge_id).is_some_and(|m| m.tip.as_deref() != Some(tip)) {
        tx.emit(Event::MergeStarted {
            merge_id: merge_id.to_owned(),
            tip: tip.to_owned(),
        });
    }
}

/// Records where a branch of a merge stands.
pub fn merge_branch(tx: &mut Tx<'_>, merge_id: &str, index: usize, landing: BranchLanding) {
    let changed = open(tx, merge_id)
        .and_then(|m| m.view.branches.get(index))
        .is_some_and(|old| *old != landing);
    if changed {
        tx.emit(Event::MergeBranch {
            merge_id: merge_id.to_owned(),
            index,
            landing: Box::new(landing),
        });
    }
}

/// Records the move the target is about to make.
pub fn merge_advancing(tx: &mut Tx<'_>, merge_id: &str, advance: Advance) {
    if open(tx, merge_id).is_some() {
        tx.emit(Event::MergeAdvancing {
            merge_id: merge_id.to_owned(),
            advance,
        });
    }
}

/// Records that a branch of a merge landed, verified: its state, and the landing itself.
pub fn merge_landed(tx: &mut Tx<'_>, merge_id: &str, index: usize, landing: BranchLanding) {
    let Some(merge) = open(tx, merge_id) else {
        return;
    };
    let (Some(commit), Some(advance)) = (landing.commit.clone(), merge.advancing.clone()) else {
        return;
    };
    let record = Landed {
        target: merge.plan.target.clone(),
        branch: landing.branch.clone(),
        tip: advance.tip,
        commit,
        strategy: merge.plan.strategy,
        merge_id: merge_id.to_owned(),
        at: tx.now(),
    };
    merge_branch(tx, merge_id, index, landing);
    tx.emit(Event::BranchLanded { landed: record });
}

/// Cancels a merge (the first reason stands). Returns whether it is one that can be cancelled
/// (known and not finished).
pub fn cancel_merge(tx: &mut Tx<'_>, merge_id: &str, reason: &str) -> bool {
    let Some(merge) = open(tx, merge_id) else {
        return false;
    };
    if merge.view.cancelled.is_none() {
        tx.emit(Event::MergeCancelled {
            merge_id: merge_id.to_owned(),
            reason: reason.to_owned(),
        });
    }
    true
}

/// Records that a merge is over (its worktree gone, its check ended).
pub fn finish_merge(tx: &mut Tx<'_>, merge_id: &str) {
    if open(tx, merge_id).is_some() {
        tx.emit(Event::MergeFinished {
            merge_id: merge_id.to_owned(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::super::Herd;
    use super::super::model::{MergeCandidate, MergePlan};
    use super::*;
    use crate::land::MergeView;

    fn merge() -> Merge {
        let candidate = |branch: &str| MergeCandidate {
            branch: branch.into(),
            landing_ref: branch.into(),
            ..MergeCandidate::default()
        };
        let plan = MergePlan {
            repo: "/p".into(),
            target: "main".into(),
            candidates: vec![candidate("shepherd/a"), candidate("shepherd/b")],
            ..MergePlan::default()
        };
        let view = MergeView {
            merge_id: "merge-1".into(),
            target: "main".into(),
            branches: plan
                .candidates
                .iter()
                .map(|c| BranchLanding {
                    branch: c.branch.clone(),
                    landing_ref: c.landing_ref.clone(),
                    ..BranchLanding::default()
                })
                .collect(),
            ..MergeView::default()
        };
        Merge {
            id: "merge-1".into(),
            request_id: None,
            created_at: 1,
            plan,
            view,
            tip: None,
            advancing: None,
        }
    }

    fn commit(herd: &mut Herd, f: impl FnOnce(&mut Tx<'_>)) -> Vec<Event> {
        let mut tx = Tx::new(herd, 5);
        f(&mut tx);
        tx.finish()
    }

    #[test]
    fn a_landing_is_written_ahead_then_recorded_and_a_replay_rebuilds_it() {
        let mut herd = Herd::default();
        let mut events = Vec::new();
        events.extend(commit(&mut herd, |tx| submit_merge(tx, merge())));
        events.extend(commit(&mut herd, |tx| merge_started(tx, "merge-1", "t0")));
        let advance = Advance {
            index: 0,
            from: "t0".into(),
            to: "m1".into(),
            tip: "a1".into(),
        };
        events.extend(commit(&mut herd, |tx| {
            merge_advancing(tx, "merge-1", advance.clone());
        }));
        assert_eq!(herd.merges["merge-1"].advancing, Some(advance));
        let landed = BranchLanding {
            state: BranchState::Merged,
            commit: Some("m1".into()),
            ..herd.merges["merge-1"].view.branches[0].clone()
        };
        events.extend(commit(&mut herd, |tx| {
            merge_landed(tx, "merge-1", 0, landed);
        }));
        let merge = &herd.merges["merge-1"];
        assert_eq!(merge.tip.as_deref(), Some("m1"));
        assert_eq!(merge.advancing, None);
        let record = herd.landed_into("main", "shepherd/a").unwrap();
        assert_eq!((record.tip.as_str(), record.commit.as_str()), ("a1", "m1"));
        assert!(herd.landed_into("other", "shepherd/a").is_none());
        assert!(herd.has_open_merges());
        events.extend(commit(&mut herd, |tx| {
            assert!(cancel_merge(tx, "merge-1", "asked"));
            finish_merge(tx, "merge-1");
            assert!(!cancel_merge(tx, "merge-1", "again"));
        }));
        assert!(!herd.has_open_merges());
        assert_eq!(herd.merges["merge-1"].view.exit_code, Some(130));
        let mut replayed = Herd::default();
        for event in &events {
            replayed.apply(event);
        }
        assert_eq!(replayed, herd);
    }
}
