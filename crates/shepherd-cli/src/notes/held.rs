//! Whether a running broker still holds a note's task: `notes start` and `notes finish` refuse
//! to change a note whose task a broker of this user is still carrying out, since the broker
//! finalises that note itself.

use std::path::PathBuf;

use serde_json::Value;
use shepherd_core::protocol::{IdList, WaitParams, calls};
use shepherd_notes::LocatedNote;

use shepherd_client::CliError;
use shepherd_client::Context;

/// Whether a running broker still holds the task that owns this note, so the note is not ours
/// to change: asks every broker of this user that serves the note's project whether the note's
/// task is still open there. Returns the holding task's id.
fn note_task_held_by_broker(
    ctx: &Context,
    located: &LocatedNote,
) -> Result<Option<String>, CliError> {
    let Some(task) = located
        .record
        .metadata
        .get("taskId")
        .and_then(Value::as_str)
    else {
        return Ok(None);
    };
    let root = located.store.project_root().display().to_string();
    let Ok(entries) = fs_err::read_dir(&ctx.dirs.runtime_dir) else {
        return Ok(None);
    };
    let sockets: Vec<PathBuf> = entries
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| {
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            name.starts_with("b-") && name.ends_with(".sock")
        })
        .collect();
    shepherd_client::connect::runtime()?.block_on(async {
        for socket in sockets {
            let hello = shepherd_client::connect::hello(
                shepherd_core::protocol::Role::Observer,
                None,
                None,
            );
            let opened = tokio::time::timeout(
                std::time::Duration::from_secs(2),
                shepherd_client::wire::Client::open(&socket, &hello),
            )
            .await;
            let Ok(Ok((mut client, greeting))) = opened else {
                continue;
            };
            if greeting.project_root != root {
                continue;
            }
            let params = WaitParams {
                id: IdList::One(task.to_owned()),
                timeout_ms: 0,
                wait_output: false,
            };
            if let Ok(waited) = client.send::<calls::Wait>(&params).await
                && waited.pending.iter().any(|id| id.as_str() == task)
            {
                return Ok(Some(task.to_owned()));
            }
        }
        Ok(None)
    })
}

pub(super) fn refuse_if_held_by_broker(
    ctx: &Context,
    located: &LocatedNote,
) -> Result<(), CliError> {
    match note_task_held_by_broker(ctx, located)? {
        None => Ok(()),
        Some(task) => Err(CliError::new(
            shepherd_core::error_code::ErrorCode::HeldByBroker,
            format!(
                "note `{}` belongs to task `{task}`, which a running broker still holds; finish the task through the broker instead",
                located.record.file_path
            ),
        )),
    }
}
