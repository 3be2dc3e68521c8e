//! `close` and `prune`: ending sheep and forgetting the ones that are gone.
//!
//! A close cancels the sheep's open task (rc 130) first, so the outcome is fixed before any
//! process is touched; then the supervisor is asked to end the sheep's process group, and the
//! backend confirms that every process (and the pane) is gone within a bounded wait. Only then
//! is the sheep recorded closed, and an isolated sheep's worktree released (`isolation`).

use shepherd_core::error_code::ErrorCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use shepherd_core::herd::Phase;
use shepherd_core::ids::AgentId;
use shepherd_core::protocol::{CloseParams, CloseResult, PruneResult};
use shepherd_term::{BackendKind, Presence};
use tokio::sync::oneshot;

use crate::error::{BrokerError, BrokerResult};
use crate::state::broker::Broker;
use crate::state::store::Store;

/// How long a sheep gets to end after being asked.
const TERMINATE_GRACE: Duration = Duration::from_secs(3);
/// The whole budget for confirming that a closed sheep is gone.
const CLOSE_BUDGET: Duration = Duration::from_secs(10);

/// Runs `close`. Closing a sheep that is closed already is a no-op that says so, on every
/// backend.
pub(crate) async fn close(broker: &Arc<Broker>, params: CloseParams) -> BrokerResult<CloseResult> {
    let closed = broker.store.read(|herd| {
        herd.sheep_by_text(&params.id).map(|s| {
            (s.phase == Phase::Closed).then(|| {
                let released = s.worktree.as_ref().and_then(|w| w.released.clone());
                (s.id.clone(), s.display_name(), released)
            })
        })
    })?;
    if let Some((agent_id, display_name, worktree)) = closed {
        return Ok(CloseResult {
            agent_id,
            display_name,
            cancelled: None,
            worktree,
        });
    }
    let last_task = broker.store.read(|herd| {
        let id = herd.sheep_by_text(&params.id).ok()?.id.clone();
        herd.tasks
            .values()
            .rev()
            .find(|t| t.agent_id == id)
            .map(|t| t.id.clone())
    });
    if let Some(task) = &last_task {
        // Nothing reads or ends a pi sheep while it can still be writing its last words.
        crate::sheep::pi::await_output(&broker.store, task, crate::sheep::pi::OUTPUT_GRACE).await;
    }
    let (id, display, active) = broker.store.read(|herd| {
        herd.sheep_by_text(&params.id)
            .map(|s| (s.id.clone(), s.display_name(), s.active_task.clone()))
    })?;
    broker
        .store
        .commit_durable(|tx| Ok(shepherd_core::herd::begin_close(tx, &id)))
        .await?;
    end_sheep(broker, &id, params.keep_pane).await.map_err(|err| {
        BrokerError::new(
            ErrorCode::CloseUnconfirmed,
            format!(
                "Close requested for {display}, but termination could not be confirmed ({err}). \
                 Retry close with agent id {id}."
            ),
        )
    })?;
    broker
        .store
        .commit_durable(|tx| {
            shepherd_core::herd::closed(tx, &id);
            Ok(())
        })
        .await?;
    let cancelled = active.and_then(|task| broker.store.read(|herd| herd.task_report(&task)));
    let worktree = crate::sheep::isolation::release(broker, &id, true).await;
    // A sheep that took a task over from this one (its fallback) belongs to it.
    for taken_over in taken_over_from(&broker.store, &id) {
        let params = CloseParams {
            id: taken_over.to_string(),
            keep_pane: params.keep_pane,
        };
        if let Err(err) = Box::pin(close(broker, params)).await {
            tracing::warn!("could not close {taken_over}, the fallback of {id}: {err}");
        }
    }
    Ok(CloseResult {
        agent_id: id,
        display_name: display,
        cancelled,
        worktree,
    })
}

/// The live sheep that took tasks over from `agent_id` (its fallbacks).
fn taken_over_from(store: &Store, agent_id: &AgentId) -> Vec<AgentId> {
    store.read(|herd| {
        herd.tasks
            .values()
            .filter(|t| {
                t.fell_back_from
                    .as_ref()
                    .is_some_and(|first| &first.agent_id == agent_id)
            })
            .map(|t| t.agent_id.clone())
            .filter(|id| {
                herd.sheep
                    .get(id)
                    .is_some_and(shepherd_core::herd::Sheep::is_live)
            })
            .collect()
    })
}

