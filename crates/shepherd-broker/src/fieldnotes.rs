//! The broker's writer of fieldnotes, with group commit.
//!
//! All note operations of one broker go through one worker thread. It takes every job waiting
//! in its queue, groups them by session and applies each group with one store commit (one lock,
//! one rewrite of `session.json` and `shepherd.md`), so sixteen sheep settling at once cost a
//! handful of commits, not sixteen. A delegation's note is reserved and marked running before
//! the task reaches its sheep; a settled task's note is finalised before watchers hear of it.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::mpsc;
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::Value;
use shepherd_core::herd::{Herd, NoteLink};
use shepherd_core::ids::{AgentId, TaskId};
use shepherd_notes::{
    Finalization, Metadata, Mode, NoteOp, NoteStatus, PlannedNote, SessionRef, Store,
};

use crate::error::{BrokerError, BrokerResult};

/// A note to reserve for a delegation.
#[derive(Debug, Clone)]
pub(crate) struct NoteRequest {
    /// Put it in this named session instead of the parent's.
    pub(crate) session_name: Option<String>,
    /// The sheep's agent definition.
    pub(crate) agent: String,
    /// The task text.
    pub(crate) task: String,
    /// `single`, `parallel` or `chain`.
    pub(crate) mode: String,
    /// The task.
    pub(crate) task_id: TaskId,
    /// The sheep.
    pub(crate) agent_id: AgentId,
    /// The sheep's pi session file, for pi sheep.
    pub(crate) session_file: Option<String>,
}

/// A reserved, running note and the context block its sheep gets.
#[derive(Debug, Clone)]
pub(crate) struct ReservedNote {
    pub(crate) link: NoteLink,
    pub(crate) context: String,
}

/// A session as spawn reports it.
#[derive(Debug, Clone)]
pub(crate) struct SessionSummary {
    /// The session directory relative to the project root.
    pub(crate) relative: String,
}

/// What finalising a settled task's note needs.
#[derive(Debug, Clone)]
pub(crate) struct FinalizeJob {
    note: NoteLink,
    status: NoteStatus,
    output: Option<String>,
    error: Option<String>,
    metadata: Metadata,
    /// Whether the sheep's final words (run output) are in it already.
    pub(crate) with_run_output: bool,
}

impl FinalizeJob {
    /// The job for a settled task with a note, if it has one.
    pub(crate) fn for_task(herd: &Herd, task_id: &TaskId) -> Option<Self> {
        let task = herd.tasks.get(task_id)?;
        let note = task.note.clone()?;
        let result = task.result.as_ref()?;
        let status = task.state.note_status().parse().unwrap_or(NoteStatus::Failed);
        let mut metadata = Metadata::new();
        metadata.insert("taskStatus".into(), Value::from(task.state.as_str()));
        metadata.insert("returnCode".into(), Value::from(result.return_code));
        if let Some(summary) = &result.summary {
            metadata.insert("summary".into(), Value::from(one_line(summary)));
        }
        let started = task.started_at.unwrap_or(task.created_at);
        metadata.insert("durationMs".into(), Value::from(result.completed_at - started));
        let output = match &task.output {
            Some(run) => {
                merge_telemetry(&mut metadata, &run.telemetry);
                Some(run.text.clone()).filter(|t| !t.trim().is_empty()).or_else(|| result.text.clone())
            }
            None => result.text.clone(),
        };
        Some(Self {
            note,
            status,
            output,
            error: result.error.clone(),
            metadata,
            with_run_output: task.output.is_some(),
        })
    }
}

fn merge_telemetry(metadata: &mut Metadata, telemetry: &Value) {
    if let Some(fields) = telemetry.as_object() {
        for (key, value) in fields {
            metadata.insert(key.clone(), value.clone());
        }
    }
}

/// Puts a settled task's run output (final words, telemetry) into its already final note.
/// A note not final yet gets them from its finaliser instead.
pub(crate) async fn complete_output(broker: &Arc<crate::broker::Broker>, task_id: &TaskId) {
    let job = broker.read(|herd| {
        let task = herd.tasks.get(task_id)?;
        let output = task.output.clone()?;
        task.finalized.then_some(())?;
        Some((task.note.clone()?, output))
    });
    let Some((note, output)) = job else { return };
    let mut metadata = Metadata::new();
    merge_telemetry(&mut metadata, &output.telemetry);
    let text = Some(output.text).filter(|t| !t.trim().is_empty());
    let fieldnotes = broker.fieldnotes();
    let updated = tokio::task::spawn_blocking(move || fieldnotes.update_output(&note, text, metadata)).await;
    match updated {
        Ok(Ok(())) => {}
        Ok(Err(err)) => tracing::warn!("could not add the final output to the note of {task_id}: {err}"),
        Err(err) => tracing::warn!("adding the final output of {task_id} panicked: {err}"),
    }
}

