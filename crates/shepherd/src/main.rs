//! `shepherd`: the command-line front end and the broker, in one binary.
//!
//! The binary parses arguments (`cli`), resolves the user's directories once (`context`), runs
//! one command (`commands/*`, one file per command group) and renders the outcome once
//! (`output`, `error`): a human line, or with `--json` exactly one compact JSON document. The
//! libraries never print, read the environment or decide exit codes; this crate does.

mod cli;
mod commands;
mod context;
mod error;
mod output;

use shepherd_core::error_code::ErrorCode;
use std::process::ExitCode;

use clap::Parser as _;

fn main() -> ExitCode {
    let cli = match cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => return usage_error(&err),
    };
    let printer = output::Printer::new(cli.json);
    match commands::run(cli.command, &printer) {
        Ok(code) => code,
        Err(err) => printer.error(&err),
    }
}

/// Help and version go out as clap renders them; with `--json`, a usage error is one JSON
/// document like every other error, otherwise clap's own message.
fn usage_error(err: &clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(
        err.kind(),
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion
    ) || !std::env::args().any(|arg| arg == "--json")
    {
        err.exit();
    }
    let rendered = err.render().to_string();
    let first = rendered.lines().next().unwrap_or("invalid arguments");
    let message = first.strip_prefix("error: ").unwrap_or(first).to_owned();
    output::Printer::new(true)
        .error(&error::CliError::new(ErrorCode::InvalidArgument, message).with_exit(2))
}
