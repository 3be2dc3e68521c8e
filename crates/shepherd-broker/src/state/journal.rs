//! The broker's journal: every accepted change is on disk before anyone hears of it.
//!
//! Events are appended as JSON lines (`{"pos", "event"}`) by one writer thread that takes every
//! batch waiting in its queue, writes them together and syncs once (group commit), so many
//! clients committing at once share one fsync. Callers wait on [`Journal::durable`] for their
//! position (with a deadline) before acknowledging.
//!
//! On start the herd is rebuilt from the last snapshot and the journals after it, and then
//! compacted: the current snapshot and journal become the previous generation
//! (`*.prev.*`) and a fresh snapshot with an empty journal replaces them. Keeping one previous
//! generation is what makes a damaged snapshot survivable: it is set aside (renamed
//! `*.corrupt-<ms>`) and the herd is rebuilt from the previous snapshot and both journals, with
//! a message saying so. Replay skips events at or below the snapshot's position, so reading
//! both journals is always safe, whichever step of a compaction a crash interrupted. A torn
//! last line (a crash mid-write, never acknowledged) is cut off; an unreadable line with
//! readable lines after it means the journal is damaged, and the broker refuses to start
//! rather than silently dropping what follows: the journal is kept as it is.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use shepherd_core::herd::{Event, Herd};
use tokio::sync::watch;

/// Longest a caller waits for its change to reach the disk before the request fails.
pub const DURABLE_DEADLINE: Duration = Duration::from_secs(30);

/// A journal failure.
#[derive(Debug, Clone, thiserror::Error)]
pub enum JournalError {
    /// Reading, writing or syncing failed.
    #[error("journal {path}: {message}")]
    Io {
        /// The file.
        path: String,
        /// What failed.
        message: String,
    },
    /// A line before the end of the journal cannot be read: replaying past it would lose what
    /// follows, so nothing is replayed and the file is kept as it is.
    #[error(
        "journal {path}: line {line} is unreadable ({reason}) and readable lines follow it; \
         the journal is kept as it is. Repair or move it aside to start this herd afresh."
    )]
    Corrupt {
        /// The file.
        path: String,
        /// The 1-based line number.
        line: usize,
        /// Why it does not parse.
        reason: String,
    },
    /// The writer stopped after a failure; nothing more can be made durable.
    #[error("the journal stopped accepting writes: {0}")]
    Stopped(String),
    /// The disk did not confirm a write within [`DURABLE_DEADLINE`].
    #[error("the journal did not reach the disk within {} s", DURABLE_DEADLINE.as_secs())]
    Stalled,
}

#[derive(Serialize)]
struct LineOut<'a> {
    pos: u64,
    event: &'a Event,
}

#[derive(Deserialize)]
struct LineIn {
    pos: u64,
    event: serde_json::Value,
}

#[derive(Serialize, Deserialize)]
struct Snapshot {
    version: u32,
    pos: u64,
    herd: Herd,
}

#[derive(Debug, Clone, Default)]
struct Durable {
    pos: u64,
    failed: Option<String>,
}

/// The files of one journal: the current and previous generation of snapshot and log.
#[derive(Debug, Clone)]
pub struct JournalFiles {
    /// The current journal.
    pub journal: PathBuf,
    /// The current snapshot.
    pub snapshot: PathBuf,
}

impl JournalFiles {
    fn prev(path: &Path) -> PathBuf {
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        let prev = match name.rsplit_once('.') {
            Some((stem, ext)) => format!("{stem}.prev.{ext}"),
            None => format!("{name}.prev"),
        };
        path.with_file_name(prev)
    }

    fn prev_journal(&self) -> PathBuf {
        Self::prev(&self.journal)
    }

    fn prev_snapshot(&self) -> PathBuf {
        Self::prev(&self.snapshot)
    }
}

/// Serialised events and the position of the last of them.
type Batch = (Vec<u8>, u64);

/// An open journal with its writer thread.
#[derive(Debug)]
pub struct Journal {
    path: PathBuf,
    next_pos: AtomicU64,
    jobs: Mutex<Option<mpsc::Sender<Batch>>>,
    durable: watch::Receiver<Durable>,
    writer: Mutex<Option<std::thread::JoinHandle<()>>>,
}

/// A replayed herd, and what had to be worked around to rebuild it.
#[derive(Debug)]
pub struct Replayed {
    /// The herd.
    pub herd: Herd,
    /// One line per problem the rebuild met (a damaged snapshot set aside, missing events).
    pub notes: Vec<String>,
}

