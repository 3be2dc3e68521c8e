//! Handing an accepted task to its sheep: reserve its note, then queue the task envelope.
//!
//! A delegation is two durable steps with fieldnotes work between them: the task is accepted
//! (journaled, state `created`, with everything its note needs in [`Handover`]), its note is
//! reserved, and the task starts (journaled with the envelope for its sheep). [`hand_over`]
//! does the second half and is safe to repeat: the note is found again by task id rather than
//! reserved twice, and a task that already started is left as it is. So a resent delegate,
//! and a broker restarted in between, both finish a delegation instead of losing it or leaving
//! its note running. A task whose note cannot be reserved at all is withdrawn: it leaves no
//! trace, as a refused delegation would. The first task of a resumed sheep is told which note
//! it continues, and that note gets a link to the new one.

use shepherd_core::error_code::ErrorCode;
use std::sync::Arc;

use shepherd_core::herd::{Handover, Herd, NoteLink};
use shepherd_core::ids::{MessageId, TaskId};
use shepherd_core::protocol::DelegateResult;
use shepherd_core::task::TaskState;

use crate::error::{BrokerError, BrokerResult};
use crate::fieldnotes::NoteRequest;
use crate::state::broker::Broker;

/// Hands an accepted task over (idempotent): reserves or finds its note and starts it.
pub(crate) async fn hand_over(broker: &Arc<Broker>, task_id: &TaskId) -> BrokerResult<()> {
    let Some((handover, request)) = broker.store.read(|herd| note_request(herd, task_id)) else {
        return Ok(());
    };
    let (mut content, continues, fell_back) = broker.store.read(|herd| {
        herd.tasks
            .get(task_id)
            .map(|t| {
                let description = t.description.clone();
                (description, t.continues.clone(), t.fell_back_from.clone())
            })
            .unwrap_or_default()
    });
    if let Some(first) = &fell_back {
        // A fallback's task: the first sheep's work so far is in the same directory.
        content.push_str(&format!(
            "\n\n(This task was first given to {}, whose provider ({}) is limited until {} UTC; \
             you take it over. Its changes so far are in your working directory{}.)",
            first.display_name,
            first.provider,
            shepherd_core::herd::limits::clock(first.until),
            first
                .note
                .as_ref()
                .map(|note| format!(" and its note is {}", note.note))
                .unwrap_or_default(),
        ));
    }
    if let Some(previous) = &continues {
        // A resumed sheep's first task: it has its own context, and the earlier note too.
        content.push_str(&format!(
            "\n\n(You were resumed: this task continues the work recorded in {}.)",
            previous.note
        ));
    }
    let remote = broker
        .store
        .read(|herd| herd.tasks.get(task_id).map(|t| t.agent_id.clone()))
        .and_then(|id| crate::sheep::remote_sheep::host_of(&broker.store, &id))
        .and_then(|host| {
            let link = crate::sheep::remote_sheep::link(broker, &host).ok()?;
            Some((host, link.def.project_path.clone()))
        });
    let note = match request {
        Some(request) => {
            let fieldnotes = broker.fieldnotes();
            let reserved = tokio::task::spawn_blocking(move || fieldnotes.reserve(&request))
                .await
                .map_err(|err| BrokerError::new(ErrorCode::Internal, err.to_string()))
                .and_then(|result| result);
            match reserved {
                Ok(reserved) => {
                    // The block starts with its own blank line. A remote sheep reads and writes
                    // its host's copy of the session.
                    match &remote {
                        Some((host, host_root)) => {
                            content.push_str(&crate::sheep::remote_sheep::notes::context_for_host(
                                &reserved.context,
                                &broker.config.address.project_root,
                                host_root,
                            ));
                            crate::sheep::remote_sheep::notes::open(
                                broker,
                                task_id,
                                host,
                                &reserved.link,
                            )
                            .await;
                        }
                        None => content.push_str(&reserved.context),
                    }
                    Some(reserved.link)
                }
                Err(err) => {
                    broker
                        .store
                        .commit_durable(|tx| {
                            shepherd_core::herd::withdraw(tx, task_id);
                            Ok(())
                        })
                        .await?;
                    return Err(BrokerError::new(
                        err.code,
                        format!(
                            "Task submission failed: its note could not be reserved: {}",
                            err.message
                        ),
                    ));
                }
            }
        }
        None => None,
    };
    let new_note = note.clone();
    let message_id = MessageId::mint(
        &broker.config.address.namespace,
        &crate::state::broker::unique(),
    );
    broker
        .store
        .commit_durable(|tx| {
            let state = tx.herd().tasks.get(task_id).map(|t| t.state);
            match state {
                Some(TaskState::Created) => {
                    if let Some(cursor) = handover.session_cursor {
                        shepherd_core::herd::cursor(tx, task_id, cursor);
                    }
                    shepherd_core::herd::start_task(tx, task_id, note, message_id, content)
                }
                // Settled before it reached its sheep (the sheep died meanwhile): its note
                // belongs to it and is finalised with it.
                Some(state) if state.is_terminal() => {
                    if let Some(note) = note {
                        shepherd_core::herd::attach_note(tx, task_id, note);
                    }
                    Ok(())
                }
                // Started already (a repeated hand-over), or withdrawn.
                _ => Ok(()),
            }
        })
        .await?;
    if let (Some(previous), Some(new_note)) = (continues, new_note.clone()) {
        link_continuation(broker, &previous, &new_note).await;
    }
    if let (Some(_), Some(new_note)) = (fell_back, new_note) {
        finalize_first_note(broker, task_id, &new_note).await;
    }
    Ok(())
}

