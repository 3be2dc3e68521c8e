//! The parent's requests besides spawn and close: delegate, message, watch, wait, status, herd
//! and read.

use shepherd_core::error_code::ErrorCode;
use std::sync::Arc;
use std::time::Duration;

use shepherd_core::herd::{DelegateInput, Handover, Herd, MessageInput, Resolved, Sheep};
use shepherd_core::ids::{MessageId, Participant, TaskId, WatcherId};
use shepherd_core::protocol::{
    DelegateParams, DelegateResult, ENDED_RUNS_LISTED, HerdResult, MessageParams, MessageResult,
    ReadParams, ReadResult, ResolveKind, ResolveParams, ResolveResult, Role, RunLine, RunStepView,
    StatusParams, StatusResult, WaitParams, WaitResult, WatchParams, WatchResult,
};

use crate::error::{BrokerError, BrokerResult};
use crate::state::broker::{Broker, duration_ms};
use crate::state::session::Session;
use crate::state::store::Store;

/// Minutes as given by a caller, checked and turned into milliseconds.
pub(crate) fn timeout_ms(minutes: f64) -> BrokerResult<i64> {
    if !(minutes.is_finite() && minutes > 0.0) {
        return Err(BrokerError::new(
            ErrorCode::InvalidTimeout,
            format!(
                "Delegated task timeout must be a positive number of minutes, got `{minutes}`."
            ),
        ));
    }
    Ok(((minutes * 60_000.0).round() as i64).max(1))
}

/// Where a run's task puts its note: what only the broker's run driver sets, never a client
/// (the default is a delegation of the parent's own: a single note in the parent's session).
#[derive(Debug, Clone, Default)]
pub(crate) struct RunNote {
    /// How the note is registered in the session's flow.
    pub(crate) mode: shepherd_core::fieldnotes::status::Mode,
    /// The run the note belongs to (one line of the session's Flow).
    pub(crate) group: Option<String>,
    /// The note the run reserved for this task (absolute path).
    pub(crate) note: Option<String>,
    /// The session directory (`NNNN-slug`) to reserve the note in, instead of the parent's
    /// (a merge's resolver or fixer: the session of the work it handles).
    pub(crate) session_dir: Option<String>,
}

/// Runs `delegate`: accepts the task (refusals change nothing), then hands it over — reserves
/// its note and queues it for the sheep with the fieldnotes context block appended. A resent
/// delegate finds the task its first copy created and finishes or reports it.
pub(crate) async fn delegate(
    broker: &Arc<Broker>,
    params: DelegateParams,
    placed: RunNote,
    rid: Option<&str>,
) -> BrokerResult<DelegateResult> {
    if let Some(task_id) = rid.and_then(|rid| {
        broker
            .store
            .read(|h| h.task_by_request(rid).map(|t| t.id.clone()))
    }) {
        crate::handlers::handover::hand_over(broker, &task_id).await?;
        return broker
            .store
            .read(|herd| crate::handlers::handover::delegate_result(herd, &task_id));
    }
    let settings = broker.config.settings();
    let timeout_ms = timeout_ms(params.timeout.unwrap_or(settings.timeout_minutes))?;
    let mode = placed.mode;
    let task_id = TaskId::mint(
        &broker.config.address.namespace,
        &crate::state::broker::unique(),
    );
    let agent_id = broker
        .store
        .read(|herd| herd.sheep_by_text(&params.target).map(|s| s.id.clone()));
    let stall_after_ms = crate::sheep::controls::stall_ms(params.stall, &settings)?;
    if let Ok(agent_id) = &agent_id {
        let (harness, own, who) = broker.store.read(|herd| {
            let sheep = &herd.sheep[agent_id];
            (
                crate::sheep::harness::Controls::of(sheep.runtime)
                    .shown(sheep.backend.is_visible()),
                sheep.budget,
                format!("{} ({})", sheep.display_name(), sheep.id),
            )
        });
        crate::sheep::controls::check_budget(params.budget.as_ref(), own.as_ref(), harness, &who)?;
    }
    let (session_file, session_cursor) = match &agent_id {
        Ok(agent_id) => {
            // A remote pi sheep's turns so far are on its host: its session comes home first,
            // so this task's turns are counted from where they begin.
            crate::sheep::remote_sheep::pi::pull_session(broker, agent_id).await;
            let cursor = crate::sheep::pi::session_cursor(broker, agent_id);
            let file = cursor.map(|_| {
                crate::sheep::pi_launch::session_file(broker, agent_id)
                    .display()
                    .to_string()
            });
            (file, cursor)
        }
        Err(_) => (None, None),
    };
    let handover = Handover {
        fieldnotes: broker.fieldnotes_on().await?
            || params.session_name.is_some()
            || placed.note.is_some(),
        session_name: params.session_name.clone(),
        session_dir: placed.session_dir,
        planned_note: placed.note,
        group: placed.group,
        mode,
        session_file,
        session_cursor,
    };
    let input = DelegateInput {
        task_id: task_id.clone(),
        target: params.target.clone(),
        description: params.task.clone(),
        timeout_ms,
        turn: params.turn,
        request_id: rid.map(str::to_owned),
        handover: Some(handover),
        budget: params.budget,
        stall_after_ms,
    };
    broker
        .store
        .commit_durable(|tx| shepherd_core::herd::delegate(tx, input))
        .await?;
    crate::handlers::handover::hand_over(broker, &task_id).await?;
    broker
        .store
        .read(|herd| crate::handlers::handover::delegate_result(herd, &task_id))
}

