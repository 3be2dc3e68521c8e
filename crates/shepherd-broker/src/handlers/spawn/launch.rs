//! Starting an admitted sheep: build its program (pi, another coding agent's driver or its
//! `command`) and environment, launch it under its supervisor on its backend, record where it
//! runs, and wait until its supervisor (or, for a coding agent, its extension or driver) says
//! it runs. A new spawn and a resume both end here; a launch
//! that fails is cleaned up and the sheep recorded as failed to start, with the end of its
//! output in the error.

use shepherd_core::error_code::ErrorCode;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use shepherd_core::agent_def::AgentDef;
use shepherd_core::harness::Runtime;
use shepherd_core::herd::ExitInfo;
use shepherd_core::ids::AgentId;
use shepherd_core::label::{Label, display_name};
use shepherd_core::protocol::{CallerContext, SpawnParams};
use shepherd_term::{Backend, BackendKind, LaunchRecord, LaunchSpec, Placement, ReadSource};
use tokio::sync::oneshot;

use crate::error::{BrokerError, BrokerResult};
use crate::sheep::launch_record::{current_launch, merge_launch};
use crate::state::broker::Broker;
use crate::state::broker::BrokerConfig;

/// Everything a spawn or a resume decided before its sheep is admitted.
pub(crate) struct Prepared {
    /// The agent definition.
    pub(crate) def: AgentDef,
    /// What runs it.
    pub(crate) runtime: Runtime,
    /// Another coding agent's checked launch, when one runs it.
    pub(crate) agent: Option<crate::sheep::harness::Checked>,
    /// The validated label.
    pub(crate) label: Label,
    /// The backend it runs on.
    pub(crate) kind: BackendKind,
    /// That backend.
    pub(crate) backend: Arc<dyn Backend>,
    /// Where a visible sheep's pane goes.
    pub(crate) placement: Placement,
    /// Its working directory (on its host, when it runs on one).
    pub(crate) cwd: PathBuf,
    /// The host it runs on, when not this machine.
    pub(crate) host: Option<String>,
    /// How it is confined.
    pub(crate) sandbox: shepherd_core::sandbox::Sandbox,
    /// The resources it may use.
    pub(crate) limits: shepherd_core::resources::Limits,
    /// What of git its sandbox holds, when its spawn decided it (an isolated sheep on a host);
    /// else the broker works it out from its working directory at launch.
    pub(crate) git: Option<crate::sheep::worktree::GitBinds>,
}

impl Prepared {
    /// Whether it runs pi.
    pub(crate) fn is_pi(&self) -> bool {
        self.runtime.is_pi()
    }
}

/// The capabilities minted for one launch: the sheep's token and its supervisor's credential.
pub(crate) struct Credentials {
    pub(crate) token: String,
    pub(crate) supervisor: String,
}

impl Credentials {
    pub(crate) fn mint() -> Self {
        Self {
            token: crate::state::auth::new_token(),
            supervisor: crate::state::auth::new_token(),
        }
    }
}

/// Registers who waits for `id` to run; done before the sheep is admitted, so a report that
/// comes fast is not missed.
pub(crate) fn await_ready(
    broker: &Broker,
    id: &AgentId,
) -> oneshot::Receiver<Result<(), ExitInfo>> {
    let (ready_tx, ready_rx) = oneshot::channel();
    broker
        .links
        .lock()
        .expect("links lock")
        .ready_waiters
        .insert(id.clone(), ready_tx);
    ready_rx
}

