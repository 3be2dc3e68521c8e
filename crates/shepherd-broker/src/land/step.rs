//! One branch's step: make its result in the merge worktree as the strategy says (a merge, a
//! squash, a replay of its commits, a fast-forward), hand a conflict to a resolver and a
//! failing check to a fixer when the merge names them, run the check, bring the result home
//! and verify it there, record the move the target is about to make, and make it by
//! compare-and-swap from the commit the queue last saw.
//!
//! A branch a merge of this target landed before is not landed again (nor checked, nor
//! recorded again): "already landed" is read from the herd's record of that landing. A
//! result that is not what the strategy makes — a resolver that aborted the merge and
//! committed something else, a fixer that reset it away — is rejected, naming what was found,
//! and the target stays where it was.

use shepherd_core::herd::Advance;
use shepherd_core::label::Role;
use shepherd_core::land::{BranchLanding, BranchState, Strategy};

use super::git;
use super::sheep::{self, Handoff};
use super::verify;

pub(super) use super::work::{Ctx, Next, blocking, ended, remake};

/// Lands branch `index` onto `tip`, leaving its outcome in `landing`.
pub(super) async fn step(ctx: &Ctx, index: usize, tip: &str, landing: &mut BranchLanding) -> Next {
    let c = ctx.candidate(index).clone();
    let plan = ctx.plan.clone();
    let (repo, landing_ref) = (ctx.repo.clone(), c.landing_ref.clone());
    let commit = blocking(move || git::resolve(&repo, &landing_ref))
        .await
        .flatten();
    let recorded = ctx
        .broker
        .store
        .read(|herd| herd.landed_into(&plan.target, &c.branch).cloned());
    let commit = match (recorded, commit) {
        (Some(landed), Some(commit)) if landed.tip == commit => {
            landing.commit = Some(landed.commit.clone());
            ended(
                landing,
                BranchState::AlreadyLanded,
                format!(
                    "landed at {} by {}: nothing done again",
                    git::short(&landed.commit),
                    landed.merge_id
                ),
            );
            return Next::Go;
        }
        (Some(landed), None) => {
            landing.commit = Some(landed.commit.clone());
            ended(
                landing,
                BranchState::AlreadyLanded,
                format!(
                    "landed at {} by {}; the branch is gone since",
                    git::short(&landed.commit),
                    landed.merge_id
                ),
            );
            return Next::Go;
        }
        (_, None) => {
            let why = format!("{} does not exist (any more)", c.landing_ref);
            ended(landing, BranchState::Refused, why.clone());
            return Next::Stop(format!("the queue stopped: {why}"));
        }
        (_, Some(commit)) => commit,
    };
    let (repo, held, at) = (ctx.repo.clone(), commit.clone(), tip.to_owned());
    if blocking(move || verify::is_ancestor(&repo, &held, &at))
        .await
        .unwrap_or(false)
    {
        ended(
            landing,
            BranchState::AlreadyLanded,
            format!(
                "{} already holds its tip {} (landed outside this queue): nothing to land",
                plan.target,
                git::short(&commit)
            ),
        );
        return Next::Go;
    }
    landing.state = BranchState::Merging;
    ctx.show(index, Some(landing));
    let made = match plan.strategy {
        Strategy::Merge | Strategy::Squash => merged(ctx, index, tip, &commit, landing).await,
        Strategy::Rebase => replayed(ctx, index, tip, &commit, landing).await,
        Strategy::FfOnly => forwarded(ctx, tip, &commit, landing).await,
    };
    let Made { head, mut touched } = match made {
        Ok(made) => made,
        Err(next) => {
            ctx.reset(tip).await;
            return next;
        }
    };
    let head =
        match super::gate::checked(ctx, index, tip, &commit, head, landing, &mut touched).await {
            Ok(head) => head,
            Err(next) => {
                ctx.reset(tip).await;
                return next;
            }
        };
    match landed(ctx, index, tip, &commit, &head, touched, landing).await {
        Ok(new) => Next::Landed(new),
        Err(next) => {
            ctx.reset(tip).await;
            next
        }
    }
}

