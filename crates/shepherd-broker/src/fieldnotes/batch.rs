//! One group of one session's jobs, committed at once: every job's operations go into one
//! store commit in arrival order, and each job is answered from its own slice of the outcomes.
//!
//! Reservations of delegations, starts of planned notes, whole plans, finalisations, late
//! final words and releases all travel this way, so a burst of any of them costs one rewrite
//! of `session.json` and `shepherd.md` and one disk flush. The checks that make them safe to
//! repeat or to race run inside the commit, on the record read under the session lock: a task
//! handed over twice keeps its one note (`ReserveOnce`, `StartOnce`), and a planned note is
//! released only while still pending and only for the run that planned it (`Release`).

use serde_json::Value;
use shepherd_core::error_code::ErrorCode;
use shepherd_core::fieldnotes::LABEL_KEY;
use shepherd_core::herd::NoteLink;
use shepherd_notes::{
    Applied, ArtifactRecord, Finalization, Metadata, NoteOp, NoteOpOutcome, OpError, PlannedNote,
    SessionMetadata, SessionRef, Store, StoreError,
};

use super::{
    FinalizeJob, NoteRequest, PlanReply, ReleaseRequest, ReservedNote, Writer, file_name,
    store_code, store_error,
};
use crate::error::{BrokerError, BrokerResult};

pub(super) type Reply<T> = std::sync::mpsc::Sender<BrokerResult<T>>;

/// Work for one session's lane.
pub(crate) enum LaneJob {
    /// Reserve a running note for a delegation; `resumed` says whether the session existed
    /// before this broker first used it.
    Reserve {
        request: Box<NoteRequest>,
        resumed: bool,
        reply: Reply<ReservedNote>,
    },
    /// Start a note a plan reserved.
    Start {
        request: Box<NoteRequest>,
        reply: Reply<ReservedNote>,
    },
    /// Reserve a run's notes, in input order.
    Plan {
        notes: Vec<PlannedNote>,
        resumed: bool,
        reply: Reply<PlanReply>,
    },
    /// Finalise a settled task's note.
    Finalize(Box<FinalizeJob>, Reply<()>),
    /// Replace a final note's output.
    UpdateOutput(NoteLink, Option<String>, Metadata, Reply<()>),
    /// Finalise a planned note whose task never started.
    Release(ReleaseRequest, Reply<bool>),
    /// Record a branch of the session, or its new state.
    Branch(shepherd_core::fieldnotes::BranchRecord, Reply<()>),
    /// Apply a caller's operations as they are (`notes.write`), answered with their outcomes
    /// and the record as committed.
    Ops(Vec<NoteOp>, OpsReply),
    /// Write `shepherd.md` if an earlier group put it off (answered when asked to).
    CatchUp(Option<Reply<()>>),
}

/// How long a session's `shepherd.md` may lag its record after a commit that put it off (one
/// that made no note final: a reservation, a start, a plan). A settlement always
/// writes it, so it never lists a final note late; the next commit of the session writes it
/// anyway, and a quiet session is caught up after this (`SHEPHERD_INDEX_LAG_MS` sets it, for
/// tests).
pub(super) fn index_may_lag() -> std::time::Duration {
    std::env::var("SHEPHERD_INDEX_LAG_MS")
        .ok()
        .and_then(|ms| ms.parse().ok())
        .map_or(
            std::time::Duration::from_millis(250),
            std::time::Duration::from_millis,
        )
}

/// Where an [`LaneJob::Ops`] job's answer goes: its outcomes, or why its group failed, with a
/// store failure kept whole so the caller can tell a session gone from a broken disk.
pub(super) type OpsReply = std::sync::mpsc::Sender<Result<Applied, GroupFailure>>;

/// Why a group failed: told to an [`LaneJob::Ops`] job as it is, to every other job as the
/// broker error it has always been.
#[derive(Debug, Clone)]
pub(super) enum GroupFailure {
    /// The store refused or failed the commit.
    Store(std::sync::Arc<StoreError>),
    /// The broker could not get as far as the store.
    Broker(BrokerError),
}

