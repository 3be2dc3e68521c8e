//! Landing the herd's work: the merge queue (`merge.submit`, `merge.attach`, `merge.cancel`,
//! `merge.preview`).
//!
//! A merge takes branches Shepherd made (`select`), checked before anything is merged
//! (`plan`), and lands them one by one into a target branch (`queue`, `step`, with what both work with in `work`): each in a
//! worktree made for the purpose (`git`), by the strategy asked for, a check gating each step
//! (`check`, `gate`), a conflict stopping the queue or handed to a resolver sheep, a failing check
//! handed to a fixer sheep (`sheep`), every result verified in the project's repository before
//! the target moves (`verify`), and the target moved only from the commit the queue last saw.
//! One merge at a time lands into a target (`lanes`). `preview` tells what a merge would do
//! without doing it. Followers get its view pushed (`merge` events) at each change.
//!
//! A merge is herd state, journaled as it goes (`shepherd_core::herd::merge`): a broker that
//! dies mid-merge leaves a record the next broker resumes — it ends the check that was left
//! running, closes the resolver or fixer, removes the worktree, settles a move of the target
//! that was recorded, and lands the rest. `broker stop` and `merge.cancel` cancel it: its
//! check is killed, its sheep closed, and the target stays at its last verified landing.

mod check;
mod gate;
mod git;
mod lanes;
mod plan;
mod preview;
mod queue;
mod select;
mod sheep;
mod step;
mod verify;
mod work;

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use shepherd_core::error_code::ErrorCode;
use shepherd_core::herd::Merge;
use shepherd_core::land::preview::MergePreview;
use shepherd_core::land::{BranchLanding, MergeIdParams, MergeParams, MergeView};
use shepherd_core::protocol::event;
use tokio_util::sync::CancellationToken;

use crate::error::{BrokerError, BrokerResult};
use crate::state::broker::Broker;
use crate::state::session::Session;
use crate::state::work::MergeEntry;

/// How long `broker stop` waits for its cancelled merges to end.
const STOP_WAIT: Duration = Duration::from_secs(10);

/// Runs `merge.submit`: checks what to land, journals the merge, answers with it as it
/// starts, and lands it in the background, pushing each change to this connection. A resent
/// submission follows the merge its first copy made.
pub(crate) async fn submit(
    broker: &Arc<Broker>,
    session: &Arc<Session>,
    params: MergeParams,
    rid: Option<&str>,
) -> BrokerResult<MergeView> {
    if let Some(merge_id) = rid.and_then(|rid| {
        broker
            .store
            .read(|herd| herd.merge_by_request(rid).map(|m| m.id.clone()))
    }) {
        return attach(broker, session, &MergeIdParams { merge_id });
    }
    let plan = plan::plan(broker, &params).await?;
    let merge_id = format!("merge-{}", &uuid::Uuid::new_v4().simple().to_string()[..8]);
    let view = plan::view(&plan, &merge_id);
    let merge = Merge {
        id: merge_id.clone(),
        request_id: rid.map(str::to_owned),
        created_at: broker.store.now(),
        plan,
        view: view.clone(),
        tip: None,
        advancing: None,
    };
    broker
        .store
        .commit_durable(|tx| {
            shepherd_core::herd::merge::submit_merge(tx, merge);
            Ok(())
        })
        .await?;
    follow(broker, session, &merge_id);
    queue::start(broker, &merge_id);
    Ok(current(broker, &merge_id).unwrap_or(view))
}

/// Runs `merge.attach`: the merge now, and its changes pushed to this connection from now on.
pub(crate) fn attach(
    broker: &Arc<Broker>,
    session: &Arc<Session>,
    params: &MergeIdParams,
) -> BrokerResult<MergeView> {
    let view = current(broker, &params.merge_id).ok_or_else(|| unknown(&params.merge_id))?;
    if !view.finished {
        follow(broker, session, &params.merge_id);
    }
    Ok(view)
}

