//! The broker's side of remote sheep (the SSH links, the host's side and the wire are in
//! `remote`): the link to a host, made on first use and brought back after a restart; the
//! backend of a sheep that runs on a host; inbox items as such a sheep sees them; its notes,
//! kept here and in step with the host's copy (`notes`); and its code, an isolated remote
//! sheep's branch in the host's checkout (`code`). It reads the herd and the
//! settings, so it sits above `broker`, which holds only the links' state.

pub(crate) mod agent;
pub(crate) mod code;
pub(crate) mod notes;
pub(crate) mod pi;

use crate::state::store::Store;
use std::sync::Arc;
use std::time::Duration;

use shepherd_core::error_code::ErrorCode;
use shepherd_core::ids::AgentId;
use shepherd_term::{Backend, BackendKind};

use crate::error::{BrokerError, BrokerResult};
use crate::remote::backend;
use crate::remote::link::HostLink;
use crate::state::broker::Broker;

/// How long a spawn waits for a host's link to come up.
const LINK_DEADLINE: Duration = Duration::from_secs(25);

/// The link to `host`, made (not yet connected) on first use from the user's definition. A
/// link that is not up follows the definition as it is now: one the user corrected after a
/// failed spawn replaces the old link, instead of the broker trying the old one until it exits.
pub(crate) fn link(broker: &Broker, host: &str) -> BrokerResult<Arc<HostLink>> {
    let cached = broker
        .remotes
        .links
        .lock()
        .expect("links lock")
        .get(host)
        .cloned();
    if let Some(link) = cached.as_ref().filter(|link| link.hello().is_some()) {
        return Ok(link.clone());
    }
    let found = shepherd_config::host_def(
        &broker.config.dirs,
        &broker.config.address.project_root,
        host,
    );
    let def = match (found, &cached) {
        (Ok(def), _) => def,
        // A host removed from the settings while it still has sheep: they can still be read
        // and closed over the link they were started with.
        (Err(_), Some(link)) => return Ok(link.clone()),
        (Err(err), None) => {
            return Err(BrokerError::new(ErrorCode::UnknownHost, err.to_string()));
        }
    };
    if let Some(link) = cached.as_ref().filter(|link| link.def == def) {
        return Ok(link.clone());
    }
    let ssh_dir = broker
        .config
        .paths
        .runtime_dir
        .join(format!("ssh-{}", broker.config.address.key));
    shepherd_client::paths::ensure_private_dir(&ssh_dir).map_err(|err| {
        BrokerError::new(
            ErrorCode::Io,
            format!("cannot make {}: {err}", ssh_dir.display()),
        )
    })?;
    let link_name = link_name(&broker.config.address.key, host);
    let made = HostLink::new(
        host,
        def,
        &ssh_dir,
        broker.config.paths.remote_socket.clone(),
        link_name,
        broker.shutdown.child_token(),
    );
    let mut links = broker.remotes.links.lock().expect("links lock");
    let current = links.get(host).cloned();
    match current {
        // Another caller made or replaced it meanwhile: that one stands.
        Some(current)
            if !cached
                .as_ref()
                .is_some_and(|old| Arc::ptr_eq(old, &current)) =>
        {
            Ok(current)
        }
        current => {
            if let Some(old) = current {
                old.retire();
            }
            links.insert(host.to_owned(), made.clone());
            Ok(made)
        }
    }
}

/// Names the forwarded socket on the host: unique per broker and host, short enough for a
/// socket path.
fn link_name(key: &str, host: &str) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(format!("{key}\0{host}").as_bytes());
    hex::encode(digest)[..16].to_owned()
}

