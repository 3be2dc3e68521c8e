//! A merge checked before anything is merged: its options, what it lands (chosen by `--only`,
//! `--skip` and how each branch's task ended), in which repository, into which branch, how,
//! and with which resolver and fixer. Each refusal has a code of its own and names the bad
//! value and what would be accepted, and changes nothing: an unknown resolver is refused here,
//! not at the first conflict; a dirty target, a branch gone, or an `--into` that is not a
//! plain branch name too.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use shepherd_core::error_code::ErrorCode;
use shepherd_core::herd::{MergeCandidate, MergePlan};
use shepherd_core::land::{
    BranchLanding, BranchState, DEFAULT_FIX_ATTEMPTS, MAX_FIX_ATTEMPTS, MergeParams, MergeView,
};

use super::git;
use super::select;
use crate::error::{BrokerError, BrokerResult};
use crate::state::broker::Broker;

fn refuse(code: ErrorCode, message: impl Into<String>) -> BrokerError {
    BrokerError::new(code, message)
}

/// The merge as it starts: every branch open, or skipped when it is left out.
pub(super) fn view(plan: &MergePlan, merge_id: &str) -> MergeView {
    MergeView {
        merge_id: merge_id.to_owned(),
        target: plan.target.clone(),
        strategy: plan.strategy,
        discard: plan.discard,
        check: plan.check.clone(),
        branches: plan.candidates.iter().map(landing_of).collect(),
        ..MergeView::default()
    }
}

/// A candidate's line in the view, as it starts.
fn landing_of(c: &MergeCandidate) -> BranchLanding {
    BranchLanding {
        branch: c.branch.clone(),
        landing_ref: c.landing_ref.clone(),
        owner: c.owner.clone(),
        note: c.note.clone(),
        task_status: c.task_status.clone(),
        state: if c.left_out.is_some() {
            BranchState::Skipped
        } else {
            BranchState::Open
        },
        why: c.left_out.clone(),
        ..BranchLanding::default()
    }
}

/// Checks the options that need nothing but themselves.
fn check_options(
    params: &MergeParams,
    strategy: shepherd_core::land::Strategy,
) -> BrokerResult<()> {
    let bad = |message: String| Err(refuse(ErrorCode::InvalidMergeOptions, message));
    if params.discard {
        let landing = [
            ("--into", params.into.is_some()),
            ("--check", params.check.is_some()),
            ("--resolve", params.resolve.is_some()),
            ("--fix", params.fix.is_some()),
            ("--strategy", params.strategy.is_some()),
            ("--prune", params.prune),
        ];
        if let Some((flag, _)) = landing.iter().find(|(_, given)| *given) {
            return bad(format!(
                "--discard throws the branches away, so {flag} has nothing to do: drop one of them"
            ));
        }
    }
    if let Some(attempts) = params.fix_attempts
        && !(1..=MAX_FIX_ATTEMPTS).contains(&attempts)
    {
        return bad(format!(
            "--fix-attempts {attempts} is out of range: give 1 to {MAX_FIX_ATTEMPTS}"
        ));
    }
    if params.fix_attempts.is_some() && params.fix.is_none() {
        return bad("--fix-attempts needs --fix AGENT".to_owned());
    }
    if let Some(minutes) = params.check_timeout
        && !(minutes.is_finite() && minutes > 0.0)
    {
        return bad(format!(
            "--check-timeout {minutes} is not a positive number of minutes (fractions allowed: 0.5 is 30 s)"
        ));
    }
    if !strategy.takes_sheep() {
        for (flag, given) in [("--resolve", &params.resolve), ("--fix", &params.fix)] {
            if given.is_some() {
                return bad(format!(
                    "{flag} needs a strategy that makes a commit of its own (merge or squash); \
                     --strategy {strategy} lands the branch's own commits"
                ));
            }
        }
    }
    Ok(())
}