/// Builds a herd message from protocol parameters.
pub(crate) fn message_input(
    broker: &Broker,
    sender: Participant,
    params: MessageParams,
) -> BrokerResult<MessageInput> {
    let settings = broker.config.settings();
    Ok(MessageInput {
        message_id: MessageId::mint(
            &broker.config.address.namespace,
            &crate::state::broker::unique(),
        ),
        sender,
        target: params.target,
        content: params.message,
        task_id: params.task_id,
        thread_id: params.thread_id,
        reply_to: params.reply_to,
        expects_reply: params.expects_reply,
        delivery: params.delivery.unwrap_or_default(),
        reply_timeout_ms: duration_ms(settings.timeout()),
    })
}

/// Commits a message and shapes the result (kept under `rid` for a resend).
pub(crate) async fn send_message(
    broker: &Arc<Broker>,
    input: MessageInput,
    rid: Option<&str>,
) -> BrokerResult<MessageResult> {
    broker
        .store
        .commit_reply(rid, |tx| {
            let outcome = shepherd_core::herd::send(tx, input)?;
            Ok(MessageResult {
                accepted: true,
                message_id: outcome.message_id,
                target_id: outcome.target.to_string(),
                delivery: outcome.delivery,
                task_id: outcome.task_id,
                request_id: outcome.request_id,
                target_task_state: outcome.task_state,
                delivery_changed: outcome.delivery_changed,
            })
        })
        .await
}

/// Runs `message` (the parent messaging a sheep).
pub(crate) async fn message(
    broker: &Arc<Broker>,
    params: MessageParams,
    rid: Option<&str>,
) -> BrokerResult<MessageResult> {
    let input = message_input(broker, Participant::Parent, params)?;
    send_message(broker, input, rid).await
}

/// Runs `watch`: a durable watcher whose completions arrive in the parent's inbox.
pub(crate) async fn watch(
    broker: &Arc<Broker>,
    params: WatchParams,
    rid: Option<&str>,
) -> BrokerResult<WatchResult> {
    let ids = params.id.into_vec();
    let watcher_id = WatcherId::mint(
        &broker.config.address.namespace,
        &crate::state::broker::unique(),
    );
    broker
        .store
        .commit_reply(rid, |tx| {
            let outcome = shepherd_core::herd::watch(tx, watcher_id, &ids)?;
            Ok(WatchResult {
                watcher_id: outcome.watcher_id,
                task_ids: outcome.task_ids,
                completed: outcome.completed,
                pending: outcome.pending,
            })
        })
        .await
}

