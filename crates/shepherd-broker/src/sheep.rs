//! A sheep's own requests: `tell`, `done` and `report`. The sender is always the sheep the
//! connection authenticated as; a sheep cannot speak for another.

use std::sync::Arc;

use serde_json::{Value, json};
use shepherd_core::herd::{DoneInput, DoneOutcome, RunReport};
use shepherd_core::ids::Participant;
use shepherd_core::protocol::{DoneParams, DoneResult, MessageParams, MessageResult, ReportParams};

use crate::broker::Broker;
use crate::error::{BrokerError, BrokerResult};
use crate::server::Session;

/// Runs `tell`: a sheep messages the parent or a herd-mate.
pub(crate) async fn tell(
    broker: &Arc<Broker>,
    session: &Session,
    params: MessageParams,
) -> BrokerResult<MessageResult> {
    let sender = Participant::Sheep(session.sheep()?.clone());
    let input = crate::parent::message_input(broker, sender, params)?;
    crate::parent::send_message(broker, input).await
}

/// Runs `done`.
pub(crate) async fn done(
    broker: &Arc<Broker>,
    session: &Session,
    params: DoneParams,
) -> BrokerResult<DoneResult> {
    let sender = session.sheep()?.clone();
    let input = DoneInput {
        sender,
        task_id: params.task_id.clone(),
        status: params.status,
        summary: params.summary,
    };
    let outcome = broker
        .commit_durable(|tx| shepherd_core::herd::done(tx, input))
        .await?;
    let (task_id, duplicate, supplied) = match outcome {
        DoneOutcome::Settled {
            task_id,
            corrected_from,
        } => (task_id, false, corrected_from),
        DoneOutcome::Duplicate { task_id } => (task_id, true, None),
        DoneOutcome::Dropped => {
            return Err(BrokerError::new(
                "no_delegated_task",
                "There is no open task to complete: done was dropped (the parent has been told).",
            ));
        }
    };
    let status = broker.read(|herd| herd.tasks[&task_id].state);
    Ok(DoneResult {
        accepted: true,
        task_id,
        status,
        duplicate,
        supplied_task_id: supplied,
    })
}

/// Runs `report`: the sheep is ready, or its run started or settled.
pub(crate) async fn report(
    broker: &Arc<Broker>,
    session: &Session,
    params: ReportParams,
) -> BrokerResult<Value> {
    let sender = session.sheep()?.clone();
    let report = match params.event.as_str() {
        "ready" => {
            crate::supervisor::mark_ready(broker, &sender).await?;
            return Ok(json!({ "ok": true }));
        }
        "agent_start" => RunReport::Started,
        "run_settled" => RunReport::Settled {
            stop_reason: params.stop_reason,
            error: params.error,
            text: params.text.clone(),
        },
        other => {
            return Err(BrokerError::new(
                "invalid_request",
                format!("report event `{other}` is not one of ready, agent_start, run_settled"),
            ));
        }
    };
    let settled = matches!(report, RunReport::Settled { .. });
    let budget = broker.settings().done_nudges;
    broker
        .commit_durable(|tx| {
            shepherd_core::herd::report(tx, &sender, report, budget);
            Ok(())
        })
        .await?;
    if settled {
        crate::pi::record_output(broker, &sender, params.text).await?;
    }
    Ok(json!({ "ok": true }))
}