/// Checks a merge before anything is merged and returns its plan.
pub(super) async fn plan(broker: &Arc<Broker>, params: &MergeParams) -> BrokerResult<MergePlan> {
    let settings = broker.config.settings();
    let strategy = params.strategy.unwrap_or(settings.merge_strategy);
    check_options(params, strategy)?;
    if params.targets.is_empty() && params.session.is_none() {
        return Err(refuse(
            ErrorCode::NothingToLand,
            "name what to land: a run id, a sheep's agent id, a shepherd/… branch, or --session",
        ));
    }
    let mut found = broker
        .store
        .read(|herd| select::candidates(herd, &params.targets, params.session.as_deref()))?;
    if found.is_empty() {
        return Err(refuse(
            ErrorCode::NothingToLand,
            "nothing to land: none of the branches named has work on it",
        ));
    }
    if !params.discard {
        select::choose(
            &mut found,
            &params.only,
            &params.skip,
            params.include_failed,
        )?;
        if found.iter().all(|f| f.candidate.left_out.is_some()) {
            let why: Vec<String> = found
                .iter()
                .map(|f| {
                    format!(
                        "{} ({})",
                        f.candidate.branch,
                        f.candidate.left_out.as_deref().unwrap_or_default()
                    )
                })
                .collect();
            return Err(refuse(
                ErrorCode::NothingToLand,
                format!(
                    "nothing to land: every branch is left out — {}",
                    why.join("; ")
                ),
            ));
        }
    }
    for (flag, agent) in [("--resolve", &params.resolve), ("--fix", &params.fix)] {
        if let Some(agent) = agent {
            shepherd_config::resolve_agent(
                &broker.config.dirs,
                &broker.config.address.project_root,
                &settings,
                agent,
            )
            .map_err(|err| BrokerError::new(err.code(), format!("{flag} {agent}: {err}")))?;
        }
    }
    let project = broker.config.address.project_root.clone();
    let repos: Vec<PathBuf> = found
        .iter()
        .map(|f| f.repo.clone().unwrap_or_else(|| project.clone()))
        .collect();
    let repo = repos[0].clone();
    if let Some(other) = repos.iter().find(|r| **r != repo) {
        return Err(refuse(
            ErrorCode::TwoRepositories,
            format!(
                "the branches belong to two repositories ({} and {}): land each one's separately",
                repo.display(),
                other.display()
            ),
        ));
    }
    // The targets each branch was landed into (by a merge of this herd).
    let landed: Vec<Vec<String>> = broker.store.read(|herd| {
        found
            .iter()
            .map(|f| {
                herd.landed
                    .values()
                    .filter(|l| l.branch == f.candidate.branch)
                    .map(|l| l.target.clone())
                    .collect()
            })
            .collect()
    });
    let candidates: Vec<MergeCandidate> = found.into_iter().map(|f| f.candidate).collect();
    let timeout = params.check_timeout.map_or_else(
        || settings.merge_check_timeout(),
        |m| Duration::from_secs_f64(m * 60.0),
    );
    let mut plan = MergePlan {
        repo: repo.display().to_string(),
        target: String::new(),
        create_from: None,
        strategy,
        check: params.check.clone().filter(|c| !c.trim().is_empty()),
        check_timeout_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
        resolve: params.resolve.clone(),
        fix: params.fix.clone(),
        fix_attempts: params
            .fix
            .as_ref()
            .map_or(0, |_| params.fix_attempts.unwrap_or(DEFAULT_FIX_ATTEMPTS)),
        prune: params.prune,
        discard: params.discard,
        candidates,
        caller: params.caller.clone(),
    };
    let into = params.into.clone();
    tokio::task::spawn_blocking(move || {
        target(&repo, &mut plan, into)?;
        for (c, landed) in plan.candidates.iter().zip(landed) {
            // A branch gone since it was landed (and pruned) is known as landed.
            let wanted = c.left_out.is_none() && !plan.discard && !landed.contains(&plan.target);
            if wanted && git::resolve(&repo, &c.landing_ref).is_none() {
                return Err(refuse(
                    ErrorCode::BranchGone,
                    format!(
                        "{} does not exist (any more): it was deleted, or landed and pruned; \
                         leave it out with --skip {}",
                        c.landing_ref, c.branch
                    ),
                ));
            }
        }
        Ok(plan)
    })
    .await
    .map_err(|err| BrokerError::new(ErrorCode::Internal, err.to_string()))?
}

