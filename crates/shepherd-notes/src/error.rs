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