/// Runs `merge.cancel`: journals the cancel, kills the check, and lets the queue end (its
/// resolver or fixer closed, its worktree removed, the target at its last verified landing).
/// The answer is the merge as it is then; the end is pushed to its followers.
pub(crate) async fn cancel(
    broker: &Arc<Broker>,
    session: &Arc<Session>,
    params: &MergeIdParams,
) -> BrokerResult<MergeView> {
    let view = current(broker, &params.merge_id).ok_or_else(|| unknown(&params.merge_id))?;
    if view.finished {
        return Ok(view);
    }
    cancel_one(broker, &params.merge_id, "cancelled by its caller").await?;
    follow(broker, session, &params.merge_id);
    Ok(current(broker, &params.merge_id).unwrap_or(view))
}

/// Runs `merge.preview`: what a merge would land, and what would conflict, changing nothing.
pub(crate) async fn preview(
    broker: &Arc<Broker>,
    params: MergeParams,
) -> BrokerResult<MergePreview> {
    let plan = plan::plan(broker, &params).await?;
    let patch = params.patch;
    let landed = broker.store.read(|herd| {
        plan.candidates
            .iter()
            .map(|c| herd.landed_into(&plan.target, &c.branch).cloned())
            .collect::<Vec<_>>()
    });
    let previewed = tokio::task::spawn_blocking(move || preview::preview(&plan, &landed, patch))
        .await
        .map_err(|err| BrokerError::new(ErrorCode::Internal, err.to_string()))?
        .map_err(|err| BrokerError::new(ErrorCode::WorktreeFailed, err.to_string()))?;
    Ok(previewed)
}

/// Resumes every merge a broker before this one left unfinished, in the order they were
/// submitted (after a restart).
pub(crate) fn resume(broker: &Arc<Broker>) {
    let open: Vec<String> = broker.store.read(|herd| {
        herd.merges
            .values()
            .filter(|m| !m.is_finished())
            .map(|m| m.id.clone())
            .collect()
    });
    for merge_id in open {
        cancel_token(broker, &merge_id);
        queue::start(broker, &merge_id);
    }
}

/// Cancels every merge under way (`broker stop`), and waits a while for them to end.
pub(crate) async fn stop_all(broker: &Arc<Broker>) {
    let open: Vec<String> = broker.store.read(|herd| {
        herd.merges
            .values()
            .filter(|m| !m.is_finished())
            .map(|m| m.id.clone())
            .collect()
    });
    if open.is_empty() {
        return;
    }
    for merge_id in &open {
        if let Err(err) = cancel_one(broker, merge_id, "the broker was stopped").await {
            tracing::warn!("cancelling {merge_id}: {err}");
        }
    }
    let deadline = tokio::time::Instant::now() + STOP_WAIT;
    let mut generation = broker.store.generation.subscribe();
    loop {
        generation.borrow_and_update();
        if !broker
            .store
            .read(shepherd_core::herd::Herd::has_open_merges)
        {
            return;
        }
        tokio::select! {
            changed = generation.changed() => if changed.is_err() { return },
            () = tokio::time::sleep_until(deadline) => {
                tracing::warn!("merges still ending after {STOP_WAIT:?}; the next broker finishes them");
                return;
            }
        }
    }
}

async fn cancel_one(broker: &Arc<Broker>, merge_id: &str, reason: &str) -> BrokerResult<()> {
    broker
        .store
        .commit_durable(|tx| {
            shepherd_core::herd::merge::cancel_merge(tx, merge_id, reason);
            Ok(())
        })
        .await?;
    let token = cancel_token(broker, merge_id);
    token.cancel();
    let pgid = broker
        .work
        .lock()
        .expect("work lock")
        .merges
        .get(merge_id)
        .map_or(0, |e| e.check);
    if pgid != 0 {
        check::kill(pgid);
    }
    // A merge nobody drives (its broker died before it started) ends now.
    queue::start(broker, merge_id);
    Ok(())
}

fn unknown(merge_id: &str) -> BrokerError {
    BrokerError::new(
        ErrorCode::UnknownMerge,
        format!("no merge `{merge_id}` in this herd (finished merges are kept for a while)"),
    )
}

fn to_value<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).expect("merge views serialise")
}

