//! The operations a session goes through, and one-operation wrappers around
//! [`Store::apply`] for callers that change one thing at a time.
//!
//! Every operation is serialisable because a writer that finds its session busy hands its
//! operations to whoever holds the lock (see `queue`).

use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use shepherd_core::fieldnotes::ops::check_planned;
use shepherd_core::fieldnotes::{
    ArtifactRecord, Metadata, NoteStatus, OpError, PlannedNote, RelatedLink,
};

use crate::{SessionKey, SessionRef, Store, StoreError};

/// One change to a session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum NoteOp {
    /// Reserve a new note (`pending`) and create its file.
    Reserve(PlannedNote),
    /// Mark a note `running` and merge metadata (`taskId`, `agentId`, `pane`, …).
    Start {
        /// The note's file name.
        note: String,
        /// Metadata to merge (`null` removes a key).
        metadata: Metadata,
        /// The task text as finally delivered, when it differs from the text reserved (a chain
        /// step's `{previous}` filled in).
        task: Option<String>,
    },
    /// Merge metadata into a note in any status.
    Update {
        /// The note's file name.
        note: String,
        /// Metadata to merge.
        metadata: Metadata,
    },
    /// Finalise a note, once. Finalising a final note again with the result it holds (its
    /// status, error and metadata; see [`shepherd_core::fieldnotes::ops::holds_result`]) is
    /// answered [`NoteOpOutcome::Unchanged`] and writes nothing; another result is refused with
    /// [`OpError::AlreadyFinal`].
    Finalize {
        /// The note's file name.
        note: String,
        /// The outcome.
        result: Finalization,
    },
    /// Replace the final output of an already final note (its status stays): a sheep's last
    /// words that arrive after its task settled.
    UpdateFinalOutput {
        /// The note's file name.
        note: String,
        /// The new final output.
        output: Option<String>,
        /// Metadata to merge.
        metadata: Metadata,
    },
    /// Delete a final note: its record stays, marked deleted, and its file is removed after
    /// the record is committed. Deleting it again removes a file a crash left behind.
    Delete {
        /// The note's file name.
        note: String,
    },
    /// Attach feedback to a note (not a deleted one).
    Feedback {
        /// The note's file name.
        note: String,
        /// Who gives it.
        from: String,
        /// The feedback.
        text: String,
    },
    /// Attach a project file or URL to the session's Related files.
    Link {
        /// A URL, or a path (absolute, or relative to the project root) to an existing file or
        /// directory inside the project.
        target: String,
        /// Link text; the target when absent.
        title: Option<String>,
    },
    /// Set the session status explicitly (it wins over the summary of this batch's notes).
    SetStatus(NoteStatus),
    /// Record a branch the session's isolated work left, or its new state (see
    /// [`shepherd_core::fieldnotes::branches::upsert`]).
    SetBranch(shepherd_core::fieldnotes::BranchRecord),
    /// Continue the session as the one `key` selects: refused with
    /// [`OpError::OtherSession`] (and the operations it guards with it, unapplied) unless the
    /// session, as read under its lock, carries that binding or name;
    /// otherwise marks it continued (`resumed`, `session_file` recorded, a finished session
    /// running again). Lets a writer that found the session through the index check and
    /// continue it in the same commit as its own changes.
    Continue {
        /// What the writer looked the session up by.
        key: SessionKey,
        /// The parent's session file, for diagnostics.
        session_file: Option<String>,
        /// How many operations after it belong to the same writer and are refused with it;
        /// every later operation of the request when absent. A broker groups several writers'
        /// operations into one request, so it says how far a refusal reaches.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        guards: Option<usize>,
    },
    /// Reserve a note for task `task_id` (recorded as its `taskId`) unless the session already
    /// holds one, which is then answered [`NoteOpOutcome::Unchanged`]: a task handed over
    /// twice (after a restart) keeps its one note.
    ReserveOnce {
        /// The note to reserve.
        planned: PlannedNote,
        /// The task it belongs to.
        task_id: String,
    },
    /// Start note `note` for task `task_id` (recorded as its `taskId`, with `metadata`)
    /// unless a note of the session already carries that task, which is then answered
    /// [`NoteOpOutcome::Unchanged`]: a planned note handed over twice is started once.
    StartOnce {
        /// The note's file name.
        note: String,
        /// The task it is started for.
        task_id: String,
        /// Metadata to merge.
        metadata: Metadata,
        /// The task text as finally delivered, when it differs from the text reserved.
        task: Option<String>,
    },
    /// Finalise a note only if it is still `pending` (a planned note whose task never
    /// started); a note in any other status is answered [`NoteOpOutcome::Unchanged`]. With a
    /// `group`, a note of another group is refused with [`OpError::NotInGroup`].
    Release {
        /// The note's file name.
        note: String,
        /// The reservation group the note must belong to.
        group: Option<String>,
        /// The outcome.
        result: Finalization,
    },
}

