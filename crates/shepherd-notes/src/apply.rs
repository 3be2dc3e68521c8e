//! Note operations, applied in batches: one lock, one fresh read, one commit.
//!
//! [`Store::apply`] takes the session lock once (or, when the session is busy, queues its
//! operations for the holder; see `queue`). The holder sweeps away a dead writer's temp files,
//! re-reads `session.json`, removes the unlisted notes a writer killed mid-commit left (see
//! `orphans`), applies its own and every queued operation in order to the record
//! (a refused operation is reported in its slot and changes nothing), then renders each touched
//! note, `session.json` and `shepherd.md`, and commits them together: staged, synced at once,
//! renamed (notes first, so the record never lists a note that is not there; `shepherd.md`
//! last, as it is derived). The directory is synced before any waiter is answered, or, with no
//! one waiting, after the lock is released so the next writer can start while the disk
//! finishes; either way no caller hears of success before its commit is durable. The broker
//! funnels many delegations' operations through one call; the one-op wrappers in `ops` serve
//! everyone else. Writing the files is `commit`'s.

use std::collections::HashSet;
use std::path::Path;
use std::time::Instant;

use indexmap::IndexMap;
use jiff::Timestamp;
use shepherd_core::fieldnotes::metadata::{TargetKind, check_related_target};
use shepherd_core::fieldnotes::{NoteStatus, OpError, RelatedLink, SessionMetadata};
use shepherd_core::time::iso;

use crate::atomic;
use crate::lock::{self, Scope};
use crate::ops::{AGENT_ID_KEY, Applied, NoteOp, NoteOpOutcome, TASK_ID_KEY};
use crate::orphans;
use crate::queue::{Outcomes, Queue, RESPONSES_KEY, Request};
use crate::wait::Waiter;
use crate::{CommitStage, IndexWrite, SessionKey, SessionRef, Store, StoreError};

/// What a batch does to one note file.
#[derive(Debug, Default)]
pub(crate) struct NoteChange {
    pub(crate) created: bool,
    pub(crate) section_output: Option<Option<String>>,
    /// The note was deleted: its file goes once the record is committed.
    pub(crate) deleted: bool,
}

/// What one combined commit has applied so far.
#[derive(Debug, Default)]
struct Combined {
    changes: IndexMap<String, NoteChange>,
    notes_changed: bool,
    explicit_status: Option<NoteStatus>,
    anything_applied: bool,
    /// An operation made a note final, deleted one or set the session's status: the index
    /// must be written with this commit.
    index_now: bool,
}

/// What [`Store::combine`] did.
struct Committed {
    /// The answer to the holder's own request.
    own: Option<Outcomes>,
    /// Whether the directory was synced already.
    synced: bool,
    /// The record as committed.
    metadata: SessionMetadata,
    /// Whether `shepherd.md` was left behind the record.
    index_deferred: bool,
}

impl Store {
    /// Applies `ops` to `session` in order, in one commit (shared with any other writers'
    /// operations that queued up meanwhile; see `queue`). Fails as a whole only when the
    /// session cannot be read or written; a refused operation is reported in its own slot.
    pub fn apply(
        &self,
        session: &SessionRef,
        ops: Vec<NoteOp>,
        now: Timestamp,
    ) -> Result<Applied, StoreError> {
        self.apply_as(session, ops, now, IndexWrite::Now)
    }

    /// Like [`Store::apply`], but a commit that makes no note final and deletes none leaves
    /// `shepherd.md` as it was; [`Applied::index_deferred`] then says the caller owes the
    /// session a [`Store::refresh_index`] (see [`IndexWrite`]).
    pub fn apply_deferring_index(
        &self,
        session: &SessionRef,
        ops: Vec<NoteOp>,
        now: Timestamp,
    ) -> Result<Applied, StoreError> {
        self.apply_as(session, ops, now, IndexWrite::MayDefer)
    }

