//! The merge queue itself: what a merge lands and into what (`plan`, refused before anything is
//! merged), then each branch in turn (`drive`): merge it in the merge worktree, resolve or stop
//! on a conflict, run the check, and move the target only from the commit it was seen at.
//!
//! A branch whose check fails leaves the target where it was and the queue goes on with the
//! next (the branches are independent work); a conflict nobody resolved, or a target that
//! moved under the queue, stops it, and the branches after it are skipped.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use shepherd_core::error_code::ErrorCode;
use shepherd_core::land::{BranchLanding, BranchState, MergeParams, MergeView};

use super::git::{self, MergeWorktree};
use super::select::{self, Candidate};
use crate::error::{BrokerError, BrokerResult};
use crate::state::broker::Broker;

/// How long a check may run.
const CHECK_LIMIT: Duration = Duration::from_secs(30 * 60);

/// A merge as checked: the repository, the target and what lands into it.
pub(super) struct Planned {
    repo: PathBuf,
    target: String,
    /// Made for this merge (from `base`) when it did not exist.
    create_from: Option<String>,
    candidates: Vec<Candidate>,
    check: Option<String>,
}

impl Planned {
    /// The merge as it starts: every branch open.
    pub(super) fn view(&self, merge_id: &str) -> MergeView {
        MergeView {
            merge_id: merge_id.to_owned(),
            target: self.target.clone(),
            check: self.check.clone(),
            branches: self
                .candidates
                .iter()
                .map(|c| BranchLanding {
                    branch: c.branch.clone(),
                    landing_ref: c.landing_ref.clone(),
                    owner: c.owner.clone(),
                    note: c.note.clone(),
                    state: BranchState::Open,
                    ..BranchLanding::default()
                })
                .collect(),
            finished: false,
            exit_code: None,
        }
    }
}

fn refuse(message: String) -> BrokerError {
    BrokerError::new(ErrorCode::NothingToLand, message)
}

/// Checks a merge before anything is merged: what lands, in which repository, into which
/// branch (and that a worktree with that branch checked out has nothing uncommitted).
pub(super) async fn plan(broker: &Arc<Broker>, params: &MergeParams) -> BrokerResult<Planned> {
    if params.targets.is_empty() && params.session.is_none() {
        return Err(refuse(
            "name what to land: a run id, a sheep, a shepherd/… branch, or a session".to_owned(),
        ));
    }
    let candidates =
        broker.read(|herd| select::candidates(herd, &params.targets, params.session.as_deref()))?;
    if candidates.is_empty() {
        return Err(refuse(
            "nothing to land: none of the branches named has work on it".to_owned(),
        ));
    }
    let project = broker.config.address.project_root.clone();
    let repos: Vec<PathBuf> = candidates
        .iter()
        .map(|c| c.repo.clone().unwrap_or_else(|| project.clone()))
        .collect();
    let repo = repos[0].clone();
    if let Some(other) = repos.iter().find(|r| **r != repo) {
        return Err(refuse(format!(
            "the branches belong to two repositories ({} and {}): land each one's separately",
            repo.display(),
            other.display()
        )));
    }
    let check = params.check.clone().filter(|c| !c.trim().is_empty());
    let into = params.into.clone();
    let bases: Vec<Option<String>> = candidates.iter().map(|c| c.base_branch.clone()).collect();
    tokio::task::spawn_blocking(move || {
        let current = git::git(&repo, &["symbolic-ref", "--short", "-q", "HEAD"]).ok();
        let base = bases.iter().flatten().next().cloned().or(current);
        let (target, create_from) = match into {
            Some(into) => {
                let exists = git::resolve(&repo, &format!("refs/heads/{into}")).is_some();
                let from = (!exists).then(|| base.clone().unwrap_or_else(|| "HEAD".to_owned()));
                (into, from)
            }
            None => {
                if let Some(first) = bases.iter().flatten().next()
                    && let Some(other) = bases.iter().flatten().find(|b| *b != first)
                {
                    return Err(refuse(format!(
                        "the branches were made from two branches ({first} and {other}): say \
                         where to land them with --into"
                    )));
                }
                let target = base.ok_or_else(|| {
                    refuse(
                        "the project has no branch checked out (a detached HEAD): say where to \
                         land with --into BRANCH"
                            .to_owned(),
                    )
                })?;
                (target, None)
            }
        };
        git::git(&repo, &["check-ref-format", "--branch", &target])
            .map_err(|_| refuse(format!("`{target}` is not a valid branch name")))?;
        if let Some(worktree) =
            git::checked_out(&repo, &target).map_err(|e| refuse(e.to_string()))?
            && git::dirty(&worktree.path).map_err(|e| refuse(e.to_string()))?
        {
            return Err(refuse(format!(
                "{target} is checked out in {} with uncommitted changes: commit or stash them \
                 first, or land into another branch with --into",
                worktree.path.display()
            )));
        }
        Ok(Planned {
            repo,
            target,
            create_from,
            candidates,
            check,
        })
    })
    .await
    .map_err(|err| BrokerError::new(ErrorCode::Internal, err.to_string()))?
}

