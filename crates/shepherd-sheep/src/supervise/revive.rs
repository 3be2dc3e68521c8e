//! Bringing the herd's broker back when it died and nobody else has.
//!
//! Every supervisor of a herd notices when its broker connection drops and nothing answers on
//! the socket again. After a short delay that differs per supervisor it starts the broker
//! itself, from what the broker recorded in its state directory (`start.json`, and the herd's
//! environment in `env.json`), so a herd with no parent attached recovers on its own. Starting
//! twice is harmless: the broker's lock lets one run and the other exits.
//!
//! The broker must never end up inside this supervisor's process tree, where cleaning up after
//! the sheep would end it. The supervisor is a child subreaper (orphans below it come to it),
//! so for the moment of the start it stops being one, and the broker detaches itself (its
//! starter exits at once): the broker is reparented above this supervisor, out of its tree.

use std::path::Path;
use std::time::Duration;

use shepherd_client::wire::start::{ensure_broker, recorded_spec};

/// Longest a revival may take.
const START_LIMIT: Duration = Duration::from_secs(10);

/// Starts the broker recorded in `state_dir` unless one answers on `socket`.
pub(super) async fn revive(socket: &Path, state_dir: &Path) -> Result<(), String> {
    let spec = recorded_spec(state_dir).map_err(|err| err.to_string())?;
    super::reap::set_subreaper(false);
    let started = ensure_broker(socket, &spec, START_LIMIT).await;
    super::reap::set_subreaper(true);
    started.map_err(|err| err.to_string())
}

/// How long this supervisor waits before starting the broker itself, so a herd's supervisors
/// do not all start one at the same instant (0–250 ms, from the pid).
pub(super) fn stagger() -> Duration {
    Duration::from_millis(u64::from(std::process::id() % 251))
}
