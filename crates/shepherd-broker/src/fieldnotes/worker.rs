//! The fieldnotes worker thread: takes every job waiting in its queue, groups them by session,
//! and applies each group in one store commit.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::mpsc;

use serde_json::Value;
use shepherd_core::herd::NoteLink;
use shepherd_notes::{
    ArtifactRecord, Finalization, Metadata, Mode, NoteOp, NoteStatus, PlannedNote, SessionMetadata,
    SessionRef, Store,
};

use super::{
    FinalizeJob, NoteRequest, PlanReply, PlanRequest, ReleaseRequest, ReservedNote, SessionChoice,
    SessionSummary, store_error,
};
use crate::error::{BrokerError, BrokerResult};

type Reply<T> = mpsc::Sender<BrokerResult<T>>;

/// Work for the fieldnotes thread.
pub(crate) enum Job {
    ParentSession(Reply<SessionSummary>),
    Plan(PlanRequest, Reply<PlanReply>),
    Reserve(NoteRequest, Reply<ReservedNote>),
    Finalize(FinalizeJob, Reply<()>),
    UpdateOutput(NoteLink, Option<String>, Metadata, Reply<()>),
    Release(ReleaseRequest, Reply<bool>),
    FindPlan(String, Reply<Option<PlanReply>>),
}

/// The worker's own state: the store, and the sessions it resolved so far (with whether each
/// existed before this broker first used it).
pub(crate) struct WorkerState {
    pub(crate) root: PathBuf,
    pub(crate) identity: String,
    pub(crate) store: Option<Store>,
    pub(crate) sessions: HashMap<SessionChoice, (SessionRef, bool)>,
}

impl WorkerState {
    pub(crate) fn run(mut self, jobs: &mpsc::Receiver<Job>) {
        while let Ok(first) = jobs.recv() {
            let mut batch = vec![first];
            batch.extend(jobs.try_iter());
            self.handle(batch);
        }
    }

    fn store(&mut self) -> BrokerResult<Store> {
        if self.store.is_none() {
            self.store =
                Some(Store::open(&self.root).map_err(|err| store_error(&err, "fieldnotes"))?);
        }
        Ok(self.store.clone().expect("just opened"))
    }

    fn session(&mut self, choice: &SessionChoice) -> BrokerResult<(SessionRef, bool)> {
        if let Some(known) = self.sessions.get(choice) {
            return Ok(known.clone());
        }
        let now = shepherd_core::time::Timestamp::now();
        let store = self.store()?;
        let resolved = match choice {
            SessionChoice::Parent => {
                store.resolve_or_create_parent_session(&self.identity, None, now)
            }
            SessionChoice::Named(name) => store.create_or_continue_named(name, now),
            SessionChoice::NewForTask(task) => store.create_for_task(task.as_deref(), now),
        }
        .map_err(|err| store_error(&err, store_code(&err)))?;
        let known = (resolved.session.clone(), resolved.resumed);
        if let SessionChoice::NewForTask(_) = choice {
            // A new session is continued by its name from then on.
            self.sessions.insert(
                SessionChoice::Named(resolved.metadata.session_name.clone()),
                known.clone(),
            );
        } else {
            self.sessions.insert(choice.clone(), known.clone());
        }
        Ok(known)
    }

    fn handle(&mut self, batch: Vec<Job>) {
        let mut reserves: HashMap<SessionChoice, Vec<(NoteRequest, Reply<ReservedNote>)>> =
            HashMap::new();
        let mut starts: HashMap<PathBuf, Vec<(NoteRequest, Reply<ReservedNote>)>> = HashMap::new();
        let mut finals: HashMap<String, Vec<(FinalizeJob, Reply<()>)>> = HashMap::new();
        for job in batch {
            match job {
                Job::ParentSession(reply) => {
                    let _caller_gone = reply.send(self.parent_summary());
                }
                Job::Plan(request, reply) => {
                    let _caller_gone = reply.send(self.plan(request));
                }
                Job::Reserve(request, reply) => match request.planned.clone() {
                    Some(note) => {
                        let dir = note
                            .parent()
                            .map(std::path::Path::to_path_buf)
                            .unwrap_or_default();
                        starts.entry(dir).or_default().push((request, reply));
                    }
                    None => {
                        let choice = request
                            .session_name
                            .clone()
                            .map_or(SessionChoice::Parent, SessionChoice::Named);
                        reserves.entry(choice).or_default().push((request, reply));
                    }
                },
                Job::Finalize(job, reply) => finals
                    .entry(job.note.session.clone())
                    .or_default()
                    .push((job, reply)),
                Job::UpdateOutput(note, output, metadata, reply) => {
                    let _caller_gone = reply.send(self.update_output(&note, output, metadata));
                }
                Job::Release(request, reply) => {
                    let _caller_gone = reply.send(self.release(request));
                }
                Job::FindPlan(group, reply) => {
                    let _caller_gone = reply.send(self.find_plan(&group));
                }
            }
        }
        for (session, jobs) in finals {
            let results = self.finalize_group(&session, &jobs);
            answer(jobs, results);
        }
        for (choice, jobs) in reserves {
            let results = self.reserve_group(&choice, &jobs);
            answer(jobs, results);
        }
        for (dir, jobs) in starts {
            let results = self.start_group(&dir, &jobs);
            answer(jobs, results);
        }
    }

