//! Reaching a broker from the command line: as the parent of a herd (starting the broker on
//! demand), as a sheep (with the capability from the environment), or as an observer.

use shepherd_core::error_code::ErrorCode;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::paths::{BrokerAddress, BrokerPaths, cli_parent_identity};
use crate::wire::{ClientError, Link, LinkSpec, StartSpec};
use clap::Args;
use shepherd_core::protocol::{Hello, PROTOCOL_VERSION, Role};

use tokio::time::Instant;

use crate::context::Context;
use crate::error::CliError;
use shepherd_core::protocol::{Call, CallerContext};

/// Which herd a parent-side command works on.
#[derive(Debug, Clone, Args)]
pub struct HerdArgs {
    /// The project root (default: the current directory; inside a sheep, its herd's project).
    #[arg(long, value_name = "DIR", global = true)]
    pub project: Option<PathBuf>,
    /// Act for this parent identity (e.g. a pi session id) instead of this user's CLI herd.
    #[arg(long, value_name = "ID", global = true)]
    pub parent_session: Option<String>,
}

/// The dashboard's own options: `shepherd dash` and `shepherd herd --tui` both take them.
#[derive(Debug, Clone, Args)]
pub struct ViewArgs {
    /// Start by picking among every herd running on this machine (a pi session's, a named
    /// herd, the command line's), instead of this project's.
    #[arg(long)]
    pub all: bool,
    /// Show ages at the broker's clock as of the last pushed view, never ticking locally (for
    /// tests, whose broker clock stands still).
    #[arg(long, hide = true)]
    pub frozen_clock: bool,
}

impl From<ClientError> for CliError {
    fn from(err: ClientError) -> Self {
        Self::new(err.code(), err.to_string())
    }
}

/// How long a command waits for its broker beyond what the request itself waits for
/// (`SHEPHERD_BROKER_TIMEOUT`, in seconds; 15 by default).
pub fn broker_timeout() -> Result<Duration, CliError> {
    match std::env::var("SHEPHERD_BROKER_TIMEOUT") {
        Err(_) => Ok(DEFAULT_BROKER_TIMEOUT),
        Ok(text) => text
            .parse::<f64>()
            .ok()
            .filter(|secs| secs.is_finite() && *secs > 0.0)
            .map(Duration::from_secs_f64)
            .ok_or_else(|| {
                CliError::new(
                    ErrorCode::InvalidEnvironment,
                    format!(
                        "SHEPHERD_BROKER_TIMEOUT `{text}` must be a positive number of seconds"
                    ),
                )
                .with_exit(2)
            }),
    }
}

/// The default for [`broker_timeout`].
const DEFAULT_BROKER_TIMEOUT: Duration = Duration::from_secs(15);

/// The broker a parent-side command talks to.
#[derive(Debug, Clone)]
pub struct Target {
    pub address: BrokerAddress,
    pub paths: BrokerPaths,
    pub depth: u32,
    /// Variables a broker started for this target gets beyond the starter's environment (the
    /// runtime directory the starter found outside its own; see [`crate::runtime`]).
    pub broker_env: Vec<(String, String)>,
}

