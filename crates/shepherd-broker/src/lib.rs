//! The broker: the single owner of a herd's runtime state.
//!
//! One broker serves one parent in one project. It owns the herd (sheep, tasks, messages,
//! watchers), journals every accepted change before acknowledging it, fires deadlines, writes
//! fieldnotes, and talks to every participant over a Unix socket. Front ends — the CLI, the pi
//! extension, supervisors, sheep — are clients of [`client`].
//!
//! Layout, from the bottom up (no top-level module imports one above it, so none imports
//! another in a cycle; `scripts/module-cycles` checks it):
//! - [`paths`]: where a broker lives; [`clock`]: its time source; [`journal`]: durability;
//!   `error`; `fieldnotes`: the batched note writer; [`remote`]: SSH links to hosts, the wire
//!   and the host's side.
//! - `broker`: shared state and the commit path, which returns the effects a change calls for
//!   instead of calling the modules that act on them.
//! - What handlers share: `session` (who a connection speaks for), `launch_record`,
//!   `supervisor_link`, `notes` (a settled task's note), `remote_sheep` (a host's link and a
//!   remote sheep's backend, notes and pi), `worktree`, `auth`, `pi_launch` (a pi sheep's
//!   command line), `pi` (what its run leaves behind), `harness`.
//! - Request handlers: `spawn`, `resume`, `parent`, `handover`, `close`, `inbox`, `herd_feed`,
//!   `printed`, `receipts`, `sheep`, `supervisor`, `focus`, `run`, `broker_requests`;
//!   `recovery`: re-adoption after a restart; `autoclose`: closing settled sheep; `fallback`:
//!   a task handed to its agent's fallback when a limit lasts.
//! - `dispatch`: the one module that knows every handler; `effects`: carries out commits'
//!   effects; `server`: connections.
//! - [`serve`]: start-up, loops and shutdown.

// Unit tests set up files and processes directly; the code they test keeps clippy.toml's rules.
#![cfg_attr(test, allow(clippy::disallowed_methods, clippy::disallowed_types))]

mod auth;
mod autoclose;
mod broker;
mod broker_requests;
mod close;
mod controls;
mod dispatch;
mod effects;
mod error;
mod fallback;
mod fieldnotes;
mod focus;
mod handover;
mod harness;
mod herd_feed;
mod herdr_link;
mod inbox;
mod isolation;
mod launch_record;
mod live_usage;
mod notes;
mod parent;
mod pi;
mod pi_launch;
mod printed;
mod provider_limits;
mod receipts;
mod recovery;
pub mod remote;
mod remote_sheep;
mod resend;
mod resume;
mod run;
mod server;
mod session;
mod sheep;
mod spawn;
mod supervisor;
mod supervisor_link;
mod telemetry;
mod transcript;
mod worktree;

pub mod client;
pub mod clock;
pub mod journal;
pub mod paths;
pub mod serve;

pub use broker::BrokerConfig;
pub use error::BrokerError;
pub use pi_launch::{PiLaunch, definition_args, install_sheep_extension};
