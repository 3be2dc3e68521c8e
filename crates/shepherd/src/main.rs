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

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    let printer = output::Printer::new(cli.json);
    match commands::run(cli.command, &printer) {
        Ok(code) => code,
        Err(err) => printer.error(&err),
    }
}
