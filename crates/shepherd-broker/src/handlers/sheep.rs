//! A sheep's own requests: `tell`, `done` and `report` (its run's lifecycle, and each turn's
//! usage, which budgets count). The sender is always the sheep the
//! connection authenticated as; a sheep cannot speak for another.

use shepherd_core::error_code::ErrorCode;
use std::sync::Arc;

use shepherd_core::herd::{DoneInput, DoneOutcome, RunReport};
use shepherd_core::ids::Participant;
use shepherd_core::protocol::{
    DoneParams, DoneResult, HerdMatesResult, MessageParams, MessageResult, OkResult, ReportEvent,
    ReportParams,
};

use crate::error::{BrokerError, BrokerResult};
use crate::state::broker::Broker;
use crate::state::session::Session;
use crate::state::store::Store;

/// Runs `tell`: a sheep messages the parent or a herd-mate.
pub(crate) async fn tell(
    broker: &Arc<Broker>,
    session: &Session,
    params: MessageParams,
    rid: Option<&str>,
) -> BrokerResult<MessageResult> {
    let sender = Participant::Sheep(session.sheep()?.clone());
    let mut params = params;
    params.target = broker.store.read(|herd| herd.mate_target(&params.target))?;
    let input = crate::handlers::parent::message_input(broker, sender, params)?;
    crate::handlers::parent::send_message(broker, input, rid).await
}

/// Runs `herd.mates`: the herd as the asking sheep may see it (see
/// [`shepherd_core::herd::HerdMate`]).
pub(crate) fn mates(store: &Store, session: &Session) -> BrokerResult<HerdMatesResult> {
    let me = session.sheep()?.clone();
    let now = store.now();
    let mates = store.read(|herd| herd.mates_view(&me, now));
    Ok(HerdMatesResult {
        agent_id: me,
        mates,
    })
}

/// Runs `done`. A done that names a task already settled changes nothing and says so; one
/// that changes nothing else is kept under its request id with its answer, so a resent done
/// never settles twice nor reports a false "dropped".
pub(crate) async fn done(
    broker: &Arc<Broker>,
    session: &Session,
    params: DoneParams,
    rid: Option<&str>,
) -> BrokerResult<DoneResult> {
    let sender = session.sheep()?.clone();
    let input = DoneInput {
        sender,
        task_id: params.task_id.clone(),
        status: params.status,
        summary: params.summary,
    };
    broker
        .store.commit_reply(rid, |tx| {
            let outcome = shepherd_core::herd::done(tx, input)?;
            let (task_id, duplicate, supplied) = match outcome {
                DoneOutcome::Settled {
                    task_id,
                    corrected_from,
                } => (task_id, false, corrected_from),
                DoneOutcome::Duplicate { task_id } => (task_id, true, None),
                DoneOutcome::Dropped => {
                    return Err(BrokerError::new(
                        ErrorCode::NoDelegatedTask,
                        "There is no open task to complete: done was dropped (the parent has been told).",
                    ));
                }
            };
            let status = tx.herd().tasks[&task_id].state;
            Ok(DoneResult {
                accepted: true,
                task_id,
                status,
                duplicate,
                supplied_task_id: supplied,
            })
        })
        .await
}

/// Runs `report`: the sheep is ready, or its run started or settled.
pub(crate) async fn report(
    broker: &Arc<Broker>,
    session: &Session,
    params: ReportParams,
    rid: Option<&str>,
) -> BrokerResult<OkResult> {
    let sender = session.sheep()?.clone();
    let report = match params.event {
        ReportEvent::Ready => {
            crate::handlers::supervisor::mark_ready(broker, &sender).await?;
            return Ok(OkResult::ACK);
        }
        ReportEvent::Turn => return turn(broker, &sender, params, rid).await,
        ReportEvent::Answered => {
            // The run's first model response, reported as it shows rather than when the next
            // one begins: a key letting its sheep go after a reset lets the next round go now,
            // not a whole turn (a tool call, another request) later.
            if broker.store.read(|herd| herd.awaits_answer(&sender)) {
                broker
                    .store
                    .commit_reply(rid, |tx| {
                        shepherd_core::herd::limits::progressed(tx, &sender);
                        Ok(OkResult::ACK)
                    })
                    .await?;
            }
            return Ok(OkResult::ACK);
        }
        ReportEvent::RiddenOut => {
            if let Some(ridden) = &params.ridden_out {
                broker
                    .store
                    .commit_reply(rid, |tx| {
                        shepherd_core::herd::limits::ridden_out(tx, &sender, ridden);
                        Ok(OkResult::ACK)
                    })
                    .await?;
            }
            return Ok(OkResult::ACK);
        }
        ReportEvent::AgentStart => RunReport::Started,
        ReportEvent::RunSettled => RunReport::Settled {
            limit: params
                .error
                .as_deref()
                .filter(|_| params.stop_reason.as_deref() == Some("error"))
                .and_then(|error| {
                    crate::sheep::provider_limits::signal_of(
                        &broker.store,
                        &sender,
                        error,
                        params.retry_after_ms,
                    )
                }),
            stop_reason: params.stop_reason,
            error: params.error,
            text: params.text.clone(),
        },
    };
    let settled = matches!(report, RunReport::Settled { .. });
    let limited = matches!(report, RunReport::Settled { limit: Some(_), .. });
    let budget = broker.config.settings().done_nudges;
    let waits = crate::sheep::provider_limits::waits(&broker.config);
    broker
        .store
        .commit_reply(rid, |tx| {
            shepherd_core::herd::report_with(tx, &sender, report, budget, &waits);
            Ok(OkResult::ACK)
        })
        .await?;
    if settled {
        // A remote pi sheep's session is on its host: it comes home before it is read.
        crate::sheep::remote_sheep::pi::pull_session(broker, &sender).await;
        crate::sheep::pi::record_output(broker, &sender, params.text, params.telemetry).await?;
    }
    if limited {
        crate::handlers::fallback::consider(broker, &sender);
    }
    Ok(OkResult::ACK)
}

/// A `turn` report: what one turn of the sheep's task used. The answer says `stop` (with the
/// limit) when that turn reached the task's budget: the task is settled `blocked` already and
/// the sheep must end its run.
async fn turn(
    broker: &Arc<Broker>,
    sender: &shepherd_core::ids::AgentId,
    params: ReportParams,
    rid: Option<&str>,
) -> BrokerResult<OkResult> {
    let mut usage = params.usage.unwrap_or_default();
    usage.turns = 1;
    let open = broker
        .store
        .read(|herd| herd.sheep.get(sender).and_then(|s| s.active_task.clone()));
    if let Some(task) = &open {
        crate::sheep::live_usage::count(broker, sender, task, &usage);
    }
    // A turn whose response was a provider's refusal (pi reports it like any other) used
    // nothing and shows no model response: it lets no held sheep go.
    if params.stop_reason.as_deref() == Some("error") {
        return Ok(OkResult::ACK);
    }
    broker
        .store
        .commit_reply(rid, |tx| {
            let reached = shepherd_core::herd::usage(tx, sender, usage);
            Ok(match reached {
                Some(reached) => OkResult {
                    ok: true,
                    stop: Some(reached.to_string()),
                },
                None => OkResult::ACK,
            })
        })
        .await
}
