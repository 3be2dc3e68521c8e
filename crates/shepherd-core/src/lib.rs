//! The pure heart of Shepherd.
//!
//! Everything a sheep, a task, a message or a note *is* lives here, as plain data and pure
//! functions: ids, labels and display names, agent-definition parsing, the settings model, the
//! herd state machine, message envelopes, note and `shepherd.md` rendering, and the broker wire
//! protocol. Nothing in this crate touches the filesystem, spawns a process, reads the
//! environment or looks at a clock: callers pass `now` and file contents in, and act on the
//! values that come back. That is what makes every rule here testable without a terminal, an
//! agent or a disk.

pub mod agent_def;
pub mod backend;
pub mod board;
pub mod budget;
pub mod dirs;
pub mod envelope;
pub mod error_code;
pub mod fieldnotes;
pub mod harness;
pub mod herd;
pub mod hosts;
pub mod ids;
pub mod label;
pub mod land;
pub mod limit;
pub mod printable;
pub mod protocol;
pub mod resources;
pub mod run;
pub mod sandbox;
pub mod settings;
pub mod slug;
pub mod spawn;
pub mod strategy;
pub mod task;
pub mod time;
pub mod worktree;