/// How a note ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finalization {
    /// A terminal status.
    pub status: NoteStatus,
    /// The sheep's final output.
    pub output: Option<String>,
    /// What went wrong.
    pub error: Option<String>,
    /// Metadata to merge (model, duration, usage, …).
    pub metadata: Metadata,
}

impl Finalization {
    /// A finalisation with `status` and nothing else.
    pub fn new(status: NoteStatus) -> Self {
        Self {
            status,
            output: None,
            error: None,
            metadata: Metadata::new(),
        }
    }
}

/// What one operation did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum NoteOpOutcome {
    /// A note operation succeeded; the note's record after the whole batch.
    Note(Box<ArtifactRecord>),
    /// A link was added or retitled.
    Linked(RelatedLink),
    /// The session status was set.
    StatusSet(NoteStatus),
    /// A branch was recorded.
    BranchSet,
    /// The session was continued (see [`NoteOp::Continue`]); its name.
    Continued {
        /// The session's name.
        session_name: String,
    },
    /// The operation had nothing to do; the note's record as it is.
    Unchanged(Box<ArtifactRecord>),
}

impl NoteOpOutcome {
    /// The note record, for note operations.
    pub fn note(&self) -> Option<&ArtifactRecord> {
        match self {
            Self::Note(record) => Some(record),
            _ => None,
        }
    }
}

/// The result of [`Store::apply`].
#[derive(Debug, Clone)]
pub struct Applied {
    /// One result per operation, in order. A note's record is as committed.
    pub outcomes: Vec<Result<NoteOpOutcome, OpError>>,
    /// The session record as the commit left it, when this writer committed itself (`None`
    /// when another process committed its operations for it; read it then if needed).
    pub session: Option<Box<shepherd_core::fieldnotes::SessionMetadata>>,
    /// Whether the commit left `shepherd.md` behind the record (see [`crate::IndexWrite`]):
    /// the writer owes it a [`Store::refresh_index`].
    pub index_deferred: bool,
}

/// The note metadata key holding the id of the task a note belongs to.
pub const TASK_ID_KEY: &str = "taskId";

/// The metadata key a note's sheep is recorded under: one task has one note per sheep that
/// worked on it.
pub const AGENT_ID_KEY: &str = "agentId";

impl Store {
    /// Reserves `planned` notes in input order, in one commit. All are checked first: one bad
    /// note refuses the whole batch and nothing is written.
    pub fn reserve(
        &self,
        session: &SessionRef,
        planned: Vec<PlannedNote>,
        now: Timestamp,
    ) -> Result<Vec<ArtifactRecord>, StoreError> {
        for note in &planned {
            check_planned(note)?;
        }
        let ops = planned.into_iter().map(NoteOp::Reserve).collect();
        self.apply_all(session, ops, now)
    }

    /// Marks a note `running`.
    pub fn start(
        &self,
        session: &SessionRef,
        note: &str,
        metadata: Metadata,
        now: Timestamp,
    ) -> Result<ArtifactRecord, StoreError> {
        let op = NoteOp::Start {
            note: note.to_owned(),
            metadata,
            task: None,
        };
        self.apply_single(session, op, now)
    }