/// Runs `wait`: answers when every task has settled (with its note final), or when the wait
/// ends, whichever comes first.
pub(crate) async fn wait(
    broker: &Arc<Broker>,
    session: &Session,
    params: WaitParams,
) -> BrokerResult<WaitResult> {
    let ids = params.id.into_vec();
    let task_ids = broker.store.read(|herd| herd.resolve_task_ids(&ids))?;
    let deadline = tokio::time::Instant::now() + Duration::from_millis(params.timeout_ms);
    let mut generation = broker.store.generation.subscribe();
    loop {
        generation.borrow_and_update();
        let (settled, pending) = broker.store.read(|herd| {
            let mut settled = Vec::new();
            let mut pending = Vec::new();
            for id in &task_ids {
                match herd.tasks.get(id).filter(|t| t.is_reportable()) {
                    Some(_) => settled.extend(herd.task_report(id)),
                    None => pending.push(id.clone()),
                }
            }
            (settled, pending)
        });
        if pending.is_empty() || tokio::time::Instant::now() >= deadline {
            if params.wait_output && !settled.is_empty() {
                // The settled tasks of pi sheep get their last words, within what is left of
                // the wait (and never longer than the output grace).
                let grace = deadline
                    .saturating_duration_since(tokio::time::Instant::now())
                    .min(crate::sheep::pi::OUTPUT_GRACE);
                for report in &settled {
                    crate::sheep::pi::await_output(&broker.store, &report.task_id, grace).await;
                }
                let settled = broker.store.read(|herd| {
                    settled
                        .iter()
                        .filter_map(|r| herd.task_report(&r.task_id))
                        .collect()
                });
                broker.store.durable_now().await?;
                return Ok(WaitResult { settled, pending });
            }
            broker.store.durable_now().await?;
            return Ok(WaitResult { settled, pending });
        }
        tokio::select! {
            changed = generation.changed() => if changed.is_err() { return Ok(WaitResult { settled, pending }) },
            () = tokio::time::sleep_until(deadline) => {}
            () = session.closed.cancelled() => return Ok(WaitResult { settled, pending }),
            () = broker.shutdown.cancelled() => return Ok(WaitResult { settled, pending }),
        }
    }
}

/// Runs `status`: one sheep (with the receipts of the latest messages sent to it), a message's
/// receipt, or every sheep that is not closed. A sheep may only ask about itself.
pub(crate) fn status(
    broker: &Arc<Broker>,
    session: &Session,
    params: StatusParams,
) -> BrokerResult<StatusResult> {
    if let Some(message_id) = params.id.as_deref().and_then(MessageId::parse) {
        return crate::handlers::receipts::status(broker, session, &message_id)
            .map(|receipt| StatusResult::Message(Box::new(receipt)));
    }
    let now = broker.store.now();
    let own = match session.role {
        Role::Sheep => Some(session.sheep()?.to_string()),
        _ => None,
    };
    let id = match (&own, params.id) {
        (Some(own), Some(id)) if &id != own => {
            return Err(crate::state::session::forbidden(
                "a sheep may only ask for its own status",
            ));
        }
        (Some(own), _) => Some(own.clone()),
        (None, id) => id,
    };
    match id {
        Some(id) => {
            let mut status = broker.store.read(|herd| {
                let sheep = herd.sheep_by_text(&id)?;
                let mut status = herd.status_of(sheep, now);
                status.messages = herd.receipts_to(&Participant::Sheep(sheep.id.clone()));
                Ok::<_, BrokerError>(status)
            })?;
            crate::sheep::remote_sheep::overlay_links(broker, std::slice::from_mut(&mut status));
            Ok(StatusResult::One(Box::new(status)))
        }
        None => {
            let mut sheep = broker.store.read(|herd| herd.herd_view(now, false));
            crate::sheep::remote_sheep::overlay_links(broker, &mut sheep);
            Ok(StatusResult::All(HerdResult {
                sheep,
                ..HerdResult::default()
            }))
        }
    }
}

/// Runs `herd`: every sheep that is not closed, the settled tasks and the latest session, with
/// the last line each sheep printed where a supervisor reported it and what each open task's
/// turns used so far.
pub(crate) fn herd(broker: &Arc<Broker>) -> BrokerResult<HerdResult> {
    let now = broker.store.now();
    let mut view = broker.store.read(|herd| HerdResult {
        sheep: herd.herd_view(now, false),
        now: Some(now),
        settled: herd.settled_view(),
        session: herd.latest_session(),
        runs: run_lines(herd),
    });
    crate::sheep::printed::overlay(&broker.links, &mut view.sheep);
    crate::sheep::live_usage::overlay(&broker.links, &mut view.sheep);
    crate::sheep::remote_sheep::overlay_links(broker, &mut view.sheep);
    Ok(view)
}

