//! The broker's side of a settled task's note: what happens to it once the herd has changed.
//!
//! The note writer (`fieldnotes`) knows notes, not the herd. This module reads the herd for
//! what a note needs and hands it over: a settled task's note is finalised once the settlement
//! is durable (and the herd then records it final, which releases watchers); final words that
//! arrive after that are added to the final note; and a note already final can be annotated
//! (a kept worktree, the note that continues it). Commits ask for finalising through
//! [`crate::state::broker::Effect::FinalizeNote`]; a restarted broker asks for it directly.

use shepherd_core::error_code::ErrorCode;
use std::sync::Arc;

use shepherd_core::ids::TaskId;
use shepherd_notes::Metadata;

use crate::error::{BrokerError, BrokerResult};
use crate::fieldnotes::{FinalizeJob, merge_telemetry};
use crate::state::broker::Broker;

/// Finalises a settled task's note once the settlement is durable, then records that the
/// note is final (which releases watchers).
pub(crate) fn finalize(broker: &Arc<Broker>, task_id: TaskId, pos: u64) {
    if !broker
        .finalizing
        .lock()
        .expect("finalizing lock")
        .insert(task_id.clone())
    {
        return;
    }
    let broker = broker.clone();
    tokio::spawn(async move {
        if let Err(err) = broker.store.durable(pos).await {
            tracing::error!("not finalising the note of {task_id}: {err}");
            return;
        }
        // A remote sheep's last words in its host's copy come in first.
        crate::sheep::remote_sheep::notes::close(&broker, &task_id).await;
        let job = broker
            .store
            .read(|herd| FinalizeJob::for_task(herd, &task_id));
        let had_output = job.as_ref().is_some_and(|job| job.with_run_output);
        if let Some(job) = job {
            let fieldnotes = broker.fieldnotes();
            let outcome = tokio::task::spawn_blocking(move || fieldnotes.finalize(&job)).await;
            match outcome {
                Ok(Ok(())) => {}
                Ok(Err(err)) => {
                    tracing::error!("finalising the note of {task_id} failed: {err}");
                }
                Err(err) => tracing::error!("finalising the note of {task_id} panicked: {err}"),
            }
        }
        broker
            .store
            .commit(|tx| shepherd_core::herd::finalized(tx, &task_id));
        // Final words that arrived while the note was being finalised go in now.
        if !had_output {
            complete_output(&broker, &task_id).await;
        }
        broker
            .finalizing
            .lock()
            .expect("finalizing lock")
            .remove(&task_id);
    });
}

/// Puts a settled task's run output (final words, telemetry) into its already final note.
/// A note not final yet gets them from its finaliser instead.
pub(crate) async fn complete_output(broker: &Arc<Broker>, task_id: &TaskId) {
    let job = broker.store.read(|herd| {
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
    broker: &Arc<Broker>,
    task_id: &TaskId,
    metadata: Metadata,
) -> BrokerResult<()> {
    let deadline = tokio::time::Instant::now() + crate::fieldnotes::FIELDNOTES_DEADLINE;
    let mut generation = broker.store.generation.subscribe();
    loop {
        generation.borrow_and_update();
        let job = broker.store.read(|herd| {
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
            .map_err(|err| BrokerError::new(ErrorCode::Internal, err.to_string()))?;
        }
        tokio::select! {
            changed = generation.changed() => if changed.is_err() { return Err(crate::fieldnotes::stopped()) },
            () = tokio::time::sleep_until(deadline) => {
                return Err(BrokerError::new(
                    ErrorCode::FieldnotesTimeout,
                    format!("the note of {task_id} was not final within {} s", crate::fieldnotes::FIELDNOTES_DEADLINE.as_secs()),
                ));
            }
        }
    }
}

/// Records a branch in the session of the note at `note` (an absolute path): `shepherd.md`
/// lists it in its Branches section beside that note. A failure is logged, not returned: the
/// branch and its work are in git whatever the index says.
pub(crate) async fn record_branch(
    broker: &Arc<Broker>,
    note: &std::path::Path,
    branch: &str,
    state: shepherd_core::land::BranchState,
    commit: Option<String>,
    why: Option<String>,
) {
    // The store names a session by its directory's name (`NNNN-slug`).
    let (Some(dir), Some(file)) = (
        note.parent().and_then(std::path::Path::file_name),
        note.file_name(),
    ) else {
        return;
    };
    let record = shepherd_core::fieldnotes::BranchRecord {
        branch: branch.to_owned(),
        note: Some(file.to_string_lossy().into_owned()),
        state,
        commit,
        why,
    };
    let directory = dir.to_string_lossy().into_owned();
    let fieldnotes = broker.fieldnotes();
    let recorded =
        tokio::task::spawn_blocking(move || fieldnotes.set_branch(&directory, record)).await;
    match recorded {
        Ok(Ok(())) => {}
        Ok(Err(err)) => tracing::warn!("recording branch {branch} in its session: {err}"),
        Err(err) => tracing::warn!("recording branch {branch} in its session: {err}"),
    }
}
