//! Landing the herd's work: the merge queue (`merge.submit`, `merge.attach`).
//!
//! A merge takes branches Shepherd made (`select`) and lands them one by one into a target
//! branch (`queue`): each in a worktree made for the purpose (`git`), a check gating each step,
//! a conflict stopping the queue or handed to a resolver sheep (`resolver`), the target moved
//! only from the commit the queue last saw. It sits above the run engine and the handlers,
//! which it drives. Followers get its view pushed (`merge` events) at each step, as a run's
//! are.
//!
//! A merge is runtime state, not journaled: a broker that dies mid-merge leaves the target at
//! its last landed step (never a half-made one: the target moves only after a step's merge and
//! check both succeeded), and landing again picks up from there (a branch the target already
//! holds counts as merged).

mod git;
mod queue;
mod resolver;
mod select;

use std::sync::Arc;

use serde_json::Value;
use shepherd_core::error_code::ErrorCode;
use shepherd_core::land::{MergeIdParams, MergeParams, MergeView};
use shepherd_core::protocol::event;

use crate::error::{BrokerError, BrokerResult};
use crate::state::broker::{Broker, MergeEntry};
use crate::state::session::Session;

/// Runs `merge.submit`: checks what to land, answers with the queue as it starts, and lands
/// it in the background, pushing each change to this connection.
pub(crate) async fn submit(
    broker: &Arc<Broker>,
    session: &Arc<Session>,
    params: MergeParams,
) -> BrokerResult<Value> {
    let planned = queue::plan(broker, &params).await?;
    let merge_id = format!("merge-{}", &uuid::Uuid::new_v4().simple().to_string()[..8]);
    let view = planned.view(&merge_id);
    broker.links.lock().expect("links lock").merges.insert(
        merge_id.clone(),
        MergeEntry {
            view: view.clone(),
            followers: vec![session.clone()],
        },
    );
    let driven = broker.clone();
    tokio::spawn(async move { queue::drive(&driven, &merge_id, planned, params).await });
    Ok(serde_json::to_value(view).expect("merge views serialise"))
}

/// Runs `merge.attach`: the merge now, and its changes pushed to this connection from now on.
pub(crate) fn attach(
    broker: &Arc<Broker>,
    session: &Arc<Session>,
    params: &MergeIdParams,
) -> BrokerResult<Value> {
    let mut links = broker.links.lock().expect("links lock");
    let entry = links.merges.get_mut(&params.merge_id).ok_or_else(|| {
        BrokerError::new(
            ErrorCode::UnknownMerge,
            format!(
                "no merge `{}` in this herd (merges are kept only while its broker runs)",
                params.merge_id
            ),
        )
    })?;
    if !entry.followers.iter().any(|f| Arc::ptr_eq(f, session)) {
        entry.followers.push(session.clone());
    }
    Ok(serde_json::to_value(&entry.view).expect("merge views serialise"))
}

/// Records the merge's new view and pushes it to everyone following it.
pub(super) fn publish(broker: &Broker, view: &MergeView) {
    let followers = {
        let mut links = broker.links.lock().expect("links lock");
        let Some(entry) = links.merges.get_mut(&view.merge_id) else {
            return;
        };
        entry.view = view.clone();
        entry.followers.retain(|f| !f.closed.is_cancelled());
        entry.followers.clone()
    };
    let data = serde_json::to_value(view).expect("merge views serialise");
    for follower in followers {
        follower.push(event::MERGE, data.clone());
    }
}