/// The runs a herd view lists: those under way and the latest that ended, oldest first.
fn run_lines(herd: &Herd) -> Vec<RunLine> {
    let ended: Vec<&shepherd_core::herd::Run> = herd
        .runs
        .values()
        .filter(|r| r.finished.is_some())
        .collect();
    let shown_ended = &ended[ended.len().saturating_sub(ENDED_RUNS_LISTED)..];
    herd.runs
        .values()
        .filter(|run| run.finished.is_none() || shown_ended.iter().any(|r| r.id == run.id))
        .map(|run| RunLine {
            run_id: run.id.clone(),
            mode: run.spec.mode,
            steps: run
                .steps
                .iter()
                .enumerate()
                .map(|(index, step)| {
                    let agent = run.spec.steps.get(index).map_or("", |s| s.agent.as_str());
                    RunStepView::of(step, agent)
                })
                .collect(),
            cancelled: run.cancelled.clone(),
            finished: run.finished.is_some(),
        })
        .collect()
}

/// Runs `resolve`: the full id a person's short name stands for.
pub(crate) fn resolve(store: &Store, params: &ResolveParams) -> BrokerResult<ResolveResult> {
    let found = store.read(|herd| match params.kind {
        ResolveKind::Sheep => herd
            .resolve_sheep(&params.text)
            .map(|r| resolved(r, ToString::to_string)),
        ResolveKind::Task => herd
            .resolve_task(&params.text)
            .map(|r| resolved(r, ToString::to_string)),
    })?;
    Ok(ResolveResult { id: found })
}

fn resolved<T>(found: Resolved<T>, show: impl Fn(&T) -> String) -> Option<String> {
    match found {
        Resolved::One(id) => Some(show(&id)),
        Resolved::NoMatch => None,
    }
}

/// The sheep `read` means: an agent id; else a display name or pane id, meaning the one sheep
/// still running under it or, when none is, the latest that carried it (names are reused once a
/// sheep is closed, and a kept-open pane is still worth reading).
fn read_target<'h>(herd: &'h Herd, target: &str) -> Option<&'h Sheep> {
    if let Ok(sheep) = herd.sheep_by_text(target) {
        return Some(sheep);
    }
    let named: Vec<&Sheep> = herd
        .sheep
        .values()
        .filter(|s| {
            s.display_name() == target
                || s.launch.as_ref().and_then(|l| l.pane.as_deref()) == Some(target)
        })
        .collect();
    let mut live = named.iter().copied().filter(|s| s.holds_resources());
    match (live.next(), live.next()) {
        (Some(only), None) => Some(only),
        (Some(_), Some(_)) => None,
        (None, _) => named.into_iter().max_by_key(|s| s.created_at),
    }
}

/// Runs `read`: a sheep's recent output, by agent id, display name or pane id.
pub(crate) async fn read(broker: &Arc<Broker>, params: ReadParams) -> BrokerResult<ReadResult> {
    if params.target.trim().is_empty() {
        return Err(BrokerError::new(
            ErrorCode::InvalidTarget,
            "Provide an agent id or display name to read.",
        ));
    }
    let source = params.source.unwrap_or_default();
    let lines = params.lines.unwrap_or(40).clamp(1, 10_000);
    let (id, kind, runtime) = broker.store.read(|herd| {
        read_target(herd, &params.target)
            .map(|s| (s.id.clone(), s.backend, s.runtime))
            .ok_or_else(|| {
                BrokerError::new(
                    ErrorCode::InvalidTarget,
                    format!(
                        "no sheep with agent id, display name or pane id `{}` in this herd \
                         (see `shepherd herd`)",
                        params.target
                    ),
                )
            })
    })?;
    let text =
        crate::sheep::printed::recent_output(broker, &id, kind, &runtime, source, lines).await?;
    let text = if text.trim().is_empty() {
        "(no terminal output)".to_owned()
    } else {
        text
    };
    Ok(ReadResult {
        target: id.to_string(),
        source,
        lines,
        text,
    })
}