fn one_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default();
    if line.chars().count() > 200 {
        line.chars().take(200).collect::<String>() + "…"
    } else {
        line.to_owned()
    }
}

enum Job {
    ParentSession(mpsc::Sender<BrokerResult<SessionSummary>>),
    Reserve(NoteRequest, mpsc::Sender<BrokerResult<ReservedNote>>),
    Finalize(FinalizeJob, mpsc::Sender<BrokerResult<()>>),
    UpdateOutput(NoteLink, Option<String>, Metadata, mpsc::Sender<BrokerResult<()>>),
}

/// The fieldnotes writer of one project and parent.
#[derive(Clone)]
pub(crate) struct Fieldnotes {
    worker: Arc<Worker>,
}

struct Worker {
    jobs: Mutex<mpsc::Sender<Job>>,
}

/// One worker per (project, parent) in this process.
fn workers() -> &'static Mutex<HashMap<(PathBuf, String), Arc<Worker>>> {
    static WORKERS: OnceLock<Mutex<HashMap<(PathBuf, String), Arc<Worker>>>> = OnceLock::new();
    WORKERS.get_or_init(|| Mutex::new(HashMap::new()))
}

impl Fieldnotes {
    /// The writer for `project_root` on behalf of parent `identity`.
    pub(crate) fn new(project_root: PathBuf, identity: String) -> Self {
        let mut workers = workers().lock().expect("workers lock");
        let worker = workers
            .entry((project_root.clone(), identity.clone()))
            .or_insert_with(|| {
                let (tx, rx) = mpsc::channel();
                let state = WorkerState {
                    root: project_root,
                    identity,
                    store: None,
                    sessions: HashMap::new(),
                };
                std::thread::Builder::new()
                    .name("fieldnotes".into())
                    .spawn(move || state.run(&rx))
                    .expect("the fieldnotes thread starts");
                Arc::new(Worker {
                    jobs: Mutex::new(tx),
                })
            })
            .clone();
        Self { worker }
    }

    fn call<T>(&self, make: impl FnOnce(mpsc::Sender<BrokerResult<T>>) -> Job) -> BrokerResult<T> {
        let (tx, rx) = mpsc::channel();
        self.worker
            .jobs
            .lock()
            .expect("jobs lock")
            .send(make(tx))
            .map_err(|_| stopped())?;
        rx.recv().map_err(|_| stopped())?
    }

    /// Resolves (creating on first use) the parent-bound session.
    pub(crate) fn parent_session(&self) -> BrokerResult<SessionSummary> {
        self.call(Job::ParentSession)
    }

    /// Reserves a running note for a delegation.
    pub(crate) fn reserve(&self, request: &NoteRequest) -> BrokerResult<ReservedNote> {
        self.call(|tx| Job::Reserve(request.clone(), tx))
    }

    /// Finalises a settled task's note.
    pub(crate) fn finalize(&self, job: &FinalizeJob) -> BrokerResult<()> {
        self.call(|tx| Job::Finalize(job.clone(), tx))
    }

    /// Replaces a final note's output (a sheep's last words after it settled its task).
    pub(crate) fn update_output(&self, note: &NoteLink, output: Option<String>, metadata: Metadata) -> BrokerResult<()> {
        self.call(|tx| Job::UpdateOutput(note.clone(), output, metadata, tx))
    }
}

fn stopped() -> BrokerError {
    BrokerError::new("internal", "the fieldnotes writer stopped")
}

fn store_error(err: &impl std::fmt::Display, code: &str) -> BrokerError {
    BrokerError::new(code, err.to_string())
}

/// The session a job writes to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Selector {
    Parent,
    Named(String),
}

struct WorkerState {
    root: PathBuf,
    identity: String,
    store: Option<Store>,
    /// Sessions resolved so far, and whether each existed before this broker first used it.
    sessions: HashMap<Selector, (SessionRef, bool)>,
}

