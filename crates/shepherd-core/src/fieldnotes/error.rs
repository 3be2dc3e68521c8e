//! Why a change to a session record was refused ([`OpError`]), and the limits its messages
//! quote.
//!
//! It sits below the record and the transitions both: the record's own checks
//! ([`super::metadata`]) refuse a bad related link with it, and every transition in
//! [`super::ops`] refuses with it.

use serde::{Deserialize, Serialize};

use super::status::NoteStatus;

/// Longest agent name, group key, link title or metadata key accepted.
pub(super) const MAX_LABEL: usize = 200;

/// Longest feedback text accepted, in characters.
pub(super) const MAX_FEEDBACK: usize = 10_000;

/// Why one operation was refused. The record is unchanged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "code")]
pub enum OpError {
    /// The agent name cannot be recorded.
    #[error(
        "invalid agent name {agent:?}: {reason}; use a non-empty name of at most {MAX_LABEL} characters without control characters"
    )]
    InvalidAgent {
        /// The name as given.
        agent: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A sheep's label given as note metadata is not one a sheep could carry.
    #[error("invalid label {value:?} in the note's metadata: {reason}")]
    InvalidSheepLabel {
        /// The value as given (JSON).
        value: String,
        /// What the label rules say of it.
        reason: String,
    },
    /// A metadata key is owned by the store or is not a plain identifier.
    #[error(
        "invalid metadata key {key:?}: use a plain identifier such as `taskId` ([A-Za-z_][A-Za-z0-9_.-]*) that is not one of the note's own fields"
    )]
    InvalidMetadataKey {
        /// The key as given.
        key: String,
    },
    /// A group key or link title cannot be recorded.
    #[error(
        "invalid {what} {value:?}: use non-empty text of at most {MAX_LABEL} characters without control characters"
    )]
    InvalidLabel {
        /// Which label (`group`, `title`).
        what: String,
        /// The value as given.
        value: String,
    },
    /// The note is not part of the session.
    #[error("note `{note}` is not part of this session")]
    UnknownNote {
        /// The file name asked for.
        note: String,
    },
    /// The note was already finalised, with another result.
    #[error(
        "note `{note}` is already final ({status}) with another result; a note is finalised once"
    )]
    AlreadyFinal {
        /// The note's file name.
        note: String,
        /// Its final status.
        status: NoteStatus,
    },
    /// The note is not final yet, so it has no final output to replace.
    #[error("note `{note}` is not final yet ({status}); finalise it first")]
    NotFinal {
        /// The note's file name.
        note: String,
        /// Its current status.
        status: NoteStatus,
    },
    /// A finalisation asked for a status that is not terminal.
    #[error("status `{status}` is not final; use completed, failed, timed-out or cancelled")]
    NotTerminal {
        /// The status asked for.
        status: NoteStatus,
    },
    /// A session status that cannot be set.
    #[error(
        "a session cannot be set to `{status}`; use running, completed, failed, timed-out or cancelled"
    )]
    InvalidSessionStatus {
        /// The status asked for.
        status: NoteStatus,
    },
    /// A note asked to be released for a reservation group it does not belong to.
    #[error("note `{note}` was not reserved by {group}; only its own notes can be released")]
    NotInGroup {
        /// The note's file name.
        note: String,
        /// The group asked for.
        group: String,
    },
    /// The session is not the one a lookup expected: it no longer carries that parent binding
    /// or name (the lookup's index was stale). Nothing else in the same request was applied.
    #[error("this session is not {expected}")]
    OtherSession {
        /// What was expected, in words.
        expected: String,
    },
    /// The note was deleted; nothing but deleting it again applies to it.
    #[error("note `{note}` was deleted; a deleted note cannot change")]
    Deleted {
        /// The note's file name.
        note: String,
    },
    /// Feedback that is empty or too long.
    #[error(
        "invalid feedback of {length} characters: give non-blank text of at most {MAX_FEEDBACK} characters"
    )]
    InvalidFeedback {
        /// Its length in characters.
        length: usize,
    },
    /// A related link target that is neither a URL nor a clean project-relative path.
    #[error("invalid link target {target:?}: {reason}")]
    InvalidLink {
        /// The target as given.
        target: String,
        /// What is wrong with it.
        reason: String,
    },
}