/// Launches an admitted sheep and answers once it runs, or fails (the sheep then recorded as
/// failed to start and cleaned up).
pub(crate) async fn launch(
    broker: &Arc<Broker>,
    id: &AgentId,
    prepared: &Prepared,
    params: &SpawnParams,
    credentials: &Credentials,
    ready_rx: oneshot::Receiver<Result<(), ExitInfo>>,
) -> BrokerResult<()> {
    let def = &prepared.def;
    let kind = prepared.kind;
    let settings = broker.config.settings();
    let mut env = sheep_env(&broker.config, id, &credentials.token);
    let launched = match (&def.command, &prepared.agent) {
        (Some(argv), _) => Ok(argv.clone()),
        (None, Some(checked)) => {
            let visible = kind != BackendKind::Headless;
            match &prepared.host {
                Some(host) => {
                    crate::sheep::remote_sheep::agent::launch(
                        broker,
                        host,
                        checked.harness(),
                        def,
                        params,
                        id,
                        prepared.cwd.clone(),
                        visible,
                    )
                    .await
                }
                None => crate::sheep::harness::launch(
                    &broker.config,
                    checked,
                    def,
                    params,
                    id,
                    prepared.cwd.clone(),
                    visible,
                ),
            }
        }
        (None, None) => {
            let headless = kind == BackendKind::Headless;
            let launched = match &prepared.host {
                Some(host) => {
                    crate::sheep::remote_sheep::pi::launch(broker, host, def, params, id, headless)
                        .await
                }
                None => crate::sheep::pi_launch::launch(
                    broker,
                    def,
                    params,
                    id,
                    (headless, prepared.sandbox.is_on()),
                ),
            };
            launched.and_then(|launch| {
                env.extend(launch.env);
                if prepared.host.is_none() {
                    crate::sheep::pi_launch::write_launch_env(broker, id, &env)?;
                }
                Ok(launch.argv)
            })
        }
    };
    let program = match launched {
        Ok(program) => program,
        Err(err) => {
            never_launched(broker, id, err.message.clone()).await;
            return Err(err);
        }
    };
    // A sheep Shepherd made for a task carries its role in its name (`worker (fallback, codex)`,
    // `claude-resolver (resolver)`), as the herd records it.
    let display = broker
        .store
        .read(|herd| {
            herd.sheep
                .get(id)
                .map(shepherd_core::herd::Sheep::display_name)
        })
        .unwrap_or_else(|| display_name(&def.name, &prepared.label));
    let caller = params.caller.clone().unwrap_or_default();
    let (caller_pane, tmux_socket) = placement_context(kind, &caller);
    let credential =
        match crate::state::auth::write_credential(&broker.config, id, &credentials.supervisor) {
            Ok(path) => path,
            Err(err) => {
                never_launched(broker, id, err.message.clone()).await;
                return Err(err);
            }
        };
    let mut supervisor_args = vec![
        "--credential-file".to_owned(),
        credential.display().to_string(),
        "--broker-state".to_owned(),
        broker.config.paths.state_dir.display().to_string(),
    ];
    let confined = crate::sheep::sandbox::supervisor_args(
        broker,
        id,
        (prepared.sandbox, def, prepared.runtime),
        (
            &prepared.cwd,
            prepared.agent.as_ref().and_then(|agent| agent.program()),
            &git_binds(&broker.config, prepared),
        ),
        prepared.host.is_some(),
    );
    match confined {
        Ok(confined) => supervisor_args.extend(confined),
        Err(err) => {
            let _unused = fs_err::remove_file(&credential);
            never_launched(broker, id, err.message.clone()).await;
            return Err(err);
        }
    }
    supervisor_args.extend(crate::sheep::limits::supervisor_args(&prepared.limits));
    let spec = LaunchSpec {
        agent_id: id.to_string(),
        display_name: display.clone(),
        cwd: prepared.cwd.clone(),
        program,
        env,
        keep_stdin: prepared.is_pi(),
        shepherd_exe: broker.config.shepherd_exe.clone(),
        socket: broker.config.paths.socket.clone(),
        log: broker.config.paths.sheep_logs.join(format!("{id}.log")),
        placement: prepared.placement,
        caller_pane,
        caller_pid: caller.pid,
        tmux_socket,
        keep_open: settings.keep_open,
        orphan_grace: broker.config.orphan_grace,
        supervisor_args,
    };
    let backend = prepared.backend.clone();
    let launched = tokio::task::spawn_blocking(move || backend.launch(&spec))
        .await
        .map_err(|err| BrokerError::new(ErrorCode::Internal, err.to_string()))?;
    let record = match launched {
        Ok(record) => record,
        Err(err) => {
            let _unused = fs_err::remove_file(&credential);
            never_launched(broker, id, err.to_string()).await;
            return Err(BrokerError::new(
                ErrorCode::SpawnFailed,
                format!("Agent \"{}\" could not be started: {err}", def.name),
            ));
        }
    };
    merge_launch(&broker.store, id, &record);
    // A remote sheep's pane is on its host: this machine's pane registry never holds it.
    let registered = if prepared.host.is_some() {
        Ok(())
    } else {
        register_pane(broker, id, &display, kind, &record)
    };
    if let Err(err) = registered {
        let exit = ExitInfo {
            reason: Some(err.to_string()),
            ..ExitInfo::default()
        };
        abandon_launch(broker, id, &prepared.backend, record, exit).await;
        return Err(BrokerError::new(
            ErrorCode::SpawnFailed,
            format!("Agent \"{}\" was not started: {err}", def.name),
        ));
    }

    let limit = broker.config.startup_limit;
    let outcome = tokio::select! {
        outcome = ready_rx => outcome.unwrap_or_else(|_| Err(ExitInfo { reason: Some("the broker stopped".into()), ..ExitInfo::default() })),
        () = tokio::time::sleep(limit) => Err(ExitInfo {
            reason: Some(format!("did not become ready within {} s", limit.as_secs())),
            ..ExitInfo::default()
        }),
    };
    let Err(mut exit) = outcome else {
        return Ok(());
    };
    let record = current_launch(&broker.store, id);
    if exit.tail.is_empty() {
        exit.tail = prepared
            .backend
            .read(&record, ReadSource::RecentUnwrapped, 20)
            .unwrap_or_default();
    }
    let reason = exit.describe();
    let tail = exit.tail.clone();
    abandon_launch(broker, id, &prepared.backend, record, exit).await;
    let mut message = format!("Agent \"{}\" failed to start: it {reason}.", def.name);
    if !tail.trim().is_empty() {
        message.push_str(" Last output: ");
        message.push_str(tail.trim());
    }
    Err(BrokerError::new(ErrorCode::AgentNotReady, message))
}

