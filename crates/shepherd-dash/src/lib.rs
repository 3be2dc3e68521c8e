//! `shepherd herd --tui` (or `shepherd dash`): a live dashboard of a herd in the terminal.
//!
//! It is a thin client of the broker protocol. What it shows comes from the herd view the
//! broker pushes after every change (`herd.subscribe`, the feed `herd --follow` prints): one
//! row per sheep, the settled tasks, totals. Between pushes only the clocks move, and they are
//! redrawn at most once a second. What its keys do is one broker request each (focus a pane,
//! read output, message, delegate, close); it keeps no herd state of its own.
//!
//! The parts: `board` and `columns` work out the rows and the columns that fit (pure),
//! `ui` is the dashboard's own state (selection, filter, overlays) and turns keys into
//! intents (pure), `render` draws a frame from both (pure), `shepherd_client::herd_feed`
//! follows the herd, `actions` makes the requests, `shepherd_client::herds` finds every herd
//! on this machine, `terminal` holds the terminal and gives it back however the dashboard
//! ends, and `app` is the loop that ties them together.

#![deny(clippy::print_stdout)]

mod actions;
mod app;
mod board;
mod columns;
mod render;
mod terminal;
mod ui;

use shepherd_core::error_code::ErrorCode;
use std::io::IsTerminal;
use std::process::ExitCode;

use clap::Args;

use shepherd_client::CliError;
use shepherd_client::Context;
pub use shepherd_client::connect::ViewArgs;
use shepherd_client::connect::{HerdArgs, runtime, target};

/// The live herd dashboard (the same as `shepherd herd --tui`).
#[derive(Debug, Args)]
pub struct DashArgs {
    #[command(flatten)]
    pub view: ViewArgs,
    #[command(flatten)]
    pub herd: HerdArgs,
}

/// Runs the dashboard on this terminal until the person quits.
pub fn run(
    view: &ViewArgs,
    herd: &HerdArgs,
    ctx: &Context,
    json: bool,
) -> Result<ExitCode, CliError> {
    if json {
        return Err(CliError::new(
            ErrorCode::InvalidArgument,
            "the dashboard draws on a terminal and has no --json form; use `shepherd herd --follow --json` for a stream of herd documents",
        )
        .with_exit(2));
    }
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        return Err(CliError::new(
            ErrorCode::NotATerminal,
            "the dashboard needs a terminal on stdin and stdout",
        ));
    }
    let first = if view.all {
        None
    } else {
        Some(target(ctx, herd)?)
    };
    let options = app::Options {
        color: std::env::var_os("NO_COLOR").is_none_or(|value| value.is_empty()),
        frozen_clock: view.frozen_clock,
        panic_key: std::env::var_os("SHEPHERD_DASHBOARD_PANIC_KEY").is_some(),
    };
    runtime()?.block_on(app::run(first, ctx, &options))?;
    Ok(ExitCode::SUCCESS)
}

/// `shepherd dash`; `json` is whether `--json` was given (the dashboard has no JSON form).
pub fn dash(args: &DashArgs, ctx: &Context, json: bool) -> Result<ExitCode, CliError> {
    run(&args.view, &args.herd, ctx, json)
}
