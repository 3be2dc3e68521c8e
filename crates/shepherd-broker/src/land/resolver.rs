//! A conflict handed to a sheep: one of the agent the merge names, spawned in the merge
//! worktree, told the two sides, the files, the hunks and the check, and waited on until its
//! task settles (its note goes into the session of the work it lands). Whatever it says, the
//! queue then looks for itself: no conflict may be left and the merge must be committed (it
//! commits a merge the resolver staged but did not).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use shepherd_core::land::ResolverView;
use shepherd_core::protocol::{CloseParams, DelegateParams, SpawnParams};
use shepherd_core::spawn::CallerContext;

use crate::state::broker::Broker;

/// Beyond its task's timeout, how long the queue waits for a resolver's report.
const REPORT_MARGIN: Duration = Duration::from_secs(30);

/// A conflict to resolve, and where.
#[derive(Debug, Clone)]
pub(super) struct Conflict {
    /// The agent definition whose sheep resolves it.
    pub(super) agent: String,
    pub(super) branch: String,
    pub(super) target: String,
    /// Whose work the branch is.
    pub(super) owner: Option<String>,
    /// The fieldnotes session of the work it lands.
    pub(super) session: Option<String>,
    pub(super) worktree: PathBuf,
    pub(super) check: Option<String>,
    pub(super) files: Vec<String>,
    pub(super) hunks: String,
    pub(super) caller: Option<CallerContext>,
}

/// What became of the resolver: its view, why it never got to work when it did not, and
/// whether its sheep was closed (its processes gone from the merge worktree).
pub(super) struct Resolved {
    pub(super) view: ResolverView,
    pub(super) failure: Option<String>,
    pub(super) closed: bool,
}

/// The resolver's task.
fn task_text(conflict: &Conflict) -> String {
    let whose = conflict
        .owner
        .as_ref()
        .map(|owner| format!(" ({owner}'s work)"))
        .unwrap_or_default();
    let check = conflict
        .check
        .as_ref()
        .map(|check| format!("\n\nThen run the check, which must pass: `{check}`."))
        .unwrap_or_default();
    format!(
        "Resolve a merge conflict. This directory is a git repository at `{target}` in the middle of \
         merging `{branch}`{whose} into it, and the merge stopped with conflicts in: {files}.\n\n\
         Edit those files so that both sides' intent is kept (the `{target}` side is ours, \
         `{branch}` is theirs), remove every conflict marker, `git add` them and make the merge \
         commit with `git commit --no-edit`. Change nothing else and do not reset, rebase or \
         merge anything else.{check}\n\nCall shepherd_done completed once the merge commit is \
         made; if you cannot resolve it, call shepherd_done blocked and say why.\n\n\
         The conflicting hunks:\n\n```diff\n{hunks}\n```",
        target = conflict.target,
        branch = conflict.branch,
        files = conflict.files.join(", "),
        hunks = conflict.hunks,
    )
}

/// Spawns the resolver, hands it the conflict, waits for its task to settle and closes it.
pub(super) async fn resolve(broker: &Arc<Broker>, conflict: &Conflict) -> Resolved {
    let mut view = ResolverView::default();
    let failed = |view: ResolverView, why: String| Resolved {
        view,
        failure: Some(why),
        // Nothing was started, or its spawn failed and was cleaned up.
        closed: true,
    };
    let short = conflict
        .branch
        .strip_prefix("shepherd/")
        .unwrap_or(&conflict.branch);
    let label: String = format!("resolve {short}")
        .chars()
        .filter(|c| c.is_alphanumeric() || " _-.".contains(*c))
        .take(64)
        .collect();
    let spawn = SpawnParams {
        agent: conflict.agent.clone(),
        label: Some(label),
        cwd: Some(conflict.worktree.display().to_string()),
        caller: conflict.caller.clone(),
        session_name: conflict.session.clone(),
        ..SpawnParams::default()
    };
    let spawned = match crate::handlers::spawn::spawn(broker, spawn, None).await {
        Ok(spawned) => spawned,
        Err(err) => {
            return failed(
                view,
                format!("the resolver could not be started: {}", err.message),
            );
        }
    };
    view.agent_id = spawned.agent_id.to_string();
    let timeout_minutes = broker.settings().timeout_minutes;
    let delegate = DelegateParams {
        target: spawned.agent_id.to_string(),
        task: task_text(conflict),
        timeout: Some(timeout_minutes),
        session_name: conflict.session.clone(),
        ..DelegateParams::default()
    };
    let delegated = crate::handlers::parent::delegate(
        broker,
        delegate,
        crate::handlers::parent::RunNote::default(),
        None,
    )
    .await;
    let outcome = match delegated {
        Ok(delegated) => {
            view.task_id = Some(delegated.task_id.to_string());
            view.note = delegated.note_relative.clone();
            let budget = Duration::from_secs_f64(timeout_minutes * 60.0) + REPORT_MARGIN;
            match crate::run::step::settled(broker, delegated.task_id.as_str(), budget).await {
                Some(report) => {
                    view.status = Some(report.status.as_str().to_owned());
                    view.summary = report.summary.clone().or(report.error.clone());
                    None
                }
                None => Some("the resolver's task did not settle in time".to_owned()),
            }
        }
        Err(err) => Some(format!(
            "the conflict could not be handed over: {}",
            err.message
        )),
    };
    let close = CloseParams {
        id: spawned.agent_id.to_string(),
        keep_pane: false,
    };
    let closed = match crate::handlers::close::close(broker, close).await {
        Ok(_) => true,
        Err(err) => {
            tracing::warn!("closing the resolver {}: {err}", spawned.agent_id);
            false
        }
    };
    Resolved {
        view,
        failure: outcome,
        closed,
    }
}