    fn parent_summary(&mut self) -> BrokerResult<SessionSummary> {
        let (session, _) = self.session(&SessionChoice::Parent)?;
        let store = self.store()?;
        let dir = store.session_dir(&session);
        let relative = store
            .relative(&dir)
            .unwrap_or_else(|| dir.display().to_string());
        Ok(SessionSummary { relative })
    }

    fn plan(&mut self, request: PlanRequest) -> BrokerResult<PlanReply> {
        let (session, resumed) = self.session(&request.session)?;
        let store = self.store()?;
        let planned = request.notes.len();
        let records = store
            .reserve(
                &session,
                request.notes,
                shepherd_core::time::Timestamp::now(),
            )
            .map_err(|err| store_error(&err, store_code(&err)))?;
        let metadata = store
            .load(&session)
            .map_err(|err| store_error(&err, store_code(&err)))?;
        let resumed = resumed || metadata.artifacts.len() > planned;
        Ok(PlanReply {
            notes: records
                .iter()
                .map(|record| link(&metadata, record, resumed))
                .collect(),
            session_name: metadata.session_name.clone(),
            session_path: metadata.session_path.clone(),
            session_relative: metadata.session_relative_path.clone(),
            resumed,
        })
    }

    /// The notes reserved for the run whose flow group is `group`, in input order.
    fn find_plan(&mut self, group: &str) -> BrokerResult<Option<PlanReply>> {
        let store = self.store()?;
        let sessions = store
            .list_sessions()
            .map_err(|err| store_error(&err, store_code(&err)))?;
        for listed in sessions {
            let shepherd_notes::ListedSession::Valid { metadata, .. } = listed else {
                continue;
            };
            let records: Vec<&ArtifactRecord> = metadata
                .artifacts
                .iter()
                .filter(|a| a.group.as_deref() == Some(group))
                .collect();
            if records.is_empty() {
                continue;
            }
            let resumed = metadata.artifacts.len() > records.len();
            return Ok(Some(PlanReply {
                notes: records
                    .iter()
                    .map(|record| link(&metadata, record, resumed))
                    .collect(),
                session_name: metadata.session_name.clone(),
                session_path: metadata.session_path.clone(),
                session_relative: metadata.session_relative_path.clone(),
                resumed,
            }));
        }
        Ok(None)
    }

    /// Finalises a planned note of this project that is still pending. Runs on this thread,
    /// the broker's only fieldnotes writer, so no delegation can start the note meanwhile.
    fn release(&mut self, request: ReleaseRequest) -> BrokerResult<bool> {
        let located =
            Store::locate_note(&request.note).map_err(|err| store_error(&err, store_code(&err)))?;
        if located.record.group.as_deref() != Some(request.group.as_str()) {
            return Err(BrokerError::new(
                "invalid_note",
                format!(
                    "`{}` was not reserved by run {}; only its own notes can be released",
                    request.note.display(),
                    request.group
                ),
            ));
        }
        let store = self.store()?;
        if located.store.project_root() != store.project_root() {
            return Err(BrokerError::new(
                "invalid_note",
                format!(
                    "`{}` is not a note of this project's fieldnotes",
                    request.note.display()
                ),
            ));
        }
        if located.record.status != NoteStatus::Pending {
            return Ok(false);
        }
        let op = NoteOp::Finalize {
            note: located.record.file_name.clone(),
            result: Finalization {
                status: request.status,
                output: None,
                error: Some(request.reason).filter(|reason| !reason.trim().is_empty()),
                metadata: Metadata::new(),
            },
        };
        let applied = store
            .apply(
                &located.session,
                vec![op],
                shepherd_core::time::Timestamp::now(),
            )
            .map_err(|err| store_error(&err, store_code(&err)))?;
        for outcome in applied.outcomes {
            outcome.map_err(|err| store_error(&err, "fieldnotes"))?;
        }
        Ok(true)
    }

