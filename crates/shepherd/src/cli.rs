//! The top of the command tree. Each command group's arguments live beside its code in
//! `commands/<group>.rs`; their doc comments are the help text.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::commands;

/// Shepherd: spawn, task, message, watch and close coding agents, with a durable note for every
/// delegated task.
#[derive(Debug, Parser)]
#[command(name = "shepherd", version, about, max_term_width = 100)]
pub(crate) struct Cli {
    /// Print exactly one compact JSON document on one line instead of human text.
    #[arg(long, global = true)]
    pub(crate) json: bool,

    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Read and write fieldnotes sessions offline (scripts and other programs).
    #[command(subcommand)]
    Notes(commands::notes::NotesCommand),
    /// List, inspect and approve agent definitions.
    Agents(commands::agents::AgentsArgs),
    /// Show and change settings.
    Settings(commands::settings::SettingsArgs),
}

/// `--project DIR`, shared by every command that works on one project.
#[derive(Debug, Clone, Args)]
pub(crate) struct ProjectArg {
    /// The project root (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub(crate) project: Option<PathBuf>,
}
