//! Group commit across processes: writers that find a session busy leave their request in the
//! session's `.queue/` and wait; whoever holds the lock next applies every queued request in
//! its own commit and leaves each waiter its answer.
//!
//! A durable commit costs at least one journal flush, and one session's commits are
//! serialised by its lock, so without this one session could take only as many notes per
//! second as the disk can flush (on a busy virtual disk, barely more than the original's
//! 88/s), and under sixteen writers each would wait for fifteen flushes. With it, a commit
//! carries everything that queued up while the previous one was flushing.
//!
//! Files in `.queue/`, named by a request id `<nanos>-<pid>-<n>` (so they sort by arrival):
//!
//! - `<id>.part` → `<id>.req`: a waiter writes its request, then renames it into place.
//! - `<id>.claimed`: a lock holder claimed the request (renamed it) and is applying it.
//! - `answers/<id>.res`: the answer, written by the lock holder after its commit (in its own
//!   directory, so waiters watching for answers are not woken by every request and claim).
//!
//! Crash safety rests on one rule: the answers of a commit are also written into that commit's
//! `session.json` (`queueResponses`), so "applied" and "committed" are the same atomic rename.
//! The next lock holder first repairs what a dead holder left: a claimed request whose answer
//! is in `session.json` gets its `.res` file; one whose answer is not was never committed and
//! is queued again. Requests of processes that no longer exist are dropped, not applied. A
//! waiter whose deadline passes withdraws its request; if a holder already claimed it, the
//! waiter waits one more deadline for the answer rather than guess. Queue files are small and
//! are not synced: a machine crash kills the waiters too, and their requests die with them.
//!
//! The repair runs while waiters keep taking their answers, so what it sees must not depend on
//! when they do. A waiter removes its claim before its answer, and no answer appears while the
//! lock is held; so the repair lists the answers first and the requests second, and a claim it
//! then finds without an answer has none. (Listed the other way round, a waiter taking its
//! answer between the two listings leaves a claim seen without its answer, and a request already
//! answered looks lost: it would be answered twice, or queued again from a claim that is no
//! longer there, failing the holder's own call.) A claim that is gone by the time it would be
//! queued again was taken or given up by its writer, and stays gone.

use std::collections::{BTreeSet, HashMap};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::StoreError;
use crate::ops::{NoteOp, NoteOpOutcome};
use shepherd_core::fieldnotes::OpError;

/// The queue directory inside a session directory.
pub(crate) const QUEUE_DIR: &str = ".queue";
/// The answers directory inside the queue directory.
const ANSWERS_DIR: &str = "answers";
/// The `session.json` key holding the answers of the last combined commit.
pub(crate) const RESPONSES_KEY: &str = "queueResponses";

/// `(id, extension)` of queue and answer files, sorted by id.
type Listing = BTreeSet<(String, String)>;

/// One writer's operations, as queued.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Request {
    /// The writer's clock for these operations (ISO 8601).
    pub(crate) now: String,
    /// The operations, in order.
    pub(crate) ops: Vec<NoteOp>,
    /// When the commit writes `shepherd.md`. A queued request is always `now`: only the writer
    /// committing its own operations may put the index off.
    #[serde(default, skip)]
    pub(crate) index: crate::IndexWrite,
}

/// The answer to one request: one result per operation.
pub(crate) type Outcomes = Vec<Result<NoteOpOutcome, OpError>>;

/// The queue of one session.
#[derive(Debug)]
pub(crate) struct Queue {
    dir: PathBuf,
}

impl Queue {
    pub(crate) fn new(session_dir: &Path) -> Self {
        Self {
            dir: session_dir.join(QUEUE_DIR),
        }
    }

    /// The directory answers are renamed into (what a waiter watches).
    pub(crate) fn answers_dir(&self) -> PathBuf {
        self.dir.join(ANSWERS_DIR)
    }

    fn path(&self, id: &str, extension: &str) -> PathBuf {
        let file = format!("{id}.{extension}");
        match extension {
            "res" | "respart" => self.answers_dir().join(file),
            _ => self.dir.join(file),
        }
    }

