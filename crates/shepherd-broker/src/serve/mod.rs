//! Starting, running and stopping a broker.
//!
//! Start-up order matters for crash safety: take the broker's advisory lock (a second broker
//! for the same parent and project exits at once; a crashed one's lock is already released),
//! replay and compact the journal, bind the socket (private: 0600 in a 0700 directory), re-adopt
//! the sheep that outlived the previous broker, and only then say ready. The broker then runs
//! three loops until it is stopped or idle: accept connections, fire deadlines, and watch for
//! idleness (no sheep holding processes and no clients for the idle time).
//!
//! Shutdown: `broker.stop` (`broker_requests`) closes every sheep first; then the shutdown token is cancelled,
//! which ends the loops and every connection; the journal writer drains and stops; the socket
//! is removed; dropping the lock file handle releases the lock.
//!
//! This folder is the top layer, the only one that may call every other: besides start-up it
//! holds `effects`, the runner that carries out what commits ask for (handed to the broker it
//! starts), and `recovery`, what a restarted broker does with the herd it replayed.

mod effects;
mod notify;
mod recovery;
mod watchdog;

use std::collections::HashMap;
use std::os::unix::fs::PermissionsExt;
use std::sync::Arc;
use std::time::Duration;

use shepherd_term::headless::HeadlessBackend;
use shepherd_term::{Backend, BackendKind};
use tokio::net::UnixListener;

use crate::clock::Clock;
use crate::state::broker::{Broker, BrokerConfig};
use crate::state::journal::Journal;
use shepherd_client::paths::ensure_private_dir;

/// Why a broker could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// Another broker for the same parent and project holds the lock.
    #[error("a broker for this parent and project is already running (socket {0})")]
    AlreadyRunning(String),
    /// Something on disk failed.
    #[error("{0}")]
    Io(String),
}

/// A started broker.
pub struct RunningBroker {
    broker: Arc<Broker>,
    _lock: fs_err::File,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl std::fmt::Debug for RunningBroker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunningBroker")
            .field("socket", &self.broker.config.paths.socket)
            .finish_non_exhaustive()
    }
}

/// A herd holds about two descriptors per sheep (its supervisor's connection and its own), so
/// the usual soft limit of 1,024 would refuse the five-hundredth sheep: the broker raises its
/// soft limit to the hard one, as servers do.
fn raise_descriptor_limit() {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    if let Some(maximum) = limit.maximum
        && limit.current.is_some_and(|current| current < maximum)
    {
        let raised = Rlimit {
            current: Some(maximum),
            maximum: Some(maximum),
        };
        if let Err(err) = setrlimit(Resource::Nofile, raised) {
            tracing::warn!("could not raise the open-file limit to {maximum}: {err}");
        }
    }
}

/// Extra backends a broker can run sheep on, besides headless.
pub type ExtraBackends = Vec<Arc<dyn Backend>>;

/// Starts a broker: lock, replay, bind, re-adopt. Returns once it accepts connections.
pub async fn start(
    config: BrokerConfig,
    clock: Arc<dyn Clock>,
    extra_backends: ExtraBackends,
) -> Result<RunningBroker, ServeError> {
    let io = |what: &str, err: &dyn std::fmt::Display| ServeError::Io(format!("{what}: {err}"));
    raise_descriptor_limit();
    let paths = config.paths.clone();
    ensure_private_dir(&paths.runtime_dir).map_err(|e| io("creating the runtime directory", &e))?;
    ensure_private_dir(&paths.state_dir).map_err(|e| io("creating the state directory", &e))?;
    let lock = fs_err::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&paths.lock)
        .map_err(|e| io("opening the broker's lock", &e))?;
    match lock.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            return Err(ServeError::AlreadyRunning(
                paths.socket.display().to_string(),
            ));
        }
        Err(std::fs::TryLockError::Error(err)) => return Err(io("locking the broker", &err)),
    }
    let (journal, replayed) =
        Journal::open(&paths.journal, &paths.snapshot, &config.address.namespace)
            .map_err(|e| io("opening the journal", &e))?;
    let herd = replayed.herd;
    // The herd's key is there before the socket is: a client that reaches the socket can
    // always read it.
    let key = crate::state::auth::ensure_herd_key(&paths.key)
        .map_err(|e| io("writing the herd's key", &e))?;
    match fs_err::remove_file(&paths.socket) {
        Ok(()) => {}
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
        Err(err) => return Err(io("removing a stale socket", &err)),
    }
    let listener = UnixListener::bind(&paths.socket)
        .map_err(|e| io(&format!("binding {}", paths.socket.display()), &e))?;
    fs_err::set_permissions(&paths.socket, std::fs::Permissions::from_mode(0o600))
        .map_err(|e| io("securing the socket", &e))?;
    // Remote sheep reach the broker through their own socket, forwarded to their hosts.
    match fs_err::remove_file(&paths.remote_socket) {
        Ok(()) => {}
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
        Err(err) => return Err(io("removing a stale remote socket", &err)),
    }
    let remote_listener = UnixListener::bind(&paths.remote_socket)
        .map_err(|e| io(&format!("binding {}", paths.remote_socket.display()), &e))?;
    fs_err::set_permissions(&paths.remote_socket, std::fs::Permissions::from_mode(0o600))
        .map_err(|e| io("securing the remote socket", &e))?;

    let mut backends: HashMap<BackendKind, Arc<dyn Backend>> = HashMap::new();
    backends.insert(BackendKind::Headless, Arc::new(HeadlessBackend));
    for backend in extra_backends {
        backends.insert(backend.kind(), backend);
    }
    let broker = Broker::new(config, herd, journal, clock, backends, effects::carry_out);
    broker.connections.set_herd_key_digest(key);
    for note in replayed.notes {
        // What a damaged journal cost is the parent's to know, not only the log's.
        broker.store.commit(|tx| {
            tx.enqueue(
                shepherd_core::ids::Participant::Parent,
                shepherd_core::herd::Payload::Notice(shepherd_core::herd::Notice {
                    notice: shepherd_core::herd::NoticeKind::BrokerRecovered,
                    text: format!("Shepherd's broker restarted: {note}."),
                    agent_id: None,
                    task_id: None,
                }),
            );
        });
    }
    recovery::recover(&broker);
    crate::sheep::remote_sheep::relink(&broker);
    let tasks = vec![
        tokio::spawn(crate::wire::server::accept_loop(
            broker.clone(),
            listener,
            false,
        )),
        tokio::spawn(crate::wire::server::accept_loop(
            broker.clone(),
            remote_listener,
            true,
        )),
        tokio::spawn(crate::sheep::remote_sheep::notes::sync_loop(broker.clone())),
        tokio::spawn(timer_loop(broker.clone())),
        tokio::spawn(idle_loop(broker.clone())),
        tokio::spawn(watchdog::watchdog_loop(broker.clone())),
        tokio::spawn(notify::notify_loop(broker.clone())),
    ];
    tracing::info!("broker ready on {}", paths.socket.display());
    Ok(RunningBroker {
        broker,
        _lock: lock,
        tasks,
    })
}