/// Where a visible sheep's pane goes: the caller's tmux server and pane, when it has them.
pub(crate) fn placement_context(
    kind: BackendKind,
    caller: &CallerContext,
) -> (Option<String>, Option<PathBuf>) {
    use shepherd_term::tmux::{Server, TmuxBackend, socket_from_tmux_env};
    match kind {
        BackendKind::Tmux => {
            let socket = caller.tmux.as_deref().and_then(socket_from_tmux_env);
            let server = socket.clone().map_or(Server::Default, Server::Socket);
            let pane =
                TmuxBackend::new().caller_pane(&server, caller.tmux_pane.as_deref(), caller.pid);
            // Outside tmux the caller has no pane; sheep go to the detached default session.
            (pane.filter(|_| socket.is_some()), socket)
        }
        BackendKind::Herdr => (caller.herdr_pane.clone(), None),
        BackendKind::Headless => (None, None),
    }
}

/// A launch that never happened (its command could not be built, or the backend refused):
/// nobody waits for its readiness any more and the sheep is recorded as failed.
pub(crate) async fn never_launched(broker: &Arc<Broker>, id: &AgentId, reason: String) {
    forget_ready_waiter(broker, id);
    let exit = ExitInfo {
        reason: Some(reason),
        ..ExitInfo::default()
    };
    // Nothing of it runs: it is done with at once, not left listed until a prune.
    broker.store.commit(|tx| {
        shepherd_core::herd::failed_to_start(tx, id, exit);
        shepherd_core::herd::closed(tx, id);
    });
    crate::sheep::isolation::release(broker, id, true).await;
}

fn forget_ready_waiter(broker: &Broker, id: &AgentId) {
    broker
        .links
        .lock()
        .expect("links lock")
        .ready_waiters
        .remove(id);
}

/// Gives up on a launch: nobody waits for its readiness any more, its pane and processes are
/// ended (within a deadline), and the sheep is recorded as failed to start.
async fn abandon_launch(
    broker: &Arc<Broker>,
    id: &AgentId,
    backend: &Arc<dyn Backend>,
    record: LaunchRecord,
    exit: ExitInfo,
) {
    forget_ready_waiter(broker, id);
    let closer = backend.clone();
    let closed = tokio::task::spawn_blocking(move || {
        closer.close(
            &record,
            false,
            Instant::now() + std::time::Duration::from_secs(10),
        )
    })
    .await;
    // Its processes and pane are ended: it is done with at once, not left listed until a prune.
    broker.store.commit(|tx| {
        shepherd_core::herd::failed_to_start(tx, id, exit);
        shepherd_core::herd::closed(tx, id);
    });
    let confirmed = matches!(closed, Ok(Ok(_)));
    crate::sheep::isolation::release(broker, id, confirmed).await;
}