impl GroupFailure {
    fn broker(&self) -> BrokerError {
        match self {
            Self::Store(err) => store_error(err, store_code(err)),
            Self::Broker(err) => err.clone(),
        }
    }
}

impl LaneJob {
    fn fail(self, failure: &GroupFailure) {
        fn send<T>(reply: &Reply<T>, failure: &GroupFailure) {
            // A caller that gave up is gone; nothing to tell.
            let _gone = reply.send(Err(failure.broker()));
        }
        match &self {
            Self::Reserve { reply, .. } | Self::Start { reply, .. } => send(reply, failure),
            Self::Plan { reply, .. } => send(reply, failure),
            Self::Finalize(_, reply) | Self::UpdateOutput(_, _, _, reply) => send(reply, failure),
            Self::Release(_, reply) => send(reply, failure),
            Self::Branch(_, reply) => send(reply, failure),
            Self::CatchUp(reply) => {
                if let Some(reply) = reply {
                    send(reply, failure);
                }
            }
            Self::Ops(_, reply) => {
                let _gone = reply.send(Err(failure.clone()));
            }
        }
    }

    /// This job's operations.
    fn ops(&self) -> Vec<NoteOp> {
        match self {
            Self::Reserve { request, .. } => {
                let mut planned = PlannedNote::new(request.agent.clone());
                planned.mode = request.mode;
                planned.task = Some(request.task.clone());
                planned.group.clone_from(&request.group);
                planned.metadata = ids_metadata(request);
                // Reserved already running: the task reaches its sheep right after the commit.
                planned.start = true;
                vec![NoteOp::ReserveOnce {
                    planned,
                    task_id: request.task_id.as_str().to_owned(),
                }]
            }
            Self::Start { request, .. } => vec![NoteOp::StartOnce {
                note: file_name(
                    &request
                        .planned
                        .as_deref()
                        .unwrap_or(std::path::Path::new(""))
                        .display()
                        .to_string(),
                ),
                task_id: request.task_id.as_str().to_owned(),
                metadata: ids_metadata(request),
                task: Some(request.task.clone()),
            }],
            Self::Plan { notes, .. } => notes.iter().cloned().map(NoteOp::Reserve).collect(),
            Self::Finalize(job, _) => vec![NoteOp::Finalize {
                note: file_name(&job.note.note),
                result: Finalization {
                    status: job.status,
                    output: job.output.clone(),
                    error: job.error.clone(),
                    metadata: job.metadata.clone(),
                },
            }],
            Self::UpdateOutput(note, output, metadata, _) => vec![NoteOp::UpdateFinalOutput {
                note: file_name(&note.note),
                output: output.clone(),
                metadata: metadata.clone(),
            }],
            Self::Branch(record, _) => vec![NoteOp::SetBranch(record.clone())],
            Self::Ops(ops, _) => ops.clone(),
            Self::CatchUp(_) => Vec::new(),
            Self::Release(request, _) => vec![NoteOp::Release {
                note: file_name(&request.note.display().to_string()),
                group: Some(request.group.clone()),
                result: Finalization {
                    status: request.status,
                    output: None,
                    error: Some(request.reason.clone()).filter(|reason| !reason.trim().is_empty()),
                    metadata: Metadata::new(),
                },
            }],
        }
    }
}

type Outcome = Result<NoteOpOutcome, OpError>;

