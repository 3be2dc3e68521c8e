//! The parent server's line to its herd: which herd it is, and the broker connections it uses.
//!
//! An MCP session is a parent. Its herd is keyed, like every herd, by a parent identity and a
//! project root, both settled on the first tool call ([`Herd::open`]):
//!
//! - **identity**: `--herd NAME` (or `SHEPHERD_HERD`) for hosts that restart their servers, so
//!   every server started with that name reaches the same herd; inside a sheep, the sheep's own
//!   id (a herd of its own, as the CLI does); otherwise a fresh `mcp-<random>` for this server
//!   process alone, whose herd is closed when the server ends ([`Herd::ephemeral`]);
//! - **project**: `--project DIR`; inside a sheep, its herd's project; else the host's first
//!   `file://` root from `roots/list` (asked once, within [`ROOTS_WAIT`]); else the working
//!   directory.
//!
//! Requests go out on pooled [`Link`]s (each reconnects and resends across a broker restart,
//! starting the broker when none runs), one per concurrent call, so a tool that waits never
//! holds up another. Nothing here decides anything about the herd; the broker does.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use rmcp::RoleServer;
use rmcp::service::Peer;
use shepherd_client::wire::{Link, LinkSpec};
use shepherd_core::protocol::{
    Call, Driver, Hello, HerdResult, NoParams, PROTOCOL_VERSION, Role, StatusParams, StatusResult,
    calls,
};
use tokio::time::Instant;

use super::error::ToolError;
use shepherd_client::Context;
use shepherd_client::connect::{HerdArgs, Target, broker_timeout, start_spec, target};

/// How long the server waits for the host to answer `roots/list`.
pub(crate) const ROOTS_WAIT: Duration = Duration::from_secs(5);

/// The server's herd.
#[derive(Debug)]
pub(crate) struct Herd {
    /// The parent identity.
    pub(crate) identity: String,
    /// The canonical project root.
    pub(crate) project: PathBuf,
    /// Whether the herd belongs to this server process alone (closed when it ends).
    pub(crate) ephemeral: bool,
    /// Where the broker lives.
    pub(crate) target: Target,
    spec: LinkSpec,
    pool: Mutex<Vec<Link>>,
    names: Mutex<HashMap<String, String>>,
    /// Tasks this server has registered a durable watcher for.
    watched: Mutex<HashSet<String>>,
    /// Tasks whose settlement the model has already been told.
    reported: Mutex<HashSet<String>>,
}

/// Which herd to open.
#[derive(Debug, Clone)]
pub(crate) struct Choice {
    /// `--herd NAME` / `SHEPHERD_HERD`.
    pub(crate) name: Option<String>,
    /// `--project DIR`.
    pub(crate) project: Option<PathBuf>,
}

impl Herd {
    /// Settles identity and project and prepares the connections (nothing is sent yet).
    pub(crate) async fn open(
        ctx: &Context,
        choice: &Choice,
        peer: &Peer<RoleServer>,
    ) -> Result<Self, ToolError> {
        let project = match (&choice.project, &ctx.sheep_project) {
            (Some(dir), _) => ctx.project_root(Some(dir)),
            (None, Some(dir)) => dir.clone(),
            (None, None) => host_root(peer).await.unwrap_or_else(|| ctx.cwd.clone()),
        };
        let inside_sheep = std::env::var("SHEPHERD_AGENT_ID").is_ok_and(|id| !id.is_empty());
        let (parent_session, ephemeral) = match &choice.name {
            Some(name) => (Some(name.clone()), false),
            None if inside_sheep => (None, false),
            None => {
                let unique = uuid::Uuid::new_v4().simple().to_string();
                (Some(format!("mcp-{}", &unique[..12])), true)
            }
        };
        let args = HerdArgs {
            project: Some(project),
            parent_session,
        };
        let target = target(ctx, &args)?;
        let spec = LinkSpec {
            socket: target.paths.socket.clone(),
            hello: Hello {
                protocol: PROTOCOL_VERSION,
                role: Role::Parent,
                agent_id: None,
                token: None,
                client: Some("mcp".into()),
                session_file: None,
                // The host that started this server: its name from the handshake, and the
                // server's parent process.
                driver: Some(Driver {
                    name: peer.peer_info().map_or_else(
                        || "an MCP host".to_owned(),
                        |info| info.client_info.name.clone(),
                    ),
                    pid: Some(std::os::unix::process::parent_id()),
                }),
            },
            start: Some(start_spec(&target)?),
        };
        Ok(Self {
            identity: target.address.identity.clone(),
            project: target.address.project_root.clone(),
            ephemeral,
            target,
            spec,
            pool: Mutex::new(Vec::new()),
            names: Mutex::new(HashMap::new()),
            watched: Mutex::new(HashSet::new()),
            reported: Mutex::new(HashSet::new()),
        })
    }

    /// A new link of this herd (not pooled), for a caller that follows pushes on it.
    pub(crate) fn link(&self) -> Link {
        Link::new(self.spec.clone())
    }

    /// One request of the method table (`C`) on a pooled link, answered before `deadline`.
    pub(crate) async fn send<C: Call>(
        &self,
        params: &C::Params,
        deadline: Instant,
    ) -> Result<C::Result, ToolError> {
        let mut link = self
            .pool
            .lock()
            .expect("pool lock")
            .pop()
            .unwrap_or_else(|| self.link());
        let answer = link.send::<C>(params, deadline).await;
        self.pool.lock().expect("pool lock").push(link);
        Ok(answer?)
    }

    /// One request that answers at once, within the broker timeout.
    pub(crate) async fn quick<C: Call>(&self, params: &C::Params) -> Result<C::Result, ToolError> {
        self.send::<C>(params, Instant::now() + broker_timeout()?)
            .await
    }