impl Journal {
    /// Opens (or creates) the journal in `journal`/`snapshot`, replays it into a herd, compacts
    /// it, and starts the writer. A brand-new herd gets `namespace`.
    pub fn open(
        journal: &Path,
        snapshot: &Path,
        namespace: &str,
    ) -> Result<(Self, Replayed), JournalError> {
        let files = JournalFiles {
            journal: journal.to_path_buf(),
            snapshot: snapshot.to_path_buf(),
        };
        let mut notes = Vec::new();
        let base = load_base(&files, &mut notes)?;
        let (mut herd, base_pos) = base.map_or_else(
            || {
                (
                    Herd {
                        namespace: namespace.to_owned(),
                        ..Herd::default()
                    },
                    0,
                )
            },
            |s| (s.herd, s.pos),
        );
        let mut pos = base_pos;
        let mut first = None;
        for path in [files.prev_journal(), files.journal.clone()] {
            let applied = replay(&path, &mut herd, &mut pos)?;
            first = first.or(applied);
        }
        if let Some(first) = first
            && first > base_pos + 1
        {
            notes.push(format!(
                "events {} to {} were missing from the journal; what they changed is lost",
                base_pos + 1,
                first - 1
            ));
        }
        compact(&files, &herd, pos)?;
        let file = fs_err::OpenOptions::new()
            .create(true)
            .append(true)
            .open(journal)
            .map_err(|err| io_error(journal, &err.to_string()))?;
        shepherd_fs::sync_parent(journal);

        let (jobs_tx, jobs_rx) = mpsc::channel();
        let (durable_tx, durable_rx) = watch::channel(Durable { pos, failed: None });
        let writer_path = journal.to_path_buf();
        let writer = std::thread::Builder::new()
            .name("journal".into())
            .spawn(move || write_loop(file.into_parts().0, &writer_path, &jobs_rx, &durable_tx))
            .map_err(|err| io_error(journal, &format!("cannot start the writer: {err}")))?;
        Ok((
            Self {
                path: journal.to_path_buf(),
                next_pos: AtomicU64::new(pos),
                jobs: Mutex::new(Some(jobs_tx)),
                durable: durable_rx,
                writer: Mutex::new(Some(writer)),
            },
            Replayed { herd, notes },
        ))
    }

    /// The journal file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Queues `events` for writing and returns the position to wait for. Call it while holding
    /// the herd's lock, so journal order is apply order.
    pub fn append(&self, events: &[Event]) -> u64 {
        if events.is_empty() {
            return self.next_pos.load(Ordering::SeqCst);
        }
        let mut bytes = Vec::with_capacity(events.len() * 256);
        let mut pos = self.next_pos.load(Ordering::SeqCst);
        for event in events {
            pos += 1;
            serde_json::to_writer(&mut bytes, &LineOut { pos, event }).expect("events serialise");
            bytes.push(b'\n');
        }
        self.next_pos.store(pos, Ordering::SeqCst);
        if let Some(jobs) = self.jobs.lock().expect("journal lock").as_ref() {
            let _sent = jobs.send((bytes, pos));
        }
        pos
    }

    /// The position of the last queued event.
    pub fn position(&self) -> u64 {
        self.next_pos.load(Ordering::SeqCst)
    }

    /// Waits until everything up to `pos` is on disk, at most [`DURABLE_DEADLINE`].
    pub async fn durable(&self, pos: u64) -> Result<(), JournalError> {
        let mut rx = self.durable.clone();
        let waited = tokio::time::timeout(
            DURABLE_DEADLINE,
            rx.wait_for(|d| d.pos >= pos || d.failed.is_some()),
        )
        .await
        .map_err(|_| JournalError::Stalled)?;
        let state = waited.map_err(|_| JournalError::Stopped("the writer ended".into()))?;
        match &state.failed {
            Some(message) if state.pos < pos => Err(JournalError::Stopped(message.clone())),
            _ => Ok(()),
        }
    }

    /// Writes what is queued and stops the writer.
    pub fn close(&self) {
        drop(self.jobs.lock().expect("journal lock").take());
        if let Some(writer) = self.writer.lock().expect("journal lock").take() {
            let _joined = writer.join();
        }
    }
}

impl Drop for Journal {
    fn drop(&mut self) {
        self.close();
    }
}

fn write_loop(
    mut file: std::fs::File,
    path: &Path,
    jobs: &mpsc::Receiver<Batch>,
    durable: &watch::Sender<Durable>,
) {
    while let Ok(first) = jobs.recv() {
        let mut batch = vec![first];
        batch.extend(jobs.try_iter());
        let end = batch.last().map_or(0, |(_, pos)| *pos);
        let result = batch
            .iter()
            .try_for_each(|(bytes, _)| file.write_all(bytes))
            .and_then(|()| file.sync_data());
        match result {
            Ok(()) => durable.send_modify(|d| d.pos = d.pos.max(end)),
            Err(err) => {
                let message = format!("{}: {err}", path.display());
                tracing::error!("journal write failed: {message}");
                durable.send_modify(|d| d.failed = Some(message));
                return;
            }
        }
    }
}

