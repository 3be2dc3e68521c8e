//! The check that gates a step, and the fixers a failing one is handed to: the check runs in
//! the merge worktree in a process group of its own, with its deadline, killable by a cancel
//! (`check`); a failure goes to a fixer sheep while attempts are left (`sheep`), the check runs
//! again on what it committed, and the result is remade so the strategy's rule can verify it.
//! Kept apart from `step`, which makes and lands the result around it.

use shepherd_core::label::Role;
use shepherd_core::land::{BranchLanding, BranchState};

use super::check::{self, Checked};
use super::sheep::{self, Handoff};
use super::work::{Ctx, Next, blocking, ended, remake};

/// Runs the check on `head` (handing a failure to a fixer, while it has attempts left);
/// returns the result that passed.
pub(super) async fn checked(
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
