//! `spawn`: admit a sheep, launch it under its supervisor, and answer once it runs.
//!
//! Everything a spawn can refuse is checked before anything is started: the label first (code
//! `invalid_label`), then the agent definition, its approval, the nesting depth, the backend,
//! the working directory and label uniqueness. The sheep then counts as ready only when its
//! supervisor reports that the program runs; one that exits or stays silent past the start-up
//! limit is cleaned up and the spawn fails with the end of its output.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use shepherd_core::agent_def::AgentDef;
use shepherd_core::harness::{Harness, Runtime};
use shepherd_core::herd::{ExitInfo, NewSheep};
use shepherd_core::ids::AgentId;
use shepherd_core::label::{display_name, validate_label};
use shepherd_core::protocol::{CallerContext, SpawnParams, SpawnResult};
use shepherd_core::settings::Backend as BackendSetting;
use shepherd_term::{Backend, BackendKind, LaunchRecord, LaunchSpec, Placement, ReadSource};
use tokio::sync::oneshot;

use crate::broker::Broker;
use crate::error::{BrokerError, BrokerResult};

/// Runs `spawn`. A resent spawn (same client request id) follows the sheep its first copy
/// admitted instead of starting another.
pub(crate) async fn spawn(
    broker: &Arc<Broker>,
    params: SpawnParams,
    rid: Option<&str>,
) -> BrokerResult<SpawnResult> {
    if let Some(id) =
        rid.and_then(|rid| broker.read(|herd| herd.sheep_by_request(rid).map(|s| s.id.clone())))
    {
        // The first copy's sheep never got as far as being placed (a broker restart cut its
        // launch short): it is recorded as failed and a fresh one started under the same id.
        // Any other sheep of the first copy is followed to its end.
        let record = current_launch(broker, &id);
        let placed =
            record.supervisor_pid.is_some() || record.pid.is_some() || record.pane.is_some();
        let starting = broker.read(|herd| {
            herd.sheep
                .get(&id)
                .is_some_and(|s| s.phase == shepherd_core::herd::Phase::Starting)
        });
        if placed || !starting {
            return follow(broker, &id, &params).await;
        }
        never_launched(
            broker,
            &id,
            "its launch was cut short by a broker restart".to_owned(),
        );
    }
    let label = validate_label(params.label.as_deref().unwrap_or_default())
        .map_err(|err| BrokerError::new(err.code(), err.to_string()))?;
    let settings = broker.settings();
    let def = shepherd_config::resolve_agent(
        &broker.config.dirs,
        &broker.config.address.project_root,
        &settings,
        &params.agent,
    )
    .map_err(|err| BrokerError::new(err.code(), err.to_string()))?;
    if broker.config.depth + 1 > settings.max_depth {
        return Err(BrokerError::new(
            "depth_exceeded",
            format!(
                "this herd is nested {} deep and maxDepth is {}; a sheep at this depth may not spawn sheep of its own",
                broker.config.depth, settings.max_depth
            ),
        ));
    }
    let runtime = runtime_of(&def, &params)?;
    if let Some(model) = params.model.as_ref().filter(|_| runtime == Runtime::Command) {
        return Err(BrokerError::new(
            "invalid_model",
            format!(
                "--model `{model}` applies to coding agents only; \"{}\" runs a command",
                def.name
            ),
        ));
    }
    // Another agent is checked before anything is started: installed, and able to keep to the
    // definition's tools.
    let other_agent = match runtime.harness() {
        Some(harness) if harness != Harness::Pi => Some(crate::harness::check(harness, &def)?),
        _ => None,
    };
    let caller = params.caller.clone().unwrap_or_default();
    let kind = choose_backend(params.backend.as_deref(), settings.backend, &caller, broker).await?;
    let placement = match params.placement.as_deref() {
        None => Placement::Tab,
        Some(text) => Placement::parse(text).ok_or_else(|| {
            BrokerError::new(
                "invalid_placement",
                format!("placement `{text}` is not one of tab, pane_right, pane_down, workspace"),
            )
        })?,
    };
    let cwd = resolve_cwd(&broker.config.address.project_root, params.cwd.as_deref())?;
    let backend = broker.backend(kind)?;
    broker.read(|herd| herd.check_unique_display_name(&def.name, &label))?;

    let fieldnote = fieldnote_session(broker, &params, broker.fieldnotes_on().await?).await?;

    let id = AgentId::mint(
        &broker.config.address.namespace,
        &uuid::Uuid::new_v4().to_string(),
    );
    let token = crate::auth::new_token();
    let supervisor_token = crate::auth::new_token();
    let new = NewSheep {
        id: id.clone(),
        agent: def.name.clone(),
        label: label.clone(),
        backend: kind.as_str().to_owned(),
        runtime,
        cwd: cwd.display().to_string(),
        token_digest: crate::auth::digest(&token),
        supervisor_digest: Some(crate::auth::digest(&supervisor_token)),
        request_id: rid.map(str::to_owned),
    };
    let (ready_tx, ready_rx) = oneshot::channel();
    broker
        .links
        .lock()
        .expect("links lock")
        .ready_waiters
        .insert(id.clone(), ready_tx);
    if let Err(err) = broker
        .commit_durable(|tx| shepherd_core::herd::admit(tx, new))
        .await
    {
        broker
            .links
            .lock()
            .expect("links lock")
            .ready_waiters
            .remove(&id);
        return Err(err);
    }

    let mut env = sheep_env(broker, &id, &token);
    let launched = match (&def.command, &other_agent) {
        (Some(argv), _) => Ok(argv.clone()),
        (None, Some(checked)) => {
            crate::harness::launch(broker, checked, &def, &params, &id, cwd.clone())
        }
        (None, None) => {
            crate::pi::launch(broker, &def, &params, &id, kind == BackendKind::Headless).map(
                |launch| {
                    env.extend(launch.env);
                    launch.argv
                },
            )
        }
    };
    let program = match launched {
        Ok(program) => program,
        Err(err) => {
            never_launched(broker, &id, err.message.clone());
            return Err(err);
        }
    };
    let display = display_name(&def.name, &label);
    let (caller_pane, tmux_socket) = placement_context(kind, &caller);
    let credential = match crate::auth::write_credential(broker, &id, &supervisor_token) {
        Ok(path) => path,
        Err(err) => {
            never_launched(broker, &id, err.message.clone());
            return Err(err);
        }
    };
    let supervisor_args = vec![
        "--credential-file".to_owned(),
        credential.display().to_string(),
        "--broker-state".to_owned(),
        broker.config.paths.state_dir.display().to_string(),
    ];
    let spec = LaunchSpec {
        agent_id: id.to_string(),
        display_name: display.clone(),
        cwd,
        program,
        env,
        keep_stdin: runtime.is_pi(),
        shepherd_exe: broker.config.shepherd_exe.clone(),
        socket: broker.config.paths.socket.clone(),
        log: broker.config.paths.sheep_logs.join(format!("{id}.log")),
        placement,
        caller_pane,
        caller_pid: caller.pid,
        tmux_socket,
        keep_open: settings.keep_open,
        orphan_grace: broker.config.orphan_grace,
        supervisor_args,
    };
    let launch_backend = backend.clone();
    let launched = tokio::task::spawn_blocking(move || launch_backend.launch(&spec))
        .await
        .map_err(|err| BrokerError::new("internal", err.to_string()))?;
    let record = match launched {
        Ok(record) => record,
        Err(err) => {
            let _unused = fs_err::remove_file(&credential);
            never_launched(broker, &id, err.to_string());
            return Err(BrokerError::new(
                "spawn_failed",
                format!("Agent \"{}\" could not be started: {err}", def.name),
            ));
        }
    };
    merge_launch(broker, &id, &record);
    if let Err(err) = register_pane(broker, &id, &display, kind, &record) {
        let exit = ExitInfo {
            reason: Some(err.to_string()),
            ..ExitInfo::default()
        };
        abandon_launch(broker, &id, &backend, record, exit).await;
        return Err(BrokerError::new(
            "spawn_failed",
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
    match outcome {
        Ok(()) => Ok(SpawnResult {
            agent_id: id,
            agent: def.name,
            label: label.as_str().to_owned(),
            display_name: display,
            backend: kind.as_str().to_owned(),
            fieldnote,
        }),
        Err(mut exit) => {
            let record = current_launch(broker, &id);
            if exit.tail.is_empty() {
                exit.tail = backend
                    .read(&record, ReadSource::RecentUnwrapped, 20)
                    .unwrap_or_default();
            }
            let reason = exit.describe();
            let tail = exit.tail.clone();
            abandon_launch(broker, &id, &backend, record, exit).await;
            let mut message = format!("Agent \"{}\" failed to start: it {reason}.", def.name);
            if !tail.trim().is_empty() {
                message.push_str(" Last output: ");
                message.push_str(tail.trim());
            }
            Err(BrokerError::new("agent_not_ready", message))
        }
    }
}

/// What runs a spawn's sheep: the definition's command, else the coding agent the spawn asks
/// for or the definition names. A command definition cannot run on another agent.
fn runtime_of(def: &AgentDef, params: &SpawnParams) -> BrokerResult<Runtime> {
    match (&def.command, params.harness) {
        (Some(_), Some(harness)) if harness != Harness::Pi => Err(BrokerError::new(
            "invalid_harness",
            format!(
                "--harness {harness} applies to coding-agent definitions; \"{}\" runs a command",
                def.name
            ),
        )),
        (Some(_), _) => Ok(Runtime::Command),
        (None, requested) => Ok(Runtime::Agent(requested.unwrap_or(def.harness))),
    }
}

/// The fieldnotes session a spawn reports: the one the caller named, else the parent's own
/// (created on first use) when fieldnotes are on.
async fn fieldnote_session(
    broker: &Arc<Broker>,
    params: &SpawnParams,
    fieldnotes_on: bool,
) -> BrokerResult<Option<String>> {
    if let Some(session) = &params.fieldnotes_session {
        return Ok(Some(checked_session_path(session)?));
    }
    if !fieldnotes_on {
        return Ok(None);
    }
    let fieldnotes = broker.fieldnotes();
    let session = tokio::task::spawn_blocking(move || fieldnotes.parent_session())
        .await
        .map_err(|err| BrokerError::new("internal", err.to_string()))??;
    Ok(Some(session.relative))
}

/// Answers a resent spawn from the sheep its first copy admitted: once it runs, or with why it
/// did not start. A restarted broker's recovery settles a sheep left starting, so this ends.
async fn follow(
    broker: &Arc<Broker>,
    id: &AgentId,
    params: &SpawnParams,
) -> BrokerResult<SpawnResult> {
    let limit = broker.config.startup_limit
        + broker.config.adoption_grace
        + std::time::Duration::from_secs(5);
    let deadline = tokio::time::Instant::now() + limit;
    let mut generation = broker.generation.subscribe();
    loop {
        generation.borrow_and_update();
        let sheep = broker
            .read(|herd| herd.sheep.get(id).cloned())
            .ok_or_else(|| BrokerError::new("internal", format!("sheep {id} vanished")))?;
        match sheep.phase {
            shepherd_core::herd::Phase::Starting => {}
            shepherd_core::herd::Phase::Ready => {
                let fieldnote =
                    fieldnote_session(broker, params, broker.fieldnotes_on().await?).await?;
                return Ok(SpawnResult {
                    agent_id: sheep.id.clone(),
                    agent: sheep.agent.clone(),
                    label: sheep.label.as_str().to_owned(),
                    display_name: sheep.display_name(),
                    backend: sheep.backend.clone(),
                    fieldnote,
                });
            }
            _ => {
                let exit = sheep.exit.clone().unwrap_or_default();
                let mut message = format!(
                    "Agent \"{}\" failed to start: it {}.",
                    sheep.agent,
                    exit.describe()
                );
                if !exit.tail.trim().is_empty() {
                    message.push_str(" Last output: ");
                    message.push_str(exit.tail.trim());
                }
                return Err(BrokerError::new("agent_not_ready", message));
            }
        }
        tokio::select! {
            changed = generation.changed() => if changed.is_err() {
                return Err(BrokerError::new("broker_stopping", "the broker is stopping"));
            },
            () = tokio::time::sleep_until(deadline) => {
                return Err(BrokerError::new(
                    "agent_not_ready",
                    format!("{} did not become ready within {} s", sheep.display_name(), limit.as_secs()),
                ));
            }
        }
    }
}

/// The backend for a spawn: the caller's choice, else the setting. `auto` means Herdr inside
/// Herdr, tmux inside tmux, otherwise headless.
pub(crate) async fn choose_backend(
    requested: Option<&str>,
    setting: BackendSetting,
    caller: &CallerContext,
    broker: &Arc<Broker>,
) -> BrokerResult<BackendKind> {
    let name = requested.unwrap_or(setting.as_str());
    // Inside Herdr, Herdr — falling back to what else fits if its server does not answer
    // (never started, or gone since it was connected), and saying so.
    let herdr_down = if name == "auto" && caller.in_herdr {
        crate::herdr_link::ensure(broker, caller, false).await.err()
    } else {
        None
    };
    let kind = match name {
        "auto" if caller.in_herdr && herdr_down.is_none() => BackendKind::Herdr,
        "auto" if caller.tmux.is_some() && broker.has_backend(BackendKind::Tmux) => {
            BackendKind::Tmux
        }
        "auto" => BackendKind::Headless,
        other => BackendKind::parse(other).ok_or_else(|| {
            BrokerError::new(
                "invalid_backend",
                format!("backend `{other}` is not one of auto, headless, tmux, herdr"),
            )
        })?,
    };
    if let Some(err) = herdr_down {
        tracing::warn!(
            "backend auto inside Herdr: {}; this sheep runs on {} instead",
            err.message,
            kind.as_str()
        );
    }
    if kind == BackendKind::Herdr && name != "auto" {
        // Chosen explicitly: start a Herdr server if none runs.
        crate::herdr_link::ensure(broker, caller, true).await?;
    }
    broker.backend(kind)?;
    Ok(kind)
}

/// Where a visible sheep's pane goes: the caller's tmux server and pane, when it has them.
fn placement_context(
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

fn resolve_cwd(root: &Path, requested: Option<&str>) -> BrokerResult<PathBuf> {
    let path = match requested {
        None | Some("") => root.to_path_buf(),
        Some(text) => root.join(text),
    };
    let canonical = path.canonicalize().map_err(|err| {
        BrokerError::new(
            "invalid_cwd",
            format!(
                "cwd `{}` is not an existing directory: {err}",
                path.display()
            ),
        )
    })?;
    if !canonical.is_dir() {
        return Err(BrokerError::new(
            "invalid_cwd",
            format!("cwd `{}` is not a directory", path.display()),
        ));
    }
    Ok(canonical)
}

/// A launch that never happened (its command could not be built, or the backend refused):
/// nobody waits for its readiness any more and the sheep is recorded as failed to start.
fn never_launched(broker: &Arc<Broker>, id: &AgentId, reason: String) {
    forget_ready_waiter(broker, id);
    let exit = ExitInfo {
        reason: Some(reason),
        ..ExitInfo::default()
    };
    // Nothing of it runs: it is done with at once, not left listed until a prune.
    broker.commit(|tx| {
        shepherd_core::herd::failed_to_start(tx, id, exit);
        shepherd_core::herd::closed(tx, id);
    });
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
    let _closed = tokio::task::spawn_blocking(move || {
        closer.close(
            &record,
            false,
            Instant::now() + std::time::Duration::from_secs(10),
        )
    })
    .await;
    // Its processes and pane are ended: it is done with at once, not left listed until a prune.
    broker.commit(|tx| {
        shepherd_core::herd::failed_to_start(tx, id, exit);
        shepherd_core::herd::closed(tx, id);
    });
}

/// A session named by the caller, accepted only as `.shepherd/sessions/<directory>`.
fn checked_session_path(session: &str) -> BrokerResult<String> {
    use std::path::Component;
    let parts: Vec<Component<'_>> = Path::new(session).components().collect();
    let well_formed = matches!(
        parts.as_slice(),
        [Component::Normal(dot), Component::Normal(sessions), Component::Normal(_)]
            if *dot == ".shepherd" && *sessions == "sessions"
    );
    if well_formed {
        Ok(session.to_owned())
    } else {
        Err(BrokerError::new(
            "invalid_session",
            format!(
                "fieldnotes session `{session}` must be a project-relative session directory, \
                 `.shepherd/sessions/NNNN-slug`"
            ),
        ))
    }
}

/// The environment a sheep starts with: its capability, where to find the broker and the
/// `shepherd` binary, and how deep it is nested.
fn sheep_env(broker: &Broker, id: &AgentId, token: &str) -> Vec<(String, String)> {
    let exe = &broker.config.shepherd_exe;
    let env = vec![
        (
            "SHEPHERD_SOCKET".to_owned(),
            broker.config.paths.socket.display().to_string(),
        ),
        ("SHEPHERD_AGENT_ID".to_owned(), id.to_string()),
        ("SHEPHERD_TOKEN".to_owned(), token.to_owned()),
        (
            "SHEPHERD_DEPTH".to_owned(),
            (broker.config.depth + 1).to_string(),
        ),
        (
            "SHEPHERD_PROJECT".to_owned(),
            broker.config.address.project_root.display().to_string(),
        ),
        ("SHEPHERD_BIN".to_owned(), exe.display().to_string()),
    ];
    // `shepherd` itself goes on the sheep's PATH in its supervisor: some terminals (tmux) give a
    // new pane the launching client's PATH whatever the launch asked for.
    env
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
        .read(|herd| herd.sheep.get(id).map(|s| s.cwd.clone()))
        .unwrap_or_default();
    broker
        .registry()
        .register(shepherd_term::registry::PaneEntry {
            pane_id: pane.clone(),
            tab_id: record.window.clone(),
            name: display.to_owned(),
            cwd,
            created_at: shepherd_core::time::iso(shepherd_core::time::from_millis(broker.now())),
            dir: None,
            owner_session: Some(broker.config.address.identity.clone()),
            owner_project: Some(broker.config.address.project_root.display().to_string()),
            backend: Some(kind),
            server: record.server.clone(),
            agent_id: Some(id.to_string()),
        })
}

/// Merges backend facts into the sheep's launch record and journals it.
pub(crate) fn merge_launch(broker: &Arc<Broker>, id: &AgentId, update: &LaunchRecord) {
    let mut record = current_launch(broker, id);
    macro_rules! take {
        ($($field:ident),*) => { $( if update.$field.is_some() { record.$field.clone_from(&update.$field); } )* };
    }
    take!(supervisor_pid, pid, log, pane, window, server);
    let value = serde_json::to_value(&record).expect("launch records serialise");
    broker.commit(|tx| shepherd_core::herd::launched(tx, id, value));
}

/// The sheep's launch record as journaled.
pub(crate) fn current_launch(broker: &Broker, id: &AgentId) -> LaunchRecord {
    broker.read(|herd| {
        herd.sheep
            .get(id)
            .map(|s| serde_json::from_value(s.launch.clone()).unwrap_or_default())
            .unwrap_or_default()
    })
}