/// Lands every branch in turn, publishing the view at each change.
pub(super) async fn drive(
    broker: &Arc<Broker>,
    merge_id: &str,
    planned: Planned,
    params: MergeParams,
) {
    let mut view = planned.view(merge_id);
    let planned = Arc::new(planned);
    if params.discard {
        discard(broker, &planned, &mut view).await;
    } else {
        land(broker, &planned, &params, &mut view).await;
    }
    view.finished = true;
    view.exit_code = Some(view.exit_status());
    super::publish(broker, &view);
}

/// Runs blocking git work off the async threads.
async fn blocking<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    tokio::task::spawn_blocking(work).await.ok()
}

async fn land(
    broker: &Arc<Broker>,
    planned: &Arc<Planned>,
    params: &MergeParams,
    view: &mut MergeView,
) {
    let stop_all = |view: &mut MergeView, why: String| {
        for branch in &mut view.branches {
            branch.state = BranchState::Refused;
            branch.why = Some(why.clone());
        }
    };
    // The target, made from its base when it does not exist yet.
    let made = {
        let planned = planned.clone();
        blocking(move || -> Result<String, String> {
            let target_ref = format!("refs/heads/{}", planned.target);
            if let Some(from) = &planned.create_from
                && git::resolve(&planned.repo, &target_ref).is_none()
            {
                git::git(&planned.repo, &["branch", &planned.target, from])
                    .map_err(|e| e.to_string())?;
            }
            git::resolve(&planned.repo, &target_ref)
                .ok_or_else(|| format!("the target branch {} does not exist", planned.target))
        })
        .await
    };
    let mut tip = match made {
        Some(Ok(tip)) => tip,
        Some(Err(why)) => {
            stop_all(view, why);
            return;
        }
        None => {
            stop_all(view, "the target could not be read".to_owned());
            return;
        }
    };
    let worktree = {
        let (repo, tip) = (planned.repo.clone(), tip.clone());
        let (state_dir, merge_id) = (broker.config.dirs.state_dir.clone(), view.merge_id.clone());
        blocking(move || {
            let repo = repo_of(&repo);
            let path = crate::sheep::worktree::path_for(&state_dir, &repo, &merge_id);
            MergeWorktree::make(&repo, path, &tip)
        })
        .await
    };
    let worktree = match worktree {
        Some(Ok(worktree)) => Arc::new(worktree),
        Some(Err(err)) => {
            stop_all(view, format!("the merge worktree could not be made: {err}"));
            return;
        }
        None => return,
    };
    super::publish(broker, view);
    let mut stopped: Option<String> = None;
    for index in 0..view.branches.len() {
        if let Some(why) = &stopped {
            view.branches[index].state = BranchState::Skipped;
            view.branches[index].why = Some(why.clone());
            continue;
        }
        view.branches[index].state = BranchState::Merging;
        super::publish(broker, view);
        let candidate = planned.candidates[index].clone();
        let landed = step(
            broker,
            planned,
            params,
            &worktree,
            &candidate,
            &tip,
            &mut view.branches[index],
        )
        .await;
        record(broker, &candidate, &view.branches[index]).await;
        match landed {
            Step::Landed(new_tip) => tip = new_tip,
            Step::Next => {}
            Step::Stop(why) => stopped = Some(why),
        }
        super::publish(broker, view);
    }
    if let Ok(worktree) = Arc::try_unwrap(worktree) {
        blocking(move || worktree.remove()).await;
    }
}