    /// Merges metadata into a note.
    pub fn update(
        &self,
        session: &SessionRef,
        note: &str,
        metadata: Metadata,
        now: Timestamp,
    ) -> Result<ArtifactRecord, StoreError> {
        let op = NoteOp::Update {
            note: note.to_owned(),
            metadata,
        };
        self.apply_single(session, op, now)
    }

    /// Finalises a note. Finalising it again with the result it holds returns it as it is; with
    /// another result it fails with [`OpError::AlreadyFinal`].
    pub fn finalize(
        &self,
        session: &SessionRef,
        note: &str,
        result: Finalization,
        now: Timestamp,
    ) -> Result<ArtifactRecord, StoreError> {
        let op = NoteOp::Finalize {
            note: note.to_owned(),
            result,
        };
        self.apply_single(session, op, now)
    }

    /// Replaces the final output of an already final note.
    pub fn update_final_output(
        &self,
        session: &SessionRef,
        note: &str,
        output: Option<String>,
        metadata: Metadata,
        now: Timestamp,
    ) -> Result<ArtifactRecord, StoreError> {
        let op = NoteOp::UpdateFinalOutput {
            note: note.to_owned(),
            output,
            metadata,
        };
        self.apply_single(session, op, now)
    }

    /// Deletes a final note (see [`NoteOp::Delete`]); returns its record, marked deleted.
    pub fn delete_note(
        &self,
        session: &SessionRef,
        note: &str,
        now: Timestamp,
    ) -> Result<ArtifactRecord, StoreError> {
        let op = NoteOp::Delete {
            note: note.to_owned(),
        };
        self.apply_single(session, op, now)
    }

    /// Attaches feedback from `from` to a note; returns its record.
    pub fn add_feedback(
        &self,
        session: &SessionRef,
        note: &str,
        from: &str,
        text: &str,
        now: Timestamp,
    ) -> Result<ArtifactRecord, StoreError> {
        let op = NoteOp::Feedback {
            note: note.to_owned(),
            from: from.to_owned(),
            text: text.to_owned(),
        };
        self.apply_single(session, op, now)
    }

    /// Adds a Related files entry; returns the stored link.
    pub fn link(
        &self,
        session: &SessionRef,
        target: &str,
        title: Option<String>,
        now: Timestamp,
    ) -> Result<RelatedLink, StoreError> {
        let op = NoteOp::Link {
            target: target.to_owned(),
            title,
        };
        match self.apply(session, vec![op], now)?.outcomes.remove(0)? {
            NoteOpOutcome::Linked(link) => Ok(link),
            other => unreachable!("a link op yields a link, not {other:?}"),
        }
    }

    /// Sets the session status.
    pub fn set_status(
        &self,
        session: &SessionRef,
        status: NoteStatus,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        let mut applied = self.apply(session, vec![NoteOp::SetStatus(status)], now)?;
        applied.outcomes.remove(0)?;
        Ok(())
    }

    fn apply_single(
        &self,
        session: &SessionRef,
        op: NoteOp,
        now: Timestamp,
    ) -> Result<ArtifactRecord, StoreError> {
        Ok(self.apply_all(session, vec![op], now)?.remove(0))
    }

    fn apply_all(
        &self,
        session: &SessionRef,
        ops: Vec<NoteOp>,
        now: Timestamp,
    ) -> Result<Vec<ArtifactRecord>, StoreError> {
        let applied = self.apply(session, ops, now)?;
        let mut records = Vec::with_capacity(applied.outcomes.len());
        for outcome in applied.outcomes {
            match outcome? {
                NoteOpOutcome::Note(record) | NoteOpOutcome::Unchanged(record) => {
                    records.push(*record);
                }
                other => unreachable!("note ops yield notes, not {other:?}"),
            }
        }
        Ok(records)
    }
}