/// The backend for a new sheep on `host`, once its link is up.
pub(crate) async fn backend_for_spawn(
    broker: &Arc<Broker>,
    host: &str,
    kind: BackendKind,
) -> BrokerResult<Arc<dyn Backend>> {
    // A new sheep goes only to a host the user defines now (one removed from the settings
    // keeps its link only for the sheep already there).
    shepherd_config::host_def(
        &broker.config.dirs,
        &broker.config.address.project_root,
        host,
    )
    .map_err(|err| BrokerError::new(ErrorCode::UnknownHost, err.to_string()))?;
    let link = link(broker, host)?;
    let hello = link.up(LINK_DEADLINE).await.map_err(|why| {
        BrokerError::new(
            ErrorCode::HostUnreachable,
            format!("host {host} cannot run sheep: {why}"),
        )
    })?;
    if hello.backends.get(kind.as_str()) != Some(&true) {
        return Err(BrokerError::new(
            ErrorCode::BackendUnavailable,
            format!(
                "{} does not run on host {host}; its definition's backend or --backend must name \
                 one it has ({})",
                kind.as_str(),
                hello
                    .backends
                    .iter()
                    .filter(|(_, on)| **on)
                    .map(|(name, _)| name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ));
    }
    if !hello.project_exists {
        return Err(BrokerError::new(
            ErrorCode::HostUnreachable,
            format!(
                "host {host} has no directory {} (the host's projectPath)",
                link.def.project_path.display()
            ),
        ));
    }
    Ok(Arc::new(backend::RemoteBackend::new(
        link,
        kind,
        broker.config.settings().remote_link_timeout(),
    )))
}

/// The host a sheep runs on, when it runs on one.
pub(crate) fn host_of(store: &Store, id: &AgentId) -> Option<String> {
    store.read(|herd| herd.sheep.get(id).and_then(|s| s.host().map(str::to_owned)))
}

/// The backend an existing sheep runs on: its host's, or this machine's.
pub(crate) fn backend_of(
    broker: &Broker,
    id: &AgentId,
    kind: BackendKind,
) -> BrokerResult<Arc<dyn Backend>> {
    match host_of(&broker.store, id) {
        Some(host) => {
            let link = link(broker, &host)?;
            link.keep();
            Ok(Arc::new(backend::RemoteBackend::new(
                link,
                kind,
                broker.config.settings().remote_link_timeout(),
            )))
        }
        None => broker.backend(kind),
    }
}

/// Marks the sheep whose host cannot be reached now with since when (in the broker's clock):
/// their state is what it was when the link went down, and the front ends say so instead.
pub(crate) fn overlay_links(broker: &Broker, sheep: &mut [shepherd_core::herd::SheepStatus]) {
    if sheep.iter().all(|s| s.host.is_none()) {
        return;
    }
    let now = broker.store.now();
    let links = broker.remotes.links.lock().expect("links lock");
    for status in sheep.iter_mut() {
        let Some(link) = status.host.as_deref().and_then(|host| links.get(host)) else {
            continue;
        };
        if let crate::remote::link::LinkState::Down {
            since: Some(since), ..
        } = link.state()
        {
            let down_ms = i64::try_from(since.elapsed().as_millis()).unwrap_or(i64::MAX);
            status.link_down_since = Some(now.saturating_sub(down_ms));
        }
    }
}

/// Brings up the links of hosts that still have sheep (after a broker restart), so their
/// supervisors can reconnect.
pub(crate) fn relink(broker: &Arc<Broker>) {
    notes::reopen(broker);
    let hosts: std::collections::BTreeSet<String> = broker.store.read(|herd| {
        herd.sheep
            .values()
            .filter(|s| crate::sheep::supervisor_link::may_be_running(&s.phase))
            .filter_map(|s| s.host().map(str::to_owned))
            .collect()
    });
    for host in hosts {
        match link(broker, &host) {
            Ok(link) => link.keep(),
            Err(err) => tracing::warn!("host {host}: {}", err.message),
        }
    }
}

/// Items as a remote sheep sees them: its notes' paths are its host's copies.
pub(crate) fn for_host(
    broker: &Broker,
    session: &crate::state::session::Session,
    mut items: Vec<shepherd_core::herd::InboxItem>,
) -> Vec<shepherd_core::herd::InboxItem> {
    let Some(host) = session
        .agent_id
        .as_ref()
        .filter(|_| session.remote)
        .and_then(|id| host_of(&broker.store, id))
    else {
        return items;
    };
    let Ok(link) = link(broker, &host) else {
        return items;
    };
    let local = broker.config.address.project_root.clone();
    for item in &mut items {
        if let shepherd_core::herd::Payload::Envelope { envelope } = &mut item.payload
            && let Some(note) = &envelope.note
            && let Ok(rest) = std::path::Path::new(note).strip_prefix(&local)
        {
            envelope.note = Some(link.def.project_path.join(rest).display().to_string());
        }
    }
    items
}
