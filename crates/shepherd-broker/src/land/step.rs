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

use std::path::PathBuf;
use std::sync::Arc;

use shepherd_core::herd::merge::{Advance, MergeCandidate, MergePlan};
use shepherd_core::label::Role;
use shepherd_core::land::message::{Landing, message};
use shepherd_core::land::{BranchLanding, BranchState, Strategy};
use tokio_util::sync::CancellationToken;

use super::check::{self, Checked};
use super::git::{self, MergeWorktree};
use super::sheep::{self, Handoff};
use super::verify;
use crate::state::broker::Broker;

/// What a step works with.
pub(super) struct Ctx {
    pub(super) broker: Arc<Broker>,
    pub(super) merge_id: String,
    pub(super) plan: Arc<MergePlan>,
    pub(super) repo: PathBuf,
    pub(super) worktree: Arc<MergeWorktree>,
    pub(super) cancel: CancellationToken,
    /// What every process of its check carries ([`check::MARK`]).
    pub(super) mark: String,
    /// Set when a resolver or fixer could not be closed: its sheep may still be at work in the
    /// merge worktree, so no git of Shepherd's runs there again.
    pub(super) tainted: std::sync::atomic::AtomicBool,
}

/// What a step leaves the queue to do.
pub(super) enum Next {
    /// It landed: the target is at this commit now.
    Landed(String),
    /// It did not land (or landed before); the queue goes on.
    Go,
    /// It did not land; the queue stops, and says why for the branches after it.
    Stop(String),
    /// The merge was cancelled during it.
    Cancelled,
}

/// Runs blocking git work off the async threads.
pub(super) async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Option<T> {
    tokio::task::spawn_blocking(work).await.ok()
}

impl Ctx {
    /// Records where a branch stands (journaled) and shows it to the merge's followers.
    pub(super) fn keep(&self, index: usize, landing: &BranchLanding) {
        let landing = landing.clone();
        self.broker.commit(|tx| {
            shepherd_core::herd::merge::merge_branch(tx, &self.merge_id, index, landing);
        });
        self.show(index, None);
    }

    /// Shows a branch's live state (not journaled: a step in progress is redone after a
    /// restart) to the merge's followers.
    pub(super) fn show(&self, index: usize, live: Option<&BranchLanding>) {
        super::publish_branch(&self.broker, &self.merge_id, index, live);
    }

    fn candidate(&self, index: usize) -> &MergeCandidate {
        &self.plan.candidates[index]
    }

