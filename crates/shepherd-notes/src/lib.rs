//! The fieldnotes store: the only code that writes under `.shepherd/sessions/`.
//!
//! A [`Store`] is opened on one project root. It resolves or creates sessions
//! ([`Store::resolve_or_create_parent_session`], [`Store::create_or_continue_named`],
//! [`Store::create_for_task`]), applies note operations ([`Store::apply`] and its one-op
//! wrappers) and reads what is there ([`Store::list_sessions`], [`Store::load`],
//! [`Store::locate_note`]). What the files say is decided in `shepherd_core::fieldnotes`; this
//! crate decides how they reach the disk:
//!
//! - **Locks** (`lock`): for resolving and creating sessions, the sessions directory's; for
//!   every read-modify-write, the session's. Each is Shepherd's OS advisory lock
//!   (`.sessions.flock`, `.session.flock`) and, under it, the original extension's
//!   exclusive-create lock file (`.sessions.lock`, `.session.lock`), so Shepherd and the
//!   original exclude each other; every wait has a deadline, and a lock whose holder died is
//!   taken over at once. Readers take no lock.
//! - **Fresh reads**: every change re-reads `session.json` after taking the session lock, so no
//!   update is ever lost to a stale copy (the original lost 568–748 of 800 entries this way).
//! - **Atomic commits** (`atomic`): each commit stages its files in the session directory,
//!   syncs them together, renames them into place (notes, then `session.json`, then
//!   `shepherd.md`) and syncs the directory. New sessions are built in a staging directory and
//!   renamed into place whole, so a session directory never exists half-made.
//! - **Group commit** (`queue`, `wait`): a writer that finds a session busy queues its
//!   operations; the lock holder applies everything queued in its own commit and answers each
//!   waiter, so one session's throughput is not capped by one disk flush per note. Waiters
//!   learn of their answer (or of the lock coming free) through inotify, not by winning the
//!   lock, so no answered writer waits behind round after round of others.
//! - **Lookup without scanning** (`bindings`): an index from each parent identity and each
//!   session name to its session directory, checked against the session's own record before
//!   it is believed and rebuilt by a scan whenever it is missing or wrong; a writer that found
//!   its session there checks and continues it inside its own commit ([`Store::reserve_in`]).
//! - **Allocation** (`resolve`): a new session's number is claimed with an exclusive `mkdir` of
//!   `.alloc/NNNN`, so two processes never share one and an abandoned number is never reused.
//! - **Defensive reads** (`read`): stored paths are never trusted; a record that does not
//!   validate for the directory it sits in is treated as absent and never rewritten.
//! - **The shepherd's note** (`shepherds_note`): every commit regenerates `shepherd.md` and
//!   writes the shepherd's note beside it only to create it or to move into it what the
//!   shepherd wrote in `shepherd.md`, so no rewrite of the index, ours or the original's, loses
//!   a word of the shepherd's.
//!
//! The API is synchronous; the broker calls it from a blocking thread.

mod apply;
mod atomic;
mod bindings;
mod commit;
mod error;
mod lock;
mod ops;
mod orphans;
mod queue;
mod read;
mod resolve;
mod shepherds_note;
mod wait;

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

pub use bindings::SessionKey;

/// When a commit rewrites `shepherd.md`, the index derived from `session.json`.
///
/// Every commit writes it by default. A writer that will come back may put it off
/// ([`Store::apply_deferring_index`]) for a commit that makes no note final and deletes none, so
/// the index never lists a final note late, and then catch it up ([`Store::refresh_index`]):
/// a delegation's reservation then costs two file replacements instead of three, and the
/// settlement that follows writes the index anyway.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum IndexWrite {
    /// Write it with the commit.
    #[default]
    Now,
    /// Leave it for later when the commit makes no note final and deletes none.
    MayDefer,
    /// Write only it (and the shepherd's note when that needs writing), if it differs from the
    /// record.
    Refresh,
}
pub use error::{SessionMiss, StoreError, op_code};
pub use ops::{AGENT_ID_KEY, Applied, Finalization, NoteOp, NoteOpOutcome, TASK_ID_KEY};
pub use read::{ListedSession, LocatedNote, NoteView};
pub use resolve::{AppliedIn, ReservedIn, Resolved};
pub use shepherd_core::fieldnotes::{
    ArtifactRecord, Metadata, Mode, NoteStatus, OpError, PlannedNote, SessionMetadata,
};

use shepherd_core::fieldnotes::{SESSIONS_DIR, SHEPHERD_DIR, parse_directory_name};

/// Longest parent identity accepted, in characters.
pub const MAX_IDENTITY: usize = 512;
/// How long a writer waits for a lock before giving up, unless told otherwise.
pub const DEFAULT_LOCK_TIMEOUT: Duration = Duration::from_secs(30);

/// The fieldnotes of one project.
#[derive(Clone)]
pub struct Store {
    root: PathBuf,
    root_text: String,
    options: StoreOptions,
}

/// How a [`Store`] behaves.
#[derive(Clone)]
pub struct StoreOptions {
    /// How long to wait for a lock before failing with [`StoreError::LockTimeout`].
    pub lock_timeout: Duration,
    /// Test support: called at each stage of a commit, so a test can stop (or kill) a writer at
    /// an exact point. `None` in normal use.
    #[doc(hidden)]
    pub commit_hook: Option<CommitHook>,
}

