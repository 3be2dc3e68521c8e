//! `notes.write`: a `shepherd notes` change made by the broker for a caller, in its session's
//! lane, so it is committed with whatever else that session has waiting instead of taking the
//! session lock in a process of its own.
//!
//! The session is found the way the store finds it for a direct writer (a directory name, or
//! a parent identity or session name looked up through the binding index and confirmed inside
//! the commit that uses it), and a refused change is reported with the same code and words a
//! direct write would give, so the command's output does not depend on which path it took.

use std::sync::atomic::Ordering;
use std::sync::mpsc;

use shepherd_core::error_code::ErrorCode;
use shepherd_core::protocol::{NoteChange, NotesSession, NotesWriteParams, NotesWriteResult};
use shepherd_notes::{
    Applied, Finalization, NoteOp, NoteOpOutcome, PlannedNote, SessionKey, SessionRef, StoreError,
    op_code,
};

use super::batch::GroupFailure;
use super::{FIELDNOTES_DEADLINE, Fieldnotes, LaneJob, stopped};
use crate::error::{BrokerError, BrokerResult};

/// What one change did.
struct Changed {
    /// The session's directory name.
    directory: String,
    /// The session's name.
    session_name: String,
    /// Whether the session existed before.
    resumed: bool,
    /// Each operation's outcome.
    outcomes: Vec<Result<NoteOpOutcome, shepherd_notes::OpError>>,
}

impl Fieldnotes {
    /// Makes one `shepherd notes` change and answers once it is durable.
    pub(crate) fn write(&self, params: NotesWriteParams) -> BrokerResult<NotesWriteResult> {
        let op = note_op(params.change)?;
        let store = self.writer.store()?;
        let now = shepherd_core::time::Timestamp::now();
        let changed = match params.session {
            NotesSession::Directory { directory } => {
                let session = SessionRef::new(&directory).ok_or_else(|| {
                    BrokerError::new(
                        ErrorCode::InvalidArgument,
                        format!(
                            "`{directory}` is not a session directory name; give one like `0003-fix-login`"
                        ),
                    )
                })?;
                let applied = self
                    .apply(&session, vec![op])
                    .map_err(GroupFailure::into_broker)?;
                let name = applied
                    .session
                    .map(|metadata| metadata.session_name)
                    .unwrap_or_default();
                Changed {
                    directory,
                    session_name: name,
                    resumed: true,
                    outcomes: applied.outcomes,
                }
            }
            NotesSession::Parent {
                parent_session,
                parent_session_file,
            } => self.write_in(
                &store,
                &SessionKey::Parent(parent_session),
                parent_session_file.as_deref(),
                op,
                now,
            )?,
            NotesSession::Named { session_name } => {
                self.write_in(&store, &SessionKey::Name(session_name), None, op, now)?
            }
        };
        let mut result = NotesWriteResult {
            directory: changed.directory,
            session_name: changed.session_name,
            resumed: changed.resumed,
            note: None,
            related: None,
        };
        match changed.outcomes.into_iter().next() {
            Some(Ok(NoteOpOutcome::Note(record) | NoteOpOutcome::Unchanged(record))) => {
                result.note = Some(*record);
            }
            Some(Ok(NoteOpOutcome::Linked(link))) => result.related = Some(link),
            Some(Ok(_)) => {}
            Some(Err(err)) => return Err(BrokerError::new(op_code(&err), err.to_string())),
            None => {
                return Err(BrokerError::new(
                    ErrorCode::Internal,
                    "a note operation went unanswered",
                ));
            }
        }
        self.writer.notes_written.fetch_add(1, Ordering::Relaxed);
        Ok(result)
    }

    /// How many `notes.write` changes this broker made.
    pub(crate) fn notes_written(&self) -> u64 {
        self.writer.notes_written.load(Ordering::Relaxed)
    }

    /// Applies `op` in the session `key` selects (created on first use) through the lanes:
    /// the session's directory and name, whether it was continued, and the outcomes.
    fn write_in(
        &self,
        store: &shepherd_notes::Store,
        key: &SessionKey,
        session_file: Option<&str>,
        op: NoteOp,
        now: shepherd_core::time::Timestamp,
    ) -> BrokerResult<Changed> {
        let commit = |session: &SessionRef, ops: Vec<NoteOp>| self.apply(session, ops);
        let applied = store
            .apply_in(key, session_file, vec![op], now, commit)
            .map_err(GroupFailure::into_broker)?;
        Ok(Changed {
            directory: applied.session.directory_name().to_owned(),
            session_name: applied.session_name,
            resumed: applied.resumed,
            outcomes: applied.outcomes,
        })
    }

    /// Commits `ops` in the lane of `session` and waits for the outcome.
    fn apply(&self, session: &SessionRef, ops: Vec<NoteOp>) -> Result<Applied, GroupFailure> {
        let (tx, rx) = mpsc::channel();
        self.lanes
            .submit(session.directory_name(), LaneJob::Ops(ops, tx));
        match rx.recv_timeout(FIELDNOTES_DEADLINE) {
            Ok(answer) => answer,
            Err(mpsc::RecvTimeoutError::Timeout) => Err(GroupFailure::Broker(BrokerError::new(
                ErrorCode::FieldnotesTimeout,
                format!(
                    "the fieldnotes writer did not answer within {} s (is the disk or a session lock stuck?)",
                    FIELDNOTES_DEADLINE.as_secs()
                ),
            ))),
            Err(mpsc::RecvTimeoutError::Disconnected) => Err(GroupFailure::Broker(stopped())),
        }
    }
}

impl From<StoreError> for GroupFailure {
    fn from(err: StoreError) -> Self {
        Self::Store(std::sync::Arc::new(err))
    }
}

impl shepherd_notes::SessionMiss for GroupFailure {
    fn session_missing(&self) -> bool {
        matches!(self, Self::Store(err) if err.session_missing())
    }
}

impl GroupFailure {
    /// How the broker reports it: the store's code and words, as a direct write gives them.
    fn into_broker(self) -> BrokerError {
        match self {
            Self::Store(err) => BrokerError::new(err.code(), err.one_line()),
            Self::Broker(err) => err,
        }
    }
}

/// The store operation a change is.
fn note_op(change: NoteChange) -> BrokerResult<NoteOp> {
    Ok(match change {
        NoteChange::Reserve {
            agent,
            mode,
            task,
            group,
            start,
        } => {
            let planned = PlannedNote {
                agent,
                mode,
                task,
                group,
                metadata: shepherd_notes::Metadata::new(),
                start,
            };
            shepherd_core::fieldnotes::ops::check_planned(&planned)
                .map_err(|err| BrokerError::new(op_code(&err), err.to_string()))?;
            NoteOp::Reserve(planned)
        }
        NoteChange::Start { note, metadata } => NoteOp::Start {
            note,
            metadata,
            task: None,
        },
        NoteChange::Finish {
            note,
            status,
            output,
            error,
            metadata,
        } => NoteOp::Finalize {
            note,
            result: Finalization {
                status,
                output,
                error,
                metadata,
            },
        },
        NoteChange::Link { target, title } => NoteOp::Link { target, title },
        NoteChange::Delete { note } => NoteOp::Delete { note },
        NoteChange::Feedback { note, from, text } => NoteOp::Feedback { note, from, text },
    })
}