/// A handle that can stop a running broker's herd from elsewhere (a signal handler).
#[derive(Debug, Clone)]
pub struct BrokerHandle(Arc<Broker>);

impl BrokerHandle {
    /// Closes every sheep of the herd (as `broker stop` does), then stops the broker.
    pub async fn stop_herd(&self) {
        stop_and_exit(&self.0).await;
    }
}

impl RunningBroker {
    /// A handle to stop this broker's herd from elsewhere.
    pub fn handle(&self) -> BrokerHandle {
        BrokerHandle(self.broker.clone())
    }

    /// The socket clients connect to.
    pub fn socket(&self) -> &std::path::Path {
        &self.broker.config.paths.socket
    }

    /// Stops the broker without closing its sheep (as a crash would, but cleanly).
    pub fn shutdown(&self) {
        self.broker.shutdown.cancel();
    }

    /// Waits until the broker has shut down, then releases its socket and journal. A herd left
    /// with no sheep has ended: its recorded environment is forgotten, so the next broker for
    /// this parent starts a new herd with the environment of whoever starts it.
    pub async fn wait(self) {
        self.broker.shutdown.cancelled().await;
        for task in self.tasks {
            let _ended = task.await;
        }
        // Every shepherd.md a reservation put off is written before the broker goes.
        let fieldnotes = self.broker.fieldnotes();
        let _caught_up = tokio::task::spawn_blocking(move || fieldnotes.catch_up_all()).await;
        self.broker.store.journal.close();
        let _removed = fs_err::remove_file(&self.broker.config.paths.socket);
        if !self
            .broker
            .store
            .read(shepherd_core::herd::Herd::has_live_sheep)
        {
            shepherd_client::wire::start::forget_env(&self.broker.config.paths.state_dir);
        }
        tracing::info!("broker stopped");
    }
}

/// Closes every sheep, then stops the broker.
pub(super) async fn stop_and_exit(broker: &Arc<Broker>) {
    crate::land::stop_all(broker).await;
    if let Err(err) = crate::handlers::broker_requests::stop(broker).await {
        tracing::error!("closing the herd failed: {err}");
    }
    broker.shutdown.cancel();
}

/// Fires deadlines: sleeps until the herd's next deadline (or a change), then ticks.
async fn timer_loop(broker: Arc<Broker>) {
    let mut generation = broker.store.generation.subscribe();
    loop {
        generation.borrow_and_update();
        let config = Broker::herd_config(&broker.config.settings());
        let next = broker.store.read(|herd| herd.next_deadline(&config));
        let sleep = next.map(|at| broker.store.clock.sleep_until(at));
        tokio::select! {
            () = broker.shutdown.cancelled() => return,
            changed = generation.changed() => if changed.is_err() { return },
            () = async { match sleep { Some(sleep) => sleep.await, None => std::future::pending().await } } => {
                broker.store.commit(|tx| shepherd_core::herd::tick(tx, &config));
            }
        }
    }
}

/// Shuts the broker down after the idle time with no live sheep and no clients.
async fn idle_loop(broker: Arc<Broker>) {
    let mut generation = broker.store.generation.subscribe();
    loop {
        generation.borrow_and_update();
        let idle = broker.connections.clients() == 0
            && !broker.store.read(|herd| {
                herd.has_live_sheep() || herd.has_open_runs() || herd.has_open_merges()
            });
        let minutes = broker.config.settings().broker_idle_minutes;
        let idle_for = Duration::from_secs_f64((minutes * 60.0).max(0.0));
        tokio::select! {
            () = broker.shutdown.cancelled() => return,
            changed = generation.changed() => if changed.is_err() { return },
            () = tokio::time::sleep(idle_for), if idle => {
                tracing::info!("idle for {minutes} minutes with no sheep and no clients; stopping");
                broker.shutdown.cancel();
                return;
            }
        }
    }
}
