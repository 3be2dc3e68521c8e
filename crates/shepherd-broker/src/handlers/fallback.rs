//! Falling back: a task whose provider is limited for longer than `fallbackAfterMinutes` goes
//! to a fresh sheep of its agent's `fallback:` instead of waiting.
//!
//! The herd moves the task (`shepherd_core::herd::fallback`); this module does the I/O around
//! it. It picks the first fallback whose provider is not limited too, spawns that sheep the way
//! the first one was spawned (same definition, directory, backend, host and session, the
//! fallback's harness and model), moves the task to it, and hands it over, which reserves the
//! second note in the same session and finalises the first with a link to it. A fallback that
//! cannot be started leaves the task waiting, as it would without one. The fresh sheep belongs
//! to the first: closing the first closes it too, so whoever closes the sheep they spawned
//! leaves nothing behind. It keeps the first sheep's label and carries its role in its agent
//! part (`worker (fallback, codex): fix-login`); a fallback entry with a `credential:` runs on
//! that account of the provider, and names it there too (`worker (fallback, claude-code,
//! WORK_KEY): fix-login`). A fallback of a fallback is named from the definition the same way,
//! so each entry has a name of its own and the role is said once. The time counted against `fallbackAfterMinutes` is the time
//! spent waiting, so a task whose provider names no reset falls back once it has waited that
//! long: a timer per waiting task considers it again then.

use std::sync::Arc;

use shepherd_core::agent_def::{AgentDef, Fallback};
use shepherd_core::backend::BackendKind;
use shepherd_core::harness::Runtime;
use shepherd_core::herd::fallback::FallbackDue;
use shepherd_core::ids::{AgentId, TaskId};
use shepherd_core::protocol::{CloseParams, SpawnParams};
use shepherd_core::settings::Backend;

use crate::error::{BrokerError, BrokerResult};
use crate::state::broker::Broker;
use crate::state::store::Store;

/// After a sheep's run ended on a limit: when the limit lasts past `fallbackAfterMinutes` and
/// the sheep's agent names a fallback, the task goes to it (in the background); when it may
/// yet, it is considered again once it has waited that long.
pub(crate) fn consider(broker: &Arc<Broker>, agent_id: &AgentId) {
    let after = broker.config.settings().fallback_after();
    let after_ms = i64::try_from(after.as_millis()).unwrap_or(i64::MAX);
    let now = broker.store.now();
    let task_id = match broker
        .store
        .read(|herd| herd.fallback_due(agent_id, after_ms, now))
    {
        None => return,
        Some(FallbackDue::At(task_id, at)) => return later(broker, agent_id, task_id, at),
        Some(FallbackDue::Now(task_id)) => task_id,
    };
    if !broker
        .falling_back
        .lock()
        .expect("falling_back lock")
        .insert(task_id.clone())
    {
        return;
    }
    let broker = broker.clone();
    let from = agent_id.clone();
    tokio::spawn(async move {
        if let Err(err) = fall_back(&broker, &task_id, &from).await {
            tracing::warn!("task {task_id} keeps waiting: its fallback failed: {err}");
        }
        broker
            .falling_back
            .lock()
            .expect("falling_back lock")
            .remove(&task_id);
    });
}

/// Considers `agent_id` again at `at`, once per waiting task (the broker's shutdown ends the
/// wait).
fn later(broker: &Arc<Broker>, agent_id: &AgentId, task_id: TaskId, at: i64) {
    if !broker
        .fallback_timers
        .lock()
        .expect("fallback_timers lock")
        .insert(task_id.clone())
    {
        return;
    }
    let broker = broker.clone();
    let agent_id = agent_id.clone();
    tokio::spawn(async move {
        tokio::select! {
            () = broker.store.clock.sleep_until(at) => {}
            () = broker.shutdown.cancelled() => return,
        }
        broker
            .fallback_timers
            .lock()
            .expect("fallback_timers lock")
            .remove(&task_id);
        consider(&broker, &agent_id);
    });
}

/// Every sheep that waits on a lasting limit is considered again (after a restart).
pub(crate) fn consider_all(broker: &Arc<Broker>) {
    let waiting: Vec<AgentId> = broker.store.read(|herd| {
        herd.tasks
            .values()
            .filter(|t| t.limit.is_some() && !t.state.is_terminal())
            .map(|t| t.agent_id.clone())
            .collect()
    });
    for agent_id in waiting {
        consider(broker, &agent_id);
    }
}

