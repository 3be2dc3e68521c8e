//! The broker's writer of fieldnotes: sessions commit in parallel, each in groups.
//!
//! Every note operation of one broker joins the lane of its session (`lanes`); a bounded pool
//! of committers takes each ready lane's waiting jobs as one group and applies them with one
//! store commit (`batch`: one lock, one rewrite of `session.json` and `shepherd.md`, one disk
//! flush), so sixteen sheep settling at once in one session cost a handful of commits, and
//! sixteen sessions flush side by side instead of one after another. That holds for every
//! write: delegations' reservations, plans (a run's notes, and concurrent plans from different
//! runs), starts, finalisations, late final words and releases. Which session a job belongs to
//! is settled first, on the caller's thread: a note names its session; a parent's or a name's
//! session is resolved once (through the store's binding index) and remembered. A
//! delegation's note is reserved and marked running before the task reaches its sheep; a
//! settled task's note is finalised before watchers hear of it.

use shepherd_core::error_code::ErrorCode;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};

use shepherd_core::herd::NoteLink;
use shepherd_core::ids::{AgentId, TaskId};
use shepherd_notes::{Metadata, NoteStatus, PlannedNote, SessionRef, Store};

use crate::error::{BrokerError, BrokerResult};

/// A note to reserve for a delegation.
#[derive(Debug, Clone)]
pub(crate) struct NoteRequest {
    /// Put it in this named session instead of the parent's.
    pub(crate) session_name: Option<String>,
    /// Put it in this session directory (`NNNN-slug`) instead: the session of the work a
    /// merge's resolver or fixer handles.
    pub(crate) session_dir: Option<String>,
    /// A note reserved earlier by `plan` to use (start) instead of reserving a new one.
    pub(crate) planned: Option<PathBuf>,
    /// The flow group the note belongs to.
    pub(crate) group: Option<String>,
    /// The sheep's agent definition.
    pub(crate) agent: String,
    /// The sheep's label, recorded with its note; empty when it has none.
    pub(crate) label: String,
    /// The task text.
    pub(crate) task: String,
    /// `single`, `parallel` or `chain`.
    pub(crate) mode: shepherd_notes::Mode,
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

/// Which session a plan writes to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum SessionChoice {
    /// The parent's own session.
    Parent,
    /// The session with this exact name, created or continued.
    Named(String),
    /// A new session named after this first task.
    NewForTask(Option<String>),
}

/// Notes to reserve ahead of a run, in input order.
#[derive(Debug, Clone)]
pub(crate) struct PlanRequest {
    pub(crate) session: SessionChoice,
    pub(crate) notes: Vec<PlannedNote>,
}

/// The session and the pending notes a plan reserved.
#[derive(Debug, Clone)]
pub(crate) struct PlanReply {
    pub(crate) notes: Vec<NoteLink>,
    pub(crate) session_name: String,
    pub(crate) session_path: String,
    pub(crate) session_relative: String,
    pub(crate) resumed: bool,
}

/// A planned note whose task never started, to finalise with how it ended.
#[derive(Debug, Clone)]
pub(crate) struct ReleaseRequest {
    pub(crate) note: PathBuf,
    pub(crate) status: NoteStatus,
    pub(crate) reason: String,
    /// The run that planned it: the note must belong to that run's flow group.
    pub(crate) group: String,
}

pub(crate) fn one_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default();
    if line.chars().count() > 200 {
        line.chars().take(200).collect::<String>() + "…"
    } else {
        line.to_owned()
    }
}

/// Longest one fieldnotes operation may take before its caller gives up on it (the store's own
/// lock wait is 30 s).
pub(crate) const FIELDNOTES_DEADLINE: std::time::Duration = std::time::Duration::from_secs(60);

mod batch;
mod finalize;
mod lanes;
mod write;

pub(crate) use finalize::{FinalizeJob, merge_telemetry};

use batch::{LaneJob, Reply, link};
use lanes::{Lanes, MAX_COMMITTERS};

/// What the callers and the committers share: the store and the sessions resolved so far.
pub(crate) struct Writer {
    root: PathBuf,
    identity: String,
    /// The parent's own session file, as its front end last said in `hello` (diagnostics,
    /// recorded in the parent-bound session).
    parent_session_file: Mutex<Option<String>>,
    store: Mutex<Option<Store>>,
    /// Each choice's session, and whether it existed before this broker first used it.
    sessions: Mutex<HashMap<SessionChoice, (SessionRef, bool)>>,
    /// Whether the parent's session existed before this broker first used it, kept when the
    /// session is forgotten to be resolved again with a new session file.
    parent_was_resumed: Mutex<Option<bool>>,
    /// `notes.write` changes made (see `write`).
    notes_written: std::sync::atomic::AtomicU64,
    /// How long `shepherd.md` may lag after a commit that put it off.
    index_lag: std::time::Duration,
}

