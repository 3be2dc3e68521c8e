//! The journal's replay, damage handling, compaction and group commit, on real files.

use super::*;
use shepherd_core::herd::Event;
use shepherd_core::ids::{AgentId, Participant};

fn ack_event(seq: u64) -> Event {
    Event::Acked {
        who: Participant::Sheep(AgentId::mint("00000000", "0000000a")),
        seq,
        at: None,
    }
}

fn notice(seq: u64) -> Event {
    Event::Enqueued {
        to: Participant::Parent,
        item: shepherd_core::herd::InboxItem {
            seq,
            at: 1,
            payload: shepherd_core::herd::Payload::Notice(shepherd_core::herd::Notice {
                notice: shepherd_core::herd::NoticeKind::SheepExited,
                text: format!("notice {seq}"),
                agent_id: None,
                task_id: None,
            }),
        },
    }
}

struct Files {
    _dir: tempfile::TempDir,
    journal: PathBuf,
    snapshot: PathBuf,
}

fn files() -> Files {
    let dir = tempfile::tempdir().unwrap();
    Files {
        journal: dir.path().join("journal.jsonl"),
        snapshot: dir.path().join("snapshot.json"),
        _dir: dir,
    }
}

/// Opens, appends `events` durably, closes; returns the herd the open replayed.
async fn session(files: &Files, events: &[Event]) -> Replayed {
    let (journal, replayed) = Journal::open(&files.journal, &files.snapshot, "abcdef01").unwrap();
    if !events.is_empty() {
        let pos = journal.append(events);
        journal.durable(pos).await.unwrap();
    }
    journal.close();
    replayed
}

fn parent_notices(herd: &Herd) -> usize {
    herd.pending_items(&Participant::Parent).len()
}

#[tokio::test]
async fn appended_events_replay_after_reopen_and_torn_tail_is_ignored() {
    let files = files();
    let first = session(&files, &[notice(7), ack_event(1)]).await;
    assert_eq!(first.herd.namespace, "abcdef01");
    // A crash mid-write leaves a torn line at the end.
    let mut file = fs_err::OpenOptions::new()
        .append(true)
        .open(&files.journal)
        .unwrap();
    file.write_all(b"{\"pos\":3,\"event\":{\"ev").unwrap();
    drop(file);
    let (journal, replayed) = Journal::open(&files.journal, &files.snapshot, "ignored").unwrap();
    assert_eq!(replayed.herd.namespace, "abcdef01");
    assert_eq!(replayed.herd.last_seq, 7);
    assert_eq!(parent_notices(&replayed.herd), 1);
    assert!(replayed.notes.is_empty(), "{:?}", replayed.notes);
    assert_eq!(journal.position(), 2);
    // Compaction left an empty journal and a snapshot holding everything.
    assert_eq!(fs_err::read(&files.journal).unwrap().len(), 0);
}

#[tokio::test]
async fn an_unreadable_line_with_readable_lines_after_it_refuses_to_replay_and_keeps_the_journal() {
    let files = files();
    session(&files, &[]).await;
    let mut file = fs_err::OpenOptions::new()
        .append(true)
        .open(&files.journal)
        .unwrap();
    let good = |pos: u64, seq: u64| {
        let mut line = serde_json::to_vec(&LineOut {
            pos,
            event: &notice(seq),
        })
        .unwrap();
        line.push(b'\n');
        line
    };
    file.write_all(&good(1, 1)).unwrap();
    file.write_all(b"{this is not json}\n").unwrap();
    file.write_all(&good(3, 3)).unwrap();
    drop(file);
    let before = fs_err::read(&files.journal).unwrap();
    let err = Journal::open(&files.journal, &files.snapshot, "x").unwrap_err();
    match &err {
        JournalError::Corrupt { line, .. } => assert_eq!(*line, 2),
        other => panic!("expected a refusal, got {other}"),
    }
    assert!(err.to_string().contains("line 2"), "{err}");
    assert_eq!(
        fs_err::read(&files.journal).unwrap(),
        before,
        "kept as it is"
    );
}

#[tokio::test]
async fn a_damaged_snapshot_is_set_aside_and_the_herd_rebuilt_from_the_previous_generation() {
    let files = files();
    session(&files, &[notice(1)]).await;
    // The second open compacts: the first snapshot and journal become the previous ones.
    session(&files, &[notice(2)]).await;
    session(&files, &[notice(3)]).await;
    fs_err::write(&files.snapshot, b"{ damaged").unwrap();
    let replayed = session(&files, &[]).await;
    assert_eq!(parent_notices(&replayed.herd), 3, "nothing lost");
    assert_eq!(replayed.notes.len(), 1, "{:?}", replayed.notes);
    assert!(
        replayed.notes[0].contains("set aside"),
        "{:?}",
        replayed.notes
    );
    let aside: Vec<_> = fs_err::read_dir(files.snapshot.parent().unwrap())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains(".corrupt-"))
        .collect();
    assert_eq!(aside.len(), 1, "the damaged snapshot is kept aside");
}

#[tokio::test]
async fn a_compaction_cut_short_at_any_step_replays_to_the_same_herd() {
    for step in 0..3 {
        let files = files();
        session(&files, &[notice(1)]).await;
        session(&files, &[notice(2)]).await;
        // Redo the next compaction by hand, stopping after `step` of its renames.
        let journal_files = JournalFiles {
            journal: files.journal.clone(),
            snapshot: files.snapshot.clone(),
        };
        let herd = session(&files, &[]).await.herd;
        let pos = 2;
        if step >= 1 {
            fs_err::rename(&files.snapshot, journal_files.prev_snapshot()).unwrap();
        }
        if step >= 2 {
            write_atomic(
                &files.snapshot,
                &serde_json::to_vec(&Snapshot {
                    version: 1,
                    pos,
                    herd: herd.clone(),
                })
                .unwrap(),
            )
            .unwrap();
        }
        let replayed = session(&files, &[]).await;
        assert_eq!(parent_notices(&replayed.herd), 2, "step {step}");
        assert!(
            replayed.notes.is_empty(),
            "step {step}: {:?}",
            replayed.notes
        );
    }
}

#[tokio::test]
async fn concurrent_appends_share_commits_and_all_become_durable() {
    let files = files();
    let (journal, _) = Journal::open(&files.journal, &files.snapshot, "00000000").unwrap();
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
    let text = fs_err::read_to_string(&files.journal).unwrap();
    assert_eq!(text.lines().count(), 50);
}
