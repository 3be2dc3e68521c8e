//! Runs planned ahead: `plan` reserves every note of a run in input order, in one commit,
//! before anything launches; `release` finalises the planned notes whose tasks never started, so
//! no note is left `pending` for ever. Front ends ask for both; only the broker's fieldnotes
//! worker writes.

use std::sync::Arc;

use shepherd_core::protocol::{PlanParams, PlanResult, ReleaseParams, ReleaseResult};
use shepherd_notes::NoteStatus;

use crate::broker::Broker;
use crate::error::{BrokerError, BrokerResult};
use crate::fieldnotes::{PlanRequest, ReleaseRequest, SessionChoice};

/// Runs `plan`: reserves a run's notes in input order, in one commit, before anything launches.
pub(crate) async fn plan(broker: &Arc<Broker>, params: PlanParams) -> BrokerResult<PlanResult> {
    let mode: shepherd_notes::Mode = params.mode.parse().map_err(|_| {
        BrokerError::new(
            "invalid_mode",
            format!(
                "mode `{}` is not one of single, parallel, chain",
                params.mode
            ),
        )
    })?;
    if params.notes.is_empty() {
        return Err(BrokerError::new(
            "invalid_request",
            "a plan needs at least one note",
        ));
    }
    let session = match &params.session_name {
        Some(name) => SessionChoice::Named(name.clone()),
        None => SessionChoice::NewForTask(params.notes.first().map(|n| n.task.clone())),
    };
    let notes = params
        .notes
        .iter()
        .map(|planned| {
            let mut note = shepherd_notes::PlannedNote::new(planned.agent.clone());
            note.mode = mode;
            note.task = Some(planned.task.clone());
            note.group.clone_from(&params.group);
            note
        })
        .collect();
    let fieldnotes = broker.fieldnotes();
    let reply =
        tokio::task::spawn_blocking(move || fieldnotes.plan(PlanRequest { session, notes }))
            .await
            .map_err(|err| BrokerError::new("internal", err.to_string()))??;
    Ok(PlanResult {
        session_name: reply.session_name,
        session_path: reply.session_path,
        session_relative_path: reply.session_relative,
        resumed: reply.resumed,
        notes: reply.notes.iter().map(|n| n.note.clone()).collect(),
        notes_relative: reply
            .notes
            .iter()
            .map(|n| n.note_relative.clone())
            .collect(),
    })
}

/// Runs `release`: finalises each planned note that is still pending, as `cancelled` or
/// `failed` with the reason; a note whose task started is left to the broker's own settlement.
pub(crate) async fn release(
    broker: &Arc<Broker>,
    params: ReleaseParams,
) -> BrokerResult<ReleaseResult> {
    let requests = params
        .notes
        .into_iter()
        .map(|released| {
            let status = match released.status.as_str() {
                "cancelled" => NoteStatus::Cancelled,
                "failed" => NoteStatus::Failed,
                other => {
                    return Err(BrokerError::new(
                        "invalid_status",
                        format!("release status `{other}` is not one of cancelled, failed"),
                    ));
                }
            };
            Ok(ReleaseRequest {
                note: released.note.into(),
                status,
                reason: released.reason,
            })
        })
        .collect::<BrokerResult<Vec<_>>>()?;
    let fieldnotes = broker.fieldnotes();
    let mut result = ReleaseResult::default();
    for request in requests {
        let note = request.note.display().to_string();
        let fieldnotes = fieldnotes.clone();
        let released = tokio::task::spawn_blocking(move || fieldnotes.release(request))
            .await
            .map_err(|err| BrokerError::new("internal", err.to_string()))??;
        if released {
            result.released.push(note);
        } else {
            result.skipped.push(note);
        }
    }
    Ok(result)
}