async fn fall_back(broker: &Arc<Broker>, task_id: &TaskId, from: &AgentId) -> BrokerResult<()> {
    let first = broker.store.read(|herd| {
        herd.sheep.get(from).map(|s| {
            (
                s.agent.clone(),
                s.label.as_str().to_owned(),
                s.backend,
                s.cwd.clone(),
                s.recipe.clone(),
            )
        })
    });
    let Some((agent, label, backend, cwd, recipe)) = first else {
        return Ok(());
    };
    let settings = broker.config.settings();
    let def = shepherd_config::resolve_agent(
        &broker.config.dirs,
        &broker.config.address.project_root,
        &settings,
        &agent,
    )
    .map_err(|err| BrokerError::new(err.code(), err.to_string()))?;
    if def.fallback.is_empty() {
        return Ok(());
    }
    let recipe: SpawnParams = recipe.unwrap_or_else(|| SpawnParams {
        agent: agent.clone(),
        ..SpawnParams::default()
    });
    let mut last_error = None;
    for (index, fallback) in def.fallback.iter().enumerate() {
        let params = fallback_params(&recipe, fallback, &label, backend, &cwd);
        if held(&broker.store, &def, fallback, &params) {
            continue;
        }
        let rid = format!("fallback/{task_id}/{}", index + 1);
        let role = Some(shepherd_core::label::Role::Fallback);
        let spawned = match crate::handlers::spawn::spawn_as(broker, params, Some(&rid), role).await
        {
            Ok(spawned) => spawned,
            Err(err) => {
                tracing::warn!(
                    "the fallback {} of task {task_id} could not start: {err}",
                    fallback.harness
                );
                last_error = Some(err);
                continue;
            }
        };
        let to = spawned.agent_id;
        let moved = broker
            .store
            .commit_durable(|tx| {
                Ok(shepherd_core::herd::fallback::fall_back(
                    tx, task_id, from, &to,
                ))
            })
            .await?;
        if !moved {
            // The task settled or went on meanwhile: the fresh sheep is not needed.
            let params = CloseParams {
                id: to.to_string(),
                keep_pane: false,
            };
            crate::handlers::close::close(broker, params).await?;
            return Ok(());
        }
        return crate::handlers::handover::hand_over(broker, task_id).await;
    }
    last_error.map_or(Ok(()), Err)
}

/// The spawn of `fallback` for a task of the sheep spawned with `recipe`: the same agent,
/// label, session, host and backend, in the directory that sheep works in (its worktree, when
/// it had one: the work so far is there), on the fallback's harness, model and credential. Its
/// role goes in its display name's agent part, never in the label, so the user's label (up to
/// its 64 characters) is all it carries there.
fn fallback_params(
    recipe: &SpawnParams,
    fallback: &Fallback,
    label: &str,
    backend: BackendKind,
    cwd: &str,
) -> SpawnParams {
    SpawnParams {
        label: Some(label.to_owned()).filter(|label| !label.is_empty()),
        credential: fallback.credential.clone(),
        backend: Some(recipe.backend.unwrap_or(match backend {
            BackendKind::Headless => Backend::Headless,
            BackendKind::Tmux => Backend::Tmux,
            BackendKind::Herdr => Backend::Herdr,
        })),
        cwd: Some(cwd.to_owned()),
        model: fallback.model.clone(),
        harness: Some(fallback.harness),
        isolate: false,
        ..recipe.clone()
    }
}

/// Whether the fallback's own provider key is limited right now, so it would only wait too
/// (a fallback whose credential is not set is left to its spawn, which says why).
fn held(store: &Store, def: &AgentDef, fallback: &Fallback, params: &SpawnParams) -> bool {
    let key = crate::sheep::provider_limits::key_for(
        Runtime::Agent(fallback.harness),
        def,
        params,
        params.host.as_deref(),
    );
    matches!(key, Ok(Some(key)) if store.read(|herd| herd.limiters.contains_key(&key)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fallback_keeps_the_label_at_its_longest_and_makes_none_up() {
        let longest = "l".repeat(shepherd_core::label::MAX_LABEL_CHARS);
        let fallback = Fallback {
            harness: shepherd_core::harness::Harness::ClaudeCode,
            model: None,
            credential: None,
        };
        let recipe = SpawnParams::default();
        let params = fallback_params(&recipe, &fallback, &longest, BackendKind::Headless, "/p");
        let label = params.label.unwrap();
        assert_eq!(label, longest);
        assert!(shepherd_core::label::validate_label(&label).is_ok());
        let none = fallback_params(&recipe, &fallback, "", BackendKind::Headless, "/p");
        assert_eq!(none.label, None);
    }
}
