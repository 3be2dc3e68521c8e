//! The broker's journal: every accepted change is on disk before anyone hears of it.
//!
//! Events are appended as JSON lines (`{"pos", "event"}`) by one writer thread that takes every
//! batch waiting in its queue, writes them together and syncs once (group commit), so many
//! clients committing at once share one fsync. Callers wait on [`Journal::durable`] for their
//! position before acknowledging. On start the journal is replayed on top of the last snapshot,
//! a torn last line (a crash mid-write, never acknowledged) is cut off, and the result is
//! compacted into a fresh snapshot and an empty journal.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;

use serde::{Deserialize, Serialize};
use shepherd_core::herd::{Event, Herd};
use tokio::sync::watch;

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
    /// The writer stopped after a failure; nothing more can be made durable.
    #[error("the journal stopped accepting writes: {0}")]
    Stopped(String),
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

enum Job {
    Append { bytes: Vec<u8>, end: u64 },
    Compact { snapshot: Vec<u8> },
}

#[derive(Debug, Clone, Default)]
struct Durable {
    pos: u64,
    failed: Option<String>,
}

/// An open journal with its writer thread.
#[derive(Debug)]
pub struct Journal {
    path: PathBuf,
    next_pos: AtomicU64,
    jobs: Mutex<Option<mpsc::Sender<Job>>>,
    durable: watch::Receiver<Durable>,
    writer: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl Journal {
    /// Opens (or creates) the journal in `journal`/`snapshot`, replays it into a herd, compacts
    /// it, and starts the writer. A brand-new herd gets `namespace`.
    pub fn open(
        journal: &Path,
        snapshot: &Path,
        namespace: &str,
    ) -> Result<(Self, Herd), JournalError> {
        let (mut herd, mut pos) = read_snapshot(snapshot)?
            .map(|s| (s.herd, s.pos))
            .unwrap_or_else(|| {
                (
                    Herd {
                        namespace: namespace.to_owned(),
                        ..Herd::default()
                    },
                    0,
                )
            });
        pos = replay(journal, &mut herd, pos)?;
        let bytes = serde_json::to_vec(&Snapshot {
            version: 1,
            pos,
            herd: herd.clone(),
        })
        .map_err(|err| io_error(snapshot, &err.to_string()))?;
        write_atomic(snapshot, &bytes)?;
        let file = fs_err::OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(true)
            .open(journal)
            .map_err(|err| io_error(journal, &err.to_string()))?;
        shepherd_fs::sync_parent(journal);

        let (jobs_tx, jobs_rx) = mpsc::channel();
        let (durable_tx, durable_rx) = watch::channel(Durable { pos, failed: None });
        let writer_path = journal.to_path_buf();
        let snapshot_path = snapshot.to_path_buf();
        let writer = std::thread::Builder::new()
            .name("journal".into())
            .spawn(move || {
                write_loop(
                    file.into_parts().0,
                    &writer_path,
                    &snapshot_path,
                    &jobs_rx,
                    &durable_tx,
                );
            })
            .map_err(|err| io_error(journal, &format!("cannot start the writer: {err}")))?;
        Ok((
            Self {
                path: journal.to_path_buf(),
                next_pos: AtomicU64::new(pos),
                jobs: Mutex::new(Some(jobs_tx)),
                durable: durable_rx,
                writer: Mutex::new(Some(writer)),
            },
            herd,
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
        self.send(Job::Append { bytes, end: pos });
        pos
    }

    /// The position of the last queued event.
    pub fn position(&self) -> u64 {
        self.next_pos.load(Ordering::SeqCst)
    }

    /// Replaces the journal with a snapshot of `herd` (call while holding the herd's lock).
    pub fn compact(&self, herd: &Herd) {
        let pos = self.position();
        let snapshot = serde_json::to_vec(&Snapshot {
            version: 1,
            pos,
            herd: herd.clone(),
        })
        .expect("herd serialises");
        self.send(Job::Compact { snapshot });
    }

    /// Waits until everything up to `pos` is on disk.
    pub async fn durable(&self, pos: u64) -> Result<(), JournalError> {
        let mut rx = self.durable.clone();
        let state = rx
            .wait_for(|d| d.pos >= pos || d.failed.is_some())
            .await
            .map_err(|_| JournalError::Stopped("the writer ended".into()))?;
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

    fn send(&self, job: Job) {
        if let Some(jobs) = self.jobs.lock().expect("journal lock").as_ref() {
            let _sent = jobs.send(job);
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
    snapshot: &Path,
    jobs: &mpsc::Receiver<Job>,
    durable: &watch::Sender<Durable>,
) {
    while let Ok(first) = jobs.recv() {
        let mut batch = vec![first];
        batch.extend(jobs.try_iter());
        let mut end = None;
        let mut result = Ok(());
        for job in batch {
            match job {
                Job::Append { bytes, end: pos } => {
                    result = result.and_then(|()| file.write_all(&bytes));
                    end = Some(pos);
                }
                Job::Compact { snapshot: bytes } => {
                    // Everything appended so far is in the snapshot; sync it first, then start
                    // an empty journal.
                    result = result
                        .and_then(|()| file.sync_data())
                        .and_then(|()| {
                            write_atomic(snapshot, &bytes).map_err(std::io::Error::other)
                        })
                        .and_then(|()| file.set_len(0))
                        .and_then(|()| {
                            use std::io::Seek;
                            file.seek(std::io::SeekFrom::Start(0)).map(|_| ())
                        });
                }
            }
        }
        result = result.and_then(|()| file.sync_data());
        match result {
            Ok(()) => {
                if let Some(pos) = end {
                    durable.send_modify(|d| d.pos = d.pos.max(pos));
                }
            }
            Err(err) => {
                let message = format!("{}: {err}", path.display());
                tracing::error!("journal write failed: {message}");
                durable.send_modify(|d| d.failed = Some(message));
                return;
            }
        }
    }
}

fn read_snapshot(path: &Path) -> Result<Option<Snapshot>, JournalError> {
    match fs_err::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|err| io_error(path, &format!("unreadable snapshot: {err}"))),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(io_error(path, &err.to_string())),
    }
}

fn replay(path: &Path, herd: &mut Herd, mut pos: u64) -> Result<u64, JournalError> {
    let file = match fs_err::File::open(path) {
        Ok(file) => file,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(pos),
        Err(err) => return Err(io_error(path, &err.to_string())),
    };
    let mut reader = std::io::BufReader::new(file);
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = reader
            .read_until(b'\n', &mut line)
            .map_err(|err| io_error(path, &err.to_string()))?;
        if read == 0 || line.last() != Some(&b'\n') {
            // End, or a torn final line that was never acknowledged.
            break;
        }
        let Ok(record) = serde_json::from_slice::<LineIn>(&line) else {
            tracing::warn!(
                "journal {}: stopping replay at an unreadable line",
                path.display()
            );
            break;
        };
        if record.pos <= pos {
            continue;
        }
        let Ok(event) = serde_json::from_value::<Event>(record.event) else {
            tracing::warn!(
                "journal {}: skipping an event this build cannot read",
                path.display()
            );
            pos = record.pos;
            continue;
        };
        herd.apply(&event);
        pos = record.pos;
    }
    Ok(pos)
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

#[cfg(test)]
mod tests {
    use super::*;
    use shepherd_core::herd::Event;
    use shepherd_core::ids::{AgentId, Participant};

    fn ack_event(seq: u64) -> Event {
        Event::Acked {
            who: Participant::Sheep(AgentId::mint("00000000", "0000000a")),
            seq,
        }
    }

    #[tokio::test]
    async fn appended_events_replay_after_reopen_and_torn_tail_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let (journal_path, snapshot) = (dir.path().join("j.jsonl"), dir.path().join("s.json"));
        let (journal, herd) = Journal::open(&journal_path, &snapshot, "abcdef01").unwrap();
        assert_eq!(herd.namespace, "abcdef01");
        let created = Event::Enqueued {
            to: Participant::Parent,
            item: shepherd_core::herd::InboxItem {
                seq: 7,
                at: 1,
                payload: shepherd_core::herd::Payload::Notice(shepherd_core::herd::Notice {
                    notice: shepherd_core::herd::NoticeKind::SheepExited,
                    text: "t".into(),
                    agent_id: None,
                    task_id: None,
                }),
            },
        };
        let pos = journal.append(&[created, ack_event(1)]);
        journal.durable(pos).await.unwrap();
        journal.close();
        // A crash mid-write leaves a torn line at the end.
        let mut file = fs_err::OpenOptions::new()
            .append(true)
            .open(&journal_path)
            .unwrap();
        file.write_all(b"{\"pos\":3,\"event\":{\"ev").unwrap();
        drop(file);
        let (journal, herd) = Journal::open(&journal_path, &snapshot, "ignored").unwrap();
        assert_eq!(herd.namespace, "abcdef01");
        assert_eq!(herd.last_seq, 7);
        assert_eq!(herd.pending_items(&Participant::Parent).len(), 1);
        assert_eq!(journal.position(), 2);
        // Compaction left an empty journal and a snapshot holding everything.
        assert_eq!(fs_err::read(&journal_path).unwrap().len(), 0);
    }

    #[tokio::test]
    async fn concurrent_appends_share_commits_and_all_become_durable() {
        let dir = tempfile::tempdir().unwrap();
        let (journal, _) =
            Journal::open(&dir.path().join("j"), &dir.path().join("s"), "00000000").unwrap();
        let journal = std::sync::Arc::new(journal);
        let mut tasks = Vec::new();
        for i in 0..50 {
            let journal = journal.clone();
            tasks.push(tokio::spawn(async move {
                let pos = journal.append(&[ack_event(i)]);
                journal.durable(pos).await.unwrap();
            }));
        }
        for task in tasks {
            task.await.unwrap();
        }
        assert_eq!(journal.position(), 50);
        let text = fs_err::read_to_string(dir.path().join("j")).unwrap();
        assert_eq!(text.lines().count(), 50);
    }
}