    /// Remembers display names seen in any answer.
    pub(crate) fn remember(&self, agent_id: &str, name: &str) {
        if !agent_id.is_empty() && !name.is_empty() {
            self.names
                .lock()
                .expect("names lock")
                .insert(agent_id.to_owned(), name.to_owned());
        }
    }

    /// Remembers the names of every sheep in a herd document.
    pub(crate) fn remember_herd(&self, herd: &HerdResult) {
        for sheep in &herd.sheep {
            self.remember(sheep.agent_id.as_str(), &sheep.display_name);
        }
    }

    /// A sheep's display name (`Shepherd` for the parent), asking the broker for ids not seen
    /// yet; the id itself when the broker does not know it.
    pub(crate) async fn name_of(&self, agent_id: &str) -> String {
        if agent_id == "shepherd" || agent_id == "parent" {
            return "Shepherd".to_owned();
        }
        if let Some(name) = self.names.lock().expect("names lock").get(agent_id) {
            return name.clone();
        }
        let params = StatusParams {
            id: Some(agent_id.to_owned()),
        };
        if let Ok(StatusResult::One(status)) = self.quick::<calls::Status>(&params).await {
            self.remember(status.agent_id.as_str(), &status.display_name);
        }
        self.known_name(agent_id)
    }

    /// A display name already known, else the id.
    pub(crate) fn known_name(&self, agent_id: &str) -> String {
        if agent_id == "shepherd" || agent_id == "parent" {
            return "Shepherd".to_owned();
        }
        self.names
            .lock()
            .expect("names lock")
            .get(agent_id)
            .cloned()
            .unwrap_or_else(|| agent_id.to_owned())
    }

    /// The ids among `ids` with no watcher from this server yet; they count as watched now.
    pub(crate) fn unwatched(&self, ids: &[String]) -> Vec<String> {
        let mut watched = self.watched.lock().expect("watched lock");
        ids.iter()
            .filter(|id| watched.insert((*id).clone()))
            .cloned()
            .collect()
    }

    /// Forgets that `ids` are watched (their registration failed).
    pub(crate) fn unwatch(&self, ids: &[String]) {
        let mut watched = self.watched.lock().expect("watched lock");
        for id in ids {
            watched.remove(id);
        }
    }

    /// Marks a task's settlement as told to the model; false when it already was.
    pub(crate) fn report(&self, task_id: &str) -> bool {
        self.reported
            .lock()
            .expect("reported lock")
            .insert(task_id.to_owned())
    }

    /// Whether a task's settlement was already told.
    pub(crate) fn was_reported(&self, task_id: &str) -> bool {
        self.reported
            .lock()
            .expect("reported lock")
            .contains(task_id)
    }

    /// Stops this server's own herd: every sheep closed, the broker gone (open tasks end
    /// cancelled and their notes say so). Only for an [`ephemeral`](Self::ephemeral) herd,
    /// whose identity no later server can reach.
    pub(crate) async fn stop(&self) -> Result<(), ToolError> {
        if !self.ephemeral || !self.target.paths.socket.exists() {
            return Ok(());
        }
        let within = broker_timeout()? + Duration::from_secs(30);
        self.send::<calls::BrokerStop>(&NoParams {}, Instant::now() + within)
            .await
            .map(|_| ())
    }
}

/// The host's first `file://` root that is a directory, when it declared roots and answered
/// in time.
#[allow(
    deprecated,
    reason = "roots are what 2025-06-18 and 2025-11-25 hosts offer"
)]
async fn host_root(peer: &Peer<RoleServer>) -> Option<PathBuf> {
    let info = peer.peer_info()?;
    info.capabilities.roots.as_ref()?;
    let listed = tokio::time::timeout(ROOTS_WAIT, peer.list_roots())
        .await
        .ok()?
        .ok()?;
    listed
        .roots
        .iter()
        .filter_map(|root| file_uri_path(&root.uri))
        .find(|path| path.is_dir())
}

/// The path of a `file://` URI (percent-decoded), or `None` for another scheme.
pub(crate) fn file_uri_path(uri: &str) -> Option<PathBuf> {
    let rest = uri.strip_prefix("file://")?;
    // `file:///abs` or `file://localhost/abs`.
    let path = rest.strip_prefix("localhost").unwrap_or(rest);
    if !path.starts_with('/') {
        return None;
    }
    let bytes = path.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(byte) = bytes
                .get(i + 1..i + 3)
                .and_then(|hex| std::str::from_utf8(hex).ok())
                .and_then(|hex| u8::from_str_radix(hex, 16).ok())
        {
            out.push(byte);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    use std::os::unix::ffi::OsStringExt as _;
    Some(PathBuf::from(std::ffi::OsString::from_vec(out)))
}

/// `cwd` as the broker takes it: absolute, a relative one against the project.
pub(crate) fn absolute(project: &Path, cwd: Option<String>) -> Option<String> {
    cwd.map(|dir| project.join(dir).display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_uris_become_paths() {
        assert_eq!(
            file_uri_path("file:///home/a%20b/p"),
            Some(PathBuf::from("/home/a b/p"))
        );
        assert_eq!(
            file_uri_path("file://localhost/x"),
            Some(PathBuf::from("/x"))
        );
        assert_eq!(file_uri_path("https://example.com"), None);
        assert_eq!(file_uri_path("file://host/x"), None);
        assert_eq!(
            absolute(Path::new("/p"), Some("sub".into())).as_deref(),
            Some("/p/sub")
        );
        assert_eq!(
            absolute(Path::new("/p"), Some("/abs".into())).as_deref(),
            Some("/abs")
        );
    }
}