/// The merge's live entry, made from its record when there is none yet (after a restart).
fn with_entry<T>(
    broker: &Broker,
    merge_id: &str,
    f: impl FnOnce(&mut MergeEntry) -> T,
) -> Option<T> {
    let recorded = broker
        .store
        .read(|herd| herd.merges.get(merge_id).map(|m| m.view.clone()))?;
    let mut work = broker.work.lock().expect("work lock");
    let entry = work
        .merges
        .entry(merge_id.to_owned())
        .or_insert_with(|| MergeEntry {
            view: recorded,
            followers: Vec::new(),
            cancel: CancellationToken::new(),
            check: 0,
            driving: false,
        });
    Some(f(entry))
}

/// The token that cancels the merge's work.
pub(super) fn cancel_token(broker: &Broker, merge_id: &str) -> CancellationToken {
    with_entry(broker, merge_id, |e| e.cancel.clone()).unwrap_or_default()
}

/// The merge as its followers see it: its record, with the branch being worked on and the
/// merge it waits for as they are now.
fn current(broker: &Broker, merge_id: &str) -> Option<MergeView> {
    let recorded = broker
        .store
        .read(|herd| herd.merges.get(merge_id).map(|m| m.view.clone()))?;
    let work = broker.work.lock().expect("work lock");
    let Some(entry) = work.merges.get(merge_id) else {
        return Some(recorded);
    };
    if recorded.finished {
        return Some(recorded);
    }
    let mut view = recorded;
    view.waiting_for.clone_from(&entry.view.waiting_for);
    for (now, live) in view.branches.iter_mut().zip(&entry.view.branches) {
        if !now.state.is_settled() && !live.state.is_settled() {
            now.clone_from(live);
        }
    }
    Some(view)
}

fn follow(broker: &Broker, session: &Arc<Session>, merge_id: &str) {
    with_entry(broker, merge_id, |entry| {
        if !entry.followers.iter().any(|f| Arc::ptr_eq(f, session)) {
            entry.followers.push(session.clone());
        }
    });
}

/// Pushes the merge to everyone following it, with branch `index` shown as `live` (a step in
/// progress) or as recorded.
pub(super) fn publish_branch(
    broker: &Broker,
    merge_id: &str,
    index: usize,
    live: Option<&BranchLanding>,
) {
    let recorded = broker.store.read(|herd| {
        herd.merges
            .get(merge_id)
            .and_then(|m| m.view.branches.get(index).cloned())
    });
    with_entry(broker, merge_id, |entry| {
        if let Some(slot) = entry.view.branches.get_mut(index) {
            match (live, recorded) {
                (Some(live), _) => slot.clone_from(live),
                (None, Some(recorded)) => *slot = recorded,
                (None, None) => {}
            }
        }
    });
    push(broker, merge_id);
}

/// Shows which merge this one waits for in its lane (none: its turn came).
pub(super) fn set_waiting(broker: &Broker, merge_id: &str, waiting: Option<String>) {
    with_entry(broker, merge_id, |entry| entry.view.waiting_for = waiting);
    push(broker, merge_id);
}

/// Records the process group of the merge's running check (0: none runs); a check that
/// starts after its merge was cancelled is killed at once.
pub(super) fn check_started(broker: &Broker, merge_id: &str, pgid: u32) {
    let cancelled = with_entry(broker, merge_id, |entry| {
        entry.check = pgid;
        entry.cancel.is_cancelled()
    });
    if cancelled == Some(true) && pgid != 0 {
        check::kill(pgid);
    }
}

/// The merge is over: its followers get the final view.
pub(super) fn finished(broker: &Broker, merge_id: &str) {
    with_entry(broker, merge_id, |entry| {
        entry.driving = false;
        entry.check = 0;
    });
    push(broker, merge_id);
}

fn push(broker: &Broker, merge_id: &str) {
    let Some(view) = current(broker, merge_id) else {
        return;
    };
    let followers = {
        let mut work = broker.work.lock().expect("work lock");
        let Some(entry) = work.merges.get_mut(merge_id) else {
            return;
        };
        entry.followers.retain(|f| !f.closed.is_cancelled());
        entry.followers.clone()
    };
    let data = to_value(&view);
    for follower in followers {
        follower.push(event::MERGE, data.clone());
    }
}