/// A result made in the merge worktree, and whether a sheep touched it.
struct Made {
    head: String,
    touched: bool,
}

/// A merge (also the first half of a squash), with a resolver for a conflict.
async fn merged(
    ctx: &Ctx,
    index: usize,
    tip: &str,
    commit: &str,
    landing: &mut BranchLanding,
) -> Result<Made, Next> {
    let c = ctx.candidate(index).clone();
    let message = ctx.message(index, None, &[]);
    let (worktree, theirs) = (ctx.worktree.clone(), commit.to_owned());
    let branch = c.branch.clone();
    let Some(tried) = blocking(move || worktree.merge(&theirs, &branch, &message)).await else {
        let why = "the merge could not run".to_owned();
        ended(landing, BranchState::Refused, why.clone());
        return Err(Next::Stop(why));
    };
    let conflict = match tried {
        Err(err) => {
            // A refused step stops the queue: what comes after it was meant to land on it.
            let why = err.to_string();
            ended(landing, BranchState::Refused, why.clone());
            return Err(Next::Stop(format!("the queue stopped: {why}")));
        }
        Ok(None) => {
            let worktree = ctx.worktree.clone();
            return blocking(move || worktree.head())
                .await
                .and_then(Result::ok)
                .map(|head| Made {
                    head,
                    touched: false,
                })
                .ok_or_else(|| {
                    ended(landing, BranchState::Refused, "the merge could not be read");
                    Next::Go
                });
        }
        Ok(Some(conflict)) => conflict,
    };
    landing.conflict = Some(conflict.clone());
    let Some(agent) = ctx.plan.resolve.clone() else {
        let why = format!(
            "{} conflicts with {} in {}",
            c.branch,
            ctx.plan.target,
            conflict.files.join(", ")
        );
        ended(landing, BranchState::Conflict, why.clone());
        return Err(Next::Stop(format!(
            "the queue stopped at a conflict ({why})"
        )));
    };
    let handoff = Handoff {
        role: Role::Resolver,
        agent,
        task: sheep::resolver_task(
            &c.branch,
            &ctx.plan.target,
            c.owner.as_deref(),
            &conflict.files,
            &conflict.hunks,
            ctx.plan.check.as_deref(),
        ),
        label: c.owner_label.clone(),
        session_dir: c.session_dir.clone(),
        worktree: ctx.worktree.path.clone(),
        caller: ctx.plan.caller.clone(),
    };
    let handled = sheep::hand(&ctx.broker, &handoff, &ctx.cancel, |view| {
        let mut started = landing.clone();
        started.resolver = Some(view.clone());
        // Journaled, so a broker that dies meanwhile closes it when it resumes the merge.
        ctx.keep(index, &started);
    })
    .await;
    landing.resolver = Some(handled.view.clone());
    if !handled.closed {
        // Its sheep may still be at work in the merge worktree: no git runs there.
        ctx.tainted.store(true, std::sync::atomic::Ordering::SeqCst);
        let why = "the resolver could not be closed, so its work is not trusted";
        ended(landing, BranchState::Conflict, why);
        return Err(Next::Stop(format!(
            "the queue stopped at an unresolved conflict ({why})"
        )));
    }
    if ctx.cancel.is_cancelled() {
        return Err(Next::Cancelled);
    }
    if let Some(why) = handled.refusal() {
        ended(landing, BranchState::Conflict, why.clone());
        return Err(Next::Stop(format!(
            "the queue stopped at an unresolved conflict ({why})"
        )));
    }
    let worktree = ctx.worktree.clone();
    let concluded = blocking(move || -> Result<String, String> {
        // Nothing the resolver configured there runs in the git that follows.
        worktree.sanitise().map_err(|e| e.to_string())?;
        let left = worktree.unmerged().map_err(|e| e.to_string())?;
        if !left.is_empty() {
            return Err(format!("conflicts are left in {}", left.join(", ")));
        }
        if worktree.merging() {
            worktree.conclude().map_err(|e| e.to_string())?;
        }
        worktree.head().map_err(|e| e.to_string())
    })
    .await
    .unwrap_or_else(|| Err("the merge was interrupted".to_owned()));
    let head = match concluded {
        Ok(head) => head,
        Err(left) => {
            let why = format!("the resolver finished, but {left}");
            ended(landing, BranchState::Conflict, why.clone());
            return Err(Next::Stop(format!(
                "the queue stopped at an unresolved conflict ({why})"
            )));
        }
    };
    // What the resolver made must be a merge of the branch onto the target (asked of the
    // project's repository, once it is fetched there); Shepherd then makes the commit itself,
    // with its own message.
    let resolver = handled.view.display_name.clone();
    let message = ctx.message(index, resolver.as_deref(), &[]);
    let remade = remake(ctx, tip, commit, &head, message, "resolver", false).await;
    match remade {
        Ok(head) => Ok(Made {
            head,
            touched: true,
        }),
        Err(why) => {
            ended(landing, BranchState::Rejected, why.clone());
            Err(Next::Stop(format!("the queue stopped: {why}")))
        }
    }
}