/// The first note of a task that fell back is final from now on, linking the note that goes
/// on with it.
async fn finalize_first_note(broker: &Arc<Broker>, task_id: &TaskId, next: &NoteLink) {
    let job = broker
        .store
        .read(|herd| crate::fieldnotes::FinalizeJob::for_fallen_back(herd, task_id, next));
    let Some(job) = job else { return };
    let fieldnotes = broker.fieldnotes();
    match tokio::task::spawn_blocking(move || fieldnotes.finalize(&job)).await {
        Ok(Ok(())) => {}
        Ok(Err(err)) => tracing::warn!("could not finalise the first note of {task_id}: {err}"),
        Err(err) => tracing::warn!("finalising the first note of {task_id} panicked: {err}"),
    }
}

/// The note a resumed sheep's first task continues gets a link to the task's new note.
async fn link_continuation(broker: &Arc<Broker>, previous: &NoteLink, next: &NoteLink) {
    let old_task = broker.store.read(|herd| {
        herd.tasks
            .values()
            .rev()
            .find(|t| t.note.as_ref().is_some_and(|n| n.note == previous.note))
            .map(|t| t.id.clone())
    });
    let Some(old_task) = old_task else { return };
    let mut metadata = shepherd_notes::Metadata::new();
    metadata.insert(
        "continuedIn".into(),
        serde_json::Value::from(next.note_relative.as_str()),
    );
    if let Err(err) = crate::sheep::notes::annotate_final(broker, &old_task, metadata).await {
        tracing::warn!(
            "could not link {} to its continuation: {err}",
            previous.note
        );
    }
}

/// What reserving the task's note takes, unless the task is past handing over.
fn note_request(herd: &Herd, task_id: &TaskId) -> Option<(Handover, Option<NoteRequest>)> {
    let task = herd.tasks.get(task_id)?;
    let handed_over = task.state != TaskState::Created
        && !(task.state.is_terminal() && task.note.is_none() && task.started_at.is_none());
    if handed_over {
        return None;
    }
    let handover = task.handover.clone().unwrap_or_default();
    let sheep = herd.sheep.get(&task.agent_id);
    let request = handover.fieldnotes.then(|| NoteRequest {
        session_name: handover.session_name.clone(),
        session_dir: handover.session_dir.clone(),
        agent: sheep.map(|s| s.agent.clone()).unwrap_or_default(),
        label: sheep
            .map(|s| s.label.as_str().to_owned())
            .unwrap_or_default(),
        task: task.description.clone(),
        mode: handover.mode,
        task_id: task.id.clone(),
        agent_id: task.agent_id.clone(),
        session_file: handover.session_file.clone(),
        planned: handover.planned_note.as_ref().map(std::path::PathBuf::from),
        group: handover.group.clone(),
    });
    Some((handover, request))
}

/// The answer to a delegation, read from the task as it stands.
pub(crate) fn delegate_result(herd: &Herd, task_id: &TaskId) -> BrokerResult<DelegateResult> {
    let task = herd
        .tasks
        .get(task_id)
        .ok_or_else(|| BrokerError::new(ErrorCode::UnknownTask, format!("no task {task_id}")))?;
    let note = task.note.as_ref();
    Ok(DelegateResult {
        task_id: task.id.clone(),
        agent_id: task.agent_id.clone(),
        state: task.state,
        note: note.map(|n| n.note.clone()),
        note_relative: note.map(|n| n.note_relative.clone()),
        session: note.map(|n| n.session_path.clone()),
        session_relative: note.map(|n| n.session_relative.clone()),
        session_name: note.map(|n| n.session_name.clone()),
        resumed: note.is_some_and(|n| n.resumed),
    })
}
