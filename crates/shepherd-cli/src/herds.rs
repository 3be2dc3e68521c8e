//! `shepherd herds`: the herds of a project, or every herd of this user (`--all`), each with
//! its id, who drives it (a pi session, an MCP host by name and process, the command line),
//! its broker's pid and start, and what it holds — so the herd an MCP host started can be
//! found and followed (`shepherd herd --parent-session ID`, `shepherd dash`) without reading
//! any host's logs.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use serde_json::json;
use shepherd_client::herds::{self, HerdEntry};
use shepherd_client::{CliError, Context};

use crate::Printer;

/// `shepherd herds`.
#[derive(Debug, Args)]
pub struct HerdsArgs {
    /// Every herd of this user on this machine, not only the project's.
    #[arg(long)]
    pub all: bool,
    /// The project (default: the current directory; inside a sheep, its herd's project).
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
}

/// Runs `shepherd herds`.
pub fn run(args: &HerdsArgs, ctx: &Context, printer: &Printer) -> Result<ExitCode, CliError> {
    let project = if args.all {
        None
    } else {
        Some(canonical_project(ctx, args.project.as_deref())?)
    };
    let rt = shepherd_client::connect::runtime()?;
    let found = rt.block_on(async {
        match &project {
            Some(root) => herds::of_project(&ctx.dirs.runtime_dir, root).await,
            None => herds::list(&ctx.dirs.runtime_dir).await,
        }
    });
    let now = jiff::Timestamp::now().as_millisecond();
    printer.emit(&json!({ "herds": found }), || {
        if found.is_empty() {
            return match &project {
                Some(root) => format!("no herd runs for {}", root.display()),
                None => "no herd runs".to_owned(),
            };
        }
        found
            .iter()
            .map(|herd| lines(herd, now, project.is_none()))
            .collect::<Vec<_>>()
            .join("\n")
    });
    Ok(ExitCode::SUCCESS)
}

/// The project root made canonical, as herds record it.
pub(crate) fn canonical_project(
    ctx: &Context,
    project: Option<&std::path::Path>,
) -> Result<PathBuf, CliError> {
    let args = shepherd_client::connect::HerdArgs {
        project: project.map(std::path::Path::to_path_buf),
        parent_session: None,
    };
    Ok(shepherd_client::connect::target(ctx, &args)?
        .address
        .project_root)
}

/// One herd in two lines: its id and driver, then its broker and what it holds (and, listing
/// every project's, where).
pub(crate) fn lines(herd: &HerdEntry, now: i64, with_project: bool) -> String {
    let up = shepherd_core::time::human_duration_ms((now - herd.started_at).max(0));
    let mut out = format!(
        "{}  {}\n  broker pid {}, up {up}; {} sheep ({} working), {} open tasks",
        herd.identity,
        herd.driver_words(),
        herd.broker_pid,
        herd.sheep,
        herd.working,
        herd.open_tasks
    );
    if with_project {
        out.push_str(&format!("\n  project {}", herd.project.display()));
    }
    out
}