/// The branch's commits replayed on the target, one by one.
async fn replayed(
    ctx: &Ctx,
    index: usize,
    tip: &str,
    commit: &str,
    landing: &mut BranchLanding,
) -> Result<Made, Next> {
    let (repo, worktree) = (ctx.repo.clone(), ctx.worktree.clone());
    let (at, theirs) = (tip.to_owned(), commit.to_owned());
    let replay = blocking(
        move || -> Result<Result<String, shepherd_core::land::ConflictView>, String> {
            let commits =
                verify::commits_to_replay(&repo, &at, &theirs).map_err(|e| e.to_string())?;
            for one in &commits {
                if let Some(conflict) = worktree.pick(one).map_err(|e| e.to_string())? {
                    return Ok(Err(conflict));
                }
            }
            worktree.head().map(Ok).map_err(|e| e.to_string())
        },
    )
    .await
    .unwrap_or_else(|| Err("the replay was interrupted".to_owned()));
    match replay {
        Ok(Ok(head)) if head == tip => {
            ended(
                landing,
                BranchState::AlreadyLanded,
                format!("{} holds all its patches already", ctx.plan.target),
            );
            Err(Next::Go)
        }
        Ok(Ok(head)) => Ok(Made {
            head,
            touched: false,
        }),
        Ok(Err(conflict)) => {
            let why = format!(
                "{} conflicts with {} in {} (a rebase is not handed to a resolver: land it with \
                 --strategy merge or squash)",
                ctx.candidate(index).branch,
                ctx.plan.target,
                conflict.files.join(", ")
            );
            landing.conflict = Some(conflict);
            ended(landing, BranchState::Conflict, why.clone());
            Err(Next::Stop(format!(
                "the queue stopped at a conflict ({why})"
            )))
        }
        Err(why) => {
            ended(landing, BranchState::Refused, why);
            Err(Next::Go)
        }
    }
}

/// The target moved to the branch's tip, which must be a fast-forward of it.
async fn forwarded(
    ctx: &Ctx,
    tip: &str,
    commit: &str,
    landing: &mut BranchLanding,
) -> Result<Made, Next> {
    let (repo, at, theirs) = (ctx.repo.clone(), tip.to_owned(), commit.to_owned());
    if !blocking(move || verify::is_ancestor(&repo, &at, &theirs))
        .await
        .unwrap_or(false)
    {
        let why = format!(
            "{} is not a fast-forward of {} (--strategy ff-only)",
            landing.branch, ctx.plan.target
        );
        ended(landing, BranchState::Refused, why.clone());
        return Err(Next::Stop(format!("the queue stopped: {why}")));
    }
    let (worktree, theirs) = (ctx.worktree.clone(), commit.to_owned());
    // Checked out for the check.
    match blocking(move || worktree.reset(&theirs)).await {
        Some(Ok(())) => Ok(Made {
            head: commit.to_owned(),
            touched: false,
        }),
        _ => {
            ended(
                landing,
                BranchState::Refused,
                "the branch could not be checked out",
            );
            Err(Next::Go)
        }
    }
}