impl Default for StoreOptions {
    fn default() -> Self {
        Self {
            lock_timeout: DEFAULT_LOCK_TIMEOUT,
            commit_hook: None,
        }
    }
}

impl fmt::Debug for StoreOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StoreOptions")
            .field("lock_timeout", &self.lock_timeout)
            .field("commit_hook", &self.commit_hook.is_some())
            .finish()
    }
}

impl fmt::Debug for Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Store")
            .field("root", &self.root)
            .field("options", &self.options)
            .finish()
    }
}

/// Test support: see [`StoreOptions::commit_hook`].
#[doc(hidden)]
pub type CommitHook = Arc<dyn Fn(CommitStage<'_>) + Send + Sync>;

/// Test support: the points of a commit a [`CommitHook`] sees.
#[doc(hidden)]
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum CommitStage<'a> {
    /// The root lock is held (a session is about to be created).
    RootLocked(&'a Path),
    /// The session lock is held; nothing has been read yet.
    SessionLocked(&'a Path),
    /// Every file of the commit is written and synced under a temp name; nothing is renamed.
    Staged(&'a Path),
    /// The commit's files are renamed into place; queued requests are not answered yet.
    Committed(&'a Path),
    /// The session was busy: this writer's request is queued and it is about to wait.
    Queued(&'a Path),
    /// A session's record was read (the session directory).
    Loaded(&'a Path),
}

/// One session directory, by name. Obtained from the store; its paths are always derived from
/// the project root and this name, never from anything stored.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SessionRef {
    ordinal: u32,
    directory_name: String,
}

impl SessionRef {
    /// A reference to the session directory `NNNN-<slug>`; `None` for any other name.
    pub fn new(directory_name: &str) -> Option<Self> {
        let (ordinal, _) = parse_directory_name(directory_name)?;
        Some(Self {
            ordinal,
            directory_name: directory_name.to_owned(),
        })
    }

    /// `NNNN-<slug>`.
    pub fn directory_name(&self) -> &str {
        &self.directory_name
    }

    /// The session number.
    pub fn ordinal(&self) -> u32 {
        self.ordinal
    }
}

impl fmt::Display for SessionRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.directory_name)
    }
}

impl Store {
    /// Opens the store of the project at `project_root` (which must exist). Nothing is created
    /// until something is written.
    pub fn open(project_root: &Path) -> Result<Self, StoreError> {
        Self::with_options(project_root, StoreOptions::default())
    }

    /// [`Store::open`] with explicit options.
    pub fn with_options(project_root: &Path, options: StoreOptions) -> Result<Self, StoreError> {
        let refuse = |reason: String| StoreError::ProjectRoot {
            path: project_root.to_owned(),
            reason,
        };
        let root = fs_err::canonicalize(project_root).map_err(|err| refuse(err.to_string()))?;
        if !root.is_dir() {
            return Err(refuse("it is not a directory".to_owned()));
        }
        let root_text = root
            .to_str()
            .ok_or_else(|| refuse("its path is not valid UTF-8".to_owned()))?
            .to_owned();
        Ok(Self {
            root,
            root_text,
            options,
        })
    }

    /// The canonical project root.
    pub fn project_root(&self) -> &Path {
        &self.root
    }

    /// `<project>/.shepherd/sessions`.
    pub fn sessions_dir(&self) -> PathBuf {
        self.root.join(SHEPHERD_DIR).join(SESSIONS_DIR)
    }

    /// The directory of `session`.
    pub fn session_dir(&self, session: &SessionRef) -> PathBuf {
        self.sessions_dir().join(&session.directory_name)
    }

    /// `path` relative to the project root, with `/` separators, when it lies inside it.
    pub fn relative(&self, path: &Path) -> Option<String> {
        let relative = path.strip_prefix(&self.root).ok()?;
        let parts: Option<Vec<&str>> = relative.iter().map(|part| part.to_str()).collect();
        Some(parts?.join("/"))
    }

    fn hook(&self, stage: CommitStage<'_>) {
        if let Some(hook) = &self.options.commit_hook {
            hook(stage);
        }
    }

    /// Creates the sessions directory if needed and makes sure it is really where it must be
    /// (no symlinked `.shepherd` or `sessions` leading the store's writes elsewhere).
    fn ensure_sessions_dir(&self) -> Result<PathBuf, StoreError> {
        let dir = self.sessions_dir();
        fs_err::create_dir_all(&dir)?;
        if fs_err::canonicalize(&dir)? != dir {
            return Err(StoreError::UnsafePath {
                path: dir,
                reason: "it resolves to another place (a symlink?)".to_owned(),
            });
        }
        Ok(dir)
    }

    /// The directory of `session`, checked to be a real directory directly in the sessions
    /// directory.
    fn checked_session_dir(&self, session: &SessionRef) -> Result<PathBuf, StoreError> {
        let dir = self.session_dir(session);
        match fs_err::symlink_metadata(&dir) {
            Ok(meta) if meta.is_dir() => Ok(dir),
            Ok(_) => Err(StoreError::UnsafePath {
                path: dir,
                reason: "a session directory must be a real directory".to_owned(),
            }),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                Err(StoreError::SessionNotFound {
                    selector: session.directory_name.clone(),
                    sessions: self.sessions_dir(),
                })
            }
            Err(err) => Err(err.into()),
        }
    }
}
