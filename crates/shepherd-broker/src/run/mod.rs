//! Runs belong to the broker: `run.submit` hands over a whole run (single, parallel, chain)
//! and the broker carries it out — reserving its notes, scheduling its tasks, carrying
//! `{previous}`, isolating tasks in worktrees, closing every sheep and finalising every note —
//! and journals it, so after a crash it continues where it was. Front ends only submit, follow
//! (pushed `run` views) and cancel.
//!
//! A run is followed by the connection that submitted it (and any that `run.attach`). When the
//! last follower goes away without cancelling — its client was killed — and the run was not
//! submitted `detach`ed, the broker cancels it after [`ORPHAN_GRACE`], long enough for a
//! client that only lost its connection (a broker restart) to reattach. A restarted broker
//! gives every unfinished run the same grace.

mod check;
mod conflict;
mod driver;
mod model;
mod report;
pub(crate) mod step;

use shepherd_core::error_code::ErrorCode;
use std::sync::Arc;
use std::time::Duration;

use shepherd_core::herd::Run;
use shepherd_core::protocol::{RunIdParams, RunStepView, RunSubmitParams, RunView, event};

use self::model::{StepState, StepStatus};
use crate::error::{BrokerError, BrokerResult};
use crate::state::broker::Broker;
use crate::state::broker::BrokerConfig;
use crate::state::session::Session;

/// How long a run that is not detached goes on with nobody following it.
pub(crate) const ORPHAN_GRACE: Duration = Duration::from_secs(5);

/// Runs `run.submit`: checks the run (a refusal changes nothing), accepts it, reserves its
/// notes, and starts it; the calling connection follows it. A resent submission (same request
/// id) follows the run its first copy started.
pub(crate) async fn submit(
    broker: &Arc<Broker>,
    session: &Arc<Session>,
    params: RunSubmitParams,
    rid: Option<&str>,
) -> BrokerResult<RunView> {
    if let Some(run_id) = rid.and_then(|rid| {
        broker.store.read(|herd| {
            herd.runs
                .values()
                .find(|run| run.request_id.as_deref() == Some(rid))
                .map(|run| run.id.clone())
        })
    }) {
        broker
            .work
            .lock()
            .expect("work lock")
            .follow_run(session, &run_id);
        return view(broker, &run_id);
    }
    let settings = broker.config.settings();
    check::depth(broker.config.depth, settings.max_depth)?;
    let root = broker.config.address.project_root.clone();
    let dirs = broker.config.dirs.clone();
    let resolve_settings = settings.clone();
    let mut spec = check::check(&params, &settings, &dirs.home, &root, |name| {
        shepherd_config::resolve_agent(&dirs, &root, &resolve_settings, name)
            .map_err(|err| BrokerError::new(err.code(), err.to_string()))
    })?;
    hosts_defined(&broker.config, &spec)?;
    // With fieldnotes off the run writes no notes, unless it names a session to write them in.
    spec.fieldnotes = params.session_name.is_some() || broker.fieldnotes_on().await?;
    let run_id = format!("run-{}", &uuid::Uuid::new_v4().simple().to_string()[..8]);
    let run = Run {
        id: run_id.clone(),
        request_id: rid.map(str::to_owned),
        created_at: broker.store.now(),
        detach: params.detach,
        planned: None,
        steps: vec![StepState::default(); spec.steps.len()],
        spec: spec.clone(),
        cancelled: None,
        finished: None,
    };
    broker
        .store
        .commit_durable(|tx| {
            shepherd_core::herd::submit_run(tx, run);
            Ok(())
        })
        .await?;
    broker
        .work
        .lock()
        .expect("work lock")
        .follow_run(session, &run_id);
    if let Err(err) = driver::plan_notes(broker, &run_id, &spec).await {
        // Nothing was launched: the run ends here, cancelled with the reason.
        let reason = format!("its notes could not be reserved: {}", err.message);
        let outcomes: Vec<model::Outcome> = spec
            .steps
            .iter()
            .map(|_| model::Outcome::not_run(StepStatus::Cancelled, Some(130), reason.clone()))
            .collect();
        let report = report::build(&report::Finished {
            run_id: &run_id,
            spec: &spec,
            plan: &model::Plan::default(),
            outcomes: &outcomes,
            cancelled: Some(&reason),
            warnings: &[],
            results_dir: &broker.config.paths.runtime_dir.join("results"),
        });
        broker
            .store
            .commit_durable(|tx| {
                shepherd_core::herd::cancel_run(tx, &run_id, &reason);
                shepherd_core::herd::finish_run(tx, &run_id, report);
                Ok(())
            })
            .await?;
        return Err(err);
    }
    driver::start(broker, &run_id);
    view(broker, &run_id)
}

