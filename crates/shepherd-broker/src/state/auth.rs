//! Who may connect as what.
//!
//! A sheep proves itself with the capability token handed to it in its environment; only a
//! digest of the token is kept. A connection asking to be the parent is refused when it comes
//! from inside one of this herd's own sheep (its process descends from a sheep's supervisor or
//! program): a sheep may start a herd of its own, but never act as its own parent.

use shepherd_core::error_code::ErrorCode;
use std::sync::Arc;

use sha2::{Digest, Sha256};
use shepherd_core::herd::Phase;
use shepherd_core::ids::AgentId;
use shepherd_core::protocol::Hello;
use shepherd_term::LaunchRecord;

use crate::error::{BrokerError, BrokerResult};
use crate::state::broker::Broker;

/// sha256 (hex) of a token.
pub(crate) fn digest(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// A new random capability token.
pub(crate) fn new_token() -> String {
    format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    )
}

/// Hands a supervisor its credential: a private file it reads and deletes before it starts the
/// sheep, so the credential is never in the sheep's environment, command line or reach.
pub(crate) fn write_credential(
    broker: &Broker,
    id: &AgentId,
    token: &str,
) -> BrokerResult<std::path::PathBuf> {
    let dir = broker.config.paths.runtime_dir.join("cred");
    let path = dir.join(format!("{id}.{}", uuid::Uuid::new_v4().simple()));
    crate::paths::ensure_private_dir(&dir)
        .and_then(|()| shepherd_fs::write_atomic(&path, token.as_bytes(), Some(0o600)))
        .map_err(|err| {
            BrokerError::new(
                ErrorCode::SpawnFailed,
                format!(
                    "cannot write the supervisor's credential {}: {err}",
                    path.display()
                ),
            )
        })?;
    Ok(path)
}

/// Checks a sheep or supervisor hello: the agent must be this herd's and the token its own — a
/// sheep's capability for a sheep, the supervisor's own credential for a supervisor (a sheep
/// can never claim to be its own supervisor).
pub(crate) fn check_token(broker: &Arc<Broker>, hello: &Hello) -> BrokerResult<AgentId> {
    let text = hello.agent_id.as_deref().unwrap_or_default();
    let unauthenticated = || {
        BrokerError::new(
            ErrorCode::Unauthenticated,
            format!(
                "no sheep `{text}` with that token in this herd; a sheep connects with the \
                 SHEPHERD_AGENT_ID and SHEPHERD_TOKEN it was started with"
            ),
        )
    };
    let token = hello.token.as_deref().ok_or_else(unauthenticated)?;
    let id = AgentId::parse(text).ok_or_else(unauthenticated)?;
    broker.read(|herd| {
        let sheep = herd.sheep.get(&id).ok_or_else(unauthenticated)?;
        let expected = match hello.role {
            shepherd_core::protocol::Role::Supervisor => sheep
                .supervisor_digest
                .as_ref()
                .unwrap_or(&sheep.token_digest),
            _ => &sheep.token_digest,
        };
        if *expected != digest(token) {
            return Err(unauthenticated());
        }
        if sheep.phase == Phase::Closed {
            return Err(BrokerError::new(
                ErrorCode::ClosedHandle,
                format!("{} ({id}) is closed", sheep.display_name()),
            ));
        }
        Ok(id.clone())
    })
}

/// Checks a hello that came through the remote socket (forwarded to hosts): only a remote
/// sheep or its supervisor may connect there, and must then prove itself with its token.
pub(crate) fn check_remote(broker: &Arc<Broker>, hello: &Hello) -> BrokerResult<()> {
    use shepherd_core::protocol::Role;
    if !matches!(hello.role, Role::Sheep | Role::Supervisor) {
        return Err(BrokerError::new(
            ErrorCode::Forbidden,
            format!(
                "the remote link accepts only remote sheep and their supervisors, not the role {:?}",
                hello.role
            ),
        ));
    }
    let id = check_token(broker, hello)?;
    let remote = broker.read(|herd| herd.sheep.get(&id).is_some_and(|s| s.host().is_some()));
    if remote {
        Ok(())
    } else {
        Err(BrokerError::new(
            ErrorCode::Forbidden,
            format!("{id} runs on this machine; it connects through the broker's own socket"),
        ))
    }
}

/// Refuses a parent connection that comes from inside one of this herd's sheep.
pub(crate) fn check_parent(broker: &Arc<Broker>, peer_pid: Option<u32>) -> BrokerResult<()> {
    let Some(pid) = peer_pid else { return Ok(()) };
    // Each local sheep's supervisor and program pids, to look for among the caller's ancestors.
    let sheep: Vec<(u32, AgentId, String)> = broker.read(|herd| {
        herd.sheep
            .values()
            // A remote sheep's pids are its host's: they say nothing about processes here.
            .filter(|s| s.phase != Phase::Closed && s.host().is_none())
            .flat_map(|sheep| {
                let record: LaunchRecord = sheep.launch.clone().unwrap_or_default();
                [record.supervisor_pid, record.pid]
                    .into_iter()
                    .flatten()
                    .map(|p| (p, sheep.id.clone(), sheep.display_name()))
                    .collect::<Vec<_>>()
            })
            .collect()
    });
    // With no sheep here to be inside of, the caller's ancestry (a read of /proc per
    // ancestor, on every parent connection) is not needed.
    if sheep.is_empty() {
        return Ok(());
    }
    let ancestry = shepherd_term::process::ancestry(pid, 64);
    let inside = sheep
        .into_iter()
        .find(|(p, _, _)| ancestry.contains(p))
        .map(|(_, id, name)| (id, name));
    match inside {
        Some((id, name)) => Err(BrokerError::new(
            ErrorCode::Forbidden,
            format!(
                "this process runs inside the sheep {name} ({id}); a sheep cannot act as its \
                 parent. Leave out --parent-session to start a herd of its own."
            ),
        )),
        None => Ok(()),
    }
}
