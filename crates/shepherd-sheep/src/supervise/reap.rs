//! Nothing a sheep starts outlives it.
//!
//! The supervisor makes itself a child subreaper, so whatever the sheep leaves behind — a
//! background job, a daemon that double-forked into a session of its own, a herd of its own
//! (a nested broker and its sheep) — is reparented to the supervisor instead of escaping to
//! init. When the sheep ends, the supervisor ends all of that too (SIGTERM, a grace, SIGKILL;
//! a nested broker closes its own herd on SIGTERM) and reaps it, before it reports the exit.
//! The sheep itself dies with its supervisor: it runs under a parent-death signal (see
//! `exec_sheep`), so a supervisor killed outright takes its sheep down with it.

use std::time::{Duration, Instant};

/// How long what a sheep left behind gets to end after SIGTERM.
pub(super) const LEFTOVER_GRACE: Duration = Duration::from_secs(3);

/// Makes this process a child subreaper, or stops it being one.
pub(super) fn set_subreaper(on: bool) {
    if let Err(err) = shepherd_term::platform::set_child_subreaper(on) {
        eprintln!("shepherd supervise: cannot set the subreaper attribute: {err}");
    }
}

/// Ends everything below this supervisor and reaps what became its children. Returns whether
/// everything is gone.
pub(super) fn end_leftovers() -> bool {
    let me = std::process::id();
    let gone = shepherd_term::process::end_descendants(
        me,
        &[],
        LEFTOVER_GRACE,
        Instant::now() + LEFTOVER_GRACE + Duration::from_secs(2),
    );
    reap_zombies();
    gone
}

/// Collects the exit status of every child that has ended (orphans that came to this
/// subreaper), so none stays a zombie. Call only once the sheep itself has been waited for.
fn reap_zombies() {
    use rustix::process::{WaitOptions, wait};
    while let Ok(Some(_)) = wait(WaitOptions::NOHANG) {}
}
