//! The broker's shared state: its services, and the runtime links that are not herd state.
//!
//! A running broker is a few owned services, each handed to the code that touches it as
//! mini-redis hands its `&Db`: the herd and its journal ([`Store`], the one way to change the
//! herd), its configuration ([`BrokerConfig`]), who is connected (`connections`), the runs and
//! merges under way (`work`), the remote hosts (`remotes`), the backends sheep run on and the
//! fieldnotes writer. A function that touches one service takes that service; one that needs
//! several takes the broker.
//!
//! Runtime-only bookkeeping about sheep that is not part of the herd (supervisors' push
//! channels, spawns waiting for readiness, closes waiting for an exit, the last line each
//! printed) lives in [`Links`]; it is rebuilt, not replayed, after a restart.

use shepherd_core::error_code::ErrorCode;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use shepherd_core::dirs::UserDirs;
use shepherd_core::herd::{ExitInfo, Herd, HerdConfig};
use shepherd_core::ids::{AgentId, TaskId};
use shepherd_core::settings::EffectiveSettings;
use shepherd_term::{Backend, BackendKind};
use tokio::sync::{mpsc, oneshot, watch};

pub(crate) use crate::state::store::{Effect, Store};
use tokio_util::sync::CancellationToken;

use crate::clock::Clock;
use crate::error::{BrokerError, BrokerResult};
use crate::state::journal::Journal;
use shepherd_client::paths::{BrokerAddress, BrokerPaths};

/// What a broker needs to know about its place in the world.
#[derive(Debug, Clone)]
pub struct BrokerConfig {
    /// Which parent and project it serves.
    pub address: BrokerAddress,
    /// Its files.
    pub paths: BrokerPaths,
    /// The user's directories (settings, agents, approvals).
    pub dirs: UserDirs,
    /// The `shepherd` executable (for supervisors and sheep).
    pub shepherd_exe: PathBuf,
    /// How deeply nested this herd is (0: the parent is a person or top-level agent).
    pub depth: u32,
    /// How long a spawned sheep may take to show it runs.
    pub startup_limit: std::time::Duration,
    /// How long a restarted broker waits for a surviving supervisor to reconnect.
    pub adoption_grace: std::time::Duration,
    /// How long a supervisor keeps its sheep alive while no broker answers.
    pub orphan_grace: std::time::Duration,
    /// The command that runs pi for pi sheep when the user pinned one (`SHEPHERD_PI`); else a
    /// sheep runs its parent's own pi, or `pi` from PATH.
    pub pi_command: Option<Vec<String>>,
    /// How long a new connection has to say `hello`.
    pub hello_deadline: std::time::Duration,
}

impl BrokerConfig {
    /// The current settings for this broker's project.
    pub(crate) fn settings(&self) -> EffectiveSettings {
        shepherd_config::load_settings(&self.dirs, &self.address.project_root).settings
    }
}

/// Runtime links that are not herd state.
#[derive(Default)]
pub(crate) struct Links {
    /// Push channels to each live sheep's supervisor connection.
    pub(crate) supervisors: HashMap<AgentId, mpsc::UnboundedSender<String>>,
    /// Spawns waiting for their sheep to report that it runs (or why it does not).
    pub(crate) ready_waiters: HashMap<AgentId, oneshot::Sender<Result<(), ExitInfo>>>,
    /// Closes waiting for a sheep's exit report.
    pub(crate) exit_waiters: HashMap<AgentId, Vec<oneshot::Sender<()>>>,
    /// Sheep whose supervisor reported the exit (so a disconnect is not a second exit).
    pub(crate) exit_reported: std::collections::HashSet<AgentId>,
    /// Requests being worked on, by client request id: a resent copy joins the first.
    pub(crate) in_flight: HashMap<String, watch::Sender<Option<BrokerResult<serde_json::Value>>>>,
    /// The last line each sheep printed, as its supervisor last reported (see `printed`).
    pub(crate) printed: HashMap<AgentId, String>,
    /// What each sheep's open task used so far, as its turns reported (see `live_usage`).
    pub(crate) live_usage: HashMap<AgentId, (TaskId, shepherd_core::budget::Usage)>,
}

/// Carries out one [`Effect`] of a commit, given the broker it belongs to.
pub(crate) type EffectRunner = fn(&Arc<Broker>, Effect);

/// The state a running broker shares between its connections and tasks.
pub(crate) struct Broker {
    pub(crate) config: BrokerConfig,
    /// The herd and its journal.
    pub(crate) store: Store,
    /// Where sheep can run; Herdr joins when first asked for.
    backends: std::sync::RwLock<HashMap<BackendKind, Arc<dyn Backend>>>,
    pub(crate) links: Mutex<Links>,
    /// The runs and merges under way: who follows them and what drives them.
    pub(crate) work: Mutex<crate::state::work::Work>,
    /// Cancelled when the broker shuts down.
    pub(crate) shutdown: CancellationToken,
    /// Who is connected, and the key a parent presents.
    pub(crate) connections: crate::state::connections::Connections,
    pub(crate) started_at: i64,
    /// The writer of this herd's notes.
    fieldnotes: crate::fieldnotes::Fieldnotes,
    /// Tasks whose notes are being finalised right now (never twice at once; see `notes`).
    pub(crate) finalizing: Mutex<std::collections::HashSet<TaskId>>,
    /// Tasks being handed to a fallback right now (never twice at once; see `fallback`).
    pub(crate) falling_back: Mutex<std::collections::HashSet<TaskId>>,
    /// The waiting tasks a timer will consider for a fallback once they have waited
    /// `fallbackAfterMinutes`.
    pub(crate) fallback_timers: Mutex<std::collections::HashSet<TaskId>>,
    /// The links to hosts that run remote sheep.
    pub(crate) remotes: crate::remote::Remotes,
}

