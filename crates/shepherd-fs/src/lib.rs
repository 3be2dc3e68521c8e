//! The file primitives every Shepherd writer shares.
//!
//! Two promises hold everywhere Shepherd keeps state on disk: a reader never sees a
//! half-written file (see [`write_atomic`]), and a writer that dies never blocks the next one
//! (see [`lock`]): locks are OS advisory locks, released by the kernel however their holder ends.
//! Where the original extension may write too, its own exclusive-create lock files are taken as
//! well ([`lock_exclusive`]), with stale-holder recovery so a crash never wedges anyone. And
//! a file in a directory a sheep can write is read and cleaned without following its symlinks
//! ([`open_nofollow`], [`remove_symlinks_under`]).

// Unit tests set up files and processes directly; the code they test keeps clippy.toml's rules.
#![cfg_attr(test, allow(clippy::disallowed_methods, clippy::disallowed_types))]

mod atomic;
mod excl;
mod lock;
mod untrusted;

pub use atomic::{sync_parent, write_atomic};
pub use excl::{
    EMPTY_GRACE, ExclusiveLock, RETRY_INTERVAL, is_held, lock_exclusive, lock_exclusive_linked,
    try_lock_exclusive,
};
pub use lock::{FileLock, LockError, lock, open as open_lock_file, try_lock, try_lock_file};
pub use untrusted::{open_nofollow, read_to_string_nofollow, remove_symlinks_under};
