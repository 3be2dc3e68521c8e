//! `spawn`: admit a sheep, launch it under its supervisor, and answer once it runs.
//!
//! Everything a spawn can refuse is checked before anything is started: the label first (code
//! `invalid_label`), then the agent definition, its approval, the nesting depth, the backend,
//! the working directory, label uniqueness, `maxSheep` and, with `isolate`, the git
//! repository. An isolated sheep's worktree is made next, then the sheep is admitted and
//! launched (`launch`, shared with `resume`). It counts as ready only when its supervisor
//! reports that the program runs; one that exits or stays silent past the start-up limit is
//! cleaned up and the spawn fails with the end of its output.

pub(crate) mod launch;

use shepherd_core::error_code::ErrorCode;
use std::sync::Arc;

use shepherd_core::harness::{Harness, Runtime};
use shepherd_core::herd::NewSheep;
use shepherd_core::ids::AgentId;
use shepherd_core::label::validate_label;
use shepherd_core::protocol::{CallerContext, SpawnParams, SpawnResult};
use shepherd_core::settings::Backend as BackendSetting;
use shepherd_core::worktree::{MadeWorktree, SheepWorktree};
use shepherd_term::BackendKind;

use launch::{Credentials, Prepared, never_launched, resolve_cwd};

use crate::error::{BrokerError, BrokerResult};
use crate::sheep::harness::Controls;
use crate::sheep::launch_record::current_launch;
use crate::state::broker::Broker;

/// Runs `spawn`. A resent spawn (same client request id) follows the sheep its first copy
/// admitted instead of starting another.
pub(crate) async fn spawn(
    broker: &Arc<Broker>,
    params: SpawnParams,
    rid: Option<&str>,
) -> BrokerResult<SpawnResult> {
    spawn_as(broker, params, rid, None).await
}

