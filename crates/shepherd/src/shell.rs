//! `shepherd completions <shell>` and `shepherd man`: what a command-line tool installs beside
//! itself, generated from the same definitions as `--help`, so they never drift from it.

use shepherd_core::error_code::ErrorCode;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use clap_complete::Shell;

use shepherd_cli::Printer;
use shepherd_client::CliError;

/// Print a shell completion script.
#[derive(Debug, Args)]
#[command(after_help = "Install, for example: \
    `shepherd completions bash > ~/.local/share/bash-completion/completions/shepherd`, \
    `shepherd completions zsh > \"${fpath[1]}/_shepherd\"`, \
    `shepherd completions fish > ~/.config/fish/completions/shepherd.fish`.")]
pub(crate) struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    shell: Shell,
}

/// Prints the completion script of `command` (the whole `shepherd` tree).
pub(crate) fn completions(
    args: &CompletionsArgs,
    mut command: clap::Command,
) -> Result<ExitCode, CliError> {
    let mut out = Vec::new();
    clap_complete::generate(args.shell, &mut command, "shepherd", &mut out);
    write_stdout(&out)?;
    Ok(ExitCode::SUCCESS)
}

/// Print the manual page, or write one per command into a directory.
#[derive(Debug, Args)]
pub(crate) struct ManArgs {
    /// Write `shepherd.1` and `shepherd-<command>.1` for every command into this directory
    /// (for `MANPATH`) instead of printing `shepherd.1`.
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
}

/// Prints or writes the manual pages of `command` (the whole `shepherd` tree).
pub(crate) fn man(
    args: &ManArgs,
    command: &clap::Command,
    printer: &Printer,
) -> Result<ExitCode, CliError> {
    let Some(dir) = &args.dir else {
        let mut out = Vec::new();
        render(command, &mut out)?;
        write_stdout(&out)?;
        return Ok(ExitCode::SUCCESS);
    };
    fs_err::create_dir_all(dir).map_err(|err| io_error(dir, &err))?;
    let mut written = Vec::new();
    write_pages(command, "shepherd", dir, &mut written)?;
    printer.emit(&serde_json::json!({ "dir": dir, "pages": written }), || {
        format!("wrote {} manual pages to {}", written.len(), dir.display())
    });
    Ok(ExitCode::SUCCESS)
}

/// Writes the page of `command` (named `name`) and, below it, of each visible subcommand.
fn write_pages(
    command: &clap::Command,
    name: &str,
    dir: &Path,
    written: &mut Vec<String>,
) -> Result<(), CliError> {
    let command = command.clone().name(name.to_owned());
    let mut page = Vec::new();
    render(&command, &mut page)?;
    let file = format!("{name}.1");
    let path = dir.join(&file);
    shepherd_fs::write_atomic(&path, &page, None).map_err(|err| io_error(&path, &err))?;
    written.push(file);
    for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
        write_pages(sub, &format!("{name}-{}", sub.get_name()), dir, written)?;
    }
    Ok(())
}

fn render(command: &clap::Command, out: &mut Vec<u8>) -> Result<(), CliError> {
    clap_mangen::Man::new(command.clone())
        .render(out)
        .map_err(|err| CliError::new(ErrorCode::Io, format!("rendering the manual page: {err}")))
}

fn write_stdout(bytes: &[u8]) -> Result<(), CliError> {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(bytes).and_then(|()| stdout.flush()) {
        // A reader that stopped early (`| head`) is not a failure.
        Err(err) if err.kind() != std::io::ErrorKind::BrokenPipe => Err(CliError::new(
            ErrorCode::Io,
            format!("writing to stdout: {err}"),
        )),
        _ => Ok(()),
    }
}

fn io_error(path: &Path, err: &std::io::Error) -> CliError {
    CliError::new(ErrorCode::Io, format!("writing {}: {err}", path.display()))
}
