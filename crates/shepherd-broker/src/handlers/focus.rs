//! `focus`: bring a visible sheep's pane to the front of the caller's terminal.
//!
//! A person watching the herd from a dashboard opens a sheep with one key; the broker, which
//! knows where each sheep runs, asks the sheep's backend to make its window (or tab) the current
//! one and, on tmux, to switch the caller's own client there when the caller sits in another
//! session of the same server. A headless sheep has nothing to bring forward: the caller reads
//! its output instead.

use shepherd_core::error_code::ErrorCode;
use std::sync::Arc;

use shepherd_core::protocol::{FocusParams, FocusResult};
use shepherd_term::BackendKind;

use crate::error::{BrokerError, BrokerResult};
use crate::state::broker::Broker;

/// Runs `focus`.
pub(crate) async fn focus(broker: &Arc<Broker>, params: FocusParams) -> BrokerResult<FocusResult> {
    let (id, display_name, kind) = broker.store.read(|herd| {
        let sheep = herd.sheep_by_text(&params.id)?;
        if !sheep.holds_resources() {
            return Err(BrokerError::new(
                ErrorCode::ClosedHandle,
                format!(
                    "{} ({}) is closed; it has no pane any more",
                    sheep.display_name(),
                    sheep.id
                ),
            ));
        }
        Ok((sheep.id.clone(), sheep.display_name(), sheep.backend))
    })?;
    if let Some(host) = crate::sheep::remote_sheep::host_of(&broker.store, &id) {
        return Err(BrokerError::new(
            ErrorCode::NoPane,
            format!(
                "{display_name} runs on host {host}: its {kind} window is there (attach to the \
                 host's {kind} to see it), or read its output from here"
            ),
        ));
    }
    let record = crate::sheep::launch_record::current_launch(&broker.store, &id);
    let pane = record.pane.clone().ok_or_else(|| {
        BrokerError::new(
            ErrorCode::NoPane,
            format!(
                "{display_name} runs {kind}: it has no window to show; read its output instead"
            ),
        )
    })?;
    let backend = broker.backend(kind)?;
    let viewer = viewer_pane(kind, &record.server, params.caller.as_ref());
    tokio::task::spawn_blocking(move || backend.focus(&record, viewer.as_deref()))
        .await
        .map_err(|err| BrokerError::new(ErrorCode::Internal, err.to_string()))?
        .map_err(|err| BrokerError::new(err.code(), err.to_string()))?;
    Ok(FocusResult {
        agent_id: id,
        display_name,
        backend: kind,
        pane,
    })
}

/// The caller's own pane, when it sits on the same terminal server as the sheep (a client of
/// another server cannot be switched to this one).
fn viewer_pane(
    kind: BackendKind,
    server: &Option<String>,
    caller: Option<&shepherd_core::protocol::CallerContext>,
) -> Option<String> {
    let caller = caller?;
    match kind {
        BackendKind::Tmux => {
            let socket = caller
                .tmux
                .as_deref()
                .and_then(shepherd_term::tmux::socket_from_tmux_env)?;
            let same = server
                .as_deref()
                .is_some_and(|server| std::path::Path::new(server) == socket);
            same.then(|| caller.tmux_pane.clone()).flatten()
        }
        BackendKind::Herdr => caller.herdr_pane.clone(),
        BackendKind::Headless => None,
    }
}
