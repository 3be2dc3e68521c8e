//! Herdr joins a broker on first use: when a caller inside Herdr spawns with `backend = auto`,
//! or anyone asks for `herdr`. Only an explicit choice may start a Herdr server (and only one
//! started by us is ever stopped). A Herdr that was connected but no longer answers is not
//! used: `auto` falls back as a fresh broker would, and an explicit choice connects afresh
//! (starting a server). The backend's event subscription then feeds the herd: agent states
//! Herdr recognises become the activity of sheep that do not report their own.

use shepherd_core::error_code::ErrorCode;
use std::ffi::OsString;
use std::sync::Arc;

use shepherd_core::herd::{Activity, Event};
use shepherd_core::protocol::CallerContext;
use shepherd_term::herdr::wire::AgentStatus;
use shepherd_term::herdr::{HerdrBackend, HerdrConfig, HerdrEnv, HerdrEvent, HerdrEvents};
use shepherd_term::{BackendKind, TermError};

use crate::error::{BrokerError, BrokerResult};
use crate::state::broker::Broker;

/// Makes sure a Herdr server answers for this broker, connecting the backend if needed.
/// `may_start` lets it start a Herdr server when none runs (the user chose Herdr explicitly).
pub(crate) async fn ensure(
    broker: &Arc<Broker>,
    caller: &CallerContext,
    may_start: bool,
) -> BrokerResult<()> {
    if let Ok(connected) = broker.backend(BackendKind::Herdr) {
        let check = connected.clone();
        let answer = tokio::task::spawn_blocking(move || check.available())
            .await
            .map_err(|err| BrokerError::new(ErrorCode::Internal, err.to_string()))?;
        match answer {
            Ok(()) => return Ok(()),
            Err(err) if !may_start => return Err(unavailable(&err)),
            // Chosen explicitly: connect again below, starting a server if none runs.
            Err(err) => {
                tracing::warn!("the connected Herdr no longer answers ({err}); reconnecting");
            }
        }
    }
    let mut vars: Vec<(OsString, OsString)> = std::env::vars_os().collect();
    // The caller's own Herdr wins over whatever the broker inherited when it started.
    if let Some(socket) = &caller.herdr_socket {
        vars.push(("HERDR_SOCKET_PATH".into(), socket.into()));
    }
    let mut config = HerdrConfig::new(HerdrEnv::from_vars(vars));
    if may_start {
        config = config.starting_server();
    }
    let backend = tokio::task::spawn_blocking(move || HerdrBackend::connect(config))
        .await
        .map_err(|err| BrokerError::new(ErrorCode::Internal, err.to_string()))?
        .map_err(|err| unavailable(&TermError::from(err)))?;
    if let Some(events) = backend.events() {
        tokio::spawn(consume(broker.clone(), events));
    }
    broker.add_backend(Arc::new(backend));
    Ok(())
}

fn unavailable(err: &TermError) -> BrokerError {
    BrokerError::new(err.code(), format!("Herdr is not available: {err}"))
}

async fn consume(broker: Arc<Broker>, mut events: HerdrEvents) {
    loop {
        let event = tokio::select! {
            () = broker.shutdown.cancelled() => return,
            event = events.recv() => event,
        };
        match event {
            None => return,
            Some(HerdrEvent::AgentStatus { pane, status, .. }) => {
                let activity = match status {
                    AgentStatus::Working => Activity::Working,
                    AgentStatus::Idle | AgentStatus::Done | AgentStatus::Blocked => Activity::Idle,
                    AgentStatus::Unknown => continue,
                };
                let sheep = broker.store.read(|herd| {
                    herd.sheep
                        .values()
                        .find(|s| {
                            !s.runtime.reports_runs()
                                && s.launch.as_ref().and_then(|l| l.pane.as_deref())
                                    == Some(pane.as_str())
                        })
                        .filter(|s| s.activity != activity)
                        .map(|s| s.id.clone())
                });
                if let Some(agent_id) = sheep {
                    broker.store.commit(|tx| {
                        let at = Some(tx.now());
                        tx.emit(Event::SheepActivity {
                            agent_id,
                            activity,
                            at,
                        });
                    });
                }
            }
            Some(HerdrEvent::PaneClosed { pane }) => {
                // The sheep's supervisor lived in that pane; its dropped connection ends the
                // sheep. Nothing else to do here.
                tracing::debug!("Herdr pane {pane} closed");
            }
            Some(HerdrEvent::Disconnected { reason }) => {
                tracing::warn!("Herdr events dropped: {reason}");
            }
            Some(HerdrEvent::PaneExited { .. } | HerdrEvent::Reconnected) => {}
        }
    }
}
