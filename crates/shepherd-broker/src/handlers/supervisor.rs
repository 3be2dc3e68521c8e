//! The supervisor side of the protocol: a sheep's supervisor reports that the program runs
//! (which makes a spawn ready, or re-adopts the sheep after a broker restart) and how it ended;
//! the broker pushes `terminate` to it on close (`supervisor_link`). A supervisor connection that drops without an
//! exit report means the supervisor itself died, which ends the sheep too.

use shepherd_core::error_code::ErrorCode;
use std::sync::Arc;

use shepherd_core::herd::ExitInfo;
use shepherd_core::protocol::{OkResult, SupervisorExited, SupervisorStarted};
use shepherd_term::LaunchRecord;

use crate::error::{BrokerError, BrokerResult};
use crate::state::broker::Broker;
use crate::state::session::Session;

/// `supervisor.started`: the sheep's program runs.
pub(crate) async fn started(
    broker: &Arc<Broker>,
    session: &Session,
    params: SupervisorStarted,
) -> BrokerResult<OkResult> {
    let id = session
        .agent_id
        .clone()
        .expect("supervisor sessions carry an agent");
    check_reported_pids(session, &params)?;
    // A sheep already recorded as ended (its supervisor came back too late) is not taken back:
    // its supervisor hears so and ends it.
    let phase = broker
        .store
        .read(|herd| herd.sheep.get(&id).map(|s| s.phase.clone()));
    if !phase
        .as_ref()
        .is_some_and(crate::sheep::supervisor_link::may_be_running)
    {
        return Err(BrokerError::new(
            ErrorCode::ClosedHandle,
            format!("{id} has ended in this herd; its supervisor must end it"),
        ));
    }
    let update = LaunchRecord {
        supervisor_pid: Some(params.supervisor_pid),
        pid: Some(params.pid),
        limits: params.limits.clone(),
        ..LaunchRecord::default()
    };
    crate::sheep::launch_record::merge_launch(&broker.store, &id, &update);
    // A command sheep is ready once its program runs; a coding agent once it reports in
    // (`report ready`): pi's extension once pi loaded it, another agent's driver once the agent
    // can take input.
    let reports = broker.store.read(|herd| {
        herd.sheep
            .get(&id)
            .is_some_and(|s| s.runtime.reports_runs())
    });
    if !reports {
        mark_ready(broker, &id).await?;
    }
    crate::handlers::adoption::adopted(&broker.store, &id);
    Ok(OkResult::ACK)
}

/// A supervisor reports its own pid and its sheep's; both are checked against what the kernel
/// says, so nobody can make a later close signal a process that is not the sheep.
fn check_reported_pids(session: &Session, params: &SupervisorStarted) -> BrokerResult<()> {
    if session.remote {
        // The pids are the host's; its own `shepherd` placed them. Nothing here can check them,
        // and nothing here ever signals them.
        return Ok(());
    }
    let refuse = |why: String| {
        crate::state::session::forbidden(&format!("supervisor report refused: {why}"))
    };
    if let Some(peer) = session.peer_pid
        && peer != params.supervisor_pid
    {
        return Err(refuse(format!(
            "it names pid {} as the supervisor, but the connection comes from pid {peer}",
            params.supervisor_pid
        )));
    }
    match shepherd_term::process::parent_of(params.pid) {
        Some(parent) if parent == params.supervisor_pid => Ok(()),
        Some(parent) => Err(refuse(format!(
            "pid {} is a child of {parent}, not of the supervisor {}",
            params.pid, params.supervisor_pid
        ))),
        None => Err(refuse(format!("pid {} does not run", params.pid))),
    }
}

/// Marks a sheep ready and releases the spawn waiting for it.
pub(crate) async fn mark_ready(
    broker: &Arc<Broker>,
    id: &shepherd_core::ids::AgentId,
) -> BrokerResult<()> {
    let committed = broker.store.commit(|tx| shepherd_core::herd::ready(tx, id));
    broker.store.durable(committed.pos).await?;
    let waiter = broker
        .links
        .lock()
        .expect("links lock")
        .ready_waiters
        .remove(id);
    if let Some(waiter) = waiter {
        let _spawn_gone = waiter.send(Ok(()));
    }
    Ok(())
}

/// `supervisor.exited`: the sheep's program ended.
pub(crate) async fn exited(
    broker: &Arc<Broker>,
    session: &Session,
    params: SupervisorExited,
) -> BrokerResult<OkResult> {
    let id = session
        .agent_id
        .clone()
        .expect("supervisor sessions carry an agent");
    let tail = if params.tail.trim().is_empty() {
        // A sheep in a pane printed to its terminal: read the end of the pane instead.
        tail_of(
            broker,
            &id,
            &crate::sheep::launch_record::current_launch(&broker.store, &id),
        )
    } else {
        params.tail
    };
    let mut exit = ExitInfo {
        code: params.code,
        signal: params.signal,
        reason: params.error,
        tail,
    };
    if let Some(resource) = params.stopped_by.filter(|_| exit.reason.is_none()) {
        exit.reason = Some(crate::sheep::limits::stop_reason(
            broker, &id, resource, &exit,
        ));
    }
    broker
        .links
        .lock()
        .expect("links lock")
        .exit_reported
        .insert(id.clone());
    record_exit(broker, &id, exit).await?;
    Ok(OkResult::ACK)
}