/// Runs `run.attach`: the run now, and its changes pushed to this connection from now on.
pub(crate) fn attach(
    broker: &Arc<Broker>,
    session: &Arc<Session>,
    params: &RunIdParams,
) -> BrokerResult<RunView> {
    let found = broker
        .store
        .read(|herd| herd.runs.contains_key(&params.run_id));
    if !found {
        return Err(unknown_run(&params.run_id));
    }
    broker
        .work
        .lock()
        .expect("work lock")
        .follow_run(session, &params.run_id);
    view(broker, &params.run_id)
}

/// Runs `run.cancel`: queued tasks never start, running ones are closed (their tasks end
/// cancelled, rc 130); the run then finishes as usual.
pub(crate) async fn cancel(broker: &Arc<Broker>, params: &RunIdParams) -> BrokerResult<RunView> {
    cancel_run(broker, &params.run_id, "cancelled by its client").await?;
    view(broker, &params.run_id)
}

async fn cancel_run(broker: &Arc<Broker>, run_id: &str, reason: &str) -> BrokerResult<()> {
    let known = broker.store.read(|herd| herd.runs.contains_key(run_id));
    if !known {
        return Err(unknown_run(run_id));
    }
    broker
        .store
        .commit_durable(|tx| {
            shepherd_core::herd::cancel_run(tx, run_id, reason);
            Ok(())
        })
        .await
}

/// Every host a run names — a task's own, the run's, or its definition's — must be one the user
/// defines, before its first step runs: a chain must not run its early steps and then fail on
/// a host that never existed.
fn hosts_defined(config: &BrokerConfig, spec: &model::RunSpec) -> BrokerResult<()> {
    let settings = config.settings();
    for (index, step) in spec.steps.iter().enumerate() {
        let host = match &step.host {
            Some(host) => Some(host.clone()),
            None => shepherd_config::resolve_agent(
                &config.dirs,
                &config.address.project_root,
                &settings,
                &step.agent,
            )
            .ok()
            .and_then(|def| def.host),
        };
        let Some(host) = host else { continue };
        shepherd_config::host_def(&config.dirs, &config.address.project_root, &host).map_err(
            |err| {
                BrokerError::new(
                    ErrorCode::UnknownHost,
                    format!("task {} ({}): {err}", index + 1, step.agent),
                )
            },
        )?;
    }
    Ok(())
}

fn unknown_run(run_id: &str) -> BrokerError {
    BrokerError::new(
        ErrorCode::UnknownRun,
        format!("no run `{run_id}` in this herd (finished runs are kept only for a while)"),
    )
}

/// The run as its followers see it.
pub(crate) fn view(broker: &Arc<Broker>, run_id: &str) -> BrokerResult<RunView> {
    broker
        .store
        .read(|herd| herd.runs.get(run_id).map(|run| view_of(run, herd)))
        .ok_or_else(|| unknown_run(run_id))
}

