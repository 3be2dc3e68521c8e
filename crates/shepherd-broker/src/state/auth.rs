//! Who may connect as what.
//!
//! Every role is granted on a credential only its holder can read; a process's ancestry may
//! refuse a role, never grant one (a process can hand its connection to another and exit).
//!
//! - The **parent** and **observers** present the herd's key: a random token in a file of the
//!   user's private runtime directory (`b-<key>.key` beside the socket, 0600 in a 0700
//!   directory), which the broker writes when it starts and every sandbox hides. A client reads
//!   it when it connects; nothing puts it in an environment, so no sheep inherits it.
//! - A **sheep** proves itself with the capability token handed to it in its environment, a
//!   **supervisor** with its own credential, read from a private file and deleted before its
//!   sheep starts. Only digests of tokens are kept.
//!
//! On top of the key, the parent and observer roles fail closed: the connecting process, named
//! by a pidfd taken when it connected, must still run, in the broker's own pid namespace (every
//! sandbox has its own), and its ancestry must be readable to the end and pass through none of
//! this herd's sheep: a sheep may start a herd of its own, but never act as its own parent.

use crate::state::connections::Connections;
use crate::state::store::Store;
use shepherd_core::error_code::ErrorCode;
use std::path::Path;
use std::sync::Arc;

use sha2::{Digest, Sha256};
use shepherd_core::herd::Phase;
use shepherd_core::ids::AgentId;
use shepherd_core::protocol::{Hello, Role};
use shepherd_term::LaunchRecord;
use shepherd_term::platform::PeerProcess;

use crate::error::{BrokerError, BrokerResult};
use crate::state::broker::Broker;
use crate::state::broker::BrokerConfig;

/// The process that connected, as the kernel recorded it at `connect`.
#[derive(Debug, Default)]
pub(crate) struct Peer {
    /// Its pid then.
    pub(crate) pid: Option<u32>,
    /// A pidfd of it, where the kernel gives one (Linux 6.5).
    pub(crate) pidfd: Option<std::os::fd::OwnedFd>,
}

impl Peer {
    /// The peer of a connected socket.
    pub(crate) fn of(socket: &impl std::os::fd::AsFd) -> Self {
        let (pid, pidfd) = shepherd_term::platform::socket_peer(socket);
        Self { pid, pidfd }
    }

    /// What became of it.
    fn process(&self) -> PeerProcess {
        shepherd_term::platform::peer_process(self.pid, self.pidfd.as_ref())
    }
}

/// Makes sure the herd's key exists at `path` (written once, kept across restarts so clients
/// that read it keep working) and returns its digest.
pub(crate) fn ensure_herd_key(path: &Path) -> std::io::Result<String> {
    if let Ok(text) = fs_err::read_to_string(path) {
        let key = text.trim();
        if key.len() == 64 && key.bytes().all(|b| b.is_ascii_hexdigit()) {
            use std::os::unix::fs::PermissionsExt;
            fs_err::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
            return Ok(digest(key));
        }
    }
    let key = new_token();
    shepherd_fs::write_atomic(path, key.as_bytes(), Some(0o600))?;
    Ok(digest(&key))
}

