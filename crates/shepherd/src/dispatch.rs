//! Hands each command to the crate that serves it: the sheep-side and broker-host commands need
//! only the environment, the rest get the command's resolved [`Context`] first. Where one
//! front end's command runs another part (`herd --tui` the dashboard, `broker serve` the
//! broker, `hosts check` the broker's probe), it is handed in here, so front ends depend on
//! neither the broker nor each other.

use std::process::ExitCode;

use shepherd_cli::{
    agents, broker, controls, doctor, herds, hosts, merge, notes, parent, run, settings, sheep,
    status,
};

use clap::CommandFactory as _;

use crate::cli::{Cli, Command};
use shepherd_cli::Printer;

use crate::{broker_process, remote_host, shell};
use shepherd_client::{CliError, Context};

/// Runs one command and returns the process exit status.
pub(crate) fn run(command: Command, printer: &Printer) -> Result<ExitCode, CliError> {
    // Sheep-side commands need nothing but the capability in the environment.
    let command = match command {
        Command::Inbox(args) => return sheep::inbox(&args, printer),
        Command::Tell(args) => return sheep::tell(args, printer),
        Command::Done(args) => return sheep::done(args, printer),
        Command::Note(args) => return sheep::note(&args, printer),
        Command::Report(args) => return sheep::report(args, printer),
        Command::Supervise(args) => return shepherd_sheep::supervise::run(&args),
        Command::SandboxEnter(args) => return shepherd_sheep::supervise::run_enter(&args),
        Command::FlushInput => return Ok(shepherd_sheep::supervise::flush_input()),
        Command::Remote(args) => return remote_host::remote(&args, printer),
        Command::Harness(args) => return shepherd_sheep::driver::run(&args),
        Command::Completions(args) => return shell::completions(&args, Cli::command()),
        Command::Man(args) => return shell::man(&args, &Cli::command(), printer),
        Command::Mcp(args) => return shepherd_mcp::run(args),
        other => other,
    };
    let ctx = Context::from_env()?;
    match command {
        Command::Run(args) => run::run(&args, &ctx, printer),
        Command::Spawn(args) => parent::spawn(args, &ctx, printer),
        Command::Delegate(args) => parent::delegate(args, &ctx, printer),
        Command::Message(args) => parent::message(args, &ctx, printer),
        Command::Watch(args) => parent::watch(&args, &ctx, printer),
        Command::Status(args) => status::status(&args, &ctx, printer),
        Command::Close(args) => parent::close(args, &ctx, printer),
        Command::Resume(args) => controls::resume(args, &ctx, printer),
        Command::Read(args) => parent::read(args, &ctx, printer),
        Command::Herd(args) => status::herd(&args, &ctx, printer, shepherd_dash::run),
        Command::Herds(args) => herds::run(&args, &ctx, printer),
        Command::Merge(args) => merge::run(&args, &ctx, printer),
        Command::Dash(args) => shepherd_dash::dash(&args, &ctx, printer.is_json()),
        Command::Web(args) => shepherd_web::web(&args, &ctx, |ready| {
            printer.emit(ready, || match &ready.served_url {
                Some(served) => format!("{}\n{served}", ready.url),
                None => ready.url.clone(),
            });
        }),
        Command::Prune(args) => parent::prune(&args, &ctx, printer),
        Command::Broker(cmd) => broker::run(cmd, &ctx, printer, broker_process::serve),
        Command::Inbox(_)
        | Command::Tell(_)
        | Command::Done(_)
        | Command::Note(_)
        | Command::Report(_)
        | Command::Supervise(_)
        | Command::SandboxEnter(_)
        | Command::FlushInput
        | Command::Remote(_)
        | Command::Harness(_)
        | Command::Completions(_)
        | Command::Man(_)
        | Command::Mcp(_) => {
            unreachable!("handled above")
        }
        Command::Notes(cmd) => notes::run(cmd, &ctx, printer),
        Command::Agents(args) => agents::run(args, &ctx, printer),
        Command::Settings(args) => settings::run(args, &ctx, printer),
        Command::Hosts(args) => hosts::run(args, &ctx, printer, remote_host::probe),
        Command::Doctor(args) => doctor::run(&args, &ctx, printer),
    }
}
