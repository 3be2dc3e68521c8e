//! Who may use a herd's board, kept across restarts of `shepherd web`.
//!
//! A browser gets in once with the token in the printed URL, and only once: that token is
//! traded for a session of its own, a random secret in a cookie, and is spent by the trade, so
//! a copy of the URL in the browser's history or session files opens nothing. The sessions (as
//! digests), the page's CSRF token, the board's host name and the last port live in one private
//! file in the herd's state directory, so a restarted `shepherd web` on the same port lets an
//! open page in again without a reload. `--revoke-sessions` forgets them all.
//!
//! The board answers only at a host name of its own, `herd-<label>.localhost`, which browsers
//! resolve to loopback without asking DNS. Cookies are kept per host name, not per port, so one
//! set for `127.0.0.1` would go to every other server on that address; one set for this name
//! goes nowhere else unless the other server is reached by this name, which nothing outside
//! this file and the printed URL knows.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The file's format; another is refused, naming the file.
const FORMAT: u32 = 1;

/// How long a session lasts after the trade (the cookie's `Max-Age` too).
pub(crate) const SESSION_LIFE: Duration = Duration::from_secs(30 * 24 * 3600);

/// The most sessions kept: the oldest goes when one more is made.
const MOST_SESSIONS: usize = 64;

/// How long `shepherd web` waits for another one writing the file.
const LOCK_WAIT: Duration = Duration::from_secs(10);

/// One browser let in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Session {
    /// sha256 of the cookie's secret, hex: the file alone lets nobody in.
    digest: String,
    /// When it was made, in ms since the epoch.
    made_ms: u64,
}

/// What the file holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Stored {
    format: u32,
    /// The board's host name is `herd-<label>.localhost`.
    label: String,
    /// The token pages send with a change.
    csrf: String,
    /// The port last served, tried first when no `--port` is given.
    #[serde(default)]
    port: Option<u16>,
    #[serde(default)]
    sessions: Vec<Session>,
}

/// The outcome of presenting the URL's token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Trade {
    /// It was this start's token, now spent: the new session's secret.
    Session(String),
    /// Not a token that opens anything (spent, from an earlier start, or wrong).
    Refused,
}

/// A herd's board access, loaded from and saved to its file.
#[derive(Debug)]
pub(crate) struct Access {
    file: PathBuf,
    stored: Mutex<Stored>,
    /// This start's token, until a browser trades it.
    entry: Mutex<Option<String>>,
}

/// A fresh random secret (two v4 UUIDs: 244 random bits).
pub(crate) fn secret() -> String {
    format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    )
}

fn digest(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Compares two secrets in time that does not depend on where they differ.
pub(crate) fn same_secret(given: &str, expected: &str) -> bool {
    given.len() == expected.len()
        && given
            .bytes()
            .zip(expected.bytes())
            .fold(0_u8, |acc, (a, b)| acc | (a ^ b))
            == 0
}

fn read(file: &Path) -> std::io::Result<Option<Stored>> {
    let text = match fs_err::read_to_string(file) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(err),
    };
    let stored: Stored = serde_json::from_str(&text).map_err(|err| {
        std::io::Error::other(format!(
            "`{}` is not a board access file ({err}); remove it to start afresh (every browser must then open a new URL)",
            file.display()
        ))
    })?;
    if stored.format != FORMAT {
        return Err(std::io::Error::other(format!(
            "`{}` has format {}, this shepherd reads format {FORMAT}",
            file.display(),
            stored.format
        )));
    }
    Ok(Some(stored))
}

impl Access {
    /// The access kept in `file` (made when missing), with a fresh token for this start; with
    /// `revoke`, every session made before is forgotten.
    pub(crate) fn open(file: &Path, revoke: bool) -> std::io::Result<Self> {
        let access = Self {
            file: file.to_owned(),
            stored: Mutex::new(Stored {
                format: FORMAT,
                label: String::new(),
                csrf: String::new(),
                port: None,
                sessions: Vec::new(),
            }),
            entry: Mutex::new(Some(secret())),
        };
        access.update(|stored| {
            if stored.label.is_empty() {
                stored.label = uuid::Uuid::new_v4().simple().to_string()[..16].to_owned();
            }
            if stored.csrf.is_empty() {
                stored.csrf = secret();
            }
            if revoke {
                stored.sessions.clear();
            }
        })?;
        Ok(access)
    }

    /// Changes the file under its lock: read afresh (another `shepherd web` of the herd may
    /// have let a browser in), changed, written atomically, and kept here.
    fn update(&self, change: impl FnOnce(&mut Stored)) -> std::io::Result<()> {
        let _held = shepherd_fs::lock(&self.file.with_extension("lock"), LOCK_WAIT)
            .map_err(std::io::Error::other)?;
        let mut stored = match read(&self.file)? {
            Some(stored) => stored,
            None => self.lock_stored().clone(),
        };
        change(&mut stored);
        let text = serde_json::to_vec_pretty(&stored).map_err(std::io::Error::other)?;
        shepherd_fs::write_atomic(&self.file, &text, Some(0o600))?;
        *self.lock_stored() = stored;
        Ok(())
    }

    fn lock_stored(&self) -> std::sync::MutexGuard<'_, Stored> {
        self.stored
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The board's host name, without a port.
    pub(crate) fn host_name(&self) -> String {
        shepherd_core::board::host_name(&self.lock_stored().label)
    }

    /// The token pages carry in the header of a change.
    pub(crate) fn csrf(&self) -> String {
        self.lock_stored().csrf.clone()
    }

    /// The port served last time, if any.
    pub(crate) fn last_port(&self) -> Option<u16> {
        self.lock_stored().port
    }

    /// Records the port served now.
    pub(crate) fn remember_port(&self, port: u16) -> std::io::Result<()> {
        if self.last_port() == Some(port) {
            return Ok(());
        }
        self.update(|stored| stored.port = Some(port))
    }

    /// This start's token while no browser has traded it yet.
    pub(crate) fn entry_token(&self) -> Option<String> {
        self.entry
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Trades `token` for a session when it is this start's unspent token.
    pub(crate) fn trade(&self, token: &str) -> std::io::Result<Trade> {
        let mut entry = self
            .entry
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if !entry.as_deref().is_some_and(|e| same_secret(token, e)) {
            return Ok(Trade::Refused);
        }
        let session = secret();
        let made = Session {
            digest: digest(&session),
            made_ms: now_ms(),
        };
        self.update(|stored| {
            stored.sessions.push(made);
            let over = stored.sessions.len().saturating_sub(MOST_SESSIONS);
            stored.sessions.drain(..over);
        })?;
        // Spent only once the session is on disk: a trade that failed to save can be retried.
        *entry = None;
        Ok(Trade::Session(session))
    }

    /// Whether `cookie` is a live session's secret. The file is read afresh each time: another
    /// `shepherd web` of the herd may have let a browser in or signed every browser out.
    pub(crate) fn signed_in(&self, cookie: &str) -> bool {
        if let Ok(Some(stored)) = read(&self.file) {
            *self.lock_stored() = stored;
        }
        let wanted = digest(cookie);
        let oldest = now_ms().saturating_sub(SESSION_LIFE.as_millis() as u64);
        self.lock_stored()
            .sessions
            .iter()
            .any(|s| s.made_ms >= oldest && same_secret(&s.digest, &wanted))
    }
}

#[cfg(test)]
#[path = "access/tests.rs"]
mod tests;
