//! The merge queue itself: a merge, once accepted (or found unfinished by a restarted broker),
//! waits its turn in its target's lane, cleans up what a broker before this one left of it,
//! settles a move of the target that broker recorded but may not have made, and then lands
//! each branch still to land in turn (`step`), recording each outcome as it goes, until it is
//! done or cancelled. It ends with its worktree removed and its check ended.
//!
//! A branch whose check fails leaves the target where it was and the queue goes on with the
//! next (the branches are independent work); a conflict nobody resolved, a rejected result, a
//! branch gone or a target that moved under the queue stops it, and the branches after it
//! are skipped.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use shepherd_core::herd::{Merge, MergeCandidate, MergePlan};
use shepherd_core::land::{BranchLanding, BranchState};
use tokio_util::sync::CancellationToken;

use super::git::{self, MergeWorktree};
use super::step::{self, Ctx, Next, blocking};
use crate::state::broker::Broker;
use crate::state::broker::BrokerConfig;

/// Drives merge `merge_id` in the background, unless it is driven already.
pub(super) fn start(broker: &Arc<Broker>, merge_id: &str) {
    let lane = {
        let mut work = broker.work.lock().expect("work lock");
        let Some(entry) = work.merges.get_mut(merge_id) else {
            return;
        };
        if entry.driving {
            return;
        }
        entry.driving = true;
        broker
            .store
            .read(|herd| herd.merges.get(merge_id).map(Merge::lane))
            .unwrap_or_default()
    };
    broker
        .work
        .lock()
        .expect("work lock")
        .join_lane(&lane, merge_id);
    let (broker, merge_id) = (broker.clone(), merge_id.to_owned());
    tokio::spawn(async move { drive(&broker, &merge_id, &lane).await });
}

/// The directory of a merge's worktree.
fn worktree_path(config: &BrokerConfig, plan: &MergePlan, merge_id: &str) -> PathBuf {
    let repo = repo_of(Path::new(&plan.repo));
    crate::sheep::worktree::path_for(&config.dirs.state_dir, &repo, merge_id)
}

/// What every process of a merge's check carries.
fn mark(config: &BrokerConfig, merge_id: &str) -> String {
    format!("{}:{merge_id}", config.address.namespace)
}

async fn drive(broker: &Arc<Broker>, merge_id: &str, lane: &str) {
    let cancel = super::cancel_token(broker, merge_id);
    let turn = super::lanes::turn(broker, lane, merge_id, &cancel, |waiting| {
        super::set_waiting(broker, merge_id, waiting);
    })
    .await;
    if turn && let Some(merge) = broker.store.read(|herd| herd.merges.get(merge_id).cloned()) {
        let plan = Arc::new(merge.plan.clone());
        let path = {
            let (broker, plan, id) = (broker.clone(), plan.clone(), merge_id.to_owned());
            blocking(move || worktree_path(&broker.config, &plan, &id))
                .await
                .unwrap_or_default()
        };
        leftovers(broker, &merge, &path).await;
        if plan.discard {
            discard(broker, &merge).await;
        } else if merge.view.cancelled.is_none() {
            land(broker, &merge, plan, path.clone(), cancel.clone()).await;
        }
        let repo = PathBuf::from(&merge.plan.repo);
        blocking(move || git::remove_at(&repo, &path)).await;
    }
    finish(broker, merge_id).await;
    super::lanes::leave(broker, lane, merge_id);
}

