//! `shepherd merge`: land the branches isolated sheep and tasks left — by run, sheep, branch or
//! session — one by one into a target branch, with a check gating each step and conflicts
//! stopping the queue or going to a resolver sheep. The broker carries the queue out; this
//! submits it, follows what it pushes, prints each branch's outcome and exits 0 when all
//! landed, 1 when a check failed, 2 when a conflict was not resolved.
//!
//! `shepherd run --merge` lands a run's branches the same way once the run is over
//! (`land_run`).

use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use serde_json::json;
use shepherd_broker::client::Link;
use shepherd_core::error_code::ErrorCode;
use shepherd_core::land::{MergeIdParams, MergeParams, MergeView};
use shepherd_core::protocol::{event, method};

use crate::Printer;
use shepherd_client::connect::{HerdArgs, caller_context, deadline_after, parent, runtime, target};
use shepherd_client::{CliError, Context};

/// Land branches Shepherd made into a target branch, one by one.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// What to land, in order: run ids (`run-…`, their branches in input order), sheep (agent
    /// ids or display names) and branches (`shepherd/…`).
    #[arg(value_name = "WHAT")]
    targets: Vec<String>,
    /// Also every branch of this fieldnotes session not landed yet.
    #[arg(long, value_name = "NAME")]
    session: Option<String>,
    /// Land into this branch (made from the branches' base when missing; default: the branch
    /// the project had checked out when their work began).
    #[arg(long, value_name = "BRANCH")]
    into: Option<String>,
    /// A shell command that must pass in the merge worktree after each merge; a failing one
    /// leaves the target where it was.
    #[arg(long, value_name = "CMD")]
    check: Option<String>,
    /// Hand a conflict to a sheep of this agent definition (it resolves and commits the merge,
    /// then the check runs); without it a conflict stops the queue.
    #[arg(long, value_name = "AGENT")]
    resolve: Option<String>,
    /// Throw the branches away instead (their branches and preserved changes are deleted).
    #[arg(long, conflicts_with_all = ["into", "check", "resolve"])]
    discard: bool,
    #[command(flatten)]
    herd: HerdArgs,
}

/// Runs `shepherd merge`.
pub fn run(args: &MergeArgs, ctx: &Context, printer: &Printer) -> Result<ExitCode, CliError> {
    let params = MergeParams {
        targets: args.targets.clone(),
        session: args.session.clone(),
        into: args.into.clone(),
        check: args.check.clone(),
        resolve: args.resolve.clone(),
        discard: args.discard,
        caller: Some(caller_context()),
    };
    let view = land(ctx, &args.herd, &params)?;
    printer.emit(&view, || shepherd_client::land_words::merge_text(&view));
    Ok(ExitCode::from(view.exit_code.unwrap_or(2)))
}

/// Lands `params` in the herd of `herd` and returns the finished merge.
pub(crate) fn land(
    ctx: &Context,
    herd: &HerdArgs,
    params: &MergeParams,
) -> Result<MergeView, CliError> {
    let target = target(ctx, herd)?;
    runtime()?.block_on(async {
        let mut link = parent(&target, deadline_after(Duration::ZERO)?).await?;
        let params = serde_json::to_value(params)
            .map_err(|e| CliError::new(ErrorCode::Internal, e.to_string()))?;
        let value = link
            .request(
                method::MERGE_SUBMIT,
                params,
                deadline_after(Duration::ZERO)?,
            )
            .await?;
        let view: MergeView = serde_json::from_value(value)
            .map_err(|e| CliError::new(ErrorCode::Protocol, e.to_string()))?;
        follow(&mut link, view).await
    })
}

/// Follows the merge until it is over; a lost connection is reconnected and the merge
/// followed again.
async fn follow(link: &mut Link, mut view: MergeView) -> Result<MergeView, CliError> {
    let mut following = link.generation();
    while !view.finished {
        if link.generation() != following || !link.is_connected() {
            let params = json!(MergeIdParams {
                merge_id: view.merge_id.clone()
            });
            let value = link
                .request(
                    method::MERGE_ATTACH,
                    params,
                    deadline_after(Duration::ZERO)?,
                )
                .await?;
            view = serde_json::from_value(value)
                .map_err(|e| CliError::new(ErrorCode::Protocol, e.to_string()))?;
            following = link.generation();
            continue;
        }
        match link.next_push().await {
            Ok((name, data)) if name == event::MERGE => {
                if let Ok(pushed) = serde_json::from_value::<MergeView>(data)
                    && pushed.merge_id == view.merge_id
                {
                    view = pushed;
                }
            }
            Ok(_) => {}
            Err(err) if err.is_lost() => {}
            Err(err) => return Err(err.into()),
        }
    }
    Ok(view)
}

/// Lands a finished run's branches (`shepherd run --merge`), with the run's own check and
/// resolver.
pub(crate) fn land_run(
    ctx: &Context,
    herd: &HerdArgs,
    run_id: &str,
    check: Option<String>,
    resolve: Option<String>,
) -> Result<MergeView, CliError> {
    let params = MergeParams {
        targets: vec![run_id.to_owned()],
        check,
        resolve,
        caller: Some(caller_context()),
        ..MergeParams::default()
    };
    land(ctx, herd, &params)
}