/// The run's view, each running task with the provider limit it waits out, if any.
fn view_of(run: &Run, herd: &shepherd_core::herd::Herd) -> RunView {
    let (spec, plan) = (&run.spec, run.planned.as_ref());
    RunView {
        run_id: run.id.clone(),
        mode: spec.mode,
        detach: run.detach,
        session_name: plan.as_ref().map(|p| p.session_name.clone()),
        session_relative_path: plan.as_ref().map(|p| p.session_relative_path.clone()),
        steps: run
            .steps
            .iter()
            .enumerate()
            .map(|(index, step)| {
                let agent = spec.steps.get(index).map_or("", |s| s.agent.as_str());
                let task_id = step
                    .task_id
                    .as_deref()
                    .and_then(shepherd_core::ids::TaskId::parse);
                let rate_limit = task_id.as_ref().and_then(|id| herd.limit_view(id));
                let fell_back_to = task_id.as_ref().and_then(|id| herd.fallback_view(id));
                let shown = RunStepView::of(step, agent);
                // Where its sheep runs: the sheep's own host once spawned, else the one the
                // run asked for.
                let host = step
                    .agent_id
                    .as_deref()
                    .and_then(shepherd_core::ids::AgentId::parse)
                    .and_then(|id| herd.sheep.get(&id))
                    .and_then(|sheep| sheep.host().map(str::to_owned))
                    .or_else(|| spec.steps.get(index).and_then(|s| s.host.clone()))
                    .or(shown.host.clone());
                RunStepView {
                    rate_limit,
                    fell_back_to,
                    host,
                    ..shown
                }
            })
            .collect(),
        cancelled: run.cancelled.clone(),
        report: run.finished.clone(),
    }
}

/// Pushes the run's view to everyone following it.
pub(crate) fn push_view(broker: &Arc<Broker>, run_id: &str) {
    let followers: Vec<Arc<Session>> = {
        let mut work = broker.work.lock().expect("work lock");
        let Some(followers) = work.run_followers.get_mut(run_id) else {
            return;
        };
        followers.retain(|f| !f.closed.is_cancelled());
        followers.clone()
    };
    if followers.is_empty() {
        return;
    }
    let Ok(view) = view(broker, run_id) else {
        return;
    };
    let data = serde_json::to_value(view).expect("views serialise");
    for follower in followers {
        follower.push(event::RUN, data.clone());
    }
}

/// A connection closed: the runs it followed may now have nobody following them.
pub(crate) fn connection_closed(broker: &Arc<Broker>, session: &Arc<Session>) {
    let orphaned: Vec<String> = {
        let mut work = broker.work.lock().expect("work lock");
        let mut orphaned = Vec::new();
        for (run_id, followers) in &mut work.run_followers {
            let before = followers.len();
            followers.retain(|f| !Arc::ptr_eq(f, session) && !f.closed.is_cancelled());
            if before > 0 && followers.is_empty() {
                orphaned.push(run_id.clone());
            }
        }
        orphaned
    };
    for run_id in orphaned {
        watch_orphan(broker, run_id, ORPHAN_GRACE);
    }
}

/// Cancels a run that is not detached once it has had nobody following it for `grace`.
fn watch_orphan(broker: &Arc<Broker>, run_id: String, grace: Duration) {
    let broker = broker.clone();
    tokio::spawn(async move {
        tokio::select! {
            () = tokio::time::sleep(grace) => {}
            () = broker.shutdown.cancelled() => return,
        }
        let followed = broker
            .work
            .lock()
            .expect("work lock")
            .run_followers
            .get(&run_id)
            .is_some_and(|f| f.iter().any(|s| !s.closed.is_cancelled()));
        let open = broker.store.read(|herd| {
            herd.runs
                .get(&run_id)
                .is_some_and(|run| !run.detach && !run.is_finished() && run.cancelled.is_none())
        });
        if open && !followed {
            tracing::info!("run {run_id}: its client went away; cancelling it");
            if let Err(err) = cancel_run(&broker, &run_id, "its client went away").await {
                tracing::warn!("run {run_id}: could not cancel it: {err}");
            }
        }
    });
}

/// After a restart: every unfinished run goes on, and those that are not detached get the
/// grace to be followed again.
pub(crate) fn resume(broker: &Arc<Broker>) {
    let unfinished: Vec<(String, bool)> = broker.store.read(|herd| {
        herd.runs
            .values()
            .filter(|run| !run.is_finished())
            .map(|run| (run.id.clone(), run.detach))
            .collect()
    });
    for (run_id, detach) in unfinished {
        driver::start(broker, &run_id);
        if !detach {
            watch_orphan(broker, run_id, ORPHAN_GRACE * 2);
        }
    }
}