/// What a broker before this one may have left of the merge: a check still running, its
/// resolver or fixer, a move of the target it recorded (made or not), and its worktree.
async fn leftovers(broker: &Arc<Broker>, merge: &Merge, path: &Path) {
    let mark = mark(&broker.config, &merge.id);
    blocking(move || super::check::end_leftovers(&mark)).await;
    let sheep: Vec<String> = merge
        .view
        .branches
        .iter()
        .flat_map(|b| b.resolver.iter().chain(b.fixers.iter()))
        .filter(|s| s.status.is_none() && !s.agent_id.is_empty())
        .map(|s| s.agent_id.clone())
        .collect();
    for agent_id in sheep {
        let open = broker.store.read(|herd| {
            herd.sheep_by_text(&agent_id)
                .is_ok_and(|s| s.phase != shepherd_core::herd::Phase::Closed)
        });
        if open {
            super::sheep::close(broker, &agent_id).await;
        }
    }
    if let Some(advance) = merge.advancing.clone() {
        settle_advance(broker, merge, &advance).await;
    }
    let (repo, path) = (PathBuf::from(&merge.plan.repo), path.to_path_buf());
    blocking(move || git::remove_at(&repo, &path)).await;
}

/// A move a broker before this one recorded: made (the target is at `to`: the branch landed),
/// not made (the target is still at `from`: it is made now, once), or overtaken (the target
/// moved elsewhere: the step is refused).
async fn settle_advance(
    broker: &Arc<Broker>,
    merge: &Merge,
    advance: &shepherd_core::herd::Advance,
) {
    let (repo, target) = (PathBuf::from(&merge.plan.repo), merge.plan.target.clone());
    let (from, to) = (advance.from.clone(), advance.to.clone());
    let moved = blocking(move || -> Result<(), String> {
        let now = git::resolve(&repo, &format!("refs/heads/{target}")).unwrap_or_default();
        if now == to {
            return Ok(());
        }
        git::advance(&repo, &target, &from, &to)
    })
    .await
    .unwrap_or_else(|| Err("the target could not be read".to_owned()));
    let index = advance.index;
    let mut landing = merge.view.branches[index].clone();
    match moved {
        Ok(()) => {
            landing.state = BranchState::Merged;
            landing.commit = Some(advance.to.clone());
            landing.why = None;
            broker.store.commit(|tx| {
                shepherd_core::herd::merge::merge_landed(tx, &merge.id, index, landing.clone());
            });
            after_landing(broker, &merge.plan, &merge.plan.candidates[index], &landing).await;
        }
        Err(why) => {
            landing.state = BranchState::Refused;
            landing.why = Some(why);
            broker.store.commit(|tx| {
                shepherd_core::herd::merge::merge_branch(tx, &merge.id, index, landing.clone());
            });
            record(broker, &merge.plan.candidates[index], &landing).await;
        }
    }
}