    /// Queues `request` and returns its id.
    pub(crate) fn enqueue(&self, request: &Request) -> Result<String, StoreError> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        fs_err::create_dir_all(self.answers_dir())?;
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos();
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let id = format!("{nanos:020}-{}-{n}", std::process::id());
        let part = self.path(&id, "part");
        fs_err::write(
            &part,
            serde_json::to_vec(request).expect("requests serialise"),
        )?;
        fs_err::rename(&part, self.path(&id, "req"))?;
        Ok(id)
    }

    /// The answer to request `id`, if it is there; consumes it.
    pub(crate) fn take_response(&self, id: &str) -> Result<Option<Outcomes>, StoreError> {
        let path = self.path(id, "res");
        let bytes = match fs_err::read(&path) {
            Ok(bytes) => bytes,
            Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(err) => return Err(err.into()),
        };
        // `.claimed` goes first: a holder repairing the queue meanwhile must never see a claim
        // without its answer (it would queue the request again), while an answer without a
        // claim is merely removed.
        remove_if_present(&self.path(id, "claimed"))?;
        remove_if_present(&path)?;
        let outcomes = serde_json::from_slice(&bytes).map_err(|err| {
            io::Error::other(format!("unreadable answer `{}`: {err}", path.display()))
        })?;
        Ok(Some(outcomes))
    }

    /// Withdraws request `id` if no lock holder has claimed it yet.
    pub(crate) fn withdraw(&self, id: &str) -> Result<bool, StoreError> {
        remove_if_present(&self.path(id, "req"))
    }

    /// Forgets request `id` in any state (after its writer gave up on an error).
    pub(crate) fn forget(&self, id: &str) -> Result<(), StoreError> {
        for extension in ["req", "claimed", "res"] {
            remove_if_present(&self.path(id, extension))?;
        }
        Ok(())
    }

    /// Repairs what a dead lock holder or waiter left. `committed` is the `queueResponses`
    /// value of the current `session.json`. Call with the session lock held.
    /// Returns the answers that a dead holder committed but never delivered; the caller
    /// delivers them (after syncing the directory).
    pub(crate) fn recover(
        &self,
        committed: Option<&Value>,
    ) -> Result<Vec<(String, Outcomes)>, StoreError> {
        self.recover_between(committed, || {})
    }

    /// [`Queue::recover`], running `between` after the answers are listed and before the
    /// requests are: the moment at which a waiter taking its answer must not make its request
    /// look unanswered (tests put a waiter there).
    fn recover_between(
        &self,
        committed: Option<&Value>,
        between: impl FnOnce(),
    ) -> Result<Vec<(String, Outcomes)>, StoreError> {
        let committed: HashMap<String, Outcomes> = committed
            .and_then(|value| serde_json::from_value(value.clone()).ok())
            .unwrap_or_default();
        let mut listing = Listing::new();
        // Answers first: see the module documentation.
        list_into(&self.answers_dir(), &mut listing)?;
        between();
        list_into(&self.dir, &mut listing)?;
        self.repair(&listing, &committed)
    }

    /// Repairs the queue as `listing` shows it (see [`Queue::recover`]).
    fn repair(
        &self,
        listing: &Listing,
        committed: &HashMap<String, Outcomes>,
    ) -> Result<Vec<(String, Outcomes)>, StoreError> {
        let listed =
            |id: &str, extension: &str| listing.contains(&(id.to_owned(), extension.to_owned()));
        let mut undelivered = Vec::new();
        for (id, extension) in listing {
            let owner_alive = owner_is_alive(id);
            match extension.as_str() {
                "claimed" if !owner_alive => self.forget(id)?,
                "claimed" if listed(id, "res") => {}
                "claimed" => match committed.get(id) {
                    Some(outcomes) => undelivered.push((id.clone(), outcomes.clone())),
                    None => self.requeue(id)?,
                },
                "res" if !listed(id, "claimed") => {
                    remove_if_present(&self.path(id, "res"))?;
                }
                "respart" => {
                    remove_if_present(&self.path(id, "respart"))?;
                }
                "part" if !owner_alive => {
                    remove_if_present(&self.path(id, "part"))?;
                }
                _ => {}
            }
        }
        Ok(undelivered)
    }

    /// Queues claimed request `id` again, unless its claim is gone: only its writer removes
    /// it (having taken its answer, or given up), and then it must not be applied.
    fn requeue(&self, id: &str) -> Result<(), StoreError> {
        match fs_err::rename(self.path(id, "claimed"), self.path(id, "req")) {
            Ok(()) => Ok(()),
            Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(err) => Err(err.into()),
        }
    }

    /// Claims every queued request of a live writer, oldest first. Call with the lock held.
    pub(crate) fn claim(&self) -> Result<Vec<(String, Request)>, StoreError> {
        let mut claimed = Vec::new();
        let mut listing = Listing::new();
        list_into(&self.dir, &mut listing)?;
        for (id, extension) in listing {
            if extension != "req" {
                continue;
            }
            let path = self.path(&id, "req");
            if !owner_is_alive(&id) {
                remove_if_present(&path)?;
                continue;
            }
            let request = match fs_err::read(&path) {
                Ok(bytes) => serde_json::from_slice::<Request>(&bytes).ok(),
                // Withdrawn by its writer a moment ago.
                Err(err) if err.kind() == io::ErrorKind::NotFound => continue,
                Err(err) => return Err(err.into()),
            };
            let Some(request) = request else {
                tracing::warn!(path = %path.display(), "dropping an unreadable queued request");
                remove_if_present(&path)?;
                continue;
            };
            match fs_err::rename(&path, self.path(&id, "claimed")) {
                Ok(()) => claimed.push((id, request)),
                Err(err) if err.kind() == io::ErrorKind::NotFound => {}
                Err(err) => return Err(err.into()),
            }
        }
        Ok(claimed)
    }

    /// Leaves the answer to request `id`. Call with the lock held, after the commit.
    pub(crate) fn respond(&self, id: &str, outcomes: &Outcomes) -> Result<(), StoreError> {
        let part = self.path(id, "respart");
        fs_err::write(
            &part,
            serde_json::to_vec(outcomes).expect("outcomes serialise"),
        )?;
        fs_err::rename(&part, self.path(id, "res"))?;
        Ok(())
    }
}

