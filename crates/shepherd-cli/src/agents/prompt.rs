//! `shepherd agents prompt <name>`: the system prompt a pi sheep of that definition gets.
//!
//! A definition's body is not the whole prompt: pi builds its own around it (tools, guidelines,
//! project context files, skills), the sheep extension puts the body in place of pi's identity
//! sentence, and the definition's flags drop the documentation section, the context files or
//! pi's whole prompt. Reading the file cannot show the result, so this starts pi exactly as a
//! sheep is started, with the sheep extension told to write down the prompt once pi has built it
//! and to end pi before it ever calls a model.

// This command's whole job is to run pi once, as a sheep is started, and read its prompt.
#![allow(clippy::disallowed_types)]

use shepherd_core::error_code::ErrorCode;
use std::path::{Path, PathBuf};
use std::process::{ExitCode, Stdio};
use std::time::Duration;

use clap::Args;
use serde::Serialize;
use shepherd_core::agent_def::{AgentDef, ModelChoice};

use super::{ScopeChoice, Search};
use crate::Printer;
use crate::ProjectArg;
use shepherd_client::CliError;
use shepherd_client::Context;

/// How long pi may take to start and build its prompt.
const CAPTURE_DEADLINE: Duration = Duration::from_secs(60);

#[derive(Debug, Args)]
pub(super) struct PromptArgs {
    /// The agent's name (case-sensitive).
    name: String,

    /// The model to build the prompt for [default: the definition's; none when it inherits].
    #[arg(long)]
    model: Option<String>,

    /// Write the prompt to this file (readable by you only) instead of printing it.
    #[arg(long, short, value_name = "FILE")]
    output: Option<PathBuf>,

    /// Which definitions to search [default: the agentScope setting].
    #[arg(long, value_enum)]
    scope: Option<ScopeChoice>,

    #[command(flatten)]
    project: ProjectArg,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CapturedPrompt<'a> {
    name: &'a str,
    /// The pi command line a sheep of this definition runs (without its session and extension).
    flags: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    output: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt: Option<&'a str>,
}

pub(super) fn run(
    args: &PromptArgs,
    ctx: &Context,
    printer: Printer,
) -> Result<ExitCode, CliError> {
    let search = Search::run(ctx, &args.project, args.scope)?;
    let def = search.get(ctx, &args.name)?;
    if let Some(command) = &def.command {
        return Err(CliError::new(
            ErrorCode::NotPi,
            format!(
                "{:?} runs {:?}, not pi, so Shepherd does not shape its system prompt; \
                 `shepherd agents show {}` shows its definition.",
                def.name,
                command.join(" "),
                def.name
            ),
        ));
    }
    let work = tempfile::Builder::new()
        .prefix("shepherd-prompt-")
        .tempdir()
        .map_err(|err| io_error("creating a scratch directory", &err))?;
    let model = args.model.clone().or_else(|| match &def.model {
        ModelChoice::Explicit(model) => Some(model.clone()),
        ModelChoice::Inherit => None,
    });
    let prompt = capture(def, model, &search.project_root, work.path())?;
    let flags =
        shepherd_client::pi_sheep::definition_args(def, None, None, Path::new("<body>")).argv;
    match &args.output {
        Some(file) => {
            shepherd_fs::write_atomic(file, prompt.as_bytes(), Some(0o600))
                .map_err(|err| io_error(&format!("writing {}", file.display()), &err))?;
            let shown = file.display().to_string();
            let report = CapturedPrompt {
                name: &def.name,
                flags: &flags,
                output: Some(shown.clone()),
                prompt: None,
            };
            printer.emit(&report, || {
                format!(
                    "Wrote the system prompt of {:?} ({} bytes) to {shown}.",
                    def.name,
                    prompt.len()
                )
            });
        }
        None => {
            let report = CapturedPrompt {
                name: &def.name,
                flags: &flags,
                output: None,
                prompt: Some(&prompt),
            };
            printer.emit(&report, || prompt.clone());
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Starts pi as a sheep of `def` is started, in `cwd`, and returns the prompt it built.
fn capture(
    def: &AgentDef,
    model: Option<String>,
    cwd: &Path,
    work: &Path,
) -> Result<String, CliError> {
    let body = work.join("body.md");
    shepherd_fs::write_atomic(&body, def.system_prompt.as_bytes(), Some(0o600))
        .map_err(|err| io_error("writing the definition's body", &err))?;
    let extension = shepherd_client::pi_sheep::install_sheep_extension(work)
        .map_err(|err| io_error("writing the pi sheep extension", &err))?;
    let captured = work.join("prompt.md");
    let definition = shepherd_client::pi_sheep::definition_args(def, model, None, &body);
    let pi_program = &shepherd_harness::profile(shepherd_core::harness::Harness::Pi).program;
    let pi = std::env::var(pi_program.var)
        .ok()
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| pi_program.name.to_owned());
    let mut command = tokio::process::Command::new(&pi);
    command
        .args(["--no-session", "--mode", "json", "-p", "-e"])
        .arg(&extension)
        .args(&definition.argv)
        .arg("Shepherd: show the system prompt")
        .envs(definition.env)
        .env("SHEPHERD_CAPTURE_SYSTEM_PROMPT", &captured)
        .env_remove("SHEPHERD_SOCKET")
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|err| io_error("starting the async runtime", &err))?;
    let output = runtime.block_on(async {
        let child = command.spawn().map_err(|err| {
            CliError::new(
                ErrorCode::PiUnavailable,
                format!(
                    "cannot start pi ({pi:?}): {err}; install pi or set {}",
                    pi_program.var
                ),
            )
        })?;
        tokio::time::timeout(CAPTURE_DEADLINE, child.wait_with_output())
            .await
            .map_err(|_| {
                CliError::new(
                    ErrorCode::Timeout,
                    format!(
                        "pi ({pi:?}) did not build its prompt within {} s",
                        CAPTURE_DEADLINE.as_secs()
                    ),
                )
            })?
            .map_err(|err| io_error("waiting for pi", &err))
    })?;
    fs_err::read_to_string(&captured).map_err(|_| {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let last = stderr
            .lines()
            .rev()
            .find(|line| !line.trim().is_empty())
            .unwrap_or("no output");
        CliError::new(
            ErrorCode::PiFailed,
            format!(
                "pi ({pi:?}) ended ({}) before building its prompt: {}",
                output.status,
                last.trim()
            ),
        )
    })
}

fn io_error(doing: &str, err: &std::io::Error) -> CliError {
    CliError::new(ErrorCode::Io, format!("{doing}: {err}"))
}