    /// Writes `shepherd.md` (and the shepherd's note when it needs writing) from the record, if
    /// it differs from what is there: catches up an index a commit put off.
    pub fn refresh_index(&self, session: &SessionRef, now: Timestamp) -> Result<(), StoreError> {
        self.apply_as(session, Vec::new(), now, IndexWrite::Refresh)
            .map(|_| ())
    }

    fn apply_as(
        &self,
        session: &SessionRef,
        ops: Vec<NoteOp>,
        now: Timestamp,
        index: IndexWrite,
    ) -> Result<Applied, StoreError> {
        let dir = self.checked_session_dir(session)?;
        let request = Request {
            now: iso(now),
            ops,
            index,
        };
        let lock_file = match lock::try_lock_file(lock::open(&dir, Scope::Session)?)? {
            Ok(ours) => {
                let deadline = Instant::now() + self.options.lock_timeout;
                let lock = lock::complete(&dir, Scope::Session, ours, deadline)?;
                let committed = self.combine(session, &dir, Some(request))?;
                drop(lock);
                if !committed.synced {
                    atomic::sync_dir(&dir)?;
                }
                return Ok(Applied {
                    outcomes: committed.own.expect("own operations are answered"),
                    session: Some(Box::new(committed.metadata)),
                    index_deferred: committed.index_deferred,
                });
            }
            Err(busy) => busy,
        };
        let queue = Queue::new(&dir);
        let id = queue.enqueue(&request)?;
        self.hook(CommitStage::Queued(&dir));
        match self.wait_for_answer(session, &dir, &queue, &id, lock_file) {
            // The holder that answered synced the directory before answering.
            Ok(outcomes) => Ok(Applied {
                outcomes,
                session: None,
                index_deferred: false,
            }),
            Err(err) => {
                if !matches!(err, StoreError::LockTimeout { .. }) {
                    queue.forget(&id)?;
                }
                Err(err)
            }
        }
    }

    /// Waits until our request is answered, or the lock is free and we answer it (and
    /// everyone else's) ourselves. At the deadline the request is withdrawn; if a holder has
    /// already claimed it, we wait one more deadline for that holder rather than guess.
    fn wait_for_answer(
        &self,
        session: &SessionRef,
        dir: &Path,
        queue: &Queue,
        id: &str,
        lock_file: fs_err::File,
    ) -> Result<Outcomes, StoreError> {
        let lock_path = Scope::Session.flock_path(dir);
        let mut waiter = Waiter::new(&lock_path, lock_file, &queue.answers_dir());
        let mut deadline = Instant::now() + self.options.lock_timeout;
        let mut extended = false;
        loop {
            if let Some(outcomes) = queue.take_response(id)? {
                return Ok(outcomes);
            }
            if let Some(ours) = waiter.try_lock()? {
                if let Some(outcomes) = queue.take_response(id)? {
                    return Ok(outcomes);
                }
                let lock = lock::complete(dir, Scope::Session, ours, deadline)?;
                self.combine(session, dir, None)?;
                drop(lock);
                return queue.take_response(id)?.ok_or_else(|| {
                    std::io::Error::other(format!(
                        "the queued request `{id}` in `{}` was lost",
                        dir.display()
                    ))
                    .into()
                });
            }
            if !waiter.wait(deadline)? {
                if extended || queue.withdraw(id)? {
                    return Err(StoreError::LockTimeout {
                        path: lock_path,
                        waited: self.options.lock_timeout,
                    });
                }
                extended = true;
                deadline = Instant::now() + self.options.lock_timeout;
            }
        }
    }

