//! `notes.write`: a change to the project's fieldnotes made by the broker on a caller's behalf.
//!
//! `shepherd notes reserve|start|finish|link|delete|feedback` can write the store itself (a
//! lock and a commit of its own per call), but when the project's broker runs it sends the
//! change here instead: the broker puts it into its session's lane, where it is committed with
//! whatever else that session has waiting (one lock, one rewrite of `session.json` and
//! `shepherd.md`, one disk flush for the group), and answers once the commit is durable. The
//! broker's store takes the same session lock as any other writer, so direct writers and the
//! broker never step on each other.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::fieldnotes::{ArtifactRecord, Metadata, Mode, NoteStatus, RelatedLink};

/// The session a change goes to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", rename_all_fields = "camelCase")]
pub enum NotesSession {
    /// An existing session, by its directory name (`0003-fix-login`).
    Directory {
        /// The directory name.
        directory: String,
    },
    /// The session bound to this parent identity, created on first use.
    Parent {
        /// The parent identity.
        parent_session: String,
        /// The parent's session file, recorded for diagnostics.
        parent_session_file: Option<String>,
    },
    /// The session with this exact name, created on first use.
    Named {
        /// The session name.
        session_name: String,
    },
}

/// One change to a session: what one `shepherd notes` command does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", rename_all_fields = "camelCase")]
pub enum NoteChange {
    /// Reserve a note for an agent.
    Reserve {
        /// The agent that will write it.
        agent: String,
        /// How the delegation runs.
        mode: Mode,
        /// The delegated task.
        task: Option<String>,
        /// The flow group it belongs to.
        group: Option<String>,
        /// Reserve it already running.
        start: bool,
    },
    /// Mark a reserved note running.
    Start {
        /// The note's file name.
        note: String,
        /// Metadata to merge.
        #[schemars(with = "std::collections::BTreeMap<String, serde_json::Value>")]
        metadata: Metadata,
    },
    /// Finalise a note, once.
    Finish {
        /// The note's file name.
        note: String,
        /// A terminal status.
        status: NoteStatus,
        /// The final output.
        output: Option<String>,
        /// What went wrong.
        error: Option<String>,
        /// Metadata to merge.
        #[schemars(with = "std::collections::BTreeMap<String, serde_json::Value>")]
        metadata: Metadata,
    },
    /// Attach a project file (absolute path) or a URL to the session's Related files.
    Link {
        /// The URL or absolute path.
        target: String,
        /// The link text.
        title: Option<String>,
    },
    /// Delete a final note (its record stays, marked deleted).
    Delete {
        /// The note's file name.
        note: String,
    },
    /// Attach feedback to a note.
    Feedback {
        /// The note's file name.
        note: String,
        /// Who gives it.
        from: String,
        /// The feedback.
        text: String,
    },
}

/// Parameters of `notes.write`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NotesWriteParams {
    /// Where the change goes.
    pub session: NotesSession,
    /// The change.
    pub change: NoteChange,
}

/// What `notes.write` did, once it is durable.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NotesWriteResult {
    /// The session's directory name.
    pub directory: String,
    /// The session's name.
    pub session_name: String,
    /// Whether an existing session was continued (`false`: created by this change).
    pub resumed: bool,
    /// The note the change made or changed, as committed.
    #[schemars(with = "Option<serde_json::Value>")]
    pub note: Option<ArtifactRecord>,
    /// The related link a `link` change attached.
    #[schemars(with = "Option<serde_json::Value>")]
    pub related: Option<RelatedLink>,
}
