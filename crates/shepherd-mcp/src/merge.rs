//! `shepherd_merge`: the merge queue, carried out by the broker, which lands the branches runs
//! and isolated sheep left one by one into a target branch. A call submits it (or, with
//! `mergeId`, follows one an earlier call started; with `cancel`, cancels one) and follows it
//! for at most its bound, then answers with each branch's outcome, in the CLI's words, or with
//! "still running" and the call to make to keep following it. The merge goes on in the broker
//! either way. `dryRun` answers what would land and what would conflict, changing nothing.

use rmcp::model::{CallToolResult, JsonObject};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, tool, tool_router};
use serde_json::json;
use shepherd_client::wire::Push;
use shepherd_core::error_code::ErrorCode;
use shepherd_core::land::{BranchState, MergeIdParams, MergeParams, MergeView, Strategy};
use shepherd_core::protocol::calls;
use tokio::time::Instant;

use super::args::{self, wait_seconds};
use super::catalogue;
use super::error::ToolError;
use super::schema::input;
use super::server::{Parent, respond};
use super::text;
use super::waits::Budget;
use shepherd_client::connect::caller_context;

#[tool_router(router = merge_router, vis = "pub(crate)")]
impl Parent {
    #[tool(
        name = "shepherd_merge",
        description = catalogue::MERGE.description,
        input_schema = input(&catalogue::MERGE.mcp_schema())
    )]
    async fn shepherd_merge(
        &self,
        args: JsonObject,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        match self.merge(&args, &ctx).await {
            Ok(result) => Ok(result),
            Err(err) => respond("shepherd_merge", "merge", &args, Err(err)),
        }
    }
}

impl Parent {
    async fn merge(
        &self,
        args: &JsonObject,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ToolError> {
        let started = Instant::now();
        let merge: args::Merge = args::read("shepherd_merge", args, false)?;
        let budget = Budget::new(
            started,
            self.shared.bound,
            wait_seconds(merge.wait, self.bound_secs(), self.bound_secs())?,
        );
        let strategy = merge
            .strategy
            .as_deref()
            .map(Strategy::parse)
            .transpose()
            .map_err(|why| ToolError::new(ErrorCode::InvalidArguments, why))?;
        let herd = self.herd(&ctx.peer).await?;
        let mut link = herd.link();
        let params = MergeParams {
            targets: merge.targets.map(args::Ids::into_vec).unwrap_or_default(),
            session: merge.session,
            only: merge.only.unwrap_or_default(),
            skip: merge.skip.unwrap_or_default(),
            include_failed: merge.include_failed == Some(true),
            into: merge.into,
            strategy,
            check: merge.check,
            check_timeout: merge.check_timeout,
            resolve: merge.resolve,
            fix: merge.fix,
            fix_attempts: merge.fix_attempts,
            prune: merge.prune == Some(true),
            discard: merge.discard == Some(true),
            caller: Some(caller_context()),
            patch: false,
        };
        if merge.dry_run == Some(true) {
            let preview = link
                .send::<calls::MergePreview>(&params, budget.hard)
                .await?;
            return Ok(text::plain(
                shepherd_client::land_words::preview_text(&preview),
                false,
            ));
        }
        let mut view = match (merge.cancel, merge.merge_id) {
            (Some(merge_id), _) => {
                link.send::<calls::MergeCancel>(&MergeIdParams { merge_id }, budget.hard)
                    .await?
            }
            (None, Some(merge_id)) => {
                link.send::<calls::MergeAttach>(&MergeIdParams { merge_id }, budget.hard)
                    .await?
            }
            (None, None) => {
                link.send::<calls::MergeSubmit>(&params, budget.hard)
                    .await?
            }
        };
        while !view.finished && !budget.over() {
            tokio::select! {
                push = link.next_event() => match push {
                    Ok(Push::Merge(pushed)) => {
                        if pushed.merge_id == view.merge_id {
                            view = *pushed;
                        }
                    }
                    Ok(_) => {}
                    Err(_) => link.disconnect(),
                },
                () = tokio::time::sleep(budget.slice()) => {}
                () = ctx.ct.cancelled() => break,
            }
        }
        if view.finished {
            let failed = view.exit_code.unwrap_or(2) != 0;
            return Ok(text::plain(
                shepherd_client::land_words::merge_text(&view),
                failed,
            ));
        }
        Ok(text::plain(still_merging(&view, self.bound_secs()), false))
    }
}

/// A merge that outlived the call: where each branch stands, and the call that follows it.
fn still_merging(view: &MergeView, bound: f64) -> String {
    let follow = json!({ "mergeId": view.merge_id });
    let landed = view
        .branches
        .iter()
        .filter(|b| b.state == BranchState::Merged)
        .count();
    format!(
        "still running — call shepherd_merge {follow} again to keep waiting (each call waits up to {bound} s); the merge goes on in the background either way. {landed} of {} landed into {} so far.\n{}",
        view.branches.len(),
        view.target,
        shepherd_client::land_words::merge_text(view)
    )
}