/// Lands every branch still to land, in turn.
async fn land(
    broker: &Arc<Broker>,
    merge: &Merge,
    plan: Arc<MergePlan>,
    path: PathBuf,
    cancel: CancellationToken,
) {
    let merge_id = merge.id.clone();
    let repo = PathBuf::from(&plan.repo);
    let start = {
        let (repo, plan) = (repo.clone(), plan.clone());
        blocking(move || -> Result<String, String> {
            let target_ref = format!("refs/heads/{}", plan.target);
            if let Some(from) = &plan.create_from
                && git::resolve(&repo, &target_ref).is_none()
            {
                git::git(&repo, &["branch", "--no-track", &plan.target, from])
                    .map_err(|e| e.to_string())?;
            }
            git::resolve(&repo, &target_ref)
                .ok_or_else(|| format!("the target branch {} does not exist", plan.target))
        })
        .await
        .unwrap_or_else(|| Err("the target could not be read".to_owned()))
    };
    // Where the queue is: its last landed step, else the target as it found it.
    let recorded = broker
        .store
        .read(|herd| herd.merges.get(&merge_id).and_then(|m| m.tip.clone()));
    let mut tip = match (recorded, start) {
        (Some(tip), _) => tip,
        (None, Ok(tip)) => {
            broker
                .store
                .commit(|tx| shepherd_core::herd::merge::merge_started(tx, &merge_id, &tip));
            tip
        }
        (None, Err(why)) => {
            stop_rest(broker, &merge_id, &plan, 0, BranchState::Refused, &why).await;
            return;
        }
    };
    let made = {
        let (repo, tip) = (repo_of(&repo), tip.clone());
        blocking(move || MergeWorktree::make(&repo, path, &tip)).await
    };
    let worktree = match made {
        Some(Ok(worktree)) => Arc::new(worktree),
        Some(Err(err)) => {
            let why = format!("the merge worktree could not be made: {err}");
            stop_rest(broker, &merge_id, &plan, 0, BranchState::Refused, &why).await;
            return;
        }
        None => return,
    };
    let ctx = Ctx {
        broker: broker.clone(),
        merge_id: merge_id.clone(),
        plan: plan.clone(),
        repo,
        worktree,
        cancel: cancel.clone(),
        mark: mark(&broker.config, &merge_id),
        tainted: std::sync::atomic::AtomicBool::new(false),
    };
    for index in 0..plan.candidates.len() {
        let current = broker.store.read(|herd| {
            herd.merges
                .get(&merge_id)
                .and_then(|m| m.view.branches.get(index).cloned())
        });
        let Some(mut landing) = current else { break };
        if landing.state.is_settled() {
            continue;
        }
        if cancel.is_cancelled() {
            break;
        }
        // A step cut short by a restart starts over.
        landing = BranchLanding {
            state: BranchState::Open,
            ..BranchLanding {
                branch: landing.branch,
                landing_ref: landing.landing_ref,
                owner: landing.owner,
                note: landing.note,
                task_status: landing.task_status,
                ..BranchLanding::default()
            }
        };
        let next = step::step(&ctx, index, &tip, &mut landing).await;
        let candidate = &plan.candidates[index];
        match next {
            Next::Landed(new) => {
                tip = new;
                broker.store.commit(|tx| {
                    shepherd_core::herd::merge::merge_landed(tx, &merge_id, index, landing.clone());
                });
                ctx.show(index, None);
                after_landing(broker, &plan, candidate, &landing).await;
            }
            Next::Go => {
                ctx.keep(index, &landing);
                if landing.state != BranchState::AlreadyLanded {
                    record(broker, candidate, &landing).await;
                } else if plan.prune {
                    prune(&plan, candidate).await;
                }
            }
            Next::Stop(why) => {
                ctx.keep(index, &landing);
                record(broker, candidate, &landing).await;
                stop_rest(
                    broker,
                    &merge_id,
                    &plan,
                    index + 1,
                    BranchState::Skipped,
                    &why,
                )
                .await;
                break;
            }
            Next::Cancelled => break,
        }
    }
}

/// What follows a landing: the session's Branches section says so, and `--prune` deletes the
/// branch and its preserved changes.
async fn after_landing(
    broker: &Arc<Broker>,
    plan: &MergePlan,
    candidate: &MergeCandidate,
    landing: &BranchLanding,
) {
    record(broker, candidate, landing).await;
    if plan.prune {
        prune(plan, candidate).await;
    }
}

/// Deletes a landed branch and its preserved changes (a branch checked out somewhere stays).
async fn prune(plan: &MergePlan, candidate: &MergeCandidate) {
    let (repo, candidate) = (PathBuf::from(&plan.repo), candidate.clone());
    blocking(move || {
        if let Some(preserved) = &candidate.preserved {
            let _gone = git::git(&repo, &["update-ref", "-d", preserved]);
        }
        let branch = format!("refs/heads/{}", candidate.branch);
        if git::resolve(&repo, &branch).is_some()
            && let Err(err) = git::git(&repo, &["branch", "-D", &candidate.branch])
        {
            tracing::warn!("pruning {}: {err}", candidate.branch);
        }
    })
    .await;
}

/// Marks every branch from `from` on that is still to land as `state`, saying `why`.
async fn stop_rest(
    broker: &Arc<Broker>,
    merge_id: &str,
    plan: &MergePlan,
    from: usize,
    state: BranchState,
    why: &str,
) {
    let rest: Vec<(usize, BranchLanding)> = broker.store.read(|herd| {
        herd.merges
            .get(merge_id)
            .map(|m| {
                m.view
                    .branches
                    .iter()
                    .enumerate()
                    .skip(from)
                    .filter(|(_, b)| !b.state.is_settled())
                    .map(|(i, b)| (i, b.clone()))
                    .collect()
            })
            .unwrap_or_default()
    });
    for (index, mut landing) in rest {
        landing.state = state;
        landing.why = Some(why.to_owned());
        broker.store.commit(|tx| {
            shepherd_core::herd::merge::merge_branch(tx, merge_id, index, landing.clone());
        });
        if state == BranchState::Refused {
            record(broker, &plan.candidates[index], &landing).await;
        }
    }
}

