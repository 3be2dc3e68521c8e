//! `shepherd`: one binary for every Shepherd program, and nothing else.
//!
//! It parses the arguments (`cli`), hands the command to the crate that serves it
//! (`dispatch`: the CLI's commands in `shepherd-cli`, the MCP server in `shepherd-mcp`, the
//! dashboard in `shepherd-dash`, the browser front end in `shepherd-web`, the supervisor and
//! the agent driver in `shepherd-sheep`) and renders the outcome once (`output`): a human line,
//! or with `--json` exactly one compact JSON document. Shell completions and manual pages
//! (`shell`) are made from the argument tree here. The two commands that run the broker crate
//! itself are here too, so no front end links it: the broker's process (`broker_process`) and
//! a remote host's side of it (`remote_host`).

mod broker_process;
mod cli;
mod dispatch;
#[cfg(test)]
mod docs_names;
mod output;
mod remote_host;
mod shell;

use shepherd_core::error_code::ErrorCode;
use std::process::ExitCode;

use clap::Parser as _;

fn main() -> ExitCode {
    // A supervisor runs beside every sheep for its whole life: it skips building the whole
    // command tree (every command's help and arguments) and parses only its own arguments, so
    // a thousand of them start faster and keep less memory.
    match std::env::args_os().nth(1) {
        Some(first) if first == "supervise" => return supervise(),
        // Inside every sandbox, between bubblewrap and the sheep's program: as lean.
        Some(first) if first == "sandbox-enter" => return sandbox_enter(),
        _ => {}
    }
    let cli = match cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => return usage_error(&err),
    };
    let json = cli.json;
    match dispatch::run(cli.command, &output::printer(json)) {
        Ok(code) => code,
        Err(err) => output::error(json, &err),
    }
}

/// `shepherd supervise …`, parsed on its own (its arguments are the same as under the full
/// command tree, which a test checks).
fn supervise() -> ExitCode {
    let args = match cli::SuperviseOnly::try_parse_from(std::env::args_os().skip(1)) {
        Ok(parsed) => parsed.args,
        Err(err) => return usage_error(&err),
    };
    match shepherd_sheep::supervise::run(&args) {
        Ok(code) => code,
        Err(err) => output::error(false, &err),
    }
}

/// `shepherd sandbox-enter …`, parsed on its own like `supervise`.
fn sandbox_enter() -> ExitCode {
    let args = match cli::EnterOnly::try_parse_from(std::env::args_os().skip(1)) {
        Ok(parsed) => parsed.args,
        Err(err) => return usage_error(&err),
    };
    match shepherd_sheep::supervise::run_enter(&args) {
        Ok(code) => code,
        Err(err) => output::error(false, &err),
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
    let mut message = first.strip_prefix("error: ").unwrap_or(first).to_owned();
    // The human form lists the accepted values on a line of their own; the JSON form keeps
    // them in its one message.
    if let Some(clap::error::ContextValue::Strings(accepted)) =
        err.get(clap::error::ContextKind::ValidValue)
    {
        message.push_str(&format!(" (accepted: {})", accepted.join(", ")));
    }
    output::error(
        true,
        &shepherd_client::CliError::new(ErrorCode::InvalidArgument, message).with_exit(2),
    )
}
