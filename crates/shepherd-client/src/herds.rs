//! Every herd of this user on this machine: each broker listens on a socket in the user's
//! private runtime directory and says, when asked, whose herd it is (the parent identity — a pi
//! session, an MCP host's server, a named herd, the CLI's own — and the project), who drives it
//! now (its parent connections, an MCP host by name and process) and what it holds. `shepherd
//! herds`, `shepherd broker status` and the dashboard's picker all list herds from here.
//! Sockets nobody answers on are left out: their broker is gone.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::paths::{BrokerAddress, BrokerPaths};
use crate::wire::Client;
use serde::Serialize;
use shepherd_core::protocol::{HostLinkStatus, NoParams, ParentConnection, Role, calls};

use crate::Context;
use crate::connect::{Target, hello};

/// How long one broker may take to answer before it is left out of the list.
const ASK_EACH: Duration = Duration::from_millis(1500);

/// What kind of parent leads a herd, read from its identity's shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ParentKind {
    /// The CLI's own herd for the project (`cli-…`).
    CommandLine,
    /// An MCP host's server without `--herd` (`mcp-…`).
    McpHost,
    /// A sheep leading a herd of its own (its agent id).
    Sheep,
    /// A pi session (its session id).
    PiSession,
    /// A herd given a name (`--herd`, `--parent-session`).
    Named,
}

impl ParentKind {
    /// Reads an identity's shape.
    pub fn of(identity: &str) -> Self {
        if identity.starts_with("cli-") {
            Self::CommandLine
        } else if identity.starts_with("mcp-") {
            Self::McpHost
        } else if shepherd_core::ids::AgentId::parse(identity).is_some() {
            Self::Sheep
        } else if is_uuid(identity) {
            Self::PiSession
        } else {
            Self::Named
        }
    }

    /// In words.
    pub fn words(self) -> &'static str {
        match self {
            Self::CommandLine => "command line",
            Self::McpHost => "MCP host",
            Self::Sheep => "sheep",
            Self::PiSession => "pi session",
            Self::Named => "named",
        }
    }
}

/// `8-4-4-4-12` hex digits, as pi's session ids are.
fn is_uuid(text: &str) -> bool {
    let groups: Vec<&str> = text.split('-').collect();
    groups.iter().map(|g| g.len()).eq([8, 4, 4, 4, 12])
        && groups
            .iter()
            .all(|g| g.chars().all(|c| c.is_ascii_hexdigit()))
}

/// A herd found running.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HerdEntry {
    /// The parent identity (the herd id).
    pub identity: String,
    /// What kind of parent leads it.
    pub kind: ParentKind,
    /// The canonical project root.
    pub project: PathBuf,
    /// Its broker's pid.
    pub broker_pid: u32,
    /// When its broker started (ms).
    pub started_at: i64,
    /// Its broker's socket.
    pub socket: PathBuf,
    /// The parents connected now.
    pub parents: Vec<ParentConnection>,
    /// How many sheep it has (not closed).
    pub sheep: usize,
    /// How many of them work now.
    pub working: usize,
    /// Open tasks.
    pub open_tasks: usize,
    /// The host links its broker keeps.
    pub links: Vec<HostLinkStatus>,
}

impl HerdEntry {
    /// Who drives it, in words: `MCP host claude-code (pid 4242)`, `pi session`, `command
    /// line`…; a herd whose parents are all gone says so.
    pub fn driver_words(&self) -> String {
        let drivers: Vec<String> = self
            .parents
            .iter()
            .filter_map(|parent| {
                let pid = |pid: Option<u32>| pid.map(|p| format!(" (pid {p})")).unwrap_or_default();
                match (&parent.driver, parent.client.as_deref()) {
                    (Some(driver), _) => {
                        Some(format!("MCP host {}{}", driver.name, pid(driver.pid)))
                    }
                    // Observers are not parents; a dashboard or a status command watching is
                    // nobody driving.
                    (None, Some("pi")) => Some(format!("pi{}", pid(parent.pid))),
                    (None, Some(client)) => Some(format!("{client}{}", pid(parent.pid))),
                    (None, None) => None,
                }
            })
            .collect();
        if drivers.is_empty() {
            format!("{} (no parent connected)", self.kind.words())
        } else {
            drivers.join(", ")
        }
    }

    /// The broker of this herd, to follow and act on.
    pub fn target(&self, ctx: &Context) -> Target {
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
pub async fn list(runtime_dir: &Path) -> Vec<HerdEntry> {
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
    let mut found: Vec<HerdEntry> = join_all(asks).await.into_iter().flatten().collect();
    found.sort_by(|a, b| (&a.project, &a.identity).cmp(&(&b.project, &b.identity)));
    found
}

/// The herds of one project (its canonical root).
pub async fn of_project(runtime_dir: &Path, project: &Path) -> Vec<HerdEntry> {
    let mut herds = list(runtime_dir).await;
    herds.retain(|herd| herd.project == project);
    herds
}

async fn ask(socket: &Path) -> Option<HerdEntry> {
    let (mut client, hello) = Client::open(socket, &hello(Role::Observer, None, None))
        .await
        .ok()?;
    let status = client
        .send::<calls::BrokerStatus>(&NoParams {})
        .await
        .ok()?;
    let herd = client.send::<calls::Herd>(&NoParams {}).await.ok()?;
    Some(HerdEntry {
        kind: ParentKind::of(&hello.parent_identity),
        identity: hello.parent_identity,
        project: PathBuf::from(hello.project_root),
        broker_pid: status.pid,
        started_at: status.started_at,
        socket: socket.to_owned(),
        parents: status.parents,
        sheep: herd.sheep.len(),
        working: herd.sheep.iter().filter(|s| s.state == "working").count(),
        open_tasks: status.open_tasks,
        links: status.links,
    })
}

/// Runs `futures` side by side and collects their outputs in order.
async fn join_all<F>(futures: impl IntoIterator<Item = F>) -> Vec<F::Output>
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identities_tell_their_parent_kind() {
        assert_eq!(ParentKind::of("cli-1a2b3c"), ParentKind::CommandLine);
        assert_eq!(ParentKind::of("mcp-0123456789ab"), ParentKind::McpHost);
        assert_eq!(
            ParentKind::of("8f14e45f-ceea-467f-a0e6-6e4c5b7e1a2d"),
            ParentKind::PiSession
        );
        assert_eq!(ParentKind::of("nightly"), ParentKind::Named);
    }
}
