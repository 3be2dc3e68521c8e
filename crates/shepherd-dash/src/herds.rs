//! Every herd of this user on this machine, for the dashboard's picker: each broker listens on
//! a socket in the user's private runtime directory, and says whose herd it is (the parent
//! identity — a pi session, a named herd, the CLI's own — and the project) when asked `hello`.
//! Sockets that nobody answers on are left out: their broker is gone.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::json;
use shepherd_broker::client::Client;
use shepherd_broker::paths::{BrokerAddress, BrokerPaths};
use shepherd_core::protocol::{HerdResult, Role, method};

use shepherd_client::Context;
use shepherd_client::connect::{Target, hello};

/// How long one broker may take to answer before it is left out of the list.
const ASK_EACH: Duration = Duration::from_millis(1500);

/// A herd found running.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HerdEntry {
    /// The parent identity.
    pub(crate) identity: String,
    /// The canonical project root.
    pub(crate) project: PathBuf,
    /// How many sheep it has (not closed).
    pub(crate) sheep: usize,
    /// How many of them work now.
    pub(crate) working: usize,
}

impl HerdEntry {
    /// What kind of parent leads it, from its identity's shape.
    pub(crate) fn parent_kind(&self) -> &'static str {
        if self.identity.starts_with("cli-") {
            "command line"
        } else if self.identity.starts_with("mcp-") {
            "MCP host"
        } else if shepherd_core::ids::AgentId::parse(&self.identity).is_some() {
            "sheep"
        } else if uuid::Uuid::parse_str(&self.identity).is_ok() {
            "pi session"
        } else {
            "named"
        }
    }

    /// The broker of this herd, to follow and act on.
    pub(crate) fn target(&self, ctx: &Context) -> Target {
        let address = BrokerAddress::new(&self.identity, &self.project);
        let paths = BrokerPaths::new(&ctx.dirs, &address);
        Target {
            address,
            paths,
            depth: 0,
            broker_env: Vec::new(),
        }
    }
}

/// Asks every broker socket in `runtime_dir` who it is, in a stable order (project, then
/// identity).
pub(crate) async fn list(runtime_dir: &Path) -> Vec<HerdEntry> {
    let Ok(entries) = fs_err::read_dir(runtime_dir) else {
        return Vec::new();
    };
    let sockets: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("b-") && n.ends_with(".sock"))
        })
        .collect();
    let asks = sockets.into_iter().map(|socket| async move {
        tokio::time::timeout(ASK_EACH, ask(&socket))
            .await
            .ok()
            .flatten()
    });
    let mut found: Vec<HerdEntry> = futures_join(asks).await.into_iter().flatten().collect();
    found.sort_by(|a, b| (&a.project, &a.identity).cmp(&(&b.project, &b.identity)));
    found
}

async fn ask(socket: &Path) -> Option<HerdEntry> {
    let (mut client, hello) = Client::open(socket, &hello(Role::Observer, None, None))
        .await
        .ok()?;
    let herd: HerdResult = client.call(method::HERD, &json!({})).await.ok()?;
    Some(HerdEntry {
        identity: hello.parent_identity,
        project: PathBuf::from(hello.project_root),
        sheep: herd.sheep.len(),
        working: herd.sheep.iter().filter(|s| s.state == "working").count(),
    })
}

/// Runs `futures` side by side and collects their outputs in order.
async fn futures_join<F>(futures: impl IntoIterator<Item = F>) -> Vec<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let handles: Vec<_> = futures.into_iter().map(tokio::spawn).collect();
    let mut out = Vec::with_capacity(handles.len());
    for handle in handles {
        if let Ok(value) = handle.await {
            out.push(value);
        }
    }
    out
}