/// What one branch's step leaves the queue to do.
enum Step {
    /// It landed: the target is at this commit now.
    Landed(String),
    /// It did not land; the queue goes on.
    Next,
    /// It did not land; the queue stops, and says why for the branches after it.
    Stop(String),
}

/// Lands one branch: merge (resolving a conflict when a resolver is named), check, move the
/// target.
async fn step(
    broker: &Arc<Broker>,
    planned: &Arc<Planned>,
    params: &MergeParams,
    worktree: &Arc<MergeWorktree>,
    candidate: &Candidate,
    tip: &str,
    landing: &mut BranchLanding,
) -> Step {
    let merged = {
        let (worktree, candidate, tip) = (worktree.clone(), candidate.clone(), tip.to_owned());
        let repo = planned.repo.clone();
        blocking(
            move || -> Result<Option<shepherd_core::land::ConflictView>, String> {
                // What lands is the project's ref; the merge worktree borrows its objects.
                let commit = git::resolve(&repo, &candidate.landing_ref).ok_or_else(|| {
                    format!("{} does not exist (any more)", candidate.landing_ref)
                })?;
                // A branch the target holds already landed before.
                if git::git(&repo, &["merge-base", "--is-ancestor", &commit, &tip]).is_ok() {
                    return Ok(None);
                }
                let message = match &candidate.owner {
                    Some(owner) => format!("Land {} ({owner})", candidate.branch),
                    None => format!("Land {}", candidate.branch),
                };
                worktree.merge(&commit, &message).map_err(|e| e.to_string())
            },
        )
        .await
        .unwrap_or_else(|| Err("the merge was interrupted".to_owned()))
    };
    match merged {
        Err(why) => {
            landing.state = BranchState::Refused;
            landing.why = Some(why);
            return Step::Next;
        }
        Ok(Some(conflict)) => {
            landing.conflict = Some(conflict.clone());
            let Some(agent) = params.resolve.clone() else {
                abort(worktree).await;
                landing.state = BranchState::Conflict;
                let why = format!(
                    "{} conflicts with {} in {}",
                    candidate.branch,
                    planned.target,
                    conflict.files.join(", ")
                );
                landing.why = Some(why.clone());
                return Step::Stop(format!("the queue stopped at a conflict ({why})"));
            };
            let context = super::resolver::Conflict {
                agent,
                branch: candidate.branch.clone(),
                target: planned.target.clone(),
                owner: candidate.owner.clone(),
                session: candidate.session.clone(),
                worktree: worktree.path.clone(),
                check: planned.check.clone(),
                files: conflict.files.clone(),
                hunks: conflict.hunks.clone(),
                caller: params.caller.clone(),
            };
            let resolved = super::resolver::resolve(broker, &context).await;
            if !resolved.closed {
                // Its sheep may still be at work in the merge worktree: no git runs there.
                landing.resolver = Some(resolved.view);
                landing.state = BranchState::Conflict;
                let why = "the resolver could not be closed, so its work is not trusted".to_owned();
                landing.why = Some(why.clone());
                return Step::Stop(format!(
                    "the queue stopped at an unresolved conflict ({why})"
                ));
            }
            let concluded = {
                let worktree = worktree.clone();
                blocking(move || -> Result<(), String> {
                    // Nothing the resolver configured there runs in the git that follows.
                    worktree.sanitise().map_err(|e| e.to_string())?;
                    let left = worktree.unmerged().map_err(|e| e.to_string())?;
                    if !left.is_empty() {
                        return Err(format!("conflicts are left in {}", left.join(", ")));
                    }
                    if worktree.merging() {
                        worktree.conclude().map_err(|e| e.to_string())?;
                    }
                    Ok(())
                })
                .await
                .unwrap_or_else(|| Err("the merge was interrupted".to_owned()))
            };
            let gave_up = resolved.view.status.as_deref() != Some("completed");
            let why = match (&resolved.failure, gave_up, &concluded) {
                (Some(failure), _, _) => Some(failure.clone()),
                (None, true, _) => Some(format!(
                    "the resolver ended {}{}",
                    resolved
                        .view
                        .status
                        .as_deref()
                        .unwrap_or("without settling"),
                    resolved
                        .view
                        .summary
                        .as_deref()
                        .map(|s| format!(": {s}"))
                        .unwrap_or_default()
                )),
                (None, false, Err(left)) => Some(format!("the resolver finished, but {left}")),
                (None, false, Ok(())) => None,
            };
            landing.resolver = Some(resolved.view);
            if let Some(why) = why {
                reset(worktree, tip).await;
                landing.state = BranchState::Conflict;
                landing.why = Some(why.clone());
                return Step::Stop(format!(
                    "the queue stopped at an unresolved conflict ({why})"
                ));
            }
        }
        Ok(None) => {}
    }
    if let Some(check) = planned.check.clone() {
        let worktree_for_check = worktree.clone();
        let checked = blocking(move || worktree_for_check.check(&check, CHECK_LIMIT))
            .await
            .unwrap_or_else(|| Err("the check was interrupted".to_owned()));
        if let Err(output) = checked {
            reset(worktree, tip).await;
            landing.state = BranchState::CheckFailed;
            landing.why = Some("its check failed; the target stays where it was".to_owned());
            landing.check_output = Some(output);
            return Step::Next;
        }
    }
    let advanced = {
        let (worktree, planned, tip) = (worktree.clone(), planned.clone(), tip.to_owned());
        blocking(move || -> Result<String, String> {
            let new = worktree.head().map_err(|e| e.to_string())?;
            if new != tip {
                worktree.bring_home().map_err(|e| e.to_string())?;
                git::advance(&planned.repo, &planned.target, &tip, &new)?;
            }
            Ok(new)
        })
        .await
        .unwrap_or_else(|| Err("the target could not be moved".to_owned()))
    };
    match advanced {
        Ok(new) => {
            landing.state = BranchState::Merged;
            landing.commit = Some(new.clone());
            Step::Landed(new)
        }
        Err(why) => {
            reset(worktree, tip).await;
            landing.state = BranchState::Refused;
            landing.why = Some(why.clone());
            Step::Stop(format!("the queue stopped: {why}"))
        }
    }
}

