//! The broker: the single owner of a herd's runtime state.
//!
//! One broker serves one parent in one project. It owns the herd (sheep, tasks, messages,
//! watchers), journals every accepted change before acknowledging it, fires deadlines, writes
//! fieldnotes, and talks to every participant over a Unix socket. Front ends — the CLI, the pi
//! extension, supervisors, sheep — are clients of it through `shepherd_client::wire`, which
//! also says where a broker lives (`shepherd_client::paths`).
//!
//! Layout, from the bottom up: one folder per layer, and no layer imports one above it, so no
//! two of these top-level modules import each other in a cycle (`scripts/module-cycles`
//! checks it, counting each folder as one module):
//! - [`clock`]: its time source; `error`: its one error type;
//!   `git`: the one hardened git runner, the isolation layout (a sheep's repository of its own)
//!   and the checks on what a sheep could have written in a repository.
//! - `fieldnotes/`: the batched note writer; [`remote`]: SSH links to hosts, the wire and the
//!   host's side.
//! - `state/`: the shared state and the commit path (`broker`), which returns the effects a
//!   change calls for instead of calling the modules that act on them; [`journal`]:
//!   durability; `session` (who a connection speaks for) and `auth` (who may connect as what).
//! - `sheep/`: the sheep runtime the handlers share: a sheep's program (`pi_launch`,
//!   `harness`, `controls`, `provider_limits`), where it runs (`launch_record`,
//!   `supervisor_link`, `herdr_link`, `worktree`, `isolation`, `remote_sheep`) and what it
//!   leaves behind (`pi`, `telemetry`, `notes`, `printed`, `live_usage`, `transcript`).
//! - `handlers/`: the request handlers, one module per family of methods (`spawn`, `resume`,
//!   `parent`, `close`, `focus`, `broker_requests`, `receipts`, `inbox`, `herd_feed`, `sheep`,
//!   `supervisor`), and the steps they share (`handover`, `fallback`, `autoclose`,
//!   `adoption`).
//! - `run/`: runs owned by the broker, carried out through the handlers.
//! - `land/`: the merge queue, landing the branches isolated work left (above `run`, whose
//!   step waits it reuses).
//! - `wire/`: `server` (connections), `dispatch` (the one module that knows every handler),
//!   `resend` (exactly-once answers).
//! - [`serve`]: start-up, loops and shutdown, with `effects` (carries out commits' effects) and
//!   `recovery` (re-adoption after a restart).

// Unit tests set up files and processes directly; the code they test keeps clippy.toml's rules.
#![cfg_attr(test, allow(clippy::disallowed_methods, clippy::disallowed_types))]

mod error;
mod fieldnotes;
mod git;
mod handlers;
mod land;
pub mod remote;
mod run;
mod sheep;
mod state;
mod wire;

pub mod clock;
pub mod serve;

pub use error::BrokerError;
pub use state::broker::BrokerConfig;
pub use state::journal;