    async fn reset(&self, tip: &str) {
        if self.tainted.load(std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        let (worktree, tip) = (self.worktree.clone(), tip.to_owned());
        blocking(move || {
            if let Err(err) = worktree.reset(&tip) {
                tracing::warn!("resetting the merge worktree: {err}");
            }
        })
        .await;
    }

    /// The message of a landing of candidate `index`.
    fn message(&self, index: usize, resolver: Option<&str>, fixers: &[String]) -> String {
        let c = self.candidate(index);
        message(&Landing {
            branch: &c.branch,
            owner: c.owner.as_deref(),
            task: c.task.as_deref(),
            note: c.note.as_deref(),
            resolver,
            fixers,
        })
    }
}

/// Ends a step with `state` and `why`.
fn ended(landing: &mut BranchLanding, state: BranchState, why: impl Into<String>) {
    landing.state = state;
    landing.why = Some(why.into());
}

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
    let head = match checked(ctx, index, tip, &commit, head, landing, &mut touched).await {
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

/// Brings `head` (what a resolver or fixer left) home and verifies it is a merge of `commit`
/// onto `tip` — or, for a fixer (`on_top`), a commit built on the verified merge — then makes
/// Shepherd's own merge commit of its tree with `message` and checks it out. `Err` says what
/// was found instead.
async fn remake(
    ctx: &Ctx,
    tip: &str,
    commit: &str,
    head: &str,
    message: String,
    who: &'static str,
    on_top: bool,
) -> Result<String, String> {
    let (worktree, repo) = (ctx.worktree.clone(), ctx.repo.clone());
    let (tip, commit, head) = (tip.to_owned(), commit.to_owned(), head.to_owned());
    blocking(move || -> Result<String, String> {
        let home = worktree.bring_home().map_err(|e| e.to_string())?;
        let tree = if on_top {
            // The fixer's work, whatever it committed: everything in its working tree.
            if !verify::is_ancestor(&repo, &head, &home) {
                return Err(format!(
                    "the {who}'s HEAD {} no longer holds the merge {}",
                    git::short(&home),
                    git::short(&head)
                ));
            }
            worktree.tree_of_work().map_err(|e| e.to_string())?
        } else {
            verify::landing(&repo, Strategy::Merge, &tip, &commit, &home, None).map_err(
                |found| {
                    format!(
                        "the {who}'s result is not a landing of {commit:.10} on {tip:.10}: {found}"
                    )
                },
            )?;
            git::git(&repo, &["rev-parse", &format!("{home}^{{tree}}")])
                .map_err(|e| e.to_string())?
        };
        let made = worktree
            .commit_tree(&tree, &[&tip, &commit], &message)
            .map_err(|e| e.to_string())?;
        worktree.set_head(&made).map_err(|e| e.to_string())?;
        Ok(made)
    })
    .await
    .unwrap_or_else(|| Err("the step was interrupted".to_owned()))
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

/// Runs the check on `head` (handing a failure to a fixer, while it has attempts left);
/// returns the result that passed.
async fn checked(
    ctx: &Ctx,
    index: usize,
    tip: &str,
    commit: &str,
    mut head: String,
    landing: &mut BranchLanding,
    touched: &mut bool,
) -> Result<String, Next> {
    let Some(command) = ctx.plan.check.clone() else {
        return Ok(head);
    };
    let mut fixers: Vec<String> = Vec::new();
    loop {
        landing.state = BranchState::Checking;
        ctx.show(index, Some(landing));
        let failed = match run_check(ctx, &command).await {
            Checked::Passed => return Ok(head),
            Checked::Cancelled => return Err(Next::Cancelled),
            Checked::Failed(failed) => failed,
        };
        landing.check_status = Some(failed.status.clone());
        landing.check_output = Some(failed.output.clone());
        let attempts = u32::try_from(landing.fixers.len()).unwrap_or(u32::MAX);
        let fixer = ctx
            .plan
            .fix
            .clone()
            .filter(|_| attempts < ctx.plan.fix_attempts && ctx.plan.strategy.takes_sheep());
        let Some(agent) = fixer else {
            let why = format!(
                "its check failed ({}); the target stays where it was",
                failed.status
            );
            ended(landing, BranchState::CheckFailed, why);
            return Err(Next::Go);
        };
        landing.state = BranchState::Fixing;
        ctx.show(index, Some(landing));
        let c = ctx.candidate(index).clone();
        let handoff = Handoff {
            role: Role::Fixer,
            agent,
            task: sheep::fixer_task(
                &c.branch,
                &ctx.plan.target,
                c.owner.as_deref(),
                &command,
                &failed.status,
                &failed.output,
            ),
            label: c.owner_label.clone(),
            session_dir: c.session_dir.clone(),
            worktree: ctx.worktree.path.clone(),
            caller: ctx.plan.caller.clone(),
        };
        let handled = sheep::hand(&ctx.broker, &handoff, &ctx.cancel, |view| {
            let mut started = landing.clone();
            started.fixers.push(view.clone());
            ctx.keep(index, &started);
        })
        .await;
        landing.fixers.push(handled.view.clone());
        if !handled.closed {
            ctx.tainted.store(true, std::sync::atomic::Ordering::SeqCst);
            let why = "the fixer could not be closed, so its work is not trusted";
            ended(landing, BranchState::CheckFailed, why);
            return Err(Next::Stop(format!("the queue stopped: {why}")));
        }
        if ctx.cancel.is_cancelled() {
            return Err(Next::Cancelled);
        }
        if let Some(why) = handled.refusal() {
            ended(landing, BranchState::CheckFailed, why);
            return Err(Next::Go);
        }
        let worktree = ctx.worktree.clone();
        if let Some(Err(err)) = blocking(move || worktree.sanitise()).await {
            ended(landing, BranchState::CheckFailed, err.to_string());
            return Err(Next::Stop(format!("the queue stopped: {err}")));
        }
        fixers.extend(handled.view.display_name.clone());
        let resolver = landing
            .resolver
            .as_ref()
            .and_then(|r| r.display_name.clone());
        let message = ctx.message(index, resolver.as_deref(), &fixers);
        match remake(ctx, tip, commit, &head, message, "fixer", true).await {
            Ok(made) => {
                head = made;
                *touched = true;
            }
            Err(why) => {
                ended(landing, BranchState::Rejected, why.clone());
                return Err(Next::Stop(format!("the queue stopped: {why}")));
            }
        }
    }
}

/// Runs the check in the merge worktree, killable by a cancel.
async fn run_check(ctx: &Ctx, command: &str) -> Checked {
    let (broker, merge_id) = (ctx.broker.clone(), ctx.merge_id.clone());
    let (dir, command, mark) = (
        ctx.worktree.path.clone(),
        command.to_owned(),
        ctx.mark.clone(),
    );
    let limit = std::time::Duration::from_millis(ctx.plan.check_timeout_ms);
    let cancel = ctx.cancel.clone();
    let ran = blocking(move || {
        let registered = broker.clone();
        let id = merge_id.clone();
        let checked = check::run(
            &dir,
            &command,
            limit,
            &mark,
            |pgid| super::check_started(&registered, &id, pgid),
            || cancel.is_cancelled(),
        );
        super::check_started(&broker, &merge_id, 0);
        checked
    })
    .await;
    ran.unwrap_or(Checked::Cancelled)
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