/// Records what became of a branch in its session's Branches section (a branch the queue did
/// not get to, or refused, stays as it was).
async fn record(broker: &Arc<Broker>, candidate: &Candidate, landing: &BranchLanding) {
    let recorded = matches!(
        landing.state,
        BranchState::Merged
            | BranchState::Conflict
            | BranchState::CheckFailed
            | BranchState::Discarded
    );
    if let (true, Some(note)) = (recorded, &candidate.note_path) {
        crate::sheep::notes::record_branch(
            broker,
            note,
            &candidate.branch,
            landing.state,
            landing.commit.clone(),
        )
        .await;
    }
}

async fn abort(worktree: &Arc<MergeWorktree>) {
    let worktree = worktree.clone();
    blocking(move || worktree.abort()).await;
}

async fn reset(worktree: &Arc<MergeWorktree>, tip: &str) {
    let (worktree, tip) = (worktree.clone(), tip.to_owned());
    blocking(move || {
        if let Err(err) = worktree.reset(&tip) {
            tracing::warn!("resetting the merge worktree: {err}");
        }
    })
    .await;
}

/// Throws the branches away: each branch and its preserved changes are deleted.
async fn discard(broker: &Arc<Broker>, planned: &Arc<Planned>, view: &mut MergeView) {
    for index in 0..view.branches.len() {
        let (repo, candidate) = (planned.repo.clone(), planned.candidates[index].clone());
        let done = blocking(move || -> Result<(), String> {
            if let Some(preserved) = &candidate.preserved {
                let _gone = git::git(&repo, &["update-ref", "-d", preserved]);
            }
            if git::resolve(&repo, &format!("refs/heads/{}", candidate.branch)).is_some() {
                git::git(&repo, &["branch", "-D", &candidate.branch]).map_err(|e| e.to_string())?;
            }
            Ok(())
        })
        .await
        .unwrap_or_else(|| Err("interrupted".to_owned()));
        let branch = &mut view.branches[index];
        match done {
            Ok(()) => branch.state = BranchState::Discarded,
            Err(why) => {
                branch.state = BranchState::Refused;
                branch.why = Some(why);
            }
        }
        record(broker, &planned.candidates[index], &view.branches[index]).await;
        super::publish(broker, view);
    }
}

/// The repository as the worktree code knows it (its top and git directory).
fn repo_of(top: &std::path::Path) -> shepherd_core::worktree::Repo {
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
