//! `resume`: reopen a closed or exited sheep on its own session, under its own id and display
//! name, with its transcript and context intact.
//!
//! Only a sheep whose harness keeps a session can be resumed (`harness`); for pi that is the
//! session file the sheep has always written, which pi continues when started on it again. An
//! exited sheep (it crashed, or its program ended) is first closed, so nothing of it is left
//! running; then the sheep is reopened in the herd (a fresh capability, `maxSheep` and its
//! display name checked again) and launched exactly as its spawn launched it, from the recipe
//! the spawn recorded, in its worktree when it was isolated. Its next task gets a new note
//! that links the note it continues, and that note links the new one.

use shepherd_core::error_code::ErrorCode;
use std::sync::Arc;

use shepherd_core::herd::Phase;
use shepherd_core::protocol::{CloseParams, ResumeParams, SpawnParams, SpawnResult};

use crate::error::{BrokerError, BrokerResult};
use crate::handlers::spawn::launch::{self, Credentials};
use crate::sheep::harness::Controls;
use crate::state::broker::Broker;
use shepherd_core::worktree::{MadeWorktree, SheepWorktree};

/// Runs `resume`. A resent resume (same client request id) follows the sheep it reopened.
pub(crate) async fn resume(
    broker: &Arc<Broker>,
    params: ResumeParams,
    rid: Option<&str>,
) -> BrokerResult<SpawnResult> {
    let sheep = broker
        .store
        .read(|herd| herd.sheep_by_text(&params.id).cloned())?;
    let recipe_params = || -> SpawnParams {
        sheep.recipe.clone().unwrap_or_else(|| SpawnParams {
            agent: sheep.agent.clone(),
            label: Some(sheep.label.as_str().to_owned()).filter(|l| !l.is_empty()),
            cwd: Some(sheep.cwd.clone()),
            ..SpawnParams::default()
        })
    };
    if rid.is_some() && sheep.request_id.as_deref() == rid && sheep.phase != Phase::Closed {
        return crate::handlers::spawn::follow(broker, &sheep.id, &recipe_params()).await;
    }
    let who = format!("{} ({})", sheep.display_name(), sheep.id);
    let harness = Controls::of(sheep.runtime);
    // Started on the backend asked for now, else the one it ran on.
    let backend = params.backend.unwrap_or(sheep.backend.into());
    let visible = match backend {
        shepherd_core::settings::Backend::Headless => false,
        shepherd_core::settings::Backend::Tmux | shepherd_core::settings::Backend::Herdr => true,
        // `auto` decides by the caller's terminal: resolved below; a visible choice of another
        // agent is refused there.
        shepherd_core::settings::Backend::Auto => false,
    };
    harness.check_resumable(&who, visible)?;
    match sheep.phase {
        Phase::Starting | Phase::Ready => {
            return Err(BrokerError::new(
                ErrorCode::AgentRunning,
                format!("{who} is still running; only a closed or exited sheep can be resumed"),
            ));
        }
        Phase::Closing | Phase::Exited | Phase::Failed => {
            // Whatever is left of it (a kept pane, a supervisor) goes first.
            crate::handlers::close::close(
                broker,
                CloseParams {
                    id: sheep.id.to_string(),
                    keep_pane: false,
                },
            )
            .await?;
        }
        Phase::Closed => {}
    }
    let session = harness.session(broker, &sheep.id).ok_or_else(|| {
        BrokerError::new(
            ErrorCode::NoSession,
            format!("{who} never started a session, so there is nothing to resume"),
        )
    })?;
    tracing::info!("resuming {who} on {session}");

    // Started as its spawn started it, in the caller's terminal, on the backend asked for now
    // (else the one it ran on).
    let mut spawn = recipe_params();
    spawn.caller = params.caller.clone();
    spawn.backend = params.backend.or(Some(sheep.backend.into()));
    let isolated = broker.store.read(|herd| {
        herd.sheep.get(&sheep.id).and_then(|s| match &s.worktree {
            Some(SheepWorktree {
                made: MadeWorktree::Here(made),
                ..
            }) => Some(made.clone()),
            _ => None,
        })
    });
    // An isolated sheep goes back to its worktree (made again when it was removed).
    let cwd = match isolated {
        Some(made) => {
            // Where it was made: a worktree from before worktrees moved out of the project
            // comes back where it was.
            let again =
                crate::sheep::isolation::create(made.repo.clone(), made.path.clone()).await?;
            Some(again.cwd())
        }
        None => None,
    };
    let prepared = crate::handlers::spawn::prepare(broker, &spawn, cwd).await?;
    harness.check_resumable(&who, prepared.kind.is_visible())?;
    let credentials = Credentials::mint();
    let ready_rx = launch::await_ready(broker, &sheep.id);
    let reopen = shepherd_core::herd::Reopen {
        agent_id: sheep.id.clone(),
        backend: prepared.kind,
        token_digest: crate::state::auth::digest(&credentials.token),
        supervisor_digest: Some(crate::state::auth::digest(&credentials.supervisor)),
        request_id: rid.map(str::to_owned),
        max_sheep: broker.config.settings().max_sheep(),
    };
    if let Err(err) = broker
        .store
        .commit_durable(|tx| shepherd_core::herd::reopen(tx, reopen))
        .await
    {
        broker
            .links
            .lock()
            .expect("links lock")
            .ready_waiters
            .remove(&sheep.id);
        return Err(err);
    }
    launch::launch(broker, &sheep.id, &prepared, &spawn, &credentials, ready_rx).await?;
    let fieldnote =
        crate::handlers::spawn::fieldnote_session(broker, &spawn, broker.fieldnotes_on().await?)
            .await?;
    broker.store.read(|herd| {
        let sheep = herd.sheep.get(&sheep.id).ok_or_else(|| {
            BrokerError::new(ErrorCode::Internal, format!("sheep {} vanished", sheep.id))
        })?;
        Ok(SpawnResult {
            agent_id: sheep.id.clone(),
            agent: sheep.agent.clone(),
            label: sheep.label.as_str().to_owned(),
            display_name: sheep.display_name(),
            backend: sheep.backend,
            fieldnote,
            worktree: sheep.worktree.as_ref().map(SheepWorktree::place),
            host: sheep.host().map(str::to_owned),
            resumes: Some(sheep.resumes),
        })
    })
}