impl WorkerState {
    fn run(mut self, jobs: &mpsc::Receiver<Job>) {
        while let Ok(first) = jobs.recv() {
            let mut batch = vec![first];
            batch.extend(jobs.try_iter());
            self.handle(batch);
        }
    }

    fn store(&mut self) -> BrokerResult<&Store> {
        if self.store.is_none() {
            self.store =
                Some(Store::open(&self.root).map_err(|err| store_error(&err, "fieldnotes"))?);
        }
        Ok(self.store.as_ref().expect("just opened"))
    }

    fn session(&mut self, selector: &Selector) -> BrokerResult<(SessionRef, bool)> {
        if let Some(known) = self.sessions.get(selector) {
            return Ok(known.clone());
        }
        let now = shepherd_core::time::Timestamp::now();
        let identity = self.identity.clone();
        let store = self.store()?;
        let resolved = match selector {
            Selector::Parent => store.resolve_or_create_parent_session(&identity, None, now),
            Selector::Named(name) => store.create_or_continue_named(name, now),
        }
        .map_err(|err| store_error(&err, store_code(&err)))?;
        self.sessions.insert(
            selector.clone(),
            (resolved.session.clone(), resolved.resumed),
        );
        Ok((resolved.session, resolved.resumed))
    }

    fn handle(&mut self, batch: Vec<Job>) {
        let mut reserves: HashMap<
            Selector,
            Vec<(NoteRequest, mpsc::Sender<BrokerResult<ReservedNote>>)>,
        > = HashMap::new();
        let mut finals: HashMap<String, Vec<(FinalizeJob, mpsc::Sender<BrokerResult<()>>)>> =
            HashMap::new();
        for job in batch {
            match job {
                Job::ParentSession(reply) => {
                    let result = self.session(&Selector::Parent).and_then(|(session, _)| {
                        let dir = self.store()?.session_dir(&session);
                        let relative = self
                            .store()?
                            .relative(&dir)
                            .unwrap_or_else(|| dir.display().to_string());
                        Ok(SessionSummary { relative })
                    });
                    let _caller_gone = reply.send(result);
                }
                Job::Reserve(request, reply) => {
                    let selector = request
                        .session_name
                        .clone()
                        .map_or(Selector::Parent, Selector::Named);
                    reserves.entry(selector).or_default().push((request, reply));
                }
                Job::Finalize(job, reply) => finals
                    .entry(job.note.session.clone())
                    .or_default()
                    .push((job, reply)),
                Job::UpdateOutput(note, output, metadata, reply) => {
                    let result = self.update_output(&note, output, metadata);
                    let _caller_gone = reply.send(result);
                }
            }
        }
        for (session, jobs) in finals {
            self.finalize_group(&session, jobs);
        }
        for (selector, jobs) in reserves {
            self.reserve_group(&selector, jobs);
        }
    }

    fn update_output(&mut self, note: &NoteLink, output: Option<String>, metadata: Metadata) -> BrokerResult<()> {
        let session = SessionRef::new(&note.session)
            .ok_or_else(|| BrokerError::new("fieldnotes", "invalid session directory"))?;
        let op = NoteOp::UpdateFinalOutput { note: file_name(&note.note), output, metadata };
        let now = shepherd_core::time::Timestamp::now();
        let applied = self.store()?.apply(&session, vec![op], now).map_err(|err| store_error(&err, store_code(&err)))?;
        applied
            .outcomes
            .into_iter()
            .next()
            .map_or(Ok(()), |outcome| outcome.map(|_| ()).map_err(|err| store_error(&err, "fieldnotes")))
    }

    fn finalize_group(
        &mut self,
        session: &str,
        jobs: Vec<(FinalizeJob, mpsc::Sender<BrokerResult<()>>)>,
    ) {
        let Some(session) = SessionRef::new(session) else {
            for (_, reply) in jobs {
                let _caller_gone = reply.send(Err(BrokerError::new(
                    "fieldnotes",
                    "invalid session directory",
                )));
            }
            return;
        };
        let ops = jobs
            .iter()
            .map(|(job, _)| NoteOp::Finalize {
                note: file_name(&job.note.note),
                result: Finalization {
                    status: job.status,
                    output: job.output.clone(),
                    error: job.error.clone(),
                    metadata: job.metadata.clone(),
                },
            })
            .collect();
        let now = shepherd_core::time::Timestamp::now();
        let applied = self.store().and_then(|store| {
            store
                .apply(&session, ops, now)
                .map_err(|err| store_error(&err, store_code(&err)))
        });
        match applied {
            Ok(applied) => {
                for ((_, reply), outcome) in jobs.into_iter().zip(applied.outcomes) {
                    let _caller_gone = reply.send(
                        outcome
                            .map(|_| ())
                            .map_err(|err| store_error(&err, "fieldnotes")),
                    );
                }
            }
            Err(err) => {
                for (_, reply) in jobs {
                    let _caller_gone = reply.send(Err(err.clone()));
                }
            }
        }
    }