    fn update_output(
        &mut self,
        note: &NoteLink,
        output: Option<String>,
        metadata: Metadata,
    ) -> BrokerResult<()> {
        let session = session_ref(&note.session)?;
        let op = NoteOp::UpdateFinalOutput {
            note: file_name(&note.note),
            output,
            metadata,
        };
        let applied = self
            .store()?
            .apply(&session, vec![op], shepherd_core::time::Timestamp::now())
            .map_err(|err| store_error(&err, store_code(&err)))?;
        applied
            .outcomes
            .into_iter()
            .next()
            .map_or(Ok(()), |outcome| {
                outcome
                    .map(|_| ())
                    .map_err(|err| store_error(&err, "fieldnotes"))
            })
    }

    fn finalize_group(
        &mut self,
        session: &str,
        jobs: &[(FinalizeJob, Reply<()>)],
    ) -> BrokerResult<Vec<BrokerResult<()>>> {
        let session = session_ref(session)?;
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
        let applied = self
            .store()?
            .apply(&session, ops, shepherd_core::time::Timestamp::now())
            .map_err(|err| store_error(&err, store_code(&err)))?;
        Ok(applied
            .outcomes
            .into_iter()
            .map(|o| o.map(|_| ()).map_err(|err| store_error(&err, "fieldnotes")))
            .collect())
    }

    /// Reserves every note of one session, already running, in one commit. A task that has a
    /// note already (its hand-over is being repeated) gets that note back instead of another.
    fn reserve_group(
        &mut self,
        choice: &SessionChoice,
        jobs: &[(NoteRequest, Reply<ReservedNote>)],
    ) -> BrokerResult<Vec<BrokerResult<ReservedNote>>> {
        let (session, resumed_before) = self.session(choice)?;
        let store = self.store()?;
        let existing = store
            .load(&session)
            .map_err(|err| store_error(&err, store_code(&err)))?;
        let mut results: Vec<Option<BrokerResult<ReservedNote>>> = Vec::new();
        let mut ops = Vec::new();
        for (request, _) in jobs {
            match note_of_task(&existing, &request.task_id) {
                Some(record) => results.push(Some(Ok(reserved_note(
                    &store,
                    &existing,
                    record,
                    resumed_before || existing.artifacts.len() > 1,
                )))),
                None => {
                    let mut planned = PlannedNote::new(request.agent.clone());
                    planned.mode = request.mode.parse().unwrap_or(Mode::Single);
                    planned.task = Some(request.task.clone());
                    planned.group.clone_from(&request.group);
                    planned.metadata = ids_metadata(request);
                    // Reserved already running: the task reaches its sheep right after this commit.
                    planned.start = true;
                    ops.push(NoteOp::Reserve(planned));
                    results.push(None);
                }
            }
        }
        if !ops.is_empty() {
            let mut applied = commit_notes(&store, &session, ops, |_| resumed_before)?.into_iter();
            for slot in results.iter_mut().filter(|slot| slot.is_none()) {
                *slot = applied.next();
            }
        }
        Ok(results
            .into_iter()
            .map(|slot| {
                slot.unwrap_or_else(|| Err(BrokerError::new("internal", "a note went missing")))
            })
            .collect())
    }

    /// Starts notes a plan reserved earlier, one commit per session.
    fn start_group(
        &mut self,
        dir: &std::path::Path,
        jobs: &[(NoteRequest, Reply<ReservedNote>)],
    ) -> BrokerResult<Vec<BrokerResult<ReservedNote>>> {
        let located = Store::locate_note(&jobs[0].0.planned.clone().unwrap_or_default())
            .map_err(|err| store_error(&err, store_code(&err)))?;
        let session = located.session;
        let store = self.store()?;
        if store.session_dir(&session) != dir {
            return Err(BrokerError::new(
                "invalid_note",
                format!(
                    "`{}` is not a note of this project's fieldnotes",
                    dir.display()
                ),
            ));
        }
        let metadata = store
            .load(&session)
            .map_err(|err| store_error(&err, store_code(&err)))?;
        if jobs
            .iter()
            .all(|(request, _)| note_of_task(&metadata, &request.task_id).is_some())
        {
            // A repeated hand-over: every note was started for its task already.
            return Ok(jobs
                .iter()
                .map(|(request, _)| {
                    let record = note_of_task(&metadata, &request.task_id).expect("checked above");
                    Ok(reserved_note(&store, &metadata, record, metadata.resumed))
                })
                .collect());
        }
        let ops = jobs
            .iter()
            .map(|(request, _)| NoteOp::Start {
                note: file_name(
                    &request
                        .planned
                        .clone()
                        .unwrap_or_default()
                        .display()
                        .to_string(),
                ),
                metadata: ids_metadata(request),
                task: Some(request.task.clone()),
            })
            .collect();
        commit_notes(&store, &session, ops, |metadata| metadata.resumed)
    }
}

