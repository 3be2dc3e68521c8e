//! Reaching a broker from the command line: as the parent of a herd (starting the broker on
//! demand), as a sheep (with the capability from the environment), or as an observer.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use shepherd_broker::client::{Client, ClientError, StartSpec, ensure_broker};
use shepherd_broker::paths::{BrokerAddress, BrokerPaths, cli_parent_identity};
use shepherd_core::protocol::{Hello, PROTOCOL_VERSION, Role};

use crate::context::Context;
use crate::error::CliError;

/// How long a command waits for a broker it started to become ready.
const BROKER_START_TIMEOUT: Duration = Duration::from_secs(15);

/// Which herd a parent-side command works on.
#[derive(Debug, Clone, Args)]
pub(crate) struct HerdArgs {
    /// The project root (default: the current directory; inside a sheep, its herd's project).
    #[arg(long, value_name = "DIR", global = true)]
    pub(crate) project: Option<PathBuf>,
    /// Act for this parent identity (e.g. a pi session id) instead of this user's CLI herd.
    #[arg(long, value_name = "ID", global = true)]
    pub(crate) parent_session: Option<String>,
}

impl From<ClientError> for CliError {
    fn from(err: ClientError) -> Self {
        Self::new(err.code().to_owned(), err.to_string())
    }
}

/// The broker a parent-side command talks to.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    pub(crate) address: BrokerAddress,
    pub(crate) paths: BrokerPaths,
    pub(crate) depth: u32,
}

/// Resolves the herd: the project root made canonical, and the parent identity — the one given,
/// else (inside a sheep) the sheep's own id so it leads a herd of its own, else this user's CLI
/// identity for the project.
pub(crate) fn target(ctx: &Context, args: &HerdArgs) -> Result<Target, CliError> {
    let root = ctx.project_root(args.project.as_deref());
    let root = canonical_root(&root)?;
    let identity = match &args.parent_session {
        Some(id) if id.trim().is_empty() || id.chars().any(char::is_control) => {
            return Err(CliError::new(
                "invalid_identity",
                format!(
                    "--parent-session `{id}` must be a non-empty id without control characters"
                ),
            ));
        }
        Some(id) => id.clone(),
        None => match std::env::var("SHEPHERD_AGENT_ID") {
            Ok(own) if !own.is_empty() => own,
            _ => cli_parent_identity(rustix::process::getuid().as_raw(), &root),
        },
    };
    let depth = std::env::var("SHEPHERD_DEPTH")
        .ok()
        .and_then(|d| d.parse().ok())
        .unwrap_or(0);
    let address = BrokerAddress::new(&identity, &root);
    let paths = BrokerPaths::new(&ctx.dirs, &address);
    Ok(Target {
        address,
        paths,
        depth,
    })
}

fn canonical_root(root: &Path) -> Result<PathBuf, CliError> {
    let canonical = fs_err::canonicalize(root).map_err(|err| {
        CliError::new(
            "invalid_project",
            format!(
                "project `{}` is not an existing directory: {err}",
                root.display()
            ),
        )
    })?;
    if !canonical.is_dir() {
        return Err(CliError::new(
            "invalid_project",
            format!("project `{}` is not a directory", root.display()),
        ));
    }
    Ok(canonical)
}

/// Connects as the parent, starting the broker if none runs.
pub(crate) async fn parent(target: &Target) -> Result<Client, CliError> {
    let exe = std::env::current_exe().map_err(|err| {
        CliError::new(
            "environment",
            format!("cannot find the shepherd executable: {err}"),
        )
    })?;
    let spec = StartSpec {
        exe,
        identity: target.address.identity.clone(),
        project_root: target.address.project_root.clone(),
        depth: target.depth,
        env: Vec::new(),
    };
    ensure_broker(&target.paths.socket, &spec, BROKER_START_TIMEOUT).await?;
    let (client, _) = Client::open(&target.paths.socket, &hello(Role::Parent, None, None)).await?;
    Ok(client)
}

/// Connects as an observer to a broker that is already running.
pub(crate) async fn observer(target: &Target) -> Result<Client, CliError> {
    let (client, _) =
        Client::open(&target.paths.socket, &hello(Role::Observer, None, None)).await?;
    Ok(client)
}

/// The capability a sheep was started with.
#[derive(Debug, Clone)]
pub(crate) struct SheepCapability {
    pub(crate) socket: PathBuf,
    pub(crate) agent_id: String,
    pub(crate) token: String,
}

impl SheepCapability {
    /// Reads `SHEPHERD_SOCKET`, `SHEPHERD_AGENT_ID` and `SHEPHERD_TOKEN`.
    pub(crate) fn from_env() -> Result<Self, CliError> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        match (
            var("SHEPHERD_SOCKET"),
            var("SHEPHERD_AGENT_ID"),
            var("SHEPHERD_TOKEN"),
        ) {
            (Some(socket), Some(agent_id), Some(token)) => Ok(Self {
                socket: socket.into(),
                agent_id,
                token,
            }),
            _ => Err(CliError::new(
                "not_a_sheep",
                "this command runs inside a sheep: SHEPHERD_SOCKET, SHEPHERD_AGENT_ID and SHEPHERD_TOKEN must be set \
                 (Shepherd sets them for every sheep it starts)",
            )),
        }
    }
}

/// Connects as the sheep (or its supervisor) the capability names.
pub(crate) async fn sheep(cap: &SheepCapability, role: Role) -> Result<Client, ClientError> {
    let hello = hello(role, Some(cap.agent_id.clone()), Some(cap.token.clone()));
    Client::open(&cap.socket, &hello)
        .await
        .map(|(client, _)| client)
}

/// A `hello` from this build.
pub(crate) fn hello(role: Role, agent_id: Option<String>, token: Option<String>) -> Hello {
    Hello {
        protocol: PROTOCOL_VERSION,
        role,
        agent_id,
        token,
        client: Some("cli".into()),
    }
}

/// A single-threaded runtime for one command.
pub(crate) fn runtime() -> Result<tokio::runtime::Runtime, CliError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|err| CliError::new("internal", format!("cannot start the async runtime: {err}")))
}
