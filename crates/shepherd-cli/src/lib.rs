//! The command-line front end: every `shepherd` command a person or a script types, one module
//! per command group, each with its arguments beside its code (their doc comments are the
//! help text). Parent-side commands reach the herd through `shepherd-client`; sheep-side ones
//! (`inbox`, `tell`, `done`, `note`) use the capability in the environment. Results go out
//! through the [`Printer`] the binary hands in, so this crate never writes to stdout itself.
//! It links neither the broker nor another front end: what a command runs of theirs (the
//! dashboard for `herd --tui`, the broker for `broker serve`, a host's probe for
//! `hosts check`) the binary hands in as a function.

#![deny(clippy::print_stdout)]

use std::path::PathBuf;

use clap::Args;

pub mod agents;
pub mod broker;
pub mod controls;
pub mod doctor;
pub mod herds;
pub mod hosts;
pub mod merge;
pub mod notes;
pub mod parent;
mod printer;
pub mod run;
pub mod settings;
pub mod sheep;
mod short_ids;
pub mod status;

pub use printer::{Printer, Sink};

/// `--project DIR`, shared by every command that works on one project.
#[derive(Debug, Clone, Args)]
pub struct ProjectArg {
    /// The project root (default: the current directory; inside a sheep, its herd's project).
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
}
