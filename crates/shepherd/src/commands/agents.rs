//! `shepherd agents …`: agent definitions.

use std::process::ExitCode;

use clap::Args;

use crate::context::Context;
use crate::error::CliError;
use crate::output::Printer;

#[derive(Debug, Args)]
pub(crate) struct AgentsArgs {}

pub(crate) fn run(
    _args: AgentsArgs,
    _ctx: &Context,
    _printer: &Printer,
) -> Result<ExitCode, CliError> {
    Err(CliError::new(
        "unavailable",
        "shepherd agents is not built yet",
    ))
}