/// Runs `spawn` for a sheep Shepherd makes for a task in `role` (a resolver, a fixer, a
/// fallback): its display name carries the role in the agent part, and its label is the one
/// `params` gives (the label of the sheep whose work it handles, never one made up).
pub(crate) async fn spawn_as(
    broker: &Arc<Broker>,
    params: SpawnParams,
    rid: Option<&str>,
    role: Option<shepherd_core::label::Role>,
) -> BrokerResult<SpawnResult> {
    if let Some(id) = rid.and_then(|rid| {
        broker
            .store
            .read(|herd| herd.sheep_by_request(rid).map(|s| s.id.clone()))
    }) {
        // The first copy's sheep never got as far as being placed (a broker restart cut its
        // launch short): it is recorded as failed and a fresh one started under the same id.
        // Any other sheep of the first copy is followed to its end.
        let record = current_launch(&broker.store, &id);
        let placed =
            record.supervisor_pid.is_some() || record.pid.is_some() || record.pane.is_some();
        let starting = broker.store.read(|herd| {
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
        )
        .await;
    }
    let settings = broker.config.settings();
    let mut prepared = prepare(broker, &params, None).await?;
    let def = &prepared.def;
    let shown = shepherd_core::herd::shown_agent(&def.name, role, prepared.runtime, Some(&params));
    broker
        .store
        .read(|herd| herd.check_unique_display_name(&shown, &prepared.label))?;
    // What the sheep spends: its provider key (a credential of its own makes another one) and
    // its provider's name, known whether keys are held or not.
    let key = crate::sheep::provider_limits::key_for(
        prepared.runtime,
        &prepared.def,
        &params,
        prepared.host.as_deref(),
    )?;
    broker
        .store
        .read(|herd| herd.check_sheep_room(settings.max_sheep()))?;
    let repo = if params.isolate && prepared.host.is_none() {
        Some(crate::sheep::isolation::probe(&prepared.cwd)?)
    } else {
        None
    };

    let fieldnote = fieldnote_session(broker, &params, broker.fieldnotes_on().await?).await?;

    let id = AgentId::mint(
        &broker.config.address.namespace,
        &uuid::Uuid::new_v4().to_string(),
    );
    let worktree = match (repo, &prepared.host) {
        (_, Some(host)) if params.isolate => {
            let name =
                crate::sheep::isolation::name_for(&prepared.def.name, prepared.label.as_str(), &id);
            let (remote, cwd) =
                crate::sheep::remote_sheep::code::create(broker, host, name).await?;
            prepared.cwd = cwd;
            // Its repository on the host is its own: its sandbox reads the host checkout's
            // objects and nothing else of its git directory.
            prepared.git = Some(crate::sheep::worktree::GitBinds {
                write: Vec::new(),
                read: remote.objects.clone(),
            });
            Some(SheepWorktree::made(MadeWorktree::Remote { remote }))
        }
        (Some(repo), _) => {
            let name =
                crate::sheep::isolation::name_for(&prepared.def.name, prepared.label.as_str(), &id);
            let path =
                crate::sheep::worktree::path_for(&broker.config.dirs.state_dir, &repo, &name);
            let made = crate::sheep::isolation::create(repo, path).await?;
            prepared.cwd = made.cwd();
            Some(SheepWorktree::made(MadeWorktree::Here(made)))
        }
        (None, _) => None,
    };
    let credentials = Credentials::mint();
    let new = NewSheep {
        id: id.clone(),
        agent: prepared.def.name.clone(),
        label: prepared.label.clone(),
        role,
        backend: prepared.kind,
        runtime: prepared.runtime,
        model: prepared
            .is_pi()
            .then(|| crate::sheep::pi_launch::choices(&prepared.def, &params).0)
            .flatten(),
        cwd: prepared.cwd.display().to_string(),
        token_digest: crate::state::auth::digest(&credentials.token),
        supervisor_digest: Some(crate::state::auth::digest(&credentials.supervisor)),
        request_id: rid.map(str::to_owned),
        max_sheep: settings.max_sheep(),
        budget: prepared.def.budget,
        recipe: recipe(&SpawnParams {
            host: prepared.host.clone(),
            // The sandbox it runs in is its own, whatever the settings say later.
            sandbox: Some(prepared.sandbox).filter(|sandbox| sandbox.is_on()),
            // And so are its limits.
            limits: Some(prepared.limits),
            ..params.clone()
        }),
        worktree: worktree.clone(),
        provider: key
            .as_ref()
            .map(|key| crate::sheep::provider_limits::provider_name(key, &params)),
        // Without holding keys a sheep has none: a limit then holds that sheep alone.
        provider_key: key.filter(|_| settings.hold_provider_keys),
        turn_cap: settings.max_concurrent_turns(),
    };
    let ready_rx = launch::await_ready(broker, &id);
    if let Err(err) = broker
        .store
        .commit_durable(|tx| shepherd_core::herd::admit(tx, new))
        .await
    {
        broker
            .links
            .lock()
            .expect("links lock")
            .ready_waiters
            .remove(&id);
        if let Some(SheepWorktree {
            made: MadeWorktree::Here(made),
            ..
        }) = worktree
        {
            let _kept = tokio::task::spawn_blocking({
                let owner = id.to_string();
                move || crate::sheep::worktree::release(&made, true, &owner)
            })
            .await;
        }
        return Err(err);
    }
    launch::launch(broker, &id, &prepared, &params, &credentials, ready_rx).await?;
    Ok(SpawnResult {
        agent_id: id,
        agent: prepared.def.name.clone(),
        label: prepared.label.as_str().to_owned(),
        display_name: shepherd_core::label::display_name(&shown, &prepared.label),
        backend: prepared.kind,
        fieldnote,
        worktree: worktree.as_ref().map(SheepWorktree::place),
        host: prepared.host.clone(),
        resumes: None,
    })
}

/// What a sheep's spawn asked for, kept on the sheep so a resume starts it the same way (the
/// caller's terminal is the resume's own).
fn recipe(params: &SpawnParams) -> Option<SpawnParams> {
    Some(SpawnParams {
        caller: None,
        ..params.clone()
    })
}

/// The checks a spawn or a resume makes before anything starts, and what they decided: the
/// definition (resolved, approved), depth, model, budget, backend, placement and directory.
/// A resume passes the directory its sheep runs in.
pub(crate) async fn prepare(
    broker: &Arc<Broker>,
    params: &SpawnParams,
    cwd: Option<std::path::PathBuf>,
) -> BrokerResult<Prepared> {
    let label = validate_label(params.label.as_deref().unwrap_or_default())
        .map_err(|err| BrokerError::new(err.code(), err.to_string()))?;
    let settings = broker.config.settings();
    let def = shepherd_config::resolve_agent(
        &broker.config.dirs,
        &broker.config.address.project_root,
        &settings,
        &params.agent,
    )
    .map_err(|err| BrokerError::new(err.code(), err.to_string()))?;
    if broker.config.depth + 1 > settings.max_depth {
        return Err(BrokerError::new(
            ErrorCode::DepthExceeded,
            format!(
                "this herd is nested {} deep and maxDepth is {}; a sheep at this depth may not spawn sheep of its own",
                broker.config.depth, settings.max_depth
            ),
        ));
    }
    let runtime = crate::sheep::harness::runtime_of(&def, params.harness)?;
    if let Some(model) = params
        .model
        .as_ref()
        .filter(|_| runtime == Runtime::Command)
    {
        return Err(BrokerError::new(
            ErrorCode::InvalidModel,
            format!(
                "--model `{model}` applies to coding agents only; \"{}\" runs a command",
                def.name
            ),
        ));
    }
    // Another agent is checked before anything is started: installed, and able to keep to the
    // definition's tools.
    // On a host, the host finds the agent's program itself (when it composes the sheep).
    let host = params.host.clone().or_else(|| def.host.clone());
    let agent = match runtime.harness() {
        Some(harness) if harness != Harness::Pi => {
            Some(crate::sheep::harness::check(harness, &def, host.is_none())?)
        }
        _ => None,
    };
    let sandbox = crate::sheep::sandbox::chosen(params, &def, &settings);
    if host.is_none() {
        crate::sheep::sandbox::check_here(sandbox, &def)?;
    }
    let limits = crate::sheep::limits::chosen(&broker.config, params, &def);
    let caller = params.caller.clone().unwrap_or_default();
    let (kind, backend, cwd) = match &host {
        Some(host) => {
            let (kind, backend, host_cwd) =
                remote_place(broker, host, params.backend, params.cwd.as_deref()).await?;
            (kind, Some(backend), Some(cwd.unwrap_or(host_cwd)))
        }
        None => (
            choose_backend(params.backend, settings.backend, &caller, broker).await?,
            None,
            cwd,
        ),
    };
    if def.budget.is_some() {
        Controls::of(runtime)
            .shown(kind.is_visible())
            .check_budget(&format!(
                "agent \"{}\" sets a budget, but its sheep",
                def.name
            ))?;
    }
    let placement = params.placement.unwrap_or_default();
    let cwd = match cwd {
        Some(cwd) => cwd,
        None => resolve_cwd(&broker.config.address.project_root, params.cwd.as_deref())?,
    };
    // A confined sheep's directory is writable, and what lies inside a git directory is what
    // git runs (hooks, configuration): no sandbox makes one writable.
    if sandbox.is_on() && host.is_none() && cwd.components().any(|part| part.as_os_str() == ".git")
    {
        return Err(BrokerError::new(
            ErrorCode::InvalidCwd,
            format!(
                "a confined sheep cannot work inside a git directory (`{}`); give it the \
                 repository's working tree instead",
                cwd.display()
            ),
        ));
    }
    let backend = match backend {
        Some(backend) => backend,
        None => broker.backend(kind)?,
    };
    Ok(Prepared {
        host,
        sandbox,
        limits,
        def,
        runtime,
        agent,
        label,
        kind,
        backend,
        placement,
        cwd,
        git: None,
    })
}

/// Where a sheep on `host` runs: the backend asked for (`auto`: the host's own), that
/// backend on the host once its link is up, and the directory there.
async fn remote_place(
    broker: &Arc<Broker>,
    host: &str,
    requested: Option<BackendSetting>,
    cwd: Option<&str>,
) -> BrokerResult<(
    BackendKind,
    Arc<dyn shepherd_term::Backend>,
    std::path::PathBuf,
)> {
    let link = crate::sheep::remote_sheep::link(broker, host)?;
    let kind = match requested {
        None | Some(BackendSetting::Auto) => link.def.backend,
        Some(BackendSetting::Headless) => BackendKind::Headless,
        Some(BackendSetting::Tmux) => BackendKind::Tmux,
        Some(BackendSetting::Herdr) => BackendKind::Herdr,
    };
    let cwd = crate::remote::backend::host_cwd(
        &broker.config.address.project_root,
        &link.def.project_path,
        cwd,
    )
    .map_err(|why| BrokerError::new(ErrorCode::InvalidCwd, why))?;
    let backend = crate::sheep::remote_sheep::backend_for_spawn(broker, host, kind).await?;
    Ok((kind, backend, cwd))
}

/// The fieldnotes session a spawn reports: the one the caller named, else the parent's own
/// when fieldnotes are on, once it exists (the first note reserved in it creates it).
pub(crate) async fn fieldnote_session(
    broker: &Arc<Broker>,
    params: &SpawnParams,
    fieldnotes_on: bool,
) -> BrokerResult<Option<String>> {
    let named = params.session_name.clone();
    if named.is_none() && !fieldnotes_on {
        return Ok(None);
    }
    if let Some(name) = &named {
        shepherd_core::slug::validate_session_name(name)
            .map_err(|err| BrokerError::new(ErrorCode::InvalidSessionName, err.to_string()))?;
    }
    let fieldnotes = broker.fieldnotes();
    let session = tokio::task::spawn_blocking(move || fieldnotes.session_summary(named))
        .await
        .map_err(|err| BrokerError::new(ErrorCode::Internal, err.to_string()))??;
    Ok(session.map(|session| session.relative))
}

/// Answers a resent spawn from the sheep its first copy admitted: once it runs, or with why it
/// did not start. A restarted broker's recovery settles a sheep left starting, so this ends.
pub(crate) async fn follow(
    broker: &Arc<Broker>,
    id: &AgentId,
    params: &SpawnParams,
) -> BrokerResult<SpawnResult> {
    let limit = broker.config.startup_limit
        + broker.config.adoption_grace
        + std::time::Duration::from_secs(5);
    let deadline = tokio::time::Instant::now() + limit;
    let mut generation = broker.store.generation.subscribe();
    loop {
        generation.borrow_and_update();
        let sheep = broker
            .store
            .read(|herd| herd.sheep.get(id).cloned())
            .ok_or_else(|| BrokerError::new(ErrorCode::Internal, format!("sheep {id} vanished")))?;
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
                    backend: sheep.backend,
                    fieldnote,
                    worktree: sheep.worktree.as_ref().map(SheepWorktree::place),
                    host: sheep.host().map(str::to_owned),
                    resumes: (sheep.resumes > 0).then_some(sheep.resumes),
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
                return Err(BrokerError::new(ErrorCode::AgentNotReady, message));
            }
        }
        tokio::select! {
            changed = generation.changed() => if changed.is_err() {
                return Err(BrokerError::new(ErrorCode::BrokerStopping, "the broker is stopping"));
            },
            () = tokio::time::sleep_until(deadline) => {
                return Err(BrokerError::new(
                    ErrorCode::AgentNotReady,
                    format!("{} did not become ready within {} s", sheep.display_name(), limit.as_secs()),
                ));
            }
        }
    }
}

