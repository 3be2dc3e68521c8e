//! The broker's shared state and the one way to change it.
//!
//! [`Broker::commit`] runs a herd command inside a [`Tx`] while holding the herd's lock, queues
//! the resulting events on the journal in the same critical section (so journal order is apply
//! order), then — outside the lock — wakes whoever the change concerns: inbox readers of the
//! participants that got items, waiters on task settlement and the deadline timer. What else the
//! change calls for — finalising a settled task's note, auto-closing its sheep, pushing a run's
//! new view — it returns as [`Effect`]s, which the runner the broker was started with carries
//! out: this module is the state the handlers share, and knows none of them. Callers
//! acknowledge only after [`Broker::durable`] for the position they were given.
//!
//! Runtime-only bookkeeping that is not part of the herd (connections, supervisors' push
//! channels, spawns waiting for readiness, closes waiting for an exit) lives in [`Links`]; it
//! is rebuilt, not replayed, after a restart.

use shepherd_core::error_code::ErrorCode;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use shepherd_core::dirs::UserDirs;
use shepherd_core::herd::{Event, ExitInfo, Herd, HerdConfig, Tx};
use shepherd_core::ids::{AgentId, Participant, TaskId};
use shepherd_core::settings::EffectiveSettings;
use shepherd_term::{Backend, BackendKind};
use tokio::sync::{mpsc, oneshot, watch};
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
    /// Connections following each run.
    pub(crate) run_followers: HashMap<String, Vec<Arc<crate::state::session::Session>>>,
    /// Runs whose driver is running.
    pub(crate) run_drivers: std::collections::HashSet<String>,
    /// The last line each sheep printed, as its supervisor last reported (see `printed`).
    pub(crate) printed: HashMap<AgentId, String>,
    /// What each sheep's open task used so far, as its turns reported (see `live_usage`).
    pub(crate) live_usage: HashMap<AgentId, (TaskId, shepherd_core::budget::Usage)>,
    /// The merges this broker drives or was asked about, by id: what is live about each
    /// (see `land`; the merge itself is herd state).
    pub(crate) merges: HashMap<String, MergeEntry>,
    /// The merges landing into each target, in turn: the first lands, the others wait (see
    /// `land::lanes`).
    pub(crate) merge_lanes: HashMap<String, std::collections::VecDeque<String>>,
}

/// What is live about one merge: its view as shown (the step in progress, the merge it waits
/// for), the connections following it, what cancels it, and its running check.
pub(crate) struct MergeEntry {
    pub(crate) view: shepherd_core::land::MergeView,
    pub(crate) followers: Vec<Arc<crate::state::session::Session>>,
    pub(crate) cancel: CancellationToken,
    /// The process group of its running check (0: none).
    pub(crate) check: u32,
    /// Whether a driver runs it.
    pub(crate) driving: bool,
}

/// The state a running broker shares between its connections and tasks.
pub(crate) struct Broker {
    pub(crate) config: BrokerConfig,
    pub(crate) herd: Mutex<Herd>,
    pub(crate) journal: Journal,
    pub(crate) clock: Arc<dyn Clock>,
    /// Where sheep can run; Herdr joins when first asked for.
    backends: std::sync::RwLock<HashMap<BackendKind, Arc<dyn Backend>>>,
    pub(crate) links: Mutex<Links>,
    /// Bumped after every commit: wakes settlement waiters and the deadline timer.
    pub(crate) generation: watch::Sender<u64>,
    /// Bumped per participant when an item lands in its inbox.
    inbox_signals: Mutex<HashMap<Participant, watch::Sender<u64>>>,
    /// Cancelled when the broker shuts down.
    pub(crate) shutdown: CancellationToken,
    pub(crate) clients: AtomicUsize,
    /// The parent connections open now, by connection number: who drives the herd.
    pub(crate) parents:
        Mutex<std::collections::BTreeMap<u64, shepherd_core::protocol::ParentConnection>>,
    /// Numbers parent connections.
    pub(crate) next_parent: std::sync::atomic::AtomicU64,
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
    /// Carries out what commits ask for (see [`Effect`]).
    effects: EffectRunner,
    /// The digest of the herd's key, which the parent and observers present (see `auth`).
    herd_key: std::sync::OnceLock<String>,
}

impl std::fmt::Debug for Broker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Broker")
            .field("address", &self.config.address)
            .finish_non_exhaustive()
    }
}