/// Commits one group of jobs of session `directory` and answers each. Returns how long the
/// session's `shepherd.md` may wait when the commit put it off.
pub(super) fn commit(
    writer: &Writer,
    directory: &str,
    jobs: Vec<LaneJob>,
) -> Option<std::time::Duration> {
    let prepared = SessionRef::new(directory)
        .ok_or_else(|| {
            BrokerError::new(
                ErrorCode::Fieldnotes,
                format!("`{directory}` is not a session directory"),
            )
        })
        .and_then(|session| Ok((writer.store()?, session)));
    let (store, session) = match prepared {
        Ok(prepared) => prepared,
        Err(err) => {
            let failure = GroupFailure::Broker(err);
            jobs.into_iter().for_each(|job| job.fail(&failure));
            return None;
        }
    };
    let mut ops = Vec::new();
    let mut counts = Vec::with_capacity(jobs.len());
    let mut reserving = Vec::new();
    let mut starts = 0;
    for job in &jobs {
        let mine = job.ops();
        counts.push(mine.len());
        starts += usize::from(matches!(job, LaneJob::Start { .. }));
        reserving.extend(
            mine.iter()
                .map(|op| matches!(op, NoteOp::Reserve(_) | NoteOp::ReserveOnce { .. })),
        );
        ops.extend(mine);
    }
    // Only a group that makes no note final may leave the index behind: a settlement's commit
    // writes it, so no reader sees a final note the index does not list.
    let may_defer = jobs.iter().all(|job| match job {
        LaneJob::Reserve { .. } | LaneJob::Start { .. } | LaneJob::Plan { .. } => true,
        // A `shepherd notes reserve` or `start` through the broker, like a delegation's.
        LaneJob::Ops(ops, _) => ops.iter().all(|op| {
            matches!(
                op,
                NoteOp::Continue { .. } | NoteOp::Reserve(_) | NoteOp::Start { .. }
            )
        }),
        _ => false,
    });
    let now = shepherd_core::time::Timestamp::now();
    if jobs.iter().any(|job| matches!(job, LaneJob::CatchUp(_))) {
        // A commit with nothing to apply writes nothing, so the index is caught up first; the
        // group's own commit, if any, then writes it again from the record it leaves.
        if let Err(err) = store.refresh_index(&session, now) {
            let failure = GroupFailure::Store(std::sync::Arc::new(err));
            tracing::warn!(
                "could not write shepherd.md of {directory}: {}",
                failure.broker().message
            );
            jobs.into_iter().for_each(|job| job.fail(&failure));
            return None;
        }
        if jobs.iter().all(|job| matches!(job, LaneJob::CatchUp(_))) {
            for job in jobs {
                if let LaneJob::CatchUp(Some(reply)) = job {
                    let _gone = reply.send(Ok(()));
                }
            }
            return None;
        }
    }
    let applied = if may_defer {
        store.apply_deferring_index(&session, ops, now)
    } else {
        store.apply(&session, ops, now)
    };
    let mut index_deferred = false;
    let committed = applied.and_then(|applied| {
        index_deferred = applied.index_deferred;
        let metadata = match applied.session {
            Some(metadata) => *metadata,
            // Another process committed for us: read what it left.
            None => store.load(&session)?,
        };
        Ok((applied.outcomes, metadata))
    });
    let (outcomes, metadata) = match committed {
        Ok(committed) => committed,
        Err(err) => {
            let failure = GroupFailure::Store(std::sync::Arc::new(err));
            jobs.into_iter().for_each(|job| job.fail(&failure));
            return None;
        }
    };
    // The notes this commit added (a reservation answered `Unchanged` added none).
    let added = outcomes
        .iter()
        .zip(&reserving)
        .filter(|(outcome, reserves)| **reserves && matches!(outcome, Ok(NoteOpOutcome::Note(_))))
        .count();
    let group = Group {
        store: &store,
        metadata: &metadata,
        added,
        starts,
    };
    let mut outcomes = outcomes.into_iter();
    for (job, count) in jobs.into_iter().zip(counts) {
        let mine: Vec<Outcome> = outcomes.by_ref().take(count).collect();
        group.answer(job, mine);
    }
    index_deferred.then_some(writer.index_lag)
}

/// What answering the jobs of one commit needs.
struct Group<'a> {
    store: &'a Store,
    metadata: &'a SessionMetadata,
    /// Notes the commit added.
    added: usize,
    /// Planned notes the commit started.
    starts: usize,
}