/// The backend for a spawn: the caller's choice, else the setting. `auto` means Herdr inside
/// Herdr, tmux inside tmux, otherwise headless.
pub(crate) async fn choose_backend(
    requested: Option<BackendSetting>,
    setting: BackendSetting,
    caller: &CallerContext,
    broker: &Arc<Broker>,
) -> BrokerResult<BackendKind> {
    let chosen = requested.unwrap_or(setting);
    // Inside Herdr, Herdr — falling back to what else fits if its server does not answer
    // (never started, or gone since it was connected), and saying so.
    let herdr_down = if chosen == BackendSetting::Auto && caller.in_herdr {
        crate::sheep::herdr_link::ensure(broker, caller, false)
            .await
            .err()
    } else {
        None
    };
    let kind = match chosen {
        BackendSetting::Auto if caller.in_herdr && herdr_down.is_none() => BackendKind::Herdr,
        BackendSetting::Auto if caller.tmux.is_some() && broker.has_backend(BackendKind::Tmux) => {
            BackendKind::Tmux
        }
        BackendSetting::Auto | BackendSetting::Headless => BackendKind::Headless,
        BackendSetting::Tmux => BackendKind::Tmux,
        BackendSetting::Herdr => BackendKind::Herdr,
    };
    if let Some(err) = herdr_down {
        tracing::warn!(
            "backend auto inside Herdr: {}; this sheep runs on {} instead",
            err.message,
            kind.as_str()
        );
    }
    if kind == BackendKind::Herdr && chosen != BackendSetting::Auto {
        // Chosen explicitly: start a Herdr server if none runs.
        crate::sheep::herdr_link::ensure(broker, caller, true).await?;
    }
    broker.backend(kind)?;
    Ok(kind)
}