    /// With the session lock held: repairs the queue, applies `own` and every queued request
    /// on a fresh read, commits once, and answers the queued requests.
    fn combine(
        &self,
        session: &SessionRef,
        dir: &Path,
        own: Option<Request>,
    ) -> Result<Committed, StoreError> {
        let index = own
            .as_ref()
            .map_or(IndexWrite::Now, |request| request.index);
        self.hook(CommitStage::SessionLocked(dir));
        let mut existing = atomic::sweep(dir)?;
        let mut metadata = self.load(session)?;
        orphans::remove_unlisted_reservations(dir, &metadata, &mut existing)?;
        let queue = Queue::new(dir);
        let recovered = queue.recover(metadata.extra.get(RESPONSES_KEY))?;
        let claimed = queue.claim()?;
        let mut batch = Combined::default();
        let mut index_deferred = false;
        let mut own =
            own.map(|request| self.apply_request(&mut metadata, &mut batch, &existing, request));
        let mut answers = IndexMap::new();
        for (id, request) in claimed {
            let outcomes = self.apply_request(&mut metadata, &mut batch, &existing, request);
            answers.insert(id, outcomes);
        }
        metadata.rederive_paths(&self.root_text);
        for outcomes in own.iter_mut().chain(answers.values_mut()) {
            refresh_records(outcomes, &metadata);
        }
        if batch.anything_applied {
            let now = metadata.updated_at.clone();
            crate::shepherds_note::adopt(&mut metadata, &now);
            metadata.rederive_paths(&self.root_text);
            if batch.notes_changed {
                metadata.summarise_status();
            }
            if let Some(status) = batch.explicit_status {
                metadata.set_status(status)?;
            }
            if answers.is_empty() {
                metadata.extra.shift_remove(RESPONSES_KEY);
            } else {
                let value = serde_json::to_value(&answers).expect("outcomes serialise");
                metadata.extra.insert(RESPONSES_KEY.to_owned(), value);
            }
            // Other writers' operations get the index with them: they owe no refresh.
            index_deferred =
                index == IndexWrite::MayDefer && !batch.index_now && answers.is_empty();
            self.commit(dir, &metadata, &batch.changes, !index_deferred)?;
            self.hook(CommitStage::Committed(dir));
        } else if index == IndexWrite::Refresh {
            self.commit_index(dir, &metadata)?;
        }
        if answers.is_empty() && recovered.is_empty() {
            return Ok(Committed {
                own,
                synced: false,
                metadata,
                index_deferred,
            });
        }
        // Answers promise durability: make the renames durable before anyone hears of them.
        atomic::sync_dir(dir)?;
        let recovered = recovered.iter().map(|(id, outcomes)| (id, outcomes));
        for (id, outcomes) in recovered.chain(&answers) {
            if let Err(err) = queue.respond(id, outcomes) {
                // The answer is also in session.json; the next holder delivers it.
                tracing::warn!(%err, "could not leave a queued request's answer");
            }
        }
        Ok(Committed {
            own,
            synced: true,
            metadata,
            index_deferred,
        })
    }

    fn apply_request(
        &self,
        metadata: &mut SessionMetadata,
        batch: &mut Combined,
        existing: &HashSet<String>,
        request: Request,
    ) -> Outcomes {
        let mut outcomes = Vec::with_capacity(request.ops.len());
        // A refused `Continue` and how many operations after it it still refuses (`None`: all).
        let mut refused: Option<(OpError, Option<usize>)> = None;
        for op in request.ops {
            if let Some((err, reach)) = &mut refused {
                match reach {
                    Some(0) => refused = None,
                    Some(left) => {
                        *left -= 1;
                        outcomes.push(Err(err.clone()));
                        continue;
                    }
                    None => {
                        outcomes.push(Err(err.clone()));
                        continue;
                    }
                }
            }
            let guards = match &op {
                NoteOp::Continue { guards, .. } => Some(*guards),
                _ => None,
            };
            let makes_final = matches!(
                op,
                NoteOp::Finalize { .. }
                    | NoteOp::Release { .. }
                    | NoteOp::UpdateFinalOutput { .. }
                    | NoteOp::Delete { .. }
                    | NoteOp::SetStatus(_)
            );
            let outcome = self.apply_one(metadata, &mut batch.changes, existing, op, &request.now);
            match &outcome {
                Ok(NoteOpOutcome::StatusSet(status)) => batch.explicit_status = Some(*status),
                Ok(NoteOpOutcome::Note(_)) => batch.notes_changed = true,
                // A writer that continues the wrong session applies nothing after that.
                Err(err) if guards.is_some() => refused = Some((err.clone(), guards.flatten())),
                _ => {}
            }
            if matches!(outcome, Ok(ref o) if !matches!(o, NoteOpOutcome::Unchanged(_))) {
                batch.anything_applied = true;
                batch.index_now |= makes_final;
                if request.now > metadata.updated_at {
                    metadata.updated_at.clone_from(&request.now);
                }
            }
            outcomes.push(outcome);
        }
        outcomes
    }