/// Brings the result home, verifies it by the strategy's rule (making the squash first),
/// records the move, moves the target, and records the landing.
async fn landed(
    ctx: &Ctx,
    index: usize,
    tip: &str,
    commit: &str,
    head: &str,
    touched: bool,
    landing: &mut BranchLanding,
) -> Result<String, Next> {
    let plan = ctx.plan.clone();
    let (worktree, repo) = (ctx.worktree.clone(), ctx.repo.clone());
    let (at, theirs, head) = (tip.to_owned(), commit.to_owned(), head.to_owned());
    let message = ctx.message(
        index,
        landing
            .resolver
            .as_ref()
            .and_then(|r| r.display_name.as_deref()),
        &landing
            .fixers
            .iter()
            .filter_map(|f| f.display_name.clone())
            .collect::<Vec<_>>(),
    );
    let verified = blocking(move || -> Result<String, String> {
        let new = match plan.strategy {
            Strategy::FfOnly => head,
            Strategy::Merge | Strategy::Rebase => {
                worktree.bring_home().map_err(|e| e.to_string())?
            }
            Strategy::Squash => {
                // The merge first (by the merge rule), then one commit of its tree.
                let merge = worktree.bring_home().map_err(|e| e.to_string())?;
                verify::landing(&repo, Strategy::Merge, &at, &theirs, &merge, None)?;
                let tree = git::git(&repo, &["rev-parse", &format!("{merge}^{{tree}}")])
                    .map_err(|e| e.to_string())?;
                let squash = worktree
                    .commit_tree(&tree, &[&at], &message)
                    .map_err(|e| e.to_string())?;
                worktree.set_head(&squash).map_err(|e| e.to_string())?;
                let home = worktree.bring_home().map_err(|e| e.to_string())?;
                let expected = touched.then_some(tree);
                verify::landing(
                    &repo,
                    Strategy::Squash,
                    &at,
                    &theirs,
                    &home,
                    expected.as_deref(),
                )?;
                return Ok(home);
            }
        };
        verify::landing(&repo, plan.strategy, &at, &theirs, &new, None)?;
        Ok(new)
    })
    .await
    .unwrap_or_else(|| Err("the step was interrupted".to_owned()));
    let new = match verified {
        Ok(new) => new,
        Err(found) => {
            let why = format!("not a {} of it: {found}", ctx.plan.strategy);
            ended(landing, BranchState::Rejected, why.clone());
            return Err(Next::Stop(format!("the queue stopped: {why}")));
        }
    };
    let advance = Advance {
        index,
        from: tip.to_owned(),
        to: new.clone(),
        tip: commit.to_owned(),
    };
    let merge_id = ctx.merge_id.clone();
    if let Err(err) = ctx
        .broker
        .store
        .commit_durable(|tx| {
            shepherd_core::herd::merge::merge_advancing(tx, &merge_id, advance);
            Ok(())
        })
        .await
    {
        ended(landing, BranchState::Refused, err.message.clone());
        return Err(Next::Stop(format!("the queue stopped: {}", err.message)));
    }
    let (repo, target) = (ctx.repo.clone(), ctx.plan.target.clone());
    let (from, to) = (tip.to_owned(), new.clone());
    let moved = blocking(move || git::advance(&repo, &target, &from, &to))
        .await
        .unwrap_or_else(|| Err("the target could not be moved".to_owned()));
    if let Err(why) = moved {
        ended(landing, BranchState::Refused, why.clone());
        return Err(Next::Stop(format!("the queue stopped: {why}")));
    }
    landing.state = BranchState::Merged;
    landing.commit = Some(new.clone());
    landing.why = None;
    Ok(new)
}
