//! What a headless supervisor keeps of its sheep's output: a log file for `read` (rotated when
//! it grows large), a small tail in memory for the exit report, and a signal that output
//! arrived, so the broker can show the sheep's last line.

use std::collections::VecDeque;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use shepherd_term::process;
use tokio::io::AsyncReadExt;

/// Bytes of output kept in memory for the exit report.
const TAIL_BYTES: usize = 64 * 1024;
/// Lines of output sent with the exit report.
const TAIL_LINES: usize = 20;
/// A log grows to this size before it is rotated to `<log>.1`.
const LOG_ROTATE_BYTES: u64 = 8 * 1024 * 1024;

/// The end of the sheep's output, bounded.
#[derive(Default)]
pub(super) struct Tail {
    bytes: VecDeque<u8>,
}

impl Tail {
    fn push(&mut self, chunk: &[u8]) {
        self.bytes.extend(chunk);
        let excess = self.bytes.len().saturating_sub(TAIL_BYTES);
        self.bytes.drain(..excess);
    }

    pub(super) fn lines(&self) -> String {
        let bytes: Vec<u8> = self.bytes.iter().copied().collect();
        process::last_lines(&String::from_utf8_lossy(&bytes), TAIL_LINES)
    }
}

/// The headless log, rotated when it grows large.
pub(super) struct Log {
    path: PathBuf,
    file: fs_err::File,
    written: u64,
}

impl Log {
    pub(super) fn open(path: &Path) -> std::io::Result<Self> {
        use fs_err::os::unix::fs::OpenOptionsExt as _;
        // Never through a link someone left at the log's name.
        let file = fs_err::OpenOptions::new()
            .create(true)
            .append(true)
            .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
            .open(path)?;
        let written = file.metadata()?.len();
        Ok(Self {
            path: path.to_path_buf(),
            file,
            written,
        })
    }

    fn write(&mut self, chunk: &[u8]) {
        if self.written + chunk.len() as u64 > LOG_ROTATE_BYTES {
            let rotated = self.path.with_extension("log.1");
            if fs_err::rename(&self.path, rotated).is_ok()
                && let Ok(file) = fs_err::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&self.path)
            {
                self.file = file;
                self.written = 0;
            }
        }
        if self.file.write_all(chunk).is_ok() {
            self.written += chunk.len() as u64;
        }
    }
}

/// Copies one of the sheep's output pipes into the log and the tail until it closes, telling
/// `printed` each time something arrives.
pub(super) async fn pump(
    mut from: impl tokio::io::AsyncRead + Unpin,
    log: Option<Arc<Mutex<Log>>>,
    tail: Arc<Mutex<Tail>>,
    printed: Arc<tokio::sync::Notify>,
) {
    let mut buf = vec![0; 8192];
    while let Ok(n) = from.read(&mut buf).await {
        if n == 0 {
            break;
        }
        if let Some(log) = &log {
            log.lock().expect("log lock").write(&buf[..n]);
        }
        tail.lock().expect("tail lock").push(&buf[..n]);
        printed.notify_one();
    }
}