/// The environment a sheep starts with: its capability, where to find the broker and the
/// `shepherd` binary, and how deep it is nested.
fn sheep_env(config: &BrokerConfig, id: &AgentId, token: &str) -> Vec<(String, String)> {
    let exe = &config.shepherd_exe;
    // `shepherd` itself goes on the sheep's PATH in its supervisor: some terminals (tmux) give a
    // new pane the launching client's PATH whatever the launch asked for.
    vec![
        (
            "SHEPHERD_SOCKET".to_owned(),
            config.paths.socket.display().to_string(),
        ),
        ("SHEPHERD_AGENT_ID".to_owned(), id.to_string()),
        ("SHEPHERD_TOKEN".to_owned(), token.to_owned()),
        ("SHEPHERD_DEPTH".to_owned(), (config.depth + 1).to_string()),
        (
            "SHEPHERD_PROJECT".to_owned(),
            config.address.project_root.display().to_string(),
        ),
        ("SHEPHERD_BIN".to_owned(), exe.display().to_string()),
    ]
}

/// What of git a confined sheep's sandbox holds: what its spawn decided, else what the broker
/// knows of its working directory (a worktree it made, or a `.git` to keep read-only; on a
/// host, the working directory's `.git`, read-only).
fn git_binds(config: &BrokerConfig, prepared: &Prepared) -> crate::sheep::worktree::GitBinds {
    if !prepared.sandbox.is_on() {
        return crate::sheep::worktree::GitBinds::default();
    }
    if let Some(git) = &prepared.git {
        return git.clone();
    }
    match prepared.host {
        None => crate::sheep::worktree::sandbox_binds(
            &config.dirs.state_dir,
            &config.address.project_root,
            &prepared.cwd,
        ),
        Some(_) => crate::sheep::worktree::GitBinds {
            write: Vec::new(),
            read: vec![prepared.cwd.join(".git")],
        },
    }
}

/// Records a visible sheep's pane as Shepherd's own, so only it is ever closed.
fn register_pane(
    broker: &Broker,
    id: &AgentId,
    display: &str,
    kind: BackendKind,
    record: &LaunchRecord,
) -> Result<(), shepherd_term::registry::RegistryError> {
    let Some(pane) = &record.pane else {
        return Ok(());
    };
    let cwd = broker
        .store
        .read(|herd| herd.sheep.get(id).map(|s| s.cwd.clone()))
        .unwrap_or_default();
    broker
        .registry()
        .register(shepherd_term::registry::PaneEntry {
            pane_id: pane.clone(),
            tab_id: record.window.clone(),
            name: display.to_owned(),
            cwd,
            created_at: shepherd_core::time::iso(shepherd_core::time::from_millis(
                broker.store.now(),
            )),
            dir: None,
            owner_session: Some(broker.config.address.identity.clone()),
            owner_project: Some(broker.config.address.project_root.display().to_string()),
            backend: Some(kind),
            server: record.server.clone(),
            agent_id: Some(id.to_string()),
        })
}

/// A working directory a caller named, inside the project unless absolute; it must exist.
pub(crate) fn resolve_cwd(root: &Path, requested: Option<&str>) -> BrokerResult<PathBuf> {
    let path = match requested {
        None | Some("") => root.to_path_buf(),
        Some(text) => root.join(text),
    };
    let canonical = path.canonicalize().map_err(|err| {
        BrokerError::new(
            ErrorCode::InvalidCwd,
            format!(
                "cwd `{}` is not an existing directory: {err}",
                path.display()
            ),
        )
    })?;
    if !canonical.is_dir() {
        return Err(BrokerError::new(
            ErrorCode::InvalidCwd,
            format!("cwd `{}` is not a directory", path.display()),
        ));
    }
    Ok(canonical)
}