    fn reserve_group(
        &mut self,
        selector: &Selector,
        jobs: Vec<(NoteRequest, mpsc::Sender<BrokerResult<ReservedNote>>)>,
    ) {
        let result = self.reserve_all(selector, &jobs);
        match result {
            Ok(notes) => {
                for ((_, reply), note) in jobs.into_iter().zip(notes) {
                    let _caller_gone = reply.send(note);
                }
            }
            Err(err) => {
                for (_, reply) in jobs {
                    let _caller_gone = reply.send(Err(err.clone()));
                }
            }
        }
    }

    /// Reserves every note of one session, already running, in one commit.
    fn reserve_all(
        &mut self,
        selector: &Selector,
        jobs: &[(NoteRequest, mpsc::Sender<BrokerResult<ReservedNote>>)],
    ) -> BrokerResult<Vec<BrokerResult<ReservedNote>>> {
        let (session, resumed_before) = self.session(selector)?;
        let now = shepherd_core::time::Timestamp::now();
        let reserve_ops = jobs
            .iter()
            .map(|(request, _)| {
                let mut planned = PlannedNote::new(request.agent.clone());
                planned.mode = request.mode.parse().unwrap_or(Mode::Single);
                planned.task = Some(request.task.clone());
                planned.metadata = ids_metadata(request);
                // Reserved already running: the task reaches its sheep right after this commit.
                planned.start = true;
                NoteOp::Reserve(planned)
            })
            .collect();
        let store = self.store()?.clone();
        let reserved = store
            .apply(&session, reserve_ops, now)
            .map_err(|err| store_error(&err, store_code(&err)))?;
        let metadata = &store
            .load(&session)
            .map_err(|err| store_error(&err, store_code(&err)))?;
        Ok(reserved
            .outcomes
            .into_iter()
            .map(|outcome| {
                let record = outcome.map_err(|err| store_error(&err, "fieldnotes"))?;
                let record = record
                    .note()
                    .cloned()
                    .ok_or_else(|| BrokerError::new("internal", "reserve returned no note"))?;
                let record = metadata
                    .artifacts
                    .iter()
                    .find(|a| a.file_name == record.file_name)
                    .cloned()
                    .unwrap_or(record);
                Ok(ReservedNote {
                    context: store.context_block(metadata, &record),
                    link: NoteLink {
                        session: metadata.directory_name.clone(),
                        session_name: metadata.session_name.clone(),
                        session_path: metadata.session_path.clone(),
                        session_relative: metadata.session_relative_path.clone(),
                        note: record.file_path.clone(),
                        note_relative: record.relative_path.clone(),
                        resumed: resumed_before || metadata.artifacts.len() > jobs.len(),
                    },
                })
            })
            .collect())
    }
}

/// The wire code of a store failure.
fn store_code(err: &shepherd_notes::StoreError) -> &'static str {
    use shepherd_notes::StoreError as E;
    match err {
        E::InvalidName(_) | E::InvalidIdentity { .. } => "invalid_name",
        E::LockTimeout { .. } => "lock_timeout",
        E::SessionNotFound { .. } => "not_found",
        _ => "fieldnotes",
    }
}

fn ids_metadata(request: &NoteRequest) -> Metadata {
    let mut metadata = Metadata::new();
    metadata.insert("taskId".into(), Value::from(request.task_id.as_str()));
    metadata.insert("agentId".into(), Value::from(request.agent_id.as_str()));
    if let Some(file) = &request.session_file {
        metadata.insert("sessionFile".into(), Value::from(file.as_str()));
    }
    metadata
}

fn file_name(path: &str) -> String {
    std::path::Path::new(path)
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default()
}
