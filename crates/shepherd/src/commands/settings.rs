//! `shepherd settings …`: settings.

use std::process::ExitCode;

use clap::Args;

use crate::context::Context;
use crate::error::CliError;
use crate::output::Printer;

#[derive(Debug, Args)]
pub(crate) struct SettingsArgs {}

pub(crate) fn run(
    _args: SettingsArgs,
    _ctx: &Context,
    _printer: &Printer,
) -> Result<ExitCode, CliError> {
    Err(CliError::new(
        "unavailable",
        "shepherd settings is not built yet",
    ))
}