impl Group<'_> {
    /// Answers one job from its outcomes. A session counts as continued when it existed
    /// before this broker used it, or holds notes besides the ones this commit handled.
    fn answer(&self, job: LaneJob, outcomes: Vec<Outcome>) {
        let (store, metadata) = (self.store, self.metadata);
        let notes = metadata.artifacts.len();
        // A caller that gave up is gone; nothing to tell.
        match job {
            LaneJob::Reserve { resumed, reply, .. } => {
                let answer = single(outcomes).map(|record| {
                    reserved_note(store, metadata, &record, resumed || notes > self.added)
                });
                let _gone = reply.send(answer);
            }
            LaneJob::Start { reply, .. } => {
                let answer = single(outcomes).map(|record| {
                    let resumed = metadata.resumed || notes > self.starts;
                    reserved_note(store, metadata, &record, resumed)
                });
                let _gone = reply.send(answer);
            }
            LaneJob::Plan { resumed, reply, .. } => {
                let records: BrokerResult<Vec<ArtifactRecord>> =
                    outcomes.into_iter().map(record_of).collect();
                let answer = records.map(|records| {
                    let resumed = resumed || notes > records.len();
                    PlanReply {
                        notes: records
                            .iter()
                            .map(|record| link(metadata, record, resumed))
                            .collect(),
                        session_name: metadata.session_name.clone(),
                        session_path: metadata.session_path.clone(),
                        session_relative: metadata.session_relative_path.clone(),
                        resumed,
                    }
                });
                let _gone = reply.send(answer);
            }
            LaneJob::Finalize(_, reply)
            | LaneJob::UpdateOutput(_, _, _, reply)
            | LaneJob::Branch(_, reply) => {
                let _gone = reply.send(single(outcomes).map(|_| ()));
            }
            LaneJob::CatchUp(reply) => {
                if let Some(reply) = reply {
                    let _gone = reply.send(Ok(()));
                }
            }
            LaneJob::Ops(_, reply) => {
                let _gone = reply.send(Ok(Applied {
                    outcomes,
                    session: Some(Box::new(metadata.clone())),
                    index_deferred: false,
                }));
            }
            LaneJob::Release(_, reply) => {
                let answer = match outcomes.into_iter().next() {
                    Some(Ok(NoteOpOutcome::Note(_))) => Ok(true),
                    Some(Ok(_)) => Ok(false),
                    Some(Err(err @ (OpError::NotInGroup { .. } | OpError::UnknownNote { .. }))) => {
                        Err(store_error(&err, ErrorCode::InvalidNote))
                    }
                    Some(Err(err)) => Err(store_error(&err, ErrorCode::Fieldnotes)),
                    None => Err(missing()),
                };
                let _gone = reply.send(answer);
            }
        }
    }
}

fn missing() -> BrokerError {
    BrokerError::new(ErrorCode::Internal, "a note operation went unanswered")
}

/// The note record of a note operation's outcome (changed or already there).
fn record_of(outcome: Outcome) -> BrokerResult<ArtifactRecord> {
    match outcome.map_err(|err| store_error(&err, ErrorCode::Fieldnotes))? {
        NoteOpOutcome::Note(record) | NoteOpOutcome::Unchanged(record) => Ok(*record),
        _ => Err(BrokerError::new(
            ErrorCode::Internal,
            "the store answered a note operation without a note",
        )),
    }
}

fn single(outcomes: Vec<Outcome>) -> BrokerResult<ArtifactRecord> {
    outcomes
        .into_iter()
        .next()
        .map_or_else(|| Err(missing()), record_of)
}

pub(super) fn reserved_note(
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

pub(super) fn link(metadata: &SessionMetadata, record: &ArtifactRecord, resumed: bool) -> NoteLink {
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

fn ids_metadata(request: &NoteRequest) -> Metadata {
    let mut metadata = Metadata::new();
    metadata.insert("agentId".into(), Value::from(request.agent_id.as_str()));
    if !request.label.trim().is_empty() {
        metadata.insert(LABEL_KEY.into(), Value::from(request.label.as_str()));
    }
    if let Some(file) = &request.session_file {
        metadata.insert("sessionFile".into(), Value::from(file.as_str()));
    }
    metadata
}