/// The snapshot to replay on: the current one, or — when it is damaged — the previous one (the
/// damaged file is set aside and a note says so).
fn load_base(
    files: &JournalFiles,
    notes: &mut Vec<String>,
) -> Result<Option<Snapshot>, JournalError> {
    match read_snapshot(&files.snapshot) {
        Ok(Some(snapshot)) => return Ok(Some(snapshot)),
        // None yet (a new herd), or a compaction stopped after moving it to the previous
        // generation: the previous snapshot, if any, is then the base.
        Ok(None) => {}
        Err(reason) => {
            let aside = set_aside(&files.snapshot)?;
            let note = format!(
                "the herd's snapshot was damaged ({reason}); it was set aside as {} and the herd \
                 rebuilt from the previous snapshot and the journal",
                aside.display()
            );
            tracing::error!("{note}");
            notes.push(note);
        }
    }
    match read_snapshot(&files.prev_snapshot()) {
        Ok(snapshot) => Ok(snapshot),
        Err(reason) => {
            let aside = set_aside(&files.prev_snapshot())?;
            let note = format!(
                "the previous snapshot was damaged ({reason}; set aside as {}): the herd was \
                 rebuilt from the journals alone and may be missing older sheep and tasks",
                aside.display()
            );
            tracing::error!("{note}");
            notes.push(note);
            Ok(None)
        }
    }
}

/// A snapshot, `None` when there is none, or why it cannot be read.
fn read_snapshot(path: &Path) -> Result<Option<Snapshot>, String> {
    match fs_err::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|err| format!("unreadable: {err}")),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(err.to_string()),
    }
}

fn set_aside(path: &Path) -> Result<PathBuf, JournalError> {
    let millis = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let aside = path.with_file_name(format!("{name}.corrupt-{millis}"));
    fs_err::rename(path, &aside).map_err(|err| io_error(path, &err.to_string()))?;
    Ok(aside)
}

/// Replays the journal at `path` onto `herd`, applying events after `pos` and advancing it.
/// Returns the position of the first event it applied, if any.
fn replay(path: &Path, herd: &mut Herd, pos: &mut u64) -> Result<Option<u64>, JournalError> {
    let bytes = match fs_err::read(path) {
        Ok(bytes) => bytes,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(io_error(path, &err.to_string())),
    };
    let mut first = None;
    let mut lines = bytes
        .split_inclusive(|b| *b == b'\n')
        .enumerate()
        .peekable();
    while let Some((index, line)) = lines.next() {
        if line.last() != Some(&b'\n') {
            // A torn final line that was never acknowledged.
            break;
        }
        let record = match serde_json::from_slice::<LineIn>(line) {
            Ok(record) => record,
            Err(err) => {
                let readable_after = lines
                    .clone()
                    .any(|(_, rest)| serde_json::from_slice::<LineIn>(rest).is_ok());
                if readable_after {
                    return Err(JournalError::Corrupt {
                        path: path.display().to_string(),
                        line: index + 1,
                        reason: err.to_string(),
                    });
                }
                tracing::warn!(
                    "journal {}: cutting off an unreadable tail at line {}",
                    path.display(),
                    index + 1
                );
                break;
            }
        };
        if record.pos <= *pos {
            continue;
        }
        first.get_or_insert(record.pos);
        match serde_json::from_value::<Event>(record.event) {
            Ok(event) => herd.apply(&event),
            Err(_) => tracing::warn!(
                "journal {}: skipping an event this build cannot read",
                path.display()
            ),
        }
        *pos = record.pos;
    }
    Ok(first)
}

/// Makes the replayed herd the new base: the current generation becomes the previous one, and
/// a fresh snapshot at `pos` with an empty journal replaces it. Each step leaves files that
/// replay to the same herd, so a crash anywhere in between loses nothing.
fn compact(files: &JournalFiles, herd: &Herd, pos: u64) -> Result<(), JournalError> {
    let bytes = serde_json::to_vec(&Snapshot {
        version: 1,
        pos,
        herd: herd.clone(),
    })
    .map_err(|err| io_error(&files.snapshot, &err.to_string()))?;
    let rename = |from: &Path, to: &Path| match fs_err::rename(from, to) {
        Ok(()) => Ok(()),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(err) => Err(io_error(from, &err.to_string())),
    };
    // The previous snapshot goes first: until the new one is in place, the current snapshot
    // and both journals still replay to this herd.
    rename(&files.snapshot, &files.prev_snapshot())?;
    write_atomic(&files.snapshot, &bytes)?;
    rename(&files.journal, &files.prev_journal())?;
    shepherd_fs::sync_parent(&files.journal);
    Ok(())
}

/// The journal's files are private: they hold the herd's state.
fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), JournalError> {
    shepherd_fs::write_atomic(path, bytes, Some(0o600))
        .map_err(|err| io_error(path, &err.to_string()))
}

fn io_error(path: &Path, message: &str) -> JournalError {
    JournalError::Io {
        path: path.display().to_string(),
        message: message.to_owned(),
    }
}

// The conversion lives here rather than in `error`, which sits below `state` (the note writer
// uses it too) and so may not name the journal.
impl From<JournalError> for crate::error::BrokerError {
    fn from(err: JournalError) -> Self {
        let code = match err {
            JournalError::Stalled => shepherd_core::error_code::ErrorCode::JournalStalled,
            _ => shepherd_core::error_code::ErrorCode::Journal,
        };
        Self::new(code, err.to_string())
    }
}

#[cfg(test)]
mod tests;