/// Why a sheep's end could not be confirmed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum EndError {
    /// The herd has no such sheep, so nothing says where it runs.
    #[error("no sheep `{0}` in this herd")]
    UnknownSheep(AgentId),
    /// The sheep's backend is not available in this broker.
    #[error("{}", .0.message)]
    Backend(BrokerError),
    /// The record of panes Shepherd created could not be read or written.
    #[error(transparent)]
    Registry(#[from] shepherd_term::registry::RegistryError),
    /// The pane is not one Shepherd created for this herd, so it is not closed.
    #[error("refusing to close pane {0}: Shepherd did not create it for this herd")]
    ForeignPane(String),
    /// The backend could not confirm the processes and pane are gone.
    #[error(transparent)]
    Close(#[from] shepherd_term::TermError),
    /// The close task itself failed.
    #[error(transparent)]
    Join(#[from] tokio::task::JoinError),
}

/// Ends a sheep's processes and confirms they are gone: asks its supervisor first, then lets
/// the backend make sure. A pane is closed only if Shepherd created it for this herd.
pub(crate) async fn end_sheep(
    broker: &Arc<Broker>,
    id: &AgentId,
    keep_pane: bool,
) -> Result<(), EndError> {
    let (exited_tx, exited_rx) = oneshot::channel();
    broker
        .links
        .lock()
        .expect("links lock")
        .exit_waiters
        .entry(id.clone())
        .or_default()
        .push(exited_tx);
    let grace_ms = u64::try_from(TERMINATE_GRACE.as_millis()).unwrap_or(u64::MAX);
    if crate::sheep::supervisor_link::request_terminate(&broker.links, id, grace_ms) {
        let _exited =
            tokio::time::timeout(TERMINATE_GRACE + Duration::from_secs(2), exited_rx).await;
    }
    let record = crate::sheep::launch_record::current_launch(&broker.store, id);
    let kind = broker
        .store
        .read(|herd| herd.sheep.get(id).map(|s| s.backend))
        .ok_or_else(|| EndError::UnknownSheep(id.clone()))?;
    let backend =
        crate::sheep::remote_sheep::backend_of(broker, id, kind).map_err(EndError::Backend)?;
    // A remote sheep's pane is its host's: the host checks who made it.
    let local = crate::sheep::remote_sheep::host_of(&broker.store, id).is_none();
    if let Some(pane) = record.pane.as_ref().filter(|_| local) {
        let identity = &broker.config.address.identity;
        let project = broker.config.address.project_root.display().to_string();
        let entry = broker.registry().find(kind, pane)?;
        if !entry.is_some_and(|entry| entry.owned_by(identity, &project)) {
            return Err(EndError::ForeignPane(pane.clone()));
        }
    }
    let closing = record.clone();
    tokio::task::spawn_blocking(move || {
        backend.close(&closing, keep_pane, Instant::now() + CLOSE_BUDGET)
    })
    .await??;
    if let Some(pane) = record.pane.as_deref().filter(|_| !keep_pane && local) {
        broker.registry().unregister(kind, pane)?;
    }
    Ok(())
}

/// Runs `prune`: sheep whose processes (and panes) are confirmed gone and that can do nothing
/// more (exited or failed to start) are recorded closed; then this herd's registered panes that
/// are gone are forgotten. Anything whose presence is unknown is kept.
pub(crate) async fn prune(broker: &Arc<Broker>) -> BrokerResult<PruneResult> {
    let candidates: Vec<(AgentId, BackendKind)> = broker.store.read(|herd| {
        herd.sheep
            .values()
            .filter(|s| matches!(s.phase, Phase::Exited | Phase::Failed))
            .map(|s| (s.id.clone(), s.backend))
            .collect()
    });
    let mut pruned = 0;
    for (id, kind) in candidates {
        let record = crate::sheep::launch_record::current_launch(&broker.store, &id);
        let Ok(backend) = crate::sheep::remote_sheep::backend_of(broker, &id, kind) else {
            continue;
        };
        let probe = record.clone();
        let presence = tokio::task::spawn_blocking(move || backend.presence(&probe))
            .await
            .unwrap_or(Presence::Unknown);
        if presence != Presence::Gone {
            continue;
        }
        broker
            .store
            .commit_durable(|tx| {
                shepherd_core::herd::closed(tx, &id);
                Ok(())
            })
            .await?;
        crate::sheep::isolation::release(broker, &id, true).await;
        if let Some(pane) = &record.pane {
            broker
                .registry()
                .unregister(kind, pane)
                .map_err(|err| BrokerError::new(ErrorCode::Registry, err.to_string()))?;
        }
        pruned += 1;
    }
    pruned += prune_registry(broker).await?;
    let remaining = broker.store.read(|herd| {
        herd.sheep
            .values()
            .filter(|s| s.phase != Phase::Closed)
            .count()
    });
    Ok(PruneResult { pruned, remaining })
}

/// Forgets this herd's registered panes that are gone (panes kept open for inspection that
/// someone closed by hand, or panes of sheep closed before).
async fn prune_registry(broker: &Arc<Broker>) -> BrokerResult<usize> {
    let broker = broker.clone();
    let identity = broker.config.address.identity.clone();
    let project = broker.config.address.project_root.display().to_string();
    let (gone, _remaining) = tokio::task::spawn_blocking(move || {
        broker.registry().prune(
            |entry| entry.owned_by(&identity, &project),
            |entry| {
                let record = shepherd_term::LaunchRecord {
                    pane: Some(entry.pane_id.clone()),
                    server: entry.server.clone(),
                    ..shepherd_term::LaunchRecord::default()
                };
                broker
                    .backend(entry.backend())
                    .map_or(Presence::Unknown, |backend| backend.presence(&record))
            },
        )
    })
    .await
    .map_err(|err| BrokerError::new(ErrorCode::Internal, err.to_string()))?
    .map_err(|err| BrokerError::new(ErrorCode::Registry, err.to_string()))?;
    Ok(gone.len())
}