impl Writer {
    fn store(&self) -> BrokerResult<Store> {
        let mut store = self.store.lock().expect("store lock");
        if store.is_none() {
            *store = Some(
                Store::open(&self.root).map_err(|err| store_error(&err, ErrorCode::Fieldnotes))?,
            );
        }
        Ok(store.clone().expect("just opened"))
    }

    /// The session of `choice`, resolved (and created) on first use, then remembered.
    fn session(&self, choice: &SessionChoice) -> BrokerResult<(SessionRef, bool)> {
        if let Some(known) = self.sessions.lock().expect("sessions lock").get(choice) {
            return Ok(known.clone());
        }
        let now = shepherd_core::time::Timestamp::now();
        let store = self.store()?;
        let resolved = match choice {
            SessionChoice::Parent => {
                let file = self.parent_session_file.lock().expect("file lock").clone();
                store.resolve_or_create_parent_session(&self.identity, file.as_deref(), now)
            }
            SessionChoice::Named(name) => store.create_or_continue_named(name, now),
            SessionChoice::NewForTask(task) => store.create_for_task(task.as_deref(), now),
        }
        .map_err(|err| store_error(&err, store_code(&err)))?;
        let mut known = (resolved.session.clone(), resolved.resumed);
        if let Some(resumed) = self.parent_resumed(choice) {
            // Resolved again only to record a new parent session file: it is the same session.
            known.1 = resumed;
        }
        let remembered = match choice {
            // A new session is continued by its name from then on.
            SessionChoice::NewForTask(_) => {
                SessionChoice::Named(resolved.metadata.session_name.clone())
            }
            other => other.clone(),
        };
        if remembered == SessionChoice::Parent {
            self.parent_was_resumed
                .lock()
                .expect("resumed lock")
                .get_or_insert(known.1);
        }
        self.sessions
            .lock()
            .expect("sessions lock")
            .entry(remembered)
            .or_insert(known.clone());
        Ok(known)
    }

    /// Whether the parent's session existed before this broker first used it, when it was
    /// resolved once already.
    fn parent_resumed(&self, choice: &SessionChoice) -> Option<bool> {
        (*choice == SessionChoice::Parent)
            .then(|| *self.parent_was_resumed.lock().expect("resumed lock"))
            .flatten()
    }

    /// The session directory of a note of this project, by its path.
    fn session_of_note(&self, note: &Path) -> BrokerResult<SessionRef> {
        let store = self.store()?;
        let refuse = || {
            BrokerError::new(
                ErrorCode::InvalidNote,
                format!(
                    "`{}` is not a note of this project's fieldnotes",
                    note.display()
                ),
            )
        };
        let dir = note.parent().ok_or_else(refuse)?;
        let dir = fs_err::canonicalize(dir).map_err(|_| refuse())?;
        if dir.parent() != Some(store.sessions_dir().as_path()) {
            return Err(refuse());
        }
        dir.file_name()
            .and_then(|name| name.to_str())
            .and_then(SessionRef::new)
            .ok_or_else(refuse)
    }

