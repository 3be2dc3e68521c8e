//! The broker's requests about itself: `broker.status` (what it serves, since when, for how
//! many) and `broker.stop` (cancel every run and close every sheep; the server then stops the
//! broker, and `serve` does the same on a signal or when the project is gone). They are
//! handlers like any other, routed by `dispatch`, and kept out of `serve`, which starts the
//! broker and so sits above the dispatcher.

use std::sync::Arc;

use shepherd_core::herd::Phase;
use shepherd_core::protocol::{BrokerStatus, StopResult};

use crate::error::BrokerResult;
use crate::state::broker::Broker;

/// `broker.status`.
pub(crate) fn status(broker: &Arc<Broker>) -> BrokerStatus {
    let (live_sheep, open_tasks) = broker.store.read(|herd| {
        (
            herd.sheep
                .values()
                .filter(|s| crate::sheep::supervisor_link::may_be_running(&s.phase))
                .count(),
            herd.tasks
                .values()
                .filter(|t| !t.state.is_terminal())
                .count(),
        )
    });
    BrokerStatus {
        broker_id: broker.config.address.key.clone(),
        parent_identity: broker.config.address.identity.clone(),
        project_root: broker.config.address.project_root.display().to_string(),
        pid: std::process::id(),
        socket: broker.config.paths.socket.display().to_string(),
        journal: broker.store.journal.path().display().to_string(),
        started_at: broker.started_at,
        // The connection asking is not one of the clients it asks about.
        clients: broker.connections.clients().saturating_sub(1),
        live_sheep,
        open_tasks,
        parents: broker.connections.distinct_parents(),
        notes_written: broker.fieldnotes().notes_written(),
        links: host_links(broker),
    }
}

/// Each host link this broker keeps and where it stands, by host name.
fn host_links(broker: &Broker) -> Vec<shepherd_core::protocol::HostLinkStatus> {
    let now = broker.store.now();
    let links = broker.remotes.links.lock().expect("links lock");
    let mut shown: Vec<_> = links
        .iter()
        .map(|(host, link)| match link.state() {
            crate::remote::link::LinkState::Up(_) => shepherd_core::protocol::HostLinkStatus {
                host: host.clone(),
                up: true,
                down_since: None,
                error: None,
            },
            crate::remote::link::LinkState::Down { since, error, .. } => {
                shepherd_core::protocol::HostLinkStatus {
                    host: host.clone(),
                    up: false,
                    down_since: since.map(|since| {
                        let down_ms =
                            i64::try_from(since.elapsed().as_millis()).unwrap_or(i64::MAX);
                        now.saturating_sub(down_ms)
                    }),
                    error,
                }
            }
        })
        .collect();
    shown.sort_by(|a, b| a.host.cmp(&b.host));
    shown
}

/// `broker.stop`, once its merges are cancelled (`land::stop_all`, which the caller runs
/// first): cancels every run and closes every sheep. The server stops the broker once this
/// answer is written (a run's report is written by the next broker, which finishes the
/// cancelled run).
pub(crate) async fn stop(broker: &Arc<Broker>) -> BrokerResult<StopResult> {
    let open: Vec<String> = broker.store.read(|herd| {
        herd.runs
            .values()
            .filter(|run| !run.is_finished())
            .map(|run| run.id.clone())
            .collect()
    });
    broker
        .store
        .commit_durable(|tx| {
            for run_id in &open {
                shepherd_core::herd::cancel_run(tx, run_id, "the broker was stopped");
            }
            Ok(())
        })
        .await?;
    let live: Vec<_> = broker.store.read(|herd| {
        herd.sheep
            .values()
            .filter(|s| !matches!(s.phase, Phase::Closed))
            .map(|s| s.id.to_string())
            .collect()
    });
    let mut closes = tokio::task::JoinSet::new();
    for id in live {
        let broker = broker.clone();
        closes.spawn(async move {
            crate::handlers::close::close(
                &broker,
                shepherd_core::protocol::CloseParams {
                    id,
                    keep_pane: false,
                },
            )
            .await
        });
    }
    let mut closed = 0;
    let mut failed = Vec::new();
    while let Some(result) = closes.join_next().await {
        match result {
            Ok(Ok(_)) => closed += 1,
            Ok(Err(err)) => failed.push(err.message),
            Err(err) => failed.push(err.to_string()),
        }
    }
    Ok(StopResult {
        stopping: true,
        closed,
        failed,
    })
}