/// Ends the merge: every branch not reached is skipped (saying why: cancelled, or stopped),
/// the end is journaled, and its followers get the final view.
async fn finish(broker: &Arc<Broker>, merge_id: &str) {
    let Some(merge) = broker.store.read(|herd| herd.merges.get(merge_id).cloned()) else {
        return;
    };
    if !merge.is_finished() {
        let why = merge.view.cancelled.as_ref().map_or_else(
            || "the queue ended before it".to_owned(),
            |reason| format!("the merge was cancelled ({reason})"),
        );
        stop_rest(broker, merge_id, &merge.plan, 0, BranchState::Skipped, &why).await;
        if let Err(err) = broker
            .store
            .commit_durable(|tx| {
                shepherd_core::herd::merge::finish_merge(tx, merge_id);
                Ok(())
            })
            .await
        {
            tracing::warn!("recording the end of {merge_id}: {err}");
        }
    }
    super::finished(broker, merge_id);
}

/// Records what became of a branch in its session's Branches section (a branch the queue did
/// not get to, or found landed before, stays as it was).
pub(super) async fn record(
    broker: &Arc<Broker>,
    candidate: &MergeCandidate,
    landing: &BranchLanding,
) {
    let recorded = matches!(
        landing.state,
        BranchState::Merged
            | BranchState::Conflict
            | BranchState::CheckFailed
            | BranchState::Rejected
            | BranchState::Refused
            | BranchState::Discarded
    );
    if let (true, Some(note)) = (recorded, &candidate.note_path) {
        crate::sheep::notes::record_branch(
            broker,
            Path::new(note),
            &candidate.branch,
            landing.state,
            landing.commit.clone(),
            landing.why.clone(),
        )
        .await;
    }
}

/// Throws the branches away: each branch and its preserved changes are deleted.
async fn discard(broker: &Arc<Broker>, merge: &Merge) {
    for (index, candidate) in merge.plan.candidates.iter().enumerate() {
        if merge.view.branches[index].state.is_settled() {
            continue;
        }
        let (repo, one) = (PathBuf::from(&merge.plan.repo), candidate.clone());
        let done = blocking(move || -> Result<(), String> {
            if let Some(preserved) = &one.preserved {
                let _gone = git::git(&repo, &["update-ref", "-d", preserved]);
            }
            if git::resolve(&repo, &format!("refs/heads/{}", one.branch)).is_some() {
                git::git(&repo, &["branch", "-D", &one.branch]).map_err(|e| e.to_string())?;
            }
            Ok(())
        })
        .await
        .unwrap_or_else(|| Err("interrupted".to_owned()));
        let mut landing = merge.view.branches[index].clone();
        match done {
            Ok(()) => landing.state = BranchState::Discarded,
            Err(why) => {
                landing.state = BranchState::Refused;
                landing.why = Some(why);
            }
        }
        broker.store.commit(|tx| {
            shepherd_core::herd::merge::merge_branch(tx, &merge.id, index, landing.clone());
        });
        super::publish_branch(broker, &merge.id, index, None);
        record(broker, candidate, &landing).await;
    }
}

/// The repository as the worktree code knows it (its top and git directory).
pub(super) fn repo_of(top: &Path) -> shepherd_core::worktree::Repo {
    let common = git::git(
        top,
        &["rev-parse", "--path-format=absolute", "--git-common-dir"],
    )
    .map_or_else(|_| top.join(".git"), PathBuf::from);
    shepherd_core::worktree::Repo {
        top: top.to_path_buf(),
        common_dir: common,
        subdir: PathBuf::new(),
    }
}
