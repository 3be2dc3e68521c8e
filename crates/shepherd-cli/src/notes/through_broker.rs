//! A `shepherd notes` change goes through the project's broker when one runs, and to the store
//! directly when none does.
//!
//! A process of its own writing the store pays for the session lock, the queue it hands its
//! change to when the lock is busy, and a commit of its own. A running broker already holds
//! the session's lane: one request puts the change into its next group commit, shared with
//! whatever else that session has waiting. The broker asked is this user's broker for the
//! note's project (the one `shepherd` commands start there); no broker is started for a note
//! command. A broker that cannot be reached, serves another project, or does not know
//! `notes.write` (an older build) leaves the change to the store; a change the broker refuses
//! is refused with the same code and words the store gives.

use std::path::Path;
use std::time::Duration;

use shepherd_core::error_code::ErrorCode;
use shepherd_core::fieldnotes::{ArtifactRecord, RelatedLink};
use shepherd_core::protocol::{Call, NoteChange, NotesSession, NotesWriteParams, Role, calls};
use shepherd_notes::{SessionRef, Store, StoreError};

use shepherd_client::connect::{HerdArgs, hello, runtime, target};
use shepherd_client::{CliError, Context};

use super::store_error;

/// How long a note command waits for a broker that is running (connecting and the commit).
const BROKER_PATIENCE: Duration = Duration::from_secs(60);

/// What a change did, whichever way it went.
#[derive(Debug)]
pub(super) struct Written {
    pub(super) session: SessionRef,
    pub(super) session_name: String,
    pub(super) resumed: bool,
    pub(super) note: Option<ArtifactRecord>,
    pub(super) related: Option<RelatedLink>,
}

impl Written {
    /// The note the change made or changed.
    pub(super) fn note(self) -> Result<ArtifactRecord, CliError> {
        self.note.ok_or_else(|| {
            CliError::new(
                ErrorCode::Internal,
                "the change was made but its note was not reported",
            )
        })
    }
}

/// Makes `change` in `session` of `store`'s project: through the project's broker when one
/// runs, else with `direct`.
pub(super) fn write(
    ctx: &Context,
    store: &Store,
    session: NotesSession,
    change: NoteChange,
    direct: impl FnOnce() -> Result<Written, StoreError>,
) -> Result<Written, CliError> {
    if let Some(written) = through_broker(ctx, store.project_root(), session, change)? {
        return Ok(written);
    }
    direct().map_err(|err| store_error(&err))
}

/// `None` when no broker of this project takes the change.
fn through_broker(
    ctx: &Context,
    root: &Path,
    session: NotesSession,
    change: NoteChange,
) -> Result<Option<Written>, CliError> {
    let herd = HerdArgs {
        project: Some(root.to_owned()),
        parent_session: None,
    };
    let Ok(target) = target(ctx, &herd) else {
        return Ok(None);
    };
    let socket = target.paths.socket;
    // No socket, no broker: the common case costs one `stat`.
    if !socket.exists() {
        return Ok(None);
    }
    let params = NotesWriteParams { session, change };
    let answer = runtime()?.block_on(async {
        let opened = tokio::time::timeout(
            BROKER_PATIENCE,
            shepherd_client::wire::Client::open(&socket, &hello(Role::Parent, None, None)),
        )
        .await;
        let Ok(Ok((mut client, greeting))) = opened else {
            return Ok(None);
        };
        if Path::new(&greeting.project_root) != root {
            return Ok(None);
        }
        let called =
            tokio::time::timeout(BROKER_PATIENCE, client.send::<calls::NotesWrite>(&params))
                .await
                .map_err(|_| {
                    CliError::from(shepherd_client::wire::ClientError::Timeout {
                        method: calls::NotesWrite::METHOD.name().to_owned(),
                        after: BROKER_PATIENCE,
                    })
                })?;
        match called {
            Ok(result) => Ok(Some(result)),
            // A broker from before `notes.write`: nothing was changed, so the store takes it.
            Err(err) if err.code() == ErrorCode::UnknownMethod => Ok(None),
            // Anything else, a lost connection included, is reported: the change may have been
            // made, and making it again here could make it twice.
            Err(err) => Err(CliError::from(err)),
        }
    })?;
    let Some(result) = answer else {
        return Ok(None);
    };
    let session = SessionRef::new(&result.directory).ok_or_else(|| {
        CliError::new(
            ErrorCode::Internal,
            format!(
                "the broker answered with `{}`, which is not a session directory",
                result.directory
            ),
        )
    })?;
    Ok(Some(Written {
        session,
        session_name: result.session_name,
        resumed: result.resumed,
        note: result.note,
        related: result.related,
    }))
}
