//! One module per command group; [`run`] dispatches to them.

pub(crate) mod agents;
pub(crate) mod notes;
pub(crate) mod settings;

use std::process::ExitCode;

use crate::cli::Command;
use crate::context::Context;
use crate::error::CliError;
use crate::output::Printer;

/// Runs one command and returns the process exit status.
pub(crate) fn run(command: Command, printer: &Printer) -> Result<ExitCode, CliError> {
    let ctx = Context::from_env()?;
    match command {
        Command::Notes(cmd) => notes::run(cmd, &ctx, printer),
        Command::Agents(args) => agents::run(args, &ctx, printer),
        Command::Settings(args) => settings::run(args, &ctx, printer),
    }
}