/// Adds `(id, extension)` of every file in `dir` (the queue or its answers) to `listing`.
fn list_into(dir: &Path, listing: &mut Listing) -> Result<(), StoreError> {
    let entries = match fs_err::read_dir(dir) {
        Ok(entries) => entries,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(err) => return Err(err.into()),
    };
    for entry in entries {
        let name = entry?.file_name();
        let Some((id, extension)) = name.to_str().and_then(|n| n.split_once('.')) else {
            continue;
        };
        listing.insert((id.to_owned(), extension.to_owned()));
    }
    Ok(())
}

/// Whether the process that wrote request `id` still exists.
fn owner_is_alive(id: &str) -> bool {
    let pid = id
        .split('-')
        .nth(1)
        .and_then(|pid| pid.parse::<i32>().ok())
        .and_then(rustix::process::Pid::from_raw);
    match pid {
        Some(pid) => !matches!(
            rustix::process::test_kill_process(pid),
            Err(rustix::io::Errno::SRCH)
        ),
        None => false,
    }
}

fn remove_if_present(path: &Path) -> Result<bool, StoreError> {
    match fs_err::remove_file(path) {
        Ok(()) => Ok(true),
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(err) => Err(err.into()),
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use shepherd_core::fieldnotes::NoteStatus;

    use super::*;

    fn answer() -> Outcomes {
        vec![Ok(NoteOpOutcome::StatusSet(NoteStatus::Completed))]
    }

    /// A request of this (live) process, claimed by a holder: `(queue, id)`.
    fn claimed(dir: &Path) -> (Queue, String) {
        let queue = Queue::new(dir);
        let request = Request {
            index: crate::IndexWrite::Now,
            now: "2025-08-14T09:00:00Z".to_owned(),
            ops: vec![NoteOp::SetStatus(NoteStatus::Completed)],
        };
        let id = queue.enqueue(&request).unwrap();
        let claimed = queue.claim().unwrap();
        assert_eq!(claimed.len(), 1);
        (queue, id)
    }

    fn files(queue: &Queue) -> Listing {
        let mut listing = Listing::new();
        list_into(&queue.dir, &mut listing).unwrap();
        list_into(&queue.answers_dir(), &mut listing).unwrap();
        listing
    }

    #[test]
    fn a_waiter_taking_its_answer_during_the_repair_is_not_queued_again() {
        // Whether or not `session.json` still holds the answer (it does until the next
        // combined commit), a request whose waiter took its answer is done with: it is neither
        // queued again nor answered a second time.
        for in_record in [false, true] {
            let temp = tempfile::tempdir().unwrap();
            let (queue, id) = claimed(temp.path());
            queue.respond(&id, &answer()).unwrap();
            let committed = serde_json::json!({ id.clone(): answer() });
            let committed = in_record.then_some(&committed);
            let taken = Cell::new(None);
            let undelivered = queue
                .recover_between(committed, || taken.set(queue.take_response(&id).unwrap()))
                .unwrap();
            assert_eq!(taken.take(), Some(answer()), "the waiter got its answer");
            assert!(undelivered.is_empty(), "answered twice: {undelivered:?}");
            assert!(
                queue.claim().unwrap().is_empty(),
                "an answered request was queued again"
            );
            assert!(files(&queue).is_empty(), "{:?}", files(&queue));
        }
    }

    #[test]
    fn a_claim_its_writer_gave_up_after_the_listing_stays_gone() {
        let temp = tempfile::tempdir().unwrap();
        let (queue, id) = claimed(temp.path());
        let listing = files(&queue);
        queue.forget(&id).unwrap();
        let undelivered = queue.repair(&listing, &HashMap::new()).unwrap();
        assert!(undelivered.is_empty());
        assert!(files(&queue).is_empty(), "{:?}", files(&queue));
    }

    #[test]
    fn claims_without_an_answer_are_answered_from_the_record_or_queued_again() {
        let temp = tempfile::tempdir().unwrap();
        let (queue, committed_id) = claimed(temp.path());
        let (_, lost_id) = claimed(temp.path());
        let (_, answered_id) = claimed(temp.path());
        queue.respond(&answered_id, &answer()).unwrap();
        let committed = serde_json::json!({ committed_id.clone(): answer() });
        let undelivered = queue.recover(Some(&committed)).unwrap();
        assert_eq!(undelivered, [(committed_id, answer())]);
        let again: Vec<String> = queue
            .claim()
            .unwrap()
            .into_iter()
            .map(|(id, _)| id)
            .collect();
        assert_eq!(again, [lost_id]);
        assert_eq!(queue.take_response(&answered_id).unwrap(), Some(answer()));
    }
}