    /// The notes reserved for the run whose flow group is `group`, in input order. Only the
    /// records that mention the group at all are parsed.
    fn find_plan(&self, group: &str) -> BrokerResult<Option<PlanReply>> {
        let store = self.store()?;
        let needle = format!(
            "\"group\": {}",
            serde_json::to_string(group).expect("strings serialise")
        );
        let sessions = store
            .sessions()
            .map_err(|err| store_error(&err, store_code(&err)))?;
        for session in sessions {
            let path = store
                .session_dir(&session)
                .join(shepherd_core::fieldnotes::SESSION_METADATA_FILE);
            let mentions = fs_err::read_to_string(&path).is_ok_and(|text| text.contains(&needle));
            if !mentions {
                continue;
            }
            let Ok(metadata) = store.load(&session) else {
                continue;
            };
            let records: Vec<_> = metadata
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
}

/// The fieldnotes writer of one project and parent: a handle to its lanes, whose committers
/// end when the last handle is dropped.
#[derive(Clone)]
pub(crate) struct Fieldnotes {
    writer: Arc<Writer>,
    lanes: Lanes<LaneJob>,
}

impl Fieldnotes {
    /// Starts the writer for `project_root` on behalf of parent `identity`.
    pub(crate) fn start(project_root: PathBuf, identity: String) -> Self {
        let writer = Arc::new(Writer {
            root: project_root,
            identity,
            parent_session_file: Mutex::new(None),
            store: Mutex::new(None),
            sessions: Mutex::new(HashMap::new()),
            parent_was_resumed: Mutex::new(None),
            notes_written: std::sync::atomic::AtomicU64::new(0),
            index_lag: batch::index_may_lag(),
        });
        let committing = Arc::clone(&writer);
        let lanes = Lanes::new(
            MAX_COMMITTERS,
            move |session: &str, jobs| batch::commit(&committing, session, jobs),
            || LaneJob::CatchUp(None),
        );
        Self { writer, lanes }
    }

    /// Puts a job into the lane of `session` and waits for its answer.
    fn call<T>(
        &self,
        session: &SessionRef,
        make: impl FnOnce(Reply<T>) -> LaneJob,
    ) -> BrokerResult<T> {
        let (tx, rx) = mpsc::channel();
        self.lanes.submit(session.directory_name(), make(tx));
        match rx.recv_timeout(FIELDNOTES_DEADLINE) {
            Ok(result) => result,
            Err(mpsc::RecvTimeoutError::Timeout) => Err(BrokerError::new(
                ErrorCode::FieldnotesTimeout,
                format!(
                    "the fieldnotes writer did not answer within {} s (is the disk or a session lock stuck?)",
                    FIELDNOTES_DEADLINE.as_secs()
                ),
            )),
            Err(mpsc::RecvTimeoutError::Disconnected) => Err(stopped()),
        }
    }

    /// Records the parent's own session file (from its `hello`). The parent-bound session gets
    /// it when it is next resolved: at first use, or, when it was resolved already with
    /// another file, at its next use (the session is resolved again, which records the file).
    pub(crate) fn set_parent_session_file(&self, file: &str) -> BrokerResult<()> {
        if file.is_empty() || file.chars().any(char::is_control) || file.len() > 4096 {
            return Err(BrokerError::new(
                ErrorCode::InvalidRequest,
                format!(
                    "hello: sessionFile {file:?} is not a usable path; give the parent's session file as a non-empty path without control characters"
                ),
            ));
        }
        let mut known = self.writer.parent_session_file.lock().expect("file lock");
        if known.as_deref() != Some(file) {
            *known = Some(file.to_owned());
            self.writer
                .sessions
                .lock()
                .expect("sessions lock")
                .remove(&SessionChoice::Parent);
        }
        Ok(())
    }

    /// The session named `name`, else the parent-bound one, when it exists. Nothing is created:
    /// a session directory appears with the first note reserved in it.
    pub(crate) fn session_summary(
        &self,
        name: Option<String>,
    ) -> BrokerResult<Option<SessionSummary>> {
        let choice = name.map_or(SessionChoice::Parent, SessionChoice::Named);
        let known = self
            .writer
            .sessions
            .lock()
            .expect("sessions lock")
            .get(&choice)
            .map(|(session, _)| session.clone());
        let store = self.writer.store()?;
        let session = match known {
            Some(session) => session,
            None => {
                let key = match choice {
                    SessionChoice::Named(name) => shepherd_notes::SessionKey::Name(name),
                    _ => shepherd_notes::SessionKey::Parent(self.writer.identity.clone()),
                };
                match store
                    .existing_session(&key)
                    .map_err(|err| store_error(&err, store_code(&err)))?
                {
                    Some(session) => session,
                    None => return Ok(None),
                }
            }
        };
        let dir = store.session_dir(&session);
        let relative = store
            .relative(&dir)
            .unwrap_or_else(|| dir.display().to_string());
        Ok(Some(SessionSummary { relative }))
    }

    /// Reserves pending notes for a whole run, in input order, in one commit (shared with
    /// whatever else its session has waiting).
    pub(crate) fn plan(&self, request: PlanRequest) -> BrokerResult<PlanReply> {
        for note in &request.notes {
            shepherd_core::fieldnotes::ops::check_planned(note)
                .map_err(|err| store_error(&err, ErrorCode::Fieldnotes))?;
        }
        let (session, resumed) = self.writer.session(&request.session)?;
        self.call(&session, |reply| LaneJob::Plan {
            notes: request.notes,
            resumed,
            reply,
        })
    }

    /// Reserves a running note for a delegation, or starts the note its plan reserved.
    pub(crate) fn reserve(&self, request: &NoteRequest) -> BrokerResult<ReservedNote> {
        let request = Box::new(request.clone());
        if let Some(note) = &request.planned {
            let session = self.writer.session_of_note(note)?;
            return self.call(&session, |reply| LaneJob::Start { request, reply });
        }
        let (session, resumed) = match &request.session_dir {
            // A session that holds a note already: it continues.
            Some(directory) => (session_ref(directory)?, true),
            None => {
                let choice = request
                    .session_name
                    .clone()
                    .map_or(SessionChoice::Parent, SessionChoice::Named);
                self.writer.session(&choice)?
            }
        };
        self.call(&session, |reply| LaneJob::Reserve {
            request,
            resumed,
            reply,
        })
    }

    /// Writes, and waits for, every `shepherd.md` a commit put off (on an orderly stop).
    pub(crate) fn catch_up_all(&self) {
        for directory in self.lanes.take_owed() {
            let Ok(session) = session_ref(&directory) else {
                continue;
            };
            if let Err(err) = self.call(&session, |reply| LaneJob::CatchUp(Some(reply))) {
                tracing::warn!("could not write shepherd.md of {directory}: {err}");
            }
        }
    }

    /// Asks for `shepherd.md` of the session in `directory` to be written if it lags its
    /// record (after a restart: the broker before may have died owing it).
    pub(crate) fn catch_up_later(&self, directory: &str) {
        if SessionRef::new(directory).is_some() {
            self.lanes.submit(directory, LaneJob::CatchUp(None));
        }
    }

    /// Finalises a settled task's note.
    pub(crate) fn finalize(&self, job: &FinalizeJob) -> BrokerResult<()> {
        let session = session_ref(&job.note.session)?;
        self.call(&session, |reply| {
            LaneJob::Finalize(Box::new(job.clone()), reply)
        })
    }

    /// Finalises a planned note if it is still pending; `false` when its task started.
    pub(crate) fn release(&self, request: ReleaseRequest) -> BrokerResult<bool> {
        let session = self.writer.session_of_note(&request.note)?;
        self.call(&session, |reply| LaneJob::Release(request, reply))
    }

    /// The notes a run's plan reserved earlier (found by its flow group), if its plan got as far
    /// as reserving them before a restart.
    pub(crate) fn find_plan(&self, group: &str) -> BrokerResult<Option<PlanReply>> {
        self.writer.find_plan(group)
    }

    /// Records a branch of the session in `directory` (or its new state): `shepherd.md` shows
    /// it in its Branches section.
    pub(crate) fn set_branch(
        &self,
        directory: &str,
        record: shepherd_core::fieldnotes::BranchRecord,
    ) -> BrokerResult<()> {
        let session = session_ref(directory)?;
        self.call(&session, |reply| LaneJob::Branch(record, reply))
    }

    /// Replaces a final note's output (a sheep's last words after it settled its task).
    pub(crate) fn update_output(
        &self,
        note: &NoteLink,
        output: Option<String>,
        metadata: Metadata,
    ) -> BrokerResult<()> {
        let session = session_ref(&note.session)?;
        self.call(&session, |reply| {
            LaneJob::UpdateOutput(note.clone(), output, metadata, reply)
        })
    }
}

fn session_ref(directory: &str) -> BrokerResult<SessionRef> {
    SessionRef::new(directory).ok_or_else(|| {
        BrokerError::new(
            ErrorCode::Fieldnotes,
            format!("`{directory}` is not a session directory"),
        )
    })
}

/// The wire code of a store failure.
pub(crate) fn store_code(err: &shepherd_notes::StoreError) -> ErrorCode {
    use shepherd_notes::StoreError as E;
    match err {
        E::InvalidName(_) | E::InvalidIdentity { .. } => ErrorCode::InvalidName,
        E::LockTimeout { .. } => ErrorCode::LockTimeout,
        E::SessionNotFound { .. } => ErrorCode::NotFound,
        E::NotANote { .. } => ErrorCode::InvalidNote,
        _ => ErrorCode::Fieldnotes,
    }
}

fn file_name(path: &str) -> String {
    Path::new(path)
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default()
}

pub(crate) fn stopped() -> BrokerError {
    BrokerError::new(ErrorCode::Internal, "the fieldnotes writer stopped")
}

pub(crate) fn store_error(err: &impl std::fmt::Display, code: ErrorCode) -> BrokerError {
    BrokerError::new(code, err.to_string())
}
