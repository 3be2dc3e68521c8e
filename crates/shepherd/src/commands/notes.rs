//! `shepherd notes …`: the fieldnotes store from the command line.

use std::process::ExitCode;

use clap::Subcommand;

use crate::context::Context;
use crate::error::CliError;
use crate::output::Printer;

#[derive(Debug, Subcommand)]
pub(crate) enum NotesCommand {
    /// List fieldnotes sessions.
    List,
}

pub(crate) fn run(
    _cmd: NotesCommand,
    _ctx: &Context,
    _printer: &Printer,
) -> Result<ExitCode, CliError> {
    Err(CliError::new(
        "unavailable",
        "shepherd notes is not built yet",
    ))
}