    fn apply_one(
        &self,
        metadata: &mut SessionMetadata,
        changes: &mut IndexMap<String, NoteChange>,
        existing: &HashSet<String>,
        op: NoteOp,
        now: &str,
    ) -> Result<NoteOpOutcome, OpError> {
        let note = |metadata: &SessionMetadata, file: &str| {
            let record = metadata
                .artifact(file)
                .expect("the op just touched it")
                .clone();
            NoteOpOutcome::Note(Box::new(record))
        };
        match op {
            NoteOp::Reserve(planned) => {
                let taken = |name: &str| existing.contains(name);
                let file = metadata.reserve(planned, &taken, now)?.file_name.clone();
                changes.entry(file.clone()).or_default().created = true;
                Ok(note(metadata, &file))
            }
            NoteOp::Start {
                note: file,
                metadata: extra,
                task,
            } => {
                metadata.start(&file, extra, now)?;
                if let Some(task) = task {
                    metadata.record_task(&file, task)?;
                }
                changes.entry(file.clone()).or_default();
                Ok(note(metadata, &file))
            }
            NoteOp::Update {
                note: file,
                metadata: extra,
            } => {
                metadata.update(&file, extra)?;
                changes.entry(file.clone()).or_default();
                Ok(note(metadata, &file))
            }
            NoteOp::Finalize { note: file, result } => {
                let status = result.status;
                if !metadata.finalize(&file, status, result.error, result.metadata, now)? {
                    // Final already with this result (its finaliser is repeating itself):
                    // answered as done, and nothing is written.
                    let record = metadata.artifact(&file).expect("finalize found it");
                    return Ok(NoteOpOutcome::Unchanged(Box::new(record.clone())));
                }
                changes.entry(file.clone()).or_default().section_output = Some(result.output);
                Ok(note(metadata, &file))
            }
            NoteOp::UpdateFinalOutput {
                note: file,
                output,
                metadata: extra,
            } => {
                metadata.update_final_output(&file, extra)?;
                changes.entry(file.clone()).or_default().section_output = Some(output);
                Ok(note(metadata, &file))
            }
            NoteOp::Delete { note: file } => {
                // Deleting again still counts as a change, so a file a crash left behind
                // (after the record said deleted) is removed now.
                metadata.delete(&file, now)?;
                changes.entry(file.clone()).or_default().deleted = true;
                Ok(note(metadata, &file))
            }
            NoteOp::Feedback {
                note: file,
                from,
                text,
            } => {
                metadata.add_feedback(&file, &from, &text, now)?;
                Ok(note(metadata, &file))
            }
            NoteOp::Link { target, title } => {
                let target = self.related_target(&target)?;
                metadata.link(&target, title.clone())?;
                Ok(NoteOpOutcome::Linked(RelatedLink { target, title }))
            }
            NoteOp::SetStatus(status) => {
                metadata.set_status(status)?;
                Ok(NoteOpOutcome::StatusSet(status))
            }
            NoteOp::SetBranch(record) => {
                shepherd_core::fieldnotes::branches::upsert(&mut metadata.branches, record);
                Ok(NoteOpOutcome::BranchSet)
            }
            NoteOp::Continue {
                key, session_file, ..
            } => {
                if !key.matches(metadata) {
                    return Err(OpError::OtherSession {
                        expected: match key {
                            SessionKey::Parent(identity) => {
                                format!("the session of parent {identity:?}")
                            }
                            SessionKey::Name(name) => format!("the session named {name:?}"),
                        },
                    });
                }
                metadata.resume(session_file.as_deref());
                Ok(NoteOpOutcome::Continued {
                    session_name: metadata.session_name.clone(),
                })
            }
            NoteOp::ReserveOnce { planned, task_id } => {
                if let Some(record) = note_of_task(metadata, &task_id, &planned.metadata) {
                    return Ok(NoteOpOutcome::Unchanged(Box::new(record.clone())));
                }
                let mut planned = planned;
                planned
                    .metadata
                    .insert(TASK_ID_KEY.to_owned(), serde_json::Value::from(task_id));
                self.apply_one(metadata, changes, existing, NoteOp::Reserve(planned), now)
            }
            NoteOp::StartOnce {
                note: file,
                task_id,
                metadata: mut extra,
                task,
            } => {
                if let Some(record) = note_of_task(metadata, &task_id, &extra) {
                    return Ok(NoteOpOutcome::Unchanged(Box::new(record.clone())));
                }
                extra.insert(TASK_ID_KEY.to_owned(), serde_json::Value::from(task_id));
                let op = NoteOp::Start {
                    note: file,
                    metadata: extra,
                    task,
                };
                self.apply_one(metadata, changes, existing, op, now)
            }
            NoteOp::Release {
                note: file,
                group,
                result,
            } => {
                let record = metadata
                    .artifact(&file)
                    .ok_or_else(|| OpError::UnknownNote { note: file.clone() })?;
                if let Some(group) = group
                    && record.group.as_deref() != Some(group.as_str())
                {
                    return Err(OpError::NotInGroup {
                        note: file.clone(),
                        group,
                    });
                }
                if record.status != NoteStatus::Pending {
                    return Ok(NoteOpOutcome::Unchanged(Box::new(record.clone())));
                }
                metadata.finalize(&file, result.status, result.error, result.metadata, now)?;
                changes.entry(file.clone()).or_default().section_output = Some(result.output);
                Ok(note(metadata, &file))
            }
        }
    }

