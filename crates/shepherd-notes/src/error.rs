//! What can go wrong in the store, typed so callers can tell a bad name from a busy lock from a
//! broken disk, and so the binary can render each once with a stable code.

use std::io;
use std::path::PathBuf;
use std::time::Duration;

use shepherd_core::fieldnotes::{Malformed, OpError};
use shepherd_core::slug::NameError;

/// A store operation that did not happen. Nothing was written unless the variant says so.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A filesystem call failed; the error (from `fs-err` or `tempfile`) names the path.
    #[error(transparent)]
    Io(#[from] io::Error),
    /// Another process held a lock for the whole deadline.
    #[error(
        "timed out after {}s waiting for the lock `{}`; another Shepherd process is holding it",
        waited.as_secs(),
        path.display()
    )]
    LockTimeout {
        /// The lock file.
        path: PathBuf,
        /// How long we waited.
        waited: Duration,
    },
    /// A session name was refused.
    #[error(transparent)]
    InvalidName(#[from] NameError),
    /// A parent session identity was refused.
    #[error(
        "invalid parent session identity {identity:?}: use non-empty text of at most {max} characters without control characters",
        max = crate::MAX_IDENTITY
    )]
    InvalidIdentity {
        /// The identity as given.
        identity: String,
    },
    /// The project root cannot be used.
    #[error("cannot use `{}` as a project root: {reason}", path.display())]
    ProjectRoot {
        /// The path as given.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// No session matches a selector.
    #[error(
        "no session `{selector}` in `{}`; give a directory name, an ordinal or an exact session name (see `shepherd notes list`)",
        sessions.display()
    )]
    SessionNotFound {
        /// The selector as given.
        selector: String,
        /// The sessions directory searched.
        sessions: PathBuf,
    },
    /// A path given as a note does not belong to any session.
    #[error("`{}` is not a note of a Shepherd session: {reason}", path.display())]
    NotANote {
        /// The path as given.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// A session's `session.json` cannot be trusted; the session is left untouched.
    #[error("session `{}` is left untouched because its metadata is unusable: {reason}", path.display())]
    Malformed {
        /// The session directory.
        path: PathBuf,
        /// What is wrong.
        reason: Malformed,
    },
    /// A path the store would write to is not where it must be (e.g. a symlinked directory).
    #[error("refusing to write through `{}`: {reason}", path.display())]
    UnsafePath {
        /// The offending path.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// A single operation was refused (see [`OpError`]).
    #[error(transparent)]
    Op(#[from] OpError),
}

impl StoreError {
    /// The stable wire code of this failure: what every front end reports it as, whether the
    /// store was written directly or through a broker.
    pub fn code(&self) -> shepherd_core::error_code::ErrorCode {
        use shepherd_core::error_code::ErrorCode;
        match self {
            Self::Io(_) => ErrorCode::Io,
            Self::LockTimeout { .. } => ErrorCode::LockTimeout,
            Self::InvalidName(_) => ErrorCode::InvalidName,
            Self::InvalidIdentity { .. } => ErrorCode::InvalidIdentity,
            Self::ProjectRoot { .. } => ErrorCode::InvalidProject,
            Self::SessionNotFound { .. } | Self::NotANote { .. } => ErrorCode::NotFound,
            Self::Malformed { .. } => ErrorCode::Malformed,
            Self::UnsafePath { .. } => ErrorCode::UnsafePath,
            Self::Op(op) => op_code(op),
        }
    }

    /// The message with every cause after it, on one line.
    pub fn one_line(&self) -> String {
        let mut message = self.to_string();
        let mut source = std::error::Error::source(self);
        while let Some(cause) = source {
            message.push_str(": ");
            message.push_str(&cause.to_string());
            source = cause.source();
        }
        message
    }
}

/// The stable wire code of a refused operation.
pub fn op_code(op: &OpError) -> shepherd_core::error_code::ErrorCode {
    use shepherd_core::error_code::ErrorCode;
    match op {
        OpError::AlreadyFinal { .. } => ErrorCode::AlreadyFinal,
        OpError::NotFinal { .. } => ErrorCode::NotFinal,
        OpError::UnknownNote { .. } => ErrorCode::NotFound,
        OpError::InvalidLink { .. } => ErrorCode::InvalidLink,
        OpError::InvalidSheepLabel { .. } => ErrorCode::InvalidLabel,
        OpError::OtherSession { .. } => ErrorCode::StaleSession,
        OpError::Deleted { .. } => ErrorCode::Deleted,
        _ => ErrorCode::InvalidArgument,
    }
}

/// Whether a commit failed because the session it was sent to is not (or no longer) the one
/// asked for: gone, unusable, or reached through an unsafe path. [`crate::Store::apply_in`]
/// then finds the session the long way instead of failing.
pub trait SessionMiss {
    /// Whether this failure is such a miss.
    fn session_missing(&self) -> bool;
}

impl SessionMiss for StoreError {
    fn session_missing(&self) -> bool {
        matches!(
            self,
            Self::SessionNotFound { .. } | Self::Malformed { .. } | Self::UnsafePath { .. }
        )
    }
}
