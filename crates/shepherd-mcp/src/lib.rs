//! `shepherd mcp`: Shepherd's tools for any MCP host, over stdio.
//!
//! Without flags the server is a parent: the host's model gets the pi parent tools (the
//! `shepherd` control tool, `shepherd_spawn`, `shepherd_delegate`, `shepherd_message`,
//! `shepherd_prompt`, `shepherd_watch`, `shepherd_status`, `shepherd_close`, `shepherd_resume`,
//! `shepherd_read`),
//! `shepherd_run` for one-call runs and `shepherd_inbox` for hosts that show no pushes. With
//! `--sheep` it serves a sheep's own tools instead (`sheep`). Either way it is a thin client
//! of the broker protocol: every decision is the broker's.
//!
//! The server ends when the host closes stdin (opencode), or sends SIGINT (Claude Code) or
//! SIGTERM (Codex, Gemini CLI): each is a normal end, exit status 0. A parent server whose
//! herd was its own (`herd::Herd::ephemeral`) then stops that herd, closing its sheep, since
//! no later server can reach it; a named herd (`--herd`) and a sheep's own herd live on.

#![deny(clippy::print_stdout)]

mod args;
pub mod catalogue;
#[cfg(test)]
mod catalogue_served;
mod controls;
mod environment;
mod error;
mod feed;
mod herd;
mod merge;
mod parent;
mod receipts;
mod run;
mod schema;
mod server;
mod sheep;
mod text;
mod waits;
mod words;

use shepherd_core::error_code::ErrorCode;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use rmcp::service::RunningService;
use rmcp::{RoleServer, ServerHandler, ServiceExt as _};
use tokio::signal::unix::{SignalKind, signal};

use shepherd_client::CliError;
use shepherd_client::Context;

/// Serve Shepherd's tools to an MCP host over stdio.
#[derive(Debug, Args)]
#[command(
    after_help = "Set it up in a host once, as docs/mcp.md says: Claude Code \
                  `claude mcp add --scope user shepherd -- shepherd mcp` and its tools allowed \
                  (`--allowedTools mcp__shepherd`, or \"mcp__shepherd\" in permissions.allow); \
                  Codex a [mcp_servers.shepherd] block in ~/.codex/config.toml with \
                  `default_tools_approval_mode = \"approve\"` and the provider keys in `env_vars`; \
                  Gemini CLI `gemini mcp add --scope user --trust -e 'KEY=$KEY' shepherd shepherd mcp`; \
                  opencode an `mcp.shepherd` entry `{\"type\": \"local\", \"command\": [\"shepherd\", \"mcp\"]}`."
)]
pub struct McpArgs {
    /// Serve a sheep's tools (shepherd_done, shepherd_message, shepherd_inbox) with the
    /// credential in this sheep's environment, instead of the parent's tools.
    #[arg(long)]
    sheep: bool,
    /// The herd's name: every server started with the same name (and project) reaches the same
    /// herd, across host restarts; the CLI reaches it with `--parent-session NAME`. Default: a
    /// herd of this server process alone, closed when it ends.
    #[arg(long, env = "SHEPHERD_HERD", value_name = "NAME")]
    herd: Option<String>,
    /// The project root (default: the host's first root from `roots/list`, else the current
    /// directory; inside a sheep, its herd's project).
    #[arg(long, value_name = "DIR")]
    project: Option<PathBuf>,
    /// The longest a waiting tool call (shepherd_watch, shepherd_run, shepherd_inbox) blocks,
    /// in seconds: by then it answers with what settled or arrived, or "still running".
    #[arg(
        long,
        env = "SHEPHERD_MCP_MAX_WAIT",
        value_name = "SECONDS",
        default_value_t = 25.0
    )]
    max_wait: f64,
}

/// The largest `--max-wait` accepted (hosts time calls out long before).
const MAX_WAIT_LIMIT: f64 = 3600.0;

pub fn run(args: McpArgs) -> Result<ExitCode, CliError> {
    if !(args.max_wait.is_finite() && args.max_wait > 0.0 && args.max_wait <= MAX_WAIT_LIMIT) {
        return Err(CliError::new(
            ErrorCode::InvalidWait,
            format!(
                "--max-wait `{}` must be a number of seconds above 0 and at most {MAX_WAIT_LIMIT}",
                args.max_wait
            ),
        )
        .with_exit(2));
    }
    if let Some(name) = &args.herd
        && (name.trim().is_empty() || name.chars().any(char::is_control))
    {
        return Err(CliError::new(
            ErrorCode::InvalidIdentity,
            format!("--herd `{name}` must be a non-empty name without control characters"),
        )
        .with_exit(2));
    }
    let bound = Duration::from_secs_f64(args.max_wait);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|err| {
            CliError::new(
                ErrorCode::Internal,
                format!("cannot start the async runtime: {err}"),
            )
        })?;
    if args.sheep {
        let server = sheep::Sheep::new(bound);
        let ended = runtime.block_on(async {
            let running = serve(server.clone()).await?;
            wait_for_end(running).await;
            Ok(ExitCode::SUCCESS)
        });
        // The stdin reader may still be blocked in a read nobody will finish (a signal ended
        // the session, not EOF): do not wait for it.
        runtime.shutdown_background();
        return ended;
    }
    // Hosts may start the server without XDG_RUNTIME_DIR: find the user's own.
    let ctx = Context::from_env_finding_runtime()?;
    let choice = herd::Choice {
        name: args.herd,
        project: args.project,
    };
    let server = server::Parent::new(ctx, choice, bound);
    let ended = runtime.block_on(async {
        let running = serve(server.clone()).await?;
        wait_for_end(running).await;
        server.shared.stop.cancel();
        if let Some(herd) = server.opened()
            && let Err(err) = herd.stop().await
        {
            eprintln!(
                "shepherd mcp: could not close this server's herd {}: {err}",
                herd.identity
            );
        }
        Ok(ExitCode::SUCCESS)
    });
    runtime.shutdown_background();
    ended
}

async fn serve<S: ServerHandler>(server: S) -> Result<RunningService<RoleServer, S>, CliError> {
    server.serve(rmcp::transport::stdio()).await.map_err(|err| {
        CliError::new(
            ErrorCode::Mcp,
            format!("the MCP session did not start: {err}"),
        )
    })
}

/// Waits until the host ends the session: stdin closed, SIGINT or SIGTERM.
async fn wait_for_end<S: ServerHandler>(running: RunningService<RoleServer, S>) {
    let (Ok(mut interrupt), Ok(mut terminate)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        drop(running.waiting().await);
        return;
    };
    let cancel = running.cancellation_token();
    tokio::select! {
        ended = running.waiting() => drop(ended),
        _ = interrupt.recv() => cancel.cancel(),
        _ = terminate.recv() => cancel.cancel(),
    }
}