    /// Turns a link target as given into the stored form: a URL as it is, or a path inside the
    /// project (which must exist) relative to the project root.
    fn related_target(&self, target: &str) -> Result<String, OpError> {
        if check_related_target(target) == Ok(TargetKind::Url) {
            return Ok(target.to_owned());
        }
        let refuse = |reason: &str| OpError::InvalidLink {
            target: target.to_owned(),
            reason: reason.to_owned(),
        };
        let path = self.root.join(target);
        let resolved = fs_err::canonicalize(&path).map_err(|_| {
            refuse("it is neither a URL (scheme://…) nor an existing path in the project")
        })?;
        let relative = self
            .relative(&resolved)
            .filter(|relative| !relative.is_empty())
            .ok_or_else(|| refuse(&format!("it lies outside the project `{}`", self.root_text)))?;
        check_related_target(&relative)?;
        Ok(relative)
    }
}

/// The note of `metadata` that belongs to task `task_id`, if any.
/// The note of the session that task `task_id` has already, by the same sheep when `wanted`
/// names one (`agentId`): a task that fell back to another sheep gets a note of its own.
fn note_of_task<'m>(
    metadata: &'m SessionMetadata,
    task_id: &str,
    wanted: &shepherd_core::fieldnotes::Metadata,
) -> Option<&'m shepherd_core::fieldnotes::ArtifactRecord> {
    let text = |m: &'m shepherd_core::fieldnotes::Metadata, key: &str| {
        m.get(key).and_then(serde_json::Value::as_str)
    };
    let agent = wanted.get(AGENT_ID_KEY).and_then(serde_json::Value::as_str);
    metadata.artifacts.iter().find(|a| {
        text(&a.metadata, TASK_ID_KEY) == Some(task_id)
            && agent.is_none_or(|agent| text(&a.metadata, AGENT_ID_KEY) == Some(agent))
    })
}

/// Replaces each note record in `outcomes` with the record as committed.
fn refresh_records(outcomes: &mut Outcomes, metadata: &SessionMetadata) {
    for outcome in outcomes {
        if let Ok(NoteOpOutcome::Note(record)) = outcome
            && let Some(current) = metadata.artifact(&record.file_name)
        {
            current.clone_into(&mut **record);
        }
    }
}