/// What a commit asks of the rest of the broker once it is applied and its wake-ups are sent.
///
/// The commit path knows the herd and its journal, not the handlers: it says what has to happen
/// and the runner the broker was started with (`effects::carry_out`) does it, right after the
/// commit and in this order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Effect {
    /// A task settled: its sheep may be closed after a while (`autoclose`).
    AutoClose(TaskId),
    /// A task's note is due to be finalised once the journal holds `pos` (`notes`).
    FinalizeNote { task_id: TaskId, pos: u64 },
    /// A run changed: its followers get its new view (`run`).
    PushRun(String),
}

/// Carries out one [`Effect`] of a commit.
pub(crate) type EffectRunner = fn(&Arc<Broker>, Effect);

/// What a commit produced.
pub(crate) struct Committed<T> {
    pub(crate) value: T,
    pub(crate) pos: u64,
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
        let started_at = clock.now_ms();
        let fieldnotes = crate::fieldnotes::Fieldnotes::start(
            config.address.project_root.clone(),
            config.address.identity.clone(),
        );
        Arc::new(Self {
            fieldnotes,
            config,
            herd: Mutex::new(herd),
            journal,
            clock,
            backends: std::sync::RwLock::new(backends),
            links: Mutex::new(Links::default()),
            generation: watch::Sender::new(0),
            inbox_signals: Mutex::new(HashMap::new()),
            shutdown: CancellationToken::new(),
            clients: AtomicUsize::new(0),
            parents: Mutex::default(),
            next_parent: std::sync::atomic::AtomicU64::new(0),
            started_at,
            finalizing: Mutex::new(std::collections::HashSet::new()),
            falling_back: Mutex::new(std::collections::HashSet::new()),
            fallback_timers: Mutex::new(std::collections::HashSet::new()),
            remotes: crate::remote::Remotes::default(),
            effects,
            herd_key: std::sync::OnceLock::new(),
        })
    }

    /// Sets the digest of the herd's key, once, when the broker starts.
    pub(crate) fn set_herd_key_digest(&self, digest: String) {
        let _set = self.herd_key.set(digest);
    }

    /// The digest of the herd's key; `None` before it was set (then nobody is a parent).
    pub(crate) fn herd_key_digest(&self) -> Option<&str> {
        self.herd_key.get().map(String::as_str)
    }

    /// The current settings for this broker's project.
    pub(crate) fn settings(&self) -> EffectiveSettings {
        shepherd_config::load_settings(&self.config.dirs, &self.config.address.project_root)
            .settings
    }

    /// Whether this herd writes fieldnotes: the setting as it was when the herd first needed
    /// it, fixed from then on.
    pub(crate) async fn fieldnotes_on(self: &Arc<Self>) -> BrokerResult<bool> {
        if let Some(on) = self.read(|herd| herd.fieldnotes) {
            return Ok(on);
        }
        let setting = self.settings().fieldnotes;
        self.commit_durable(|tx| Ok(shepherd_core::herd::fix_fieldnotes(tx, setting)))
            .await
    }

    /// The herd rules' view of the settings.
    pub(crate) fn herd_config(settings: &EffectiveSettings) -> HerdConfig {
        HerdConfig {
            stale_after_ms: settings.stale_wait_threshold().map(duration_ms),
            done_nudges: settings.done_nudges,
        }
    }

    /// Reads the herd.
    pub(crate) fn read<T>(&self, f: impl FnOnce(&Herd) -> T) -> T {
        f(&self.herd.lock().expect("herd lock"))
    }

    /// Applies a command, journals its events and wakes whoever it concerns. Returns the
    /// command's value and the journal position to wait for before acknowledging.
    pub(crate) fn commit<T>(self: &Arc<Self>, f: impl FnOnce(&mut Tx<'_>) -> T) -> Committed<T> {
        let now = self.clock.now_ms();
        let (value, events, pos) = {
            let mut herd = self.herd.lock().expect("herd lock");
            let mut tx = Tx::new(&mut herd, now);
            let value = f(&mut tx);
            let events = tx.finish();
            let pos = self.journal.append(&events);
            (value, events, pos)
        };
        if !events.is_empty() {
            for effect in self.after_commit(&events, pos) {
                (self.effects)(self, effect);
            }
        }
        Committed { value, pos }
    }

    /// Like [`Broker::commit`] for a fallible command, waiting until the change is durable.
    pub(crate) async fn commit_durable<T>(
        self: &Arc<Self>,
        f: impl FnOnce(&mut Tx<'_>) -> Result<T, shepherd_core::herd::HerdError>,
    ) -> BrokerResult<T> {
        let Committed { value, pos } = self.commit(f);
        let value = value?;
        self.durable(pos).await?;
        Ok(value)
    }

    /// Waits until the journal holds everything up to `pos`.
    pub(crate) async fn durable(&self, pos: u64) -> BrokerResult<()> {
        self.journal.durable(pos).await.map_err(BrokerError::from)
    }

    /// Waits until everything applied so far is durable.
    pub(crate) async fn durable_now(&self) -> BrokerResult<()> {
        let pos = self.read(|_| self.journal.position());
        self.durable(pos).await
    }

    /// Wakes what the broker itself keeps (inbox readers, the generation's waiters) and returns
    /// what the rest of the broker has to do about `events`, in order.
    fn after_commit(&self, events: &[Event], pos: u64) -> Vec<Effect> {
        {
            let signals = self.inbox_signals.lock().expect("signals lock");
            for event in events {
                if let Event::Enqueued { to, item } = event
                    && let Some(signal) = signals.get(to)
                {
                    signal.send_replace(item.seq);
                }
            }
            // A provider key let a sheep go, or a turn under a cap ended: whoever it held may
            // be handed its inbox now.
            if events.iter().any(ungates) {
                for (who, signal) in signals.iter() {
                    if matches!(who, Participant::Sheep(_)) {
                        signal.send_modify(|_| {});
                    }
                }
            }
        }
        self.generation.send_modify(|g| *g += 1);
        effects_of(
            events,
            pos,
            |task_id| {
                self.read(|herd| {
                    herd.tasks
                        .get(task_id)
                        .is_some_and(|t| t.note.is_some() && !t.finalized)
                })
            },
            |task_id| self.read(|herd| run_of(herd, task_id)),
        )
    }

    /// The fieldnotes writer for this broker's project.
    pub(crate) fn fieldnotes(&self) -> crate::fieldnotes::Fieldnotes {
        self.fieldnotes.clone()
    }

    /// A receiver that changes whenever `who` gets an inbox item.
    pub(crate) fn inbox_signal(&self, who: &Participant) -> watch::Receiver<u64> {
        self.inbox_signals
            .lock()
            .expect("signals lock")
            .entry(who.clone())
            .or_insert_with(|| watch::Sender::new(0))
            .subscribe()
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
        if connected {
            self.clients.fetch_add(1, Ordering::SeqCst);
        } else {
            self.clients.fetch_sub(1, Ordering::SeqCst);
        }
        self.generation.send_modify(|g| *g += 1);
    }

    /// The created-pane registry.
    pub(crate) fn registry(&self) -> shepherd_term::registry::Registry {
        shepherd_term::registry::Registry::in_dir(&self.config.dirs.user_config_dir())
    }

    /// The current time.
    pub(crate) fn now(&self) -> i64 {
        self.clock.now_ms()
    }
}

/// What `events`, journaled up to `pos`, ask of the rest of the broker, in order: for each
/// settled task an auto-close, and a finalisation when `unfinalized_note` says it has a note
/// that is not final yet; a finalisation for each note attached to a settled task; then a push
/// for each run that changed (once for consecutive changes of the same run), a task of a run
/// (`run_of`) meeting a limit, ending its wait or falling back included, so its progress says
/// rate-limited, or which fallback took it over.
fn effects_of(
    events: &[Event],
    pos: u64,
    unfinalized_note: impl Fn(&TaskId) -> bool,
    run_of: impl Fn(&TaskId) -> Option<String>,
) -> Vec<Effect> {
    let mut settled = Vec::new();
    let mut noted = Vec::new();
    let mut runs: Vec<String> = Vec::new();
    for event in events {
        match event {
            Event::TaskSettled { task_id, .. } => settled.push(task_id),
            Event::NoteAttached { task_id, .. } => noted.push(task_id),
            Event::RunSubmitted { run } => runs.push(run.id.clone()),
            Event::RunPlanned { run_id, .. }
            | Event::RunStepChanged { run_id, .. }
            | Event::RunCancelled { run_id, .. }
            | Event::RunFinished { run_id, .. } => runs.push(run_id.clone()),
            Event::Limited { task_id, .. }
            | Event::LimitEnded { task_id, .. }
            | Event::TaskFellBack { task_id, .. } => {
                runs.extend(run_of(task_id));
            }
            _ => {}
        }
    }
    let mut effects = Vec::new();
    for task_id in settled {
        effects.push(Effect::AutoClose(task_id.clone()));
        if unfinalized_note(task_id) {
            effects.push(Effect::FinalizeNote {
                task_id: task_id.clone(),
                pos,
            });
        }
    }
    for task_id in noted {
        effects.push(Effect::FinalizeNote {
            task_id: task_id.clone(),
            pos,
        });
    }
    runs.dedup();
    effects.extend(runs.into_iter().map(Effect::PushRun));
    effects
}

/// The unfinished run `task_id` is a step of, if any.
fn run_of(herd: &Herd, task_id: &TaskId) -> Option<String> {
    herd.runs
        .values()
        .filter(|run| run.finished.is_none())
        .find(|run| {
            run.steps
                .iter()
                .any(|step| step.task_id.as_deref() == Some(task_id.as_str()))
        })
        .map(|run| run.id.clone())
}

/// Whole milliseconds of `duration`, saturating.
pub(crate) fn duration_ms(duration: std::time::Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

/// A fresh id part.
pub(crate) fn unique() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// Whether `event` may let a sheep held for a provider limit or a turn cap be handed its inbox.
fn ungates(event: &Event) -> bool {
    matches!(
        event,
        Event::LimitReleased { .. }
            | Event::LimitCleared { .. }
            | Event::SheepActivity { .. }
            | Event::SheepExited { .. }
            | Event::SheepClosed { .. }
            | Event::TaskSettled { .. }
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use shepherd_core::herd::{NoteLink, TaskResult};
    use shepherd_core::task::TaskState;

    fn task(n: u32) -> TaskId {
        TaskId::mint("test", &n.to_string())
    }

    fn settled(n: u32) -> Event {
        Event::TaskSettled {
            task_id: task(n),
            result: TaskResult {
                status: TaskState::Completed,
                return_code: 0,
                summary: None,
                text: None,
                error: None,
                completed_at: 1,
            },
        }
    }

    fn run_changed(run_id: &str) -> Event {
        Event::RunCancelled {
            run_id: run_id.to_owned(),
            reason: "test".to_owned(),
        }
    }

    #[test]
    fn a_commit_asks_for_closes_and_notes_first_then_run_pushes_in_order() {
        let note = NoteLink {
            session: String::new(),
            session_name: String::new(),
            session_path: String::new(),
            session_relative: String::new(),
            note: String::new(),
            note_relative: String::new(),
            resumed: false,
        };
        let events = [
            run_changed("run-a"),
            settled(1),
            run_changed("run-a"),
            Event::NoteAttached {
                task_id: task(3),
                note,
            },
            settled(2),
            run_changed("run-b"),
            run_changed("run-a"),
        ];
        let effects = effects_of(&events, 7, |task_id| *task_id == task(2), |_| None);
        assert_eq!(
            effects,
            vec![
                Effect::AutoClose(task(1)),
                Effect::AutoClose(task(2)),
                Effect::FinalizeNote {
                    task_id: task(2),
                    pos: 7
                },
                Effect::FinalizeNote {
                    task_id: task(3),
                    pos: 7
                },
                Effect::PushRun("run-a".to_owned()),
                Effect::PushRun("run-b".to_owned()),
                Effect::PushRun("run-a".to_owned()),
            ]
        );
    }

    /// A run's task that meets a limit, or ends its wait, changes what the run's progress
    /// says (`rate-limited until …`): its followers get the run again.
    #[test]
    fn a_run_s_task_meeting_a_limit_or_ending_its_wait_pushes_the_run() {
        let events = [
            Event::LimitEnded {
                task_id: task(1),
                ended: "resumed".to_owned(),
                at: 5,
            },
            Event::LimitEnded {
                task_id: task(2),
                ended: "resumed".to_owned(),
                at: 5,
            },
        ];
        let run_of = |task_id: &TaskId| (*task_id == task(1)).then(|| "run-a".to_owned());
        assert_eq!(
            effects_of(&events, 3, |_| false, run_of),
            vec![Effect::PushRun("run-a".to_owned())],
            "only the task of a run pushes one"
        );
    }

    #[test]
    fn a_commit_that_changes_nothing_others_watch_asks_for_nothing() {
        let events = [Event::FieldnotesFixed { on: true }];
        assert!(effects_of(&events, 1, |_| true, |_| None).is_empty());
    }
}