/// Decides the target (and whether it is made), refusing a detached HEAD, two bases, a name
/// that is not a plain branch, and a target checked out with uncommitted changes.
fn target(repo: &Path, plan: &mut MergePlan, into: Option<String>) -> BrokerResult<()> {
    if git::git(repo, &["rev-parse", "--verify", "--quiet", "HEAD^{commit}"]).is_err()
        && git::git(repo, &["rev-parse", "--git-dir"]).is_err()
    {
        return Err(refuse(
            ErrorCode::NotAGitRepository,
            format!("{} is not a git repository", repo.display()),
        ));
    }
    let current = git::git(repo, &["symbolic-ref", "--short", "-q", "HEAD"]).ok();
    let bases: Vec<&str> = plan
        .candidates
        .iter()
        .filter_map(|c| c.base_branch.as_deref())
        .collect();
    let base = bases.first().map(|b| (*b).to_owned()).or(current);
    match into {
        Some(into) => {
            check_into(repo, &into)?;
            if git::resolve(repo, &format!("refs/heads/{into}")).is_none() {
                plan.create_from = Some(base.unwrap_or_else(|| "HEAD".to_owned()));
            }
            plan.target = into;
        }
        None => {
            if let Some(other) = bases.iter().find(|b| **b != bases[0]) {
                return Err(refuse(
                    ErrorCode::TwoBases,
                    format!(
                        "the branches were made from two branches ({} and {other}): say where to \
                         land them with --into",
                        bases[0]
                    ),
                ));
            }
            plan.target = base.ok_or_else(|| {
                refuse(
                    ErrorCode::DetachedTarget,
                    "the project has no branch checked out (a detached HEAD): say where to land \
                     with --into BRANCH",
                )
            })?;
        }
    }
    if plan.discard {
        return Ok(());
    }
    let checked = git::checked_out(repo, &plan.target)
        .map_err(|e| refuse(ErrorCode::NotAGitRepository, e.to_string()))?;
    if let Some(worktree) = checked
        && git::dirty(&worktree.path).map_err(|e| refuse(ErrorCode::Internal, e.to_string()))?
    {
        return Err(refuse(
            ErrorCode::DirtyTarget,
            format!(
                "{} is checked out in {} with uncommitted changes: commit or stash them first, \
                 or land into another branch with --into",
                plan.target,
                worktree.path.display()
            ),
        ));
    }
    Ok(())
}

/// Refuses an `--into` that is not a plain branch name: what `git check-ref-format --branch`
/// refuses, and what it accepts only by reading it as something else (`@`, `@{-1}`, a name
/// that starts `refs/` or `-`, `HEAD`).
pub(super) fn check_into(repo: &Path, into: &str) -> BrokerResult<()> {
    let invalid = |why: &str| {
        Err(refuse(
            ErrorCode::InvalidInto,
            format!(
                "--into `{into}` is not a branch name ({why}): give a plain name such as main or land/today"
            ),
        ))
    };
    if into.starts_with("refs/") {
        return invalid("it is a full ref; drop refs/heads/");
    }
    if into == "@" || into == "HEAD" || into.contains("@{") || into.starts_with('-') {
        return invalid("git reads it as another ref or an option");
    }
    match git::git(repo, &["check-ref-format", "--branch", into]) {
        Ok(normal) if normal == into => Ok(()),
        Ok(_) => invalid("git reads it as another branch"),
        Err(_) => invalid("git refuses it"),
    }
}