impl std::fmt::Debug for Broker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Broker")
            .field("address", &self.config.address)
            .finish_non_exhaustive()
    }
}

impl Broker {
    /// A broker over a replayed herd.
    pub(crate) fn new(
        config: BrokerConfig,
        herd: Herd,
        journal: Journal,
        clock: Arc<dyn Clock>,
        backends: HashMap<BackendKind, Arc<dyn Backend>>,
        effects: EffectRunner,
    ) -> Arc<Self> {
        // The store hands each effect to the runner with the broker it belongs to; it holds
        // the broker weakly, so the two do not keep each other alive.
        let started_at = clock.now_ms();
        let fieldnotes = crate::fieldnotes::Fieldnotes::start(
            config.address.project_root.clone(),
            config.address.identity.clone(),
        );
        Arc::new_cyclic(|broker: &std::sync::Weak<Self>| {
            let broker = broker.clone();
            let sink = Box::new(move |effect| {
                if let Some(broker) = broker.upgrade() {
                    effects(&broker, effect);
                }
            });
            Self::with_store(
                config,
                Store::new(herd, journal, clock, sink),
                backends,
                started_at,
                fieldnotes,
            )
        })
    }

    fn with_store(
        config: BrokerConfig,
        store: Store,
        backends: HashMap<BackendKind, Arc<dyn Backend>>,
        started_at: i64,
        fieldnotes: crate::fieldnotes::Fieldnotes,
    ) -> Self {
        Self {
            fieldnotes,
            config,
            store,
            backends: std::sync::RwLock::new(backends),
            links: Mutex::new(Links::default()),
            work: Mutex::default(),
            shutdown: CancellationToken::new(),
            connections: crate::state::connections::Connections::default(),
            started_at,
            finalizing: Mutex::new(std::collections::HashSet::new()),
            falling_back: Mutex::new(std::collections::HashSet::new()),
            fallback_timers: Mutex::new(std::collections::HashSet::new()),
            remotes: crate::remote::Remotes::default(),
        }
    }

    /// Whether this herd writes fieldnotes: the setting as it was when the herd first needed
    /// it, fixed from then on.
    pub(crate) async fn fieldnotes_on(self: &Arc<Self>) -> BrokerResult<bool> {
        if let Some(on) = self.store.read(|herd| herd.fieldnotes) {
            return Ok(on);
        }
        let setting = self.config.settings().fieldnotes;
        self.store
            .commit_durable(|tx| Ok(shepherd_core::herd::fix_fieldnotes(tx, setting)))
            .await
    }

    /// The herd rules' view of the settings.
    pub(crate) fn herd_config(settings: &EffectiveSettings) -> HerdConfig {
        HerdConfig {
            stale_after_ms: settings.stale_wait_threshold().map(duration_ms),
            done_nudges: settings.done_nudges,
        }
    }

    /// The fieldnotes writer for this broker's project.
    pub(crate) fn fieldnotes(&self) -> crate::fieldnotes::Fieldnotes {
        self.fieldnotes.clone()
    }

    /// The backend of `kind`.
    pub(crate) fn backend(&self, kind: BackendKind) -> BrokerResult<Arc<dyn Backend>> {
        self.backends
            .read()
            .expect("backends lock")
            .get(&kind)
            .cloned()
            .ok_or_else(|| {
                BrokerError::new(
                    ErrorCode::BackendUnavailable,
                    format!(
                        "The {} backend is not available in this broker.",
                        kind.as_str()
                    ),
                )
            })
    }

    /// Whether sheep can run on `kind` now.
    pub(crate) fn has_backend(&self, kind: BackendKind) -> bool {
        self.backends
            .read()
            .expect("backends lock")
            .contains_key(&kind)
    }

    /// Adds a backend that became available (Herdr, connected on first use).
    pub(crate) fn add_backend(&self, backend: Arc<dyn Backend>) {
        self.backends
            .write()
            .expect("backends lock")
            .insert(backend.kind(), backend);
    }

    /// Counts a client connection in or out (the idle timer watches this).
    pub(crate) fn client_delta(&self, connected: bool) {
        self.connections.count(connected);
        self.store.generation.send_modify(|g| *g += 1);
    }

    /// The created-pane registry.
    pub(crate) fn registry(&self) -> shepherd_term::registry::Registry {
        shepherd_term::registry::Registry::in_dir(&self.config.dirs.user_config_dir())
    }
}

/// Whole milliseconds of `duration`, saturating.
pub(crate) fn duration_ms(duration: std::time::Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

/// A fresh id part.
pub(crate) fn unique() -> String {
    uuid::Uuid::new_v4().to_string()
}