/// Resolves the herd: the project root made canonical, and the parent identity — the one given,
/// else (inside a sheep) the sheep's own id so it leads a herd of its own, else this user's CLI
/// identity for the project.
pub fn target(ctx: &Context, args: &HerdArgs) -> Result<Target, CliError> {
    let root = ctx.project_root(args.project.as_deref());
    let root = canonical_root(&root)?;
    let identity = match &args.parent_session {
        Some(id) if id.trim().is_empty() || id.chars().any(char::is_control) => {
            return Err(CliError::new(
                ErrorCode::InvalidIdentity,
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
    let broker_env = ctx
        .runtime_found
        .iter()
        .map(|(dir, _)| crate::runtime::broker_var(dir))
        .collect();
    Ok(Target {
        address,
        paths,
        depth,
        broker_env,
    })
}

fn canonical_root(root: &Path) -> Result<PathBuf, CliError> {
    let canonical = fs_err::canonicalize(root).map_err(|err| {
        CliError::new(
            ErrorCode::InvalidProject,
            format!(
                "project `{}` is not an existing directory: {err}",
                root.display()
            ),
        )
    })?;
    if !canonical.is_dir() {
        return Err(CliError::new(
            ErrorCode::InvalidProject,
            format!("project `{}` is not a directory", root.display()),
        ));
    }
    Ok(canonical)
}

/// How to start this target's broker.
pub fn start_spec(target: &Target) -> Result<StartSpec, CliError> {
    let exe = std::env::current_exe().map_err(|err| {
        CliError::new(
            ErrorCode::Environment,
            format!("cannot find the shepherd executable: {err}"),
        )
    })?;
    Ok(StartSpec {
        exe,
        identity: target.address.identity.clone(),
        project_root: target.address.project_root.clone(),
        depth: target.depth,
        state_dir: target.paths.state_dir.clone(),
        env: target.broker_env.clone(),
    })
}

/// Whether this target's herd is alive: its broker recorded the herd's environment and has
/// not ended it (an orderly stop with no sheep left forgets it). A command that only reads
/// starts no broker for a herd that is not alive.
pub fn herd_alive(target: &Target) -> bool {
    crate::wire::start::env_file(&target.paths.state_dir).exists()
}

/// A link to this target's broker as its parent, starting the broker when none runs, connected
/// before `deadline`.
pub async fn parent(target: &Target, deadline: Instant) -> Result<Link, CliError> {
    let spec = LinkSpec {
        socket: target.paths.socket.clone(),
        hello: hello(Role::Parent, None, None),
        start: Some(start_spec(target)?),
    };
    Ok(Link::open(spec, deadline).await?)
}

/// Like [`parent`] for a command that only reads: `None` when the herd is not alive and no
/// broker runs, rather than starting one for nothing.
pub async fn parent_if_alive(target: &Target, deadline: Instant) -> Result<Option<Link>, CliError> {
    if herd_alive(target)
        || tokio::net::UnixStream::connect(&target.paths.socket)
            .await
            .is_ok()
    {
        return parent(target, deadline).await.map(Some);
    }
    Ok(None)
}

/// Connects as an observer to a broker that is already running, before `deadline`.
pub async fn observer(target: &Target, deadline: Instant) -> Result<Link, CliError> {
    let spec = LinkSpec {
        socket: target.paths.socket.clone(),
        hello: hello(Role::Observer, None, None),
        start: None,
    };
    Ok(Link::open(spec, deadline).await?)
}

/// The deadline of a command whose request itself may wait `wait`: that wait plus the broker
/// timeout.
pub fn deadline_after(wait: Duration) -> Result<Instant, CliError> {
    Ok(Instant::now() + wait + broker_timeout()?)
}

/// The capability a sheep was started with.
#[derive(Debug, Clone)]
pub struct SheepCapability {
    pub socket: PathBuf,
    pub agent_id: String,
    pub token: String,
    /// A supervisor's own credential (never in the sheep's environment).
    pub supervisor_token: Option<String>,
}

impl SheepCapability {
    /// Reads `SHEPHERD_SOCKET`, `SHEPHERD_AGENT_ID` and `SHEPHERD_TOKEN`.
    pub fn from_env() -> Result<Self, CliError> {
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
                supervisor_token: None,
            }),
            _ => Err(CliError::new(
                ErrorCode::NotASheep,
                "this command runs inside a sheep: SHEPHERD_SOCKET, SHEPHERD_AGENT_ID and SHEPHERD_TOKEN must be set \
                 (Shepherd sets them for every sheep it starts)",
            )),
        }
    }
}

/// A link as the sheep (or its supervisor) the capability names. It never starts a broker: a
/// sheep waits for its herd's broker to come back (its supervisor restarts it).
pub fn sheep(cap: &SheepCapability, role: Role) -> Link {
    let token = match role {
        Role::Supervisor => cap
            .supervisor_token
            .clone()
            .unwrap_or_else(|| cap.token.clone()),
        _ => cap.token.clone(),
    };
    Link::new(LinkSpec {
        socket: cap.socket.clone(),
        hello: hello(role, Some(cap.agent_id.clone()), Some(token)),
        start: None,
    })
}

/// A `hello` from this build.
pub fn hello(role: Role, agent_id: Option<String>, token: Option<String>) -> Hello {
    Hello {
        protocol: PROTOCOL_VERSION,
        role,
        agent_id,
        token,
        client: Some("cli".into()),
        session_file: None,
        driver: None,
    }
}

/// A single-threaded runtime for one command.
pub fn runtime() -> Result<tokio::runtime::Runtime, CliError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|err| {
            CliError::new(
                ErrorCode::Internal,
                format!("cannot start the async runtime: {err}"),
            )
        })
}

/// How long a spawn may wait for its sheep to start (the broker's own limit, plus the time to
/// clean up a sheep that did not).
pub fn spawn_wait() -> Duration {
    let startup = std::env::var("SHEPHERD_STARTUP_LIMIT_MS")
        .ok()
        .and_then(|ms| ms.parse().ok())
        .map_or(Duration::from_secs(30), Duration::from_millis);
    startup + Duration::from_secs(15)
}

/// What this process's environment says about the terminal it runs in.
pub fn caller_context() -> CallerContext {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    CallerContext {
        in_herdr: var("HERDR_ENV").as_deref() == Some("1"),
        herdr_pane: var("HERDR_PANE_ID"),
        herdr_workspace: var("HERDR_WORKSPACE_ID"),
        herdr_socket: var("HERDR_SOCKET_PATH"),
        tmux: var("TMUX"),
        tmux_pane: var("TMUX_PANE"),
        pid: Some(std::process::id()),
    }
}

/// Sends the method `M` as the parent, starting the broker if needed; `wait` is how long the
/// request itself may legitimately take, on top of the broker timeout.
pub fn call<M: Call>(
    ctx: &Context,
    herd: &HerdArgs,
    params: &M::Params,
    wait: Duration,
) -> Result<M::Result, CliError> {
    let target = target(ctx, herd)?;
    runtime()?.block_on(async {
        // Reaching the broker gets the broker timeout; the request itself may take `wait` more.
        let mut link = parent(&target, deadline_after(Duration::ZERO)?).await?;
        Ok(link.send::<M>(params, deadline_after(wait)?).await?)
    })
}

/// Like [`call`] for a read: `None` when the herd is not alive (no broker is started for it).
pub fn read_call<M: Call>(
    ctx: &Context,
    herd: &HerdArgs,
    params: &M::Params,
) -> Result<Option<M::Result>, CliError> {
    let target = target(ctx, herd)?;
    runtime()?.block_on(async {
        let deadline = deadline_after(Duration::ZERO)?;
        let Some(mut link) = parent_if_alive(&target, deadline).await? else {
            return Ok(None);
        };
        Ok(Some(link.send::<M>(params, deadline).await?))
    })
}