/// Checks the herd's key a parent or observer `hello` carries.
pub(crate) fn check_herd_key(
    connections: &Connections,
    key_path: &Path,
    hello: &Hello,
) -> BrokerResult<()> {
    let presented = hello.token.as_deref().map(digest);
    let expected = connections.herd_key_digest();
    if expected.is_some() && presented.as_deref() == expected {
        return Ok(());
    }
    let role = if hello.role == Role::Parent {
        "parent"
    } else {
        "observer"
    };
    Err(BrokerError::new(
        ErrorCode::Unauthenticated,
        format!(
            "the {role} role needs this herd's key, which only its user can read ({}); a sheep \
             connects with the SHEPHERD_AGENT_ID and SHEPHERD_TOKEN it was started with",
            key_path.display()
        ),
    ))
}

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
    config: &BrokerConfig,
    id: &AgentId,
    token: &str,
) -> BrokerResult<std::path::PathBuf> {
    let dir = config.paths.runtime_dir.join("cred");
    let path = dir.join(format!("{id}.{}", uuid::Uuid::new_v4().simple()));
    shepherd_client::paths::ensure_private_dir(&dir)
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
pub(crate) fn check_token(store: &Store, hello: &Hello) -> BrokerResult<AgentId> {
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
    store.read(|herd| {
        let sheep = herd.sheep.get(&id).ok_or_else(unauthenticated)?;
        let expected = match hello.role {
            Role::Supervisor => sheep
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
    if !matches!(hello.role, Role::Sheep | Role::Supervisor) {
        return Err(BrokerError::new(
            ErrorCode::Forbidden,
            format!(
                "the remote link accepts only remote sheep and their supervisors, not the role {:?}",
                hello.role
            ),
        ));
    }
    let id = check_token(&broker.store, hello)?;
    let remote = broker
        .store
        .read(|herd| herd.sheep.get(&id).is_some_and(|s| s.host().is_some()));
    if remote {
        Ok(())
    } else {
        Err(BrokerError::new(
            ErrorCode::Forbidden,
            format!("{id} runs on this machine; it connects through the broker's own socket"),
        ))
    }
}

/// Refuses a parent or observer connection whose process cannot be vouched for: gone (its
/// connection handed on), in another pid namespace (a sandbox), with an ancestry that cannot
/// be read to its end, or inside one of this herd's sheep.
pub(crate) fn check_peer(store: &Store, peer: &Peer, role: Role) -> BrokerResult<()> {
    let refuse = |why: String| {
        BrokerError::new(
            ErrorCode::Forbidden,
            format!("the {} role is refused: {why}", role_name(role)),
        )
    };
    let pid = match peer.process() {
        PeerProcess::Here(pid) => pid,
        PeerProcess::Gone => {
            return Err(refuse(
                "the process that opened this connection has exited (a connection is not \
                 passed on)"
                    .to_owned(),
            ));
        }
        PeerProcess::Elsewhere => {
            return Err(refuse(
                "the connecting process runs in another pid namespace".to_owned(),
            ));
        }
        PeerProcess::Unknown => {
            return Err(refuse(
                "the connecting process cannot be identified".to_owned(),
            ));
        }
    };
    match shepherd_term::platform::same_pid_namespace(pid) {
        Some(true) => {}
        Some(false) => {
            return Err(refuse(format!(
                "process {pid} runs in another pid namespace (a sandbox's)"
            )));
        }
        None => return Err(refuse(format!("process {pid} cannot be read"))),
    }
    check_not_inside_a_sheep(store, pid)?;
    // The checks read /proc by pid: the pidfd says whether that pid was still this process.
    match peer.process() {
        PeerProcess::Here(now) if now == pid => Ok(()),
        _ => Err(refuse(
            "the process that opened this connection exited during the check".to_owned(),
        )),
    }
}

fn role_name(role: Role) -> &'static str {
    match role {
        Role::Parent => "parent",
        Role::Observer => "observer",
        Role::Sheep => "sheep",
        Role::Supervisor => "supervisor",
    }
}

/// Refuses a process that descends from one of this herd's local sheep (its supervisor or
/// program), or whose ancestry cannot be read to the end.
fn check_not_inside_a_sheep(store: &Store, pid: u32) -> BrokerResult<()> {
    // Each local sheep's supervisor and program pids, to look for among the caller's ancestors.
    let sheep: Vec<(u32, AgentId, String)> = store.read(|herd| {
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
    let Some(ancestry) = shepherd_term::process::full_ancestry(pid, 256) else {
        return Err(BrokerError::new(
            ErrorCode::Forbidden,
            format!(
                "the parent role is refused: the ancestry of process {pid} cannot be read to \
                 its end"
            ),
        ));
    };
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
