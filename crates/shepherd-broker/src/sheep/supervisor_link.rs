//! The broker's line to each sheep's supervisor: the push channel a supervisor connection
//! registers when it says `hello`, the `terminate` pushed down it on close, and whether a
//! sheep's supervisor is connected at all. The supervisor's own requests are handled in
//! `supervisor`; closing (`close`) and re-adoption (`recovery`) only need this line, so it is
//! kept apart from those handlers.

use shepherd_core::herd::Phase;
use shepherd_core::protocol::{TerminateData, event};

use std::sync::Mutex;

use crate::state::broker::{Broker, Links};
use crate::state::session::{Session, to_value};

/// Registers a supervisor connection's push channel.
pub(crate) fn attach(links: &Mutex<Links>, session: &Session) {
    if let Some(id) = &session.agent_id {
        let mut links = links.lock().expect("links lock");
        links.supervisors.insert(id.clone(), session.out.clone());
        links.exit_reported.remove(id);
    }
}

/// Asks a sheep's supervisor to end it. Returns false when no supervisor is connected.
pub(crate) fn request_terminate(
    links: &Mutex<Links>,
    id: &shepherd_core::ids::AgentId,
    grace_ms: u64,
) -> bool {
    let links = links.lock().expect("links lock");
    let Some(out) = links.supervisors.get(id) else {
        return false;
    };
    let line = serde_json::to_string(&shepherd_core::protocol::ServerLine::Push {
        event: event::TERMINATE.to_owned(),
        data: to_value(TerminateData { grace_ms }),
    })
    .expect("pushes serialise");
    out.send(line).is_ok()
}

/// Whether the sheep's supervisor is connected.
pub(crate) fn is_attached(broker: &Broker, id: &shepherd_core::ids::AgentId) -> bool {
    broker
        .links
        .lock()
        .expect("links lock")
        .supervisors
        .contains_key(id)
}

/// Whether a sheep is still one whose processes may be running.
pub(crate) fn may_be_running(phase: &Phase) -> bool {
    matches!(phase, Phase::Starting | Phase::Ready | Phase::Closing)
}
