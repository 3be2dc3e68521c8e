//! A step handed to a sheep: a conflict to a resolver (`--resolve AGENT`), a failing check to
//! a fixer (`--fix AGENT`). The sheep is spawned in the merge worktree (confined like any
//! sheep, it holds that repository and the project's objects read-only, never the project's
//! `.git`), told what to do, waited on until its task settles (or the merge is cancelled) and
//! closed. It is one of the sheep Shepherd makes itself: its display name carries its role and
//! the label of the sheep whose work it handles (`claude-resolver (resolver): fix-login`), and
//! its note goes into the session that work's note is in — the parent's one session for a
//! spawned sheep's branch — never a session of its own. Whatever it says, the queue then looks
//! for itself.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use shepherd_core::label::Role;
use shepherd_core::land::ResolverView;
use shepherd_core::protocol::{CloseParams, DelegateParams, SpawnParams};
use shepherd_core::spawn::CallerContext;
use tokio_util::sync::CancellationToken;

use crate::state::broker::Broker;

/// Beyond its task's timeout, how long the queue waits for a sheep's report.
const REPORT_MARGIN: Duration = Duration::from_secs(30);

/// A step to hand over, and where.
#[derive(Debug, Clone)]
pub(super) struct Handoff {
    /// Resolver or fixer.
    pub(super) role: Role,
    /// The agent definition whose sheep does it.
    pub(super) agent: String,
    /// Its task.
    pub(super) task: String,
    /// The label of the sheep whose work the branch is (empty: none).
    pub(super) label: String,
    /// The session directory that work's note is in.
    pub(super) session_dir: Option<String>,
    pub(super) worktree: PathBuf,
    pub(super) caller: Option<CallerContext>,
}

/// What became of the sheep: its view, why it never got to work when it did not, and whether
/// it was closed (its processes gone from the merge worktree).
pub(super) struct Handled {
    pub(super) role: Role,
    pub(super) view: ResolverView,
    pub(super) failure: Option<String>,
    pub(super) closed: bool,
}

impl Handled {
    /// Why its work is not taken, when it is not: it could not start, did not settle, gave up.
    pub(super) fn refusal(&self) -> Option<String> {
        if let Some(failure) = &self.failure {
            return Some(failure.clone());
        }
        if self.view.status.as_deref() == Some("completed") {
            return None;
        }
        Some(format!(
            "the {} ended {}{}",
            word(self.role),
            self.view.status.as_deref().unwrap_or("without settling"),
            self.view
                .summary
                .as_deref()
                .map(|s| format!(": {s}"))
                .unwrap_or_default()
        ))
    }
}

/// What a sheep of `role` is called in a report.
fn word(role: Role) -> &'static str {
    match role {
        Role::Fixer => "fixer",
        _ => "resolver",
    }
}

/// A resolver's task: the two sides, the files, the hunks and the check.
pub(super) fn resolver_task(
    branch: &str,
    target: &str,
    owner: Option<&str>,
    files: &[String],
    hunks: &str,
    check: Option<&str>,
) -> String {
    let whose = owner.map(|o| format!(" ({o}'s work)")).unwrap_or_default();
    let check = check
        .map(|check| format!("\n\nThen run the check, which must pass: `{check}`."))
        .unwrap_or_default();
    format!(
        "Resolve a merge conflict. This directory is a git repository at `{target}` in the middle of \
         merging `{branch}`{whose} into it, and the merge stopped with conflicts in: {files}.\n\n\
         Edit those files so that both sides' intent is kept (the `{target}` side is ours, \
         `{branch}` is theirs), remove every conflict marker, `git add` them and make the merge \
         commit with `git commit --no-edit`. Change nothing else and do not reset, rebase or \
         merge anything else: the queue lands only a merge of `{branch}` onto `{target}`.{check}\n\n\
         Call shepherd_done completed once the merge commit is made; if you cannot resolve it, \
         call shepherd_done blocked and say why.\n\n\
         The conflicting hunks:\n\n```diff\n{hunks}\n```",
        files = files.join(", "),
    )
}

