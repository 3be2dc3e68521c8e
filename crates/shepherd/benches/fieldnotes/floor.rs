//! What the file system alone allows a lifecycle: the floor the broker's lifecycles across
//! separate sessions are measured against.
//!
//! A lifecycle through the broker is two store commits in its session: the delegation's (a new
//! note and `session.json`; `shepherd.md` is put off, and the settlement that follows at once
//! writes it) and the settlement's (the note, `session.json` and `shepherd.md` replaced). Each file is written to a temp file and flushed, renamed over its
//! target, and the directory flushed. This does exactly those file operations, and nothing
//! else, from 16 threads each in its own directory for a few seconds, and returns lifecycles
//! per second. On a file system where each new file is costly to create (ext4 without a
//! journal scans past every inode freed in the last seconds before it reuses one), this floor
//! sits far below the disk's plain flush rate; the figure says how close the pipeline gets.

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

/// Sizes of the files a lifecycle writes: the note, `session.json`, `shepherd.md`.
const NOTE_BYTES: usize = 1_200;
const RECORD_BYTES: usize = 6_000;
const INDEX_BYTES: usize = 3_000;

/// Lifecycles per second `sessions` threads make for `seconds`, each in its own directory.
pub(crate) fn lifecycle_files(sessions: usize, seconds: f64) -> f64 {
    let temp = tempfile::tempdir().unwrap();
    let until = Instant::now() + Duration::from_secs_f64(seconds);
    let started = Instant::now();
    let lifecycles: usize = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..sessions)
            .map(|i| {
                let dir = temp.path().join(format!("{i:04}-session"));
                fs_err::create_dir(&dir).unwrap();
                scope.spawn(move || {
                    let mut n = 0;
                    while Instant::now() < until {
                        let note = format!("worker-{n:04}.md");
                        commit(&dir, &note, n, false);
                        commit(&dir, &note, n, true);
                        n += 1;
                    }
                    n
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).sum()
    });
    lifecycles as f64 / started.elapsed().as_secs_f64()
}

/// One commit: the note, `session.json` and, with `index`, `shepherd.md` staged and flushed,
/// renamed into place, the directory flushed.
fn commit(dir: &Path, note: &str, n: usize, index: bool) {
    let files = [
        (note, NOTE_BYTES),
        ("session.json", RECORD_BYTES),
        ("shepherd.md", INDEX_BYTES),
    ];
    let files = &files[..if index { 3 } else { 2 }];
    let staged: Vec<_> = files
        .iter()
        .enumerate()
        .map(|(k, (name, bytes))| {
            let temp = dir.join(format!(".tmp-{n}-{k}"));
            let mut file = fs_err::File::create(&temp).unwrap();
            file.write_all(&vec![b'x'; *bytes]).unwrap();
            file.sync_data().unwrap();
            (temp, dir.join(name))
        })
        .collect();
    for (temp, target) in staged {
        fs_err::rename(temp, target).unwrap();
    }
    fs_err::File::open(dir).unwrap().sync_all().unwrap();
}