/// Called when any connection closes. A supervisor connection that closes without an exit
/// report means either the supervisor died — then its sheep is ended (its whole process group,
/// in case the parent-death signal left any of it) and recorded as exited — or it is alive and
/// reconnecting (it gave up on a slow answer), which it gets the adoption grace for.
pub(crate) async fn connection_closed(broker: &Arc<Broker>, session: &Session) {
    if session.role != shepherd_core::protocol::Role::Supervisor {
        return;
    }
    let Some(id) = session.agent_id.clone() else {
        return;
    };
    let (reported, still_attached) = {
        let mut links = broker.links.lock().expect("links lock");
        if links
            .supervisors
            .get(&id)
            .is_some_and(|out| out.same_channel(&session.out))
        {
            links.supervisors.remove(&id);
        }
        (
            links.exit_reported.contains(&id),
            links.supervisors.contains_key(&id),
        )
    };
    if reported || still_attached || broker.shutdown.is_cancelled() {
        notify_exit_waiters(broker, &id);
        return;
    }
    if crate::sheep::remote_sheep::host_of(&broker.store, &id).is_some() {
        // A remote supervisor's connection drops with its link; the supervisor keeps its sheep
        // and reconnects when the link returns. It gets as long as a host may stay unreachable.
        let phase = broker
            .store
            .read(|herd| herd.sheep.get(&id).map(|s| s.phase.clone()));
        if let Some(phase) = phase.filter(crate::sheep::supervisor_link::may_be_running) {
            crate::handlers::adoption::await_remote(broker, id, phase);
        }
        return;
    }
    let record = crate::sheep::launch_record::current_launch(&broker.store, &id);
    // A process killed outright closes its sockets a moment before it is gone: give it that
    // moment before deciding it lives on.
    let supervisor_alive = match record.supervisor_pid {
        Some(pid) => tokio::task::spawn_blocking(move || {
            !shepherd_term::process::wait_gone(
                pid,
                std::time::Instant::now() + std::time::Duration::from_millis(500),
            )
        })
        .await
        .unwrap_or(false),
        None => false,
    };
    if supervisor_alive {
        let phase = broker
            .store
            .read(|herd| herd.sheep.get(&id).map(|s| s.phase.clone()));
        if let Some(phase) = phase.filter(crate::sheep::supervisor_link::may_be_running) {
            crate::handlers::adoption::await_adoption(broker, id, phase);
        }
        return;
    }
    if let Some(pid) = record.pid {
        shepherd_term::process::signal_group(pid, rustix::process::Signal::KILL);
    }
    let tail = tail_of(broker, &id, &record);
    let exit = ExitInfo {
        reason: Some("ended: its supervisor went away".into()),
        tail,
        ..ExitInfo::default()
    };
    if let Err(err) = record_exit(broker, &id, exit).await {
        tracing::error!("recording the end of {id} failed: {err}");
    }
    notify_exit_waiters(broker, &id);
}

async fn record_exit(
    broker: &Arc<Broker>,
    id: &shepherd_core::ids::AgentId,
    exit: ExitInfo,
) -> BrokerResult<()> {
    let waiter = broker
        .links
        .lock()
        .expect("links lock")
        .ready_waiters
        .remove(id);
    match waiter {
        Some(waiter) => {
            let _spawn_gone = waiter.send(Err(exit));
        }
        None => {
            let committed = broker
                .store
                .commit(|tx| shepherd_core::herd::exited(tx, id, exit));
            broker.store.durable(committed.pos).await?;
        }
    }
    notify_exit_waiters(broker, id);
    Ok(())
}

fn notify_exit_waiters(broker: &Broker, id: &shepherd_core::ids::AgentId) {
    let waiters = broker
        .links
        .lock()
        .expect("links lock")
        .exit_waiters
        .remove(id)
        .unwrap_or_default();
    for waiter in waiters {
        let _closer_gone = waiter.send(());
    }
}

fn tail_of(broker: &Broker, id: &shepherd_core::ids::AgentId, record: &LaunchRecord) -> String {
    broker
        .store
        .read(|herd| herd.sheep.get(id).map(|s| s.backend))
        .and_then(|kind| crate::sheep::remote_sheep::backend_of(broker, id, kind).ok())
        .and_then(|backend| {
            backend
                .read(record, shepherd_term::ReadSource::RecentUnwrapped, 20)
                .ok()
        })
        .unwrap_or_default()
}
