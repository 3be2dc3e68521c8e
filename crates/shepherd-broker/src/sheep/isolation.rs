//! Isolated sheep (`spawn --isolate`): a sheep that runs in its own git worktree on its own
//! branch, as each task of `shepherd run --isolate` does, so it can write without touching the
//! checkout the parent (or another sheep) works in.
//!
//! The worktree is made from the repository's `HEAD` before the sheep is admitted (a refusal
//! leaves nothing behind) and recorded on the sheep, so a restarted broker and a resume know
//! it. When the sheep is closed (or is done with after failing to start), the worktree is
//! released: removed with its branch when it is clean with no new commits, otherwise kept, and
//! its patch — files, diffstat, commits, and how to integrate or discard it — goes into the
//! close's answer and into the note of the sheep's last task.

use shepherd_core::error_code::ErrorCode;
use std::path::Path;
use std::sync::Arc;

use shepherd_core::ids::AgentId;
use shepherd_core::worktree::{MadeWorktree, SheepWorktree, WorktreeReport};

use crate::error::{BrokerError, BrokerResult};
use crate::sheep::worktree::{self, Repo, Worktree};
use crate::state::broker::Broker;

/// Checks that a spawn's directory can be isolated, before anything is made.
pub(crate) fn probe(cwd: &Path) -> BrokerResult<Repo> {
    worktree::probe_for(cwd, "this spawn")
}

/// The worktree's name (and branch, under `shepherd/`) for a sheep: its agent, its label and
/// the end of its id, so two sheep never share one.
pub(crate) fn name_for(agent: &str, label: &str, id: &AgentId) -> String {
    let id = id.as_str();
    let tail = &id[id.len().saturating_sub(8)..];
    let agent = shepherd_core::slug::agent_slug(agent);
    let label = shepherd_core::slug::slugify(label, 24);
    if label.is_empty() {
        format!("{agent}-{tail}")
    } else {
        format!("{agent}-{label}-{tail}")
    }
}

/// Makes (or finds again, for a resume) the worktree at `path` (see [`worktree::path_for`]).
pub(crate) async fn create(repo: Repo, path: std::path::PathBuf) -> BrokerResult<Worktree> {
    tokio::task::spawn_blocking(move || worktree::create(&repo, path))
        .await
        .map_err(|err| BrokerError::new(ErrorCode::Internal, err.to_string()))?
        .map_err(|err| {
            BrokerError::new(
                ErrorCode::WorktreeFailed,
                format!("the sheep's worktree could not be made: {err}"),
            )
        })
}

/// Releases a closed sheep's worktree (once): removes it when clean, else keeps it with its
/// patch; records the outcome on the sheep and in the note of its last task. Returns the
/// report, or `None` when the sheep was not isolated (or was released already).
pub(crate) async fn release(
    broker: &Arc<Broker>,
    id: &AgentId,
    closed: bool,
) -> Option<WorktreeReport> {
    let record = broker
        .store
        .read(|herd| herd.sheep.get(id).and_then(|s| s.worktree.clone()))?;
    let report = match record {
        SheepWorktree {
            released: Some(_), ..
        } => return None,
        SheepWorktree {
            made: MadeWorktree::Remote { remote },
            ..
        } => crate::sheep::remote_sheep::code::release(broker, &remote).await,
        SheepWorktree {
            made: MadeWorktree::Here(made),
            ..
        } => WorktreeReport::Local(
            tokio::task::spawn_blocking({
                let owner = id.to_string();
                move || worktree::release(&made, closed, &owner)
            })
            .await
            .ok()?,
        ),
    };
    let committed = broker.store.commit(|tx| {
        shepherd_core::herd::worktree_released(tx, id, report.clone());
    });
    if let Err(err) = broker.store.durable(committed.pos).await {
        tracing::error!("recording the worktree of {id} failed: {err}");
    }
    let last_task = broker.store.read(|herd| {
        herd.tasks
            .values()
            .rev()
            .find(|t| &t.agent_id == id && t.note.is_some())
            .map(|t| (t.id.clone(), t.note.clone()))
    });
    if let Some((_, Some(note))) = &last_task
        && report.needs_integrating()
    {
        crate::sheep::notes::record_branch(
            broker,
            Path::new(&note.note),
            report.branch(),
            shepherd_core::land::BranchState::Open,
            None,
            None,
        )
        .await;
    }
    if let Some((task_id, _)) = last_task {
        let mut metadata = shepherd_notes::Metadata::new();
        metadata.insert(
            "worktree".into(),
            serde_json::to_value(&report).expect("worktree reports serialise"),
        );
        if let Err(err) = crate::sheep::notes::annotate_final(broker, &task_id, metadata).await {
            tracing::warn!("could not add the worktree report to the note of {task_id}: {err}");
        }
    }
    Some(report)
}
