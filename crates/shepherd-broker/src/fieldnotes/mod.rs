//! The broker's writer of fieldnotes, with group commit (the worker thread is in `worker`).
//!
//! All note operations of one broker go through one worker thread. It takes every job waiting
//! in its queue, groups them by session and applies each group with one store commit (one lock,
//! one rewrite of `session.json` and `shepherd.md`), so sixteen sheep settling at once cost a
//! handful of commits, not sixteen. A delegation's note is reserved and marked running before
//! the task reaches its sheep; a settled task's note is finalised before watchers hear of it.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use shepherd_core::herd::{Herd, NoteLink};
use shepherd_core::ids::{AgentId, TaskId};
use shepherd_notes::{Metadata, NoteStatus, PlannedNote};

use crate::error::{BrokerError, BrokerResult};

/// A note to reserve for a delegation.
#[derive(Debug, Clone)]
pub(crate) struct NoteRequest {
    /// Put it in this named session instead of the parent's.
    pub(crate) session_name: Option<String>,
    /// A note reserved earlier by `plan` to use (start) instead of reserving a new one.
    pub(crate) planned: Option<PathBuf>,
    /// The flow group the note belongs to.
    pub(crate) group: Option<String>,
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
        let status = task
            .state
            .note_status()
            .parse()
            .unwrap_or(NoteStatus::Failed);
        let mut metadata = Metadata::new();
        metadata.insert("taskStatus".into(), Value::from(task.state.as_str()));
        metadata.insert("returnCode".into(), Value::from(result.return_code));
        if let Some(summary) = &result.summary {
            metadata.insert("summary".into(), Value::from(one_line(summary)));
        }
        crate::controls::note_metadata(task, &mut metadata);
        let started = task.started_at.unwrap_or(task.created_at);
        metadata.insert(
            "durationMs".into(),
            Value::from(result.completed_at - started),
        );
        let output = match &task.output {
            Some(run) => {
                merge_telemetry(&mut metadata, &run.telemetry);
                Some(run.text.clone())
                    .filter(|t| !t.trim().is_empty())
                    .or_else(|| result.text.clone())
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

pub(crate) fn merge_telemetry(metadata: &mut Metadata, telemetry: &Value) {
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
    let updated =
        tokio::task::spawn_blocking(move || fieldnotes.update_output(&note, text, metadata)).await;
    match updated {
        Ok(Ok(())) => {}
        Ok(Err(err)) => {
            tracing::warn!("could not add the final output to the note of {task_id}: {err}");
        }
        Err(err) => tracing::warn!("adding the final output of {task_id} panicked: {err}"),
    }
}

/// Adds `metadata` to a settled task's note once it is final (waiting for its finalisation,
/// within a deadline), keeping its final output as it is.
pub(crate) async fn annotate_final(
    broker: &Arc<crate::broker::Broker>,
    task_id: &TaskId,
    metadata: Metadata,
) -> BrokerResult<()> {
    let deadline = tokio::time::Instant::now() + FIELDNOTES_DEADLINE;
    let mut generation = broker.generation.subscribe();
    loop {
        generation.borrow_and_update();
        let job = broker.read(|herd| {
            let task = herd.tasks.get(task_id)?;
            task.finalized
                .then(|| FinalizeJob::for_task(herd, task_id))
                .flatten()
        });
        if let Some(job) = job {
            let fieldnotes = broker.fieldnotes();
            return tokio::task::spawn_blocking(move || {
                fieldnotes.update_output(&job.note, job.output, metadata)
            })
            .await
            .map_err(|err| BrokerError::new("internal", err.to_string()))?;
        }
        tokio::select! {
            changed = generation.changed() => if changed.is_err() { return Err(stopped()) },
            () = tokio::time::sleep_until(deadline) => {
                return Err(BrokerError::new(
                    "fieldnotes_timeout",
                    format!("the note of {task_id} was not final within {} s", FIELDNOTES_DEADLINE.as_secs()),
                ));
            }
        }
    }
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
const FIELDNOTES_DEADLINE: std::time::Duration = std::time::Duration::from_secs(60);

pub(crate) use worker::Job;
use worker::WorkerState;

mod worker;

/// The fieldnotes writer of one project and parent: a handle to its worker thread, which
/// ends when the last handle is dropped.
#[derive(Clone)]
pub(crate) struct Fieldnotes {
    jobs: Arc<Mutex<mpsc::Sender<Job>>>,
}

impl Fieldnotes {
    /// Starts the writer for `project_root` on behalf of parent `identity`.
    pub(crate) fn start(project_root: PathBuf, identity: String) -> Self {
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
        Self {
            jobs: Arc::new(Mutex::new(tx)),
        }
    }

    fn call<T>(&self, make: impl FnOnce(mpsc::Sender<BrokerResult<T>>) -> Job) -> BrokerResult<T> {
        let (tx, rx) = mpsc::channel();
        self.jobs
            .lock()
            .expect("jobs lock")
            .send(make(tx))
            .map_err(|_| stopped())?;
        match rx.recv_timeout(FIELDNOTES_DEADLINE) {
            Ok(result) => result,
            Err(mpsc::RecvTimeoutError::Timeout) => Err(BrokerError::new(
                "fieldnotes_timeout",
                format!(
                    "the fieldnotes writer did not answer within {} s (is the disk or a session lock stuck?)",
                    FIELDNOTES_DEADLINE.as_secs()
                ),
            )),
            Err(mpsc::RecvTimeoutError::Disconnected) => Err(stopped()),
        }
    }

    /// Resolves (creating on first use) the parent-bound session.
    pub(crate) fn parent_session(&self) -> BrokerResult<SessionSummary> {
        self.call(Job::ParentSession)
    }

    /// Reserves pending notes for a whole run, in input order, in one commit.
    pub(crate) fn plan(&self, request: PlanRequest) -> BrokerResult<PlanReply> {
        self.call(|tx| Job::Plan(request, tx))
    }

    /// Reserves a running note for a delegation.
    pub(crate) fn reserve(&self, request: &NoteRequest) -> BrokerResult<ReservedNote> {
        self.call(|tx| Job::Reserve(request.clone(), tx))
    }

    /// Finalises a settled task's note.
    pub(crate) fn finalize(&self, job: &FinalizeJob) -> BrokerResult<()> {
        self.call(|tx| Job::Finalize(job.clone(), tx))
    }

    /// Finalises a planned note if it is still pending; `false` when its task started.
    pub(crate) fn release(&self, request: ReleaseRequest) -> BrokerResult<bool> {
        self.call(|tx| Job::Release(request, tx))
    }

    /// The notes a run's plan reserved earlier (found by its flow group), if its plan got as far
    /// as reserving them before a restart.
    pub(crate) fn find_plan(&self, group: &str) -> BrokerResult<Option<PlanReply>> {
        let group = group.to_owned();
        self.call(|tx| Job::FindPlan(group, tx))
    }

    /// Replaces a final note's output (a sheep's last words after it settled its task).
    pub(crate) fn update_output(
        &self,
        note: &NoteLink,
        output: Option<String>,
        metadata: Metadata,
    ) -> BrokerResult<()> {
        self.call(|tx| Job::UpdateOutput(note.clone(), output, metadata, tx))
    }
}

pub(crate) fn stopped() -> BrokerError {
    BrokerError::new("internal", "the fieldnotes writer stopped")
}

pub(crate) fn store_error(err: &impl std::fmt::Display, code: &str) -> BrokerError {
    BrokerError::new(code, err.to_string())
}