/// A fixer's task: the check, how it failed and what it printed.
pub(super) fn fixer_task(
    branch: &str,
    target: &str,
    owner: Option<&str>,
    check: &str,
    status: &str,
    output: &str,
) -> String {
    let whose = owner.map(|o| format!(" ({o}'s work)")).unwrap_or_default();
    format!(
        "Make a failing check pass. This directory is a git repository at a merge of `{branch}`{whose} \
         into `{target}`, and the check `{check}` fails on it ({status}).\n\n\
         Find out why, change the files so the check passes (keeping what `{branch}` is for), and \
         run the check yourself. Leave your changes in the working tree, or amend the merge \
         commit (`git commit --amend --no-edit -a`): the queue folds them into the merge. Do not \
         reset, rebase or merge anything else: the queue lands only a merge of `{branch}` onto \
         `{target}` that holds it.\n\n\
         Call shepherd_done completed once the check passes; if you cannot fix it, call \
         shepherd_done blocked and say why.\n\n\
         The end of what the check printed:\n\n```\n{output}\n```"
    )
}

/// Spawns the sheep, hands it the step, waits for its task to settle (or `cancel`) and closes
/// it.
pub(super) async fn hand(
    broker: &Arc<Broker>,
    handoff: &Handoff,
    cancel: &CancellationToken,
    started: impl FnOnce(&ResolverView),
) -> Handled {
    let mut view = ResolverView::default();
    let role = handoff.role;
    let failed = |view: ResolverView, why: String| Handled {
        role,
        view,
        failure: Some(why),
        // Nothing was started, or its spawn failed and was cleaned up.
        closed: true,
    };
    let word = word(role);
    let spawn = SpawnParams {
        agent: handoff.agent.clone(),
        // The label of the work it handles, never one made up (seed 004).
        label: Some(handoff.label.clone()).filter(|l| !l.is_empty()),
        cwd: Some(handoff.worktree.display().to_string()),
        caller: handoff.caller.clone(),
        ..SpawnParams::default()
    };
    let spawned =
        match crate::handlers::spawn::spawn_as(broker, spawn, None, Some(handoff.role)).await {
            Ok(spawned) => spawned,
            Err(err) => {
                return failed(
                    view,
                    format!("the {word} could not be started: {}", err.message),
                );
            }
        };
    view.agent_id = spawned.agent_id.to_string();
    view.display_name = Some(spawned.display_name.clone());
    started(&view);
    let timeout_minutes = broker.config.settings().timeout_minutes;
    let delegate = DelegateParams {
        target: spawned.agent_id.to_string(),
        task: handoff.task.clone(),
        timeout: Some(timeout_minutes),
        ..DelegateParams::default()
    };
    let placed = crate::handlers::parent::RunNote {
        session_dir: handoff.session_dir.clone(),
        ..crate::handlers::parent::RunNote::default()
    };
    let delegated = crate::handlers::parent::delegate(broker, delegate, placed, None).await;
    let outcome = match delegated {
        Ok(delegated) => {
            view.task_id = Some(delegated.task_id.to_string());
            view.note = delegated.note_relative.clone();
            let budget = Duration::from_secs_f64(timeout_minutes * 60.0) + REPORT_MARGIN;
            tokio::select! {
                report = crate::run::step::settled(&broker.store, delegated.task_id.as_str(), budget) => {
                    match report {
                        Some(report) => {
                            view.status = Some(report.status.as_str().to_owned());
                            view.summary = report.summary.clone().or(report.error.clone());
                            None
                        }
                        None => Some(format!("the {word}'s task did not settle in time")),
                    }
                }
                () = cancel.cancelled() => Some("the merge was cancelled".to_owned()),
            }
        }
        Err(err) => Some(format!(
            "the step could not be handed over: {}",
            err.message
        )),
    };
    let closed = close(broker, &view.agent_id).await;
    Handled {
        role,
        view,
        failure: outcome,
        closed,
    }
}

/// Closes a resolver or fixer (one a broker before this one started, too); whether it is gone.
pub(super) async fn close(broker: &Arc<Broker>, agent_id: &str) -> bool {
    let close = CloseParams {
        id: agent_id.to_owned(),
        keep_pane: false,
    };
    match crate::handlers::close::close(broker, close).await {
        Ok(_) => true,
        Err(err) => {
            tracing::warn!("closing the merge's sheep {agent_id}: {err}");
            false
        }
    }
}
