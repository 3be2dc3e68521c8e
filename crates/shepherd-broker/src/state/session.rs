//! Who a connection speaks for, as every handler sees it, and how a handler answers.
//!
//! A [`Session`] is fixed by the connection's `hello` (`server`) and handed to each request's
//! handler (`dispatch`); handlers check the caller with it, push to its connection, and answer
//! with [`to_value`] or refuse with [`forbidden`]. It lives apart from the server so that the
//! handlers, and the broker's runtime links that hold sessions (a run's followers), need not
//! depend on the connection loop that calls them.

use shepherd_core::error_code::ErrorCode;
use std::sync::Arc;

use serde_json::Value;
use shepherd_core::ids::{AgentId, Participant};
use shepherd_core::protocol::{Role, ServerLine};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::error::{BrokerError, BrokerResult};

/// Who a connection speaks for, fixed by its `hello`.
#[derive(Debug, Clone)]
pub(crate) struct Session {
    /// The granted role.
    pub(crate) role: Role,
    /// The sheep a sheep or supervisor connection speaks for.
    pub(crate) agent_id: Option<AgentId>,
    /// Writes lines to this connection.
    pub(crate) out: mpsc::UnboundedSender<String>,
    /// Cancelled when the connection closes.
    pub(crate) closed: CancellationToken,
    /// Whether this connection already follows the herd (`herd.subscribe` runs one feed).
    pub(crate) follows_herd: Arc<std::sync::atomic::AtomicBool>,
    /// The connecting process, as the kernel reports it (none through the remote socket,
    /// where it would be the local `ssh`).
    pub(crate) peer_pid: Option<u32>,
    /// Whether it came through the remote socket, from a host.
    pub(crate) remote: bool,
}

impl Session {
    /// The participant this connection acts as in messages and inboxes.
    pub(crate) fn participant(&self) -> Option<Participant> {
        match (self.role, &self.agent_id) {
            (Role::Parent, _) => Some(Participant::Parent),
            (Role::Sheep, Some(id)) => Some(Participant::Sheep(id.clone())),
            _ => None,
        }
    }

    /// The sheep this connection speaks for, or a refusal.
    pub(crate) fn sheep(&self) -> BrokerResult<&AgentId> {
        match (self.role, &self.agent_id) {
            (Role::Sheep, Some(id)) => Ok(id),
            _ => Err(forbidden("only a sheep can do this")),
        }
    }

    /// Pushes an event to this connection.
    pub(crate) fn push(&self, event: &str, data: Value) {
        let line = serde_json::to_string(&ServerLine::Push {
            event: event.to_owned(),
            data,
        })
        .expect("pushes serialise");
        let _closed = self.out.send(line);
    }
}

/// A refusal for a caller whose role does not allow the request.
pub(crate) fn forbidden(message: &str) -> BrokerError {
    BrokerError::new(ErrorCode::Forbidden, message)
}

/// A result as the JSON it is sent as.
pub(crate) fn to_value(result: impl serde::Serialize) -> Value {
    serde_json::to_value(result).expect("results serialise")
}
