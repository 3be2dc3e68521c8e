//! The file primitives every Shepherd writer shares.
//!
//! Two promises hold everywhere Shepherd keeps state on disk: a reader never sees a
//! half-written file (see [`write_atomic`]), and a writer that dies never blocks the next one
//! (see [`lock`]): locks are OS advisory locks, released by the kernel however their holder ends.

mod atomic;
mod lock;

pub use atomic::{sync_parent, write_atomic};
pub use lock::{FileLock, LockError, lock, open as open_lock_file, try_lock, try_lock_file};
