//! The controls on the command line: `shepherd resume`, the budget options `delegate` and
//! `run` share, and how a closed isolated sheep's worktree is shown.

use shepherd_core::error_code::ErrorCode;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use shepherd_core::budget::Budget;
use shepherd_core::protocol::{ResumeParams, SpawnResult, calls};
use shepherd_core::worktree::WorktreeReport;

use crate::Printer;
use shepherd_client::CliError;
use shepherd_client::Context;
use shepherd_client::connect::HerdArgs;
use shepherd_client::connect::call;
use shepherd_client::connect::{caller_context, spawn_wait};
use shepherd_core::settings::Backend as BackendArg;

/// Limits on a task: reaching one stops it and settles it blocked (pi sheep).
#[derive(Debug, Clone, Default, Args)]
pub(crate) struct BudgetArgs {
    /// Most model turns the task may take.
    #[arg(long, value_name = "N")]
    max_turns: Option<u64>,
    /// Most tool calls the task may make.
    #[arg(long, value_name = "N")]
    max_tool_calls: Option<u64>,
    /// Most tokens (input, output and cache) the task may use.
    #[arg(long, value_name = "N")]
    max_tokens: Option<u64>,
    /// Most cost the task may run up (the model's pricing, e.g. US dollars).
    #[arg(long, value_name = "AMOUNT")]
    max_cost: Option<f64>,
}

impl BudgetArgs {
    /// The budget these options give, if any; a bad value is refused naming it.
    pub(crate) fn budget(&self) -> Result<Option<Budget>, CliError> {
        let budget = Budget {
            turns: self.max_turns,
            tool_calls: self.max_tool_calls,
            tokens: self.max_tokens,
            cost: self.max_cost,
        };
        budget.check().map_err(|err| {
            let flag = match err.key {
                "turns" => "--max-turns",
                "toolCalls" => "--max-tool-calls",
                "tokens" => "--max-tokens",
                _ => "--max-cost",
            };
            CliError::new(ErrorCode::InvalidBudget, format!("{flag}: {err}")).with_exit(2)
        })?;
        Ok((!budget.is_empty()).then_some(budget))
    }
}

/// Reopen a closed or exited sheep on its own session (pi), under the same name.
#[derive(Debug, Args)]
pub struct ResumeArgs {
    /// The sheep: its agent id, a unique prefix of it, or its display name.
    agent_id: String,
    /// Where it runs now (default: where it ran before).
    #[arg(long, value_enum)]
    backend: Option<BackendArg>,
    #[command(flatten)]
    herd: HerdArgs,
}

pub fn resume(args: ResumeArgs, ctx: &Context, printer: &Printer) -> Result<ExitCode, CliError> {
    let params = ResumeParams {
        id: super::short_ids::sheep_id(ctx, &args.herd, args.agent_id)?,
        backend: args.backend,
        caller: Some(caller_context()),
    };
    // A resume of an exited sheep closes what is left of it first.
    let wait = spawn_wait() + Duration::from_secs(30);
    let result: SpawnResult = call::<calls::Resume>(ctx, &args.herd, &params, wait)?;
    printer.emit(&result, || {
        format!(
            "resumed {} ({}) on {}",
            result.display_name, result.agent_id, result.backend
        )
    });
    Ok(ExitCode::SUCCESS)
}

/// The lines that say what became of a closed sheep's worktree.
pub(crate) fn worktree_text(report: &WorktreeReport) -> String {
    match report {
        WorktreeReport::Local(local) if !local.kept && local.patch.is_none() => {
            format!("\nworktree {} removed (clean, no new commits)", local.path)
        }
        WorktreeReport::Local(local) => {
            let mut out = if local.kept {
                format!(
                    "\nworktree kept: {} (branch {}): {}",
                    local.path,
                    local.branch,
                    local.reason.as_deref().unwrap_or_default()
                )
            } else {
                format!(
                    "\nworktree {} removed; its work stays on branch {}",
                    local.path, local.branch
                )
            };
            if let Some(preserved) = &local.preserved {
                out.push_str(&format!("\n  uncommitted changes preserved on {preserved}"));
            }
            if let Some(patch) = &local.patch {
                if !patch.diffstat.is_empty() {
                    out.push_str(&format!("\n  {}", patch.diffstat));
                }
                for file in &patch.files {
                    out.push_str(&format!("\n  file {file}"));
                }
                for commit in &patch.commits {
                    out.push_str(&format!("\n  commit {commit}"));
                }
                if !patch.integrate.is_empty() {
                    out.push_str(&format!("\n  {}", patch.integrate));
                }
            }
            out
        }
        WorktreeReport::Remote(remote) => {
            let mut out = if remote.kept {
                format!(
                    "\nworktree kept on host {}: {} (branch {}): {}",
                    remote.host,
                    remote.path,
                    remote.branch,
                    remote.reason.as_deref().unwrap_or_default()
                )
            } else {
                format!(
                    "\nworktree on host {} removed: {}",
                    remote.host, remote.path
                )
            };
            if let Some(home) = remote.brought_home_phrase() {
                out.push_str(&format!("\n  {home}"));
            }
            let clean = remote.commits.is_empty() && !remote.kept;
            if clean {
                out.push_str(" (clean, no new commits)");
            }
            for commit in &remote.commits {
                out.push_str(&format!("\n  commit {commit}"));
            }
            if !clean && !remote.integrate.is_empty() {
                out.push_str(&format!("\n  {}", remote.integrate));
            }
            out
        }
    }
}