fn answer<T>(jobs: Vec<(impl Sized, Reply<T>)>, results: BrokerResult<Vec<BrokerResult<T>>>) {
    match results {
        Ok(results) => {
            for ((_, reply), result) in jobs.into_iter().zip(results) {
                let _caller_gone = reply.send(result);
            }
        }
        Err(err) => {
            for (_, reply) in jobs {
                let _caller_gone = reply.send(Err(err.clone()));
            }
        }
    }
}

/// Applies one reserve or start per job to `session` in one commit and describes each note.
/// The session counts as resumed when `resumed_before` says so or it held other notes already.
fn commit_notes(
    store: &Store,
    session: &SessionRef,
    ops: Vec<NoteOp>,
    resumed_before: impl FnOnce(&SessionMetadata) -> bool,
) -> BrokerResult<Vec<BrokerResult<ReservedNote>>> {
    let count = ops.len();
    let applied = store
        .apply(session, ops, shepherd_core::time::Timestamp::now())
        .map_err(|err| store_error(&err, store_code(&err)))?;
    let metadata = store
        .load(session)
        .map_err(|err| store_error(&err, store_code(&err)))?;
    let resumed = resumed_before(&metadata) || metadata.artifacts.len() > count;
    Ok(applied
        .outcomes
        .into_iter()
        .map(|outcome| {
            let outcome = outcome.map_err(|err| store_error(&err, "fieldnotes"))?;
            let record = outcome.note().ok_or_else(|| {
                BrokerError::new(
                    "internal",
                    "the store answered a note operation without a note",
                )
            })?;
            Ok(reserved_note(store, &metadata, record, resumed))
        })
        .collect())
}

fn reserved_note(
    store: &Store,
    metadata: &SessionMetadata,
    record: &ArtifactRecord,
    resumed: bool,
) -> ReservedNote {
    let record = metadata
        .artifacts
        .iter()
        .find(|a| a.file_name == record.file_name)
        .unwrap_or(record);
    ReservedNote {
        context: store.context_block(metadata, record),
        link: link(metadata, record, resumed),
    }
}

fn link(metadata: &SessionMetadata, record: &ArtifactRecord, resumed: bool) -> NoteLink {
    NoteLink {
        session: metadata.directory_name.clone(),
        session_name: metadata.session_name.clone(),
        session_path: metadata.session_path.clone(),
        session_relative: metadata.session_relative_path.clone(),
        note: record.file_path.clone(),
        note_relative: record.relative_path.clone(),
        resumed,
    }
}

fn session_ref(directory: &str) -> BrokerResult<SessionRef> {
    SessionRef::new(directory).ok_or_else(|| {
        BrokerError::new(
            "fieldnotes",
            format!("`{directory}` is not a session directory"),
        )
    })
}

/// The wire code of a store failure.
pub(crate) fn store_code(err: &shepherd_notes::StoreError) -> &'static str {
    use shepherd_notes::StoreError as E;
    match err {
        E::InvalidName(_) | E::InvalidIdentity { .. } => "invalid_name",
        E::LockTimeout { .. } => "lock_timeout",
        E::SessionNotFound { .. } => "not_found",
        E::NotANote { .. } => "invalid_note",
        _ => "fieldnotes",
    }
}

/// The note already reserved for `task_id` in a session, if any.
fn note_of_task<'m>(
    metadata: &'m SessionMetadata,
    task_id: &shepherd_core::ids::TaskId,
) -> Option<&'m ArtifactRecord> {
    metadata
        .artifacts
        .iter()
        .find(|a| a.metadata.get("taskId").and_then(Value::as_str) == Some(task_id.as_str()))
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
