//! `shepherd merge`: land the branches isolated sheep and tasks left — by run, sheep, branch or
//! session — one by one into a target branch, with a check gating each step, conflicts
//! stopping the queue or going to a resolver sheep, and a failing check going to a fixer
//! sheep. The broker carries the queue out; this submits it, follows what it pushes (saying on
//! stderr what it is doing: waiting its turn, merging, checking), prints each branch's outcome
//! and exits 0 when all landed, 1 when a check failed, 2 when a conflict was not resolved or a
//! result was rejected, 130 when it was cancelled. The first Ctrl-C (or SIGTERM, SIGHUP)
//! cancels the merge in the broker and waits for it to end; `--cancel MERGE` cancels one
//! another command started. `--dry-run` shows what would land and what would conflict, and
//! changes nothing.
//!
//! `shepherd run --merge` lands a run's branches the same way once the run is over
//! (`land_run`).

use std::io::Write as _;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Args;
use shepherd_client::wire::{Link, Push};
use shepherd_core::error_code::ErrorCode;
use shepherd_core::land::preview::MergePreview;
use shepherd_core::land::{BranchState, MergeIdParams, MergeParams, MergeView, Strategy};
use shepherd_core::protocol::{Call, calls};
use tokio::signal::unix::{SignalKind, signal};

use crate::Printer;
use shepherd_client::connect::{HerdArgs, caller_context, deadline_after, parent, runtime, target};
use shepherd_client::{CliError, Context};

/// How often the CLI says a check is still running.
const STILL_EVERY: Duration = Duration::from_secs(30);

/// Land branches Shepherd made into a target branch, one by one.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// What to land, in order: run ids (`run-…`, their branches in input order), sheep (agent
    /// ids) and branches (`shepherd/…`).
    #[arg(value_name = "WHAT")]
    targets: Vec<String>,
    /// Also every branch of this fieldnotes session not landed yet.
    #[arg(long, value_name = "NAME")]
    session: Option<String>,
    /// Of those, land only these (branches or agent ids; repeat or separate with commas).
    #[arg(long, value_name = "BRANCH", value_delimiter = ',')]
    only: Vec<String>,
    /// Of those, leave these out (branches or agent ids; repeat or separate with commas).
    #[arg(long, value_name = "BRANCH", value_delimiter = ',')]
    skip: Vec<String>,
    /// Also land branches whose sheep's last task did not complete (each is marked).
    #[arg(long)]
    include_failed: bool,
    /// Land into this branch (made from the branches' base when missing; default: the branch
    /// the project had checked out when their work began).
    #[arg(long, value_name = "BRANCH")]
    into: Option<String>,
    /// How each branch lands: merge (a merge commit), squash (one commit), rebase (its
    /// commits replayed), ff-only (default: the mergeStrategy setting).
    #[arg(long, value_name = "STRATEGY", value_parser = Strategy::parse)]
    strategy: Option<Strategy>,
    /// A shell command that must pass in the merge worktree after each merge; a failing one
    /// leaves the target where it was.
    #[arg(long, value_name = "CMD")]
    check: Option<String>,
    /// Minutes the check may run before it is stopped and fails (fractions allowed; default:
    /// the mergeCheckTimeout setting).
    #[arg(long, value_name = "MINUTES")]
    check_timeout: Option<f64>,
    /// Hand a conflict to a sheep of this agent definition (it resolves and commits the merge,
    /// then the check runs); without it a conflict stops the queue.
    #[arg(long, value_name = "AGENT")]
    resolve: Option<String>,
    /// Hand a failing check to a sheep of this agent definition, which fixes the merge; the
    /// check runs again after it is done.
    #[arg(long, value_name = "AGENT")]
    fix: Option<String>,
    /// How many fixers a failing check gets at most (default 2).
    #[arg(long, value_name = "N", requires = "fix")]
    fix_attempts: Option<u32>,
    /// Delete each branch once it landed (and its preserved changes).
    #[arg(long)]
    prune: bool,
    /// Throw the branches away instead (their branches and preserved changes are deleted).
    #[arg(long, conflicts_with_all = ["into", "check", "resolve", "fix", "strategy", "prune", "dry_run"])]
    discard: bool,
    /// Show what would land, in order, with each branch's commits and diffstat and what would
    /// conflict; change nothing.
    #[arg(long)]
    dry_run: bool,
    /// Cancel a merge under way (its id): the target stays at its last verified landing.
    #[arg(long, value_name = "MERGE", conflicts_with_all = ["targets", "session", "dry_run", "discard"])]
    cancel: Option<String>,
    #[command(flatten)]
    herd: HerdArgs,
}

impl MergeArgs {
    fn params(&self) -> MergeParams {
        MergeParams {
            targets: self.targets.clone(),
            session: self.session.clone(),
            only: self.only.clone(),
            skip: self.skip.clone(),
            include_failed: self.include_failed,
            into: self.into.clone(),
            strategy: self.strategy,
            check: self.check.clone(),
            check_timeout: self.check_timeout,
            resolve: self.resolve.clone(),
            fix: self.fix.clone(),
            fix_attempts: self.fix_attempts,
            prune: self.prune,
            discard: self.discard,
            caller: Some(caller_context()),
            patch: false,
        }
    }
}

/// Runs `shepherd merge`.
pub fn run(args: &MergeArgs, ctx: &Context, printer: &Printer) -> Result<ExitCode, CliError> {
    if let Some(merge_id) = &args.cancel {
        let view = cancel(ctx, &args.herd, merge_id)?;
        printer.emit(&view, || shepherd_client::land_words::merge_text(&view));
        return Ok(ExitCode::from(view.exit_code.unwrap_or(130)));
    }
    let params = args.params();
    if args.dry_run {
        let preview = preview(ctx, &args.herd, &params)?;
        printer.emit(&preview, || {
            shepherd_client::land_words::preview_text(&preview)
        });
        return Ok(ExitCode::SUCCESS);
    }
    let view = land(ctx, &args.herd, &params, !printer.is_json())?;
    printer.emit(&view, || shepherd_client::land_words::merge_text(&view));
    Ok(ExitCode::from(view.exit_code.unwrap_or(2)))
}

/// What `params` would land, changing nothing.
fn preview(ctx: &Context, herd: &HerdArgs, params: &MergeParams) -> Result<MergePreview, CliError> {
    let target = target(ctx, herd)?;
    runtime()?.block_on(async {
        let mut link = parent(&target, deadline_after(Duration::ZERO)?).await?;
        send::<calls::MergePreview>(&mut link, params).await
    })
}

/// Cancels merge `merge_id` and follows it until it is over.
fn cancel(ctx: &Context, herd: &HerdArgs, merge_id: &str) -> Result<MergeView, CliError> {
    let target = target(ctx, herd)?;
    runtime()?.block_on(async {
        let mut link = parent(&target, deadline_after(Duration::ZERO)?).await?;
        let params = MergeIdParams {
            merge_id: merge_id.to_owned(),
        };
        let view = send::<calls::MergeCancel>(&mut link, &params).await?;
        follow(&mut link, view, false).await
    })
}

/// Sends `C` on `link` within the broker timeout.
async fn send<C: Call>(link: &mut Link, params: &C::Params) -> Result<C::Result, CliError> {
    Ok(link
        .send::<C>(params, deadline_after(Duration::ZERO)?)
        .await?)
}

/// Lands `params` in the herd of `herd` and returns the finished merge; `tell` says on stderr
/// what the queue is doing.
pub(crate) fn land(
    ctx: &Context,
    herd: &HerdArgs,
    params: &MergeParams,
    tell: bool,
) -> Result<MergeView, CliError> {
    let target = target(ctx, herd)?;
    runtime()?.block_on(async {
        let mut link = parent(&target, deadline_after(Duration::ZERO)?).await?;
        let view = send::<calls::MergeSubmit>(&mut link, params).await?;
        follow(&mut link, view, tell).await
    })
}

/// Follows the merge until it is over. The first SIGINT, SIGTERM or SIGHUP cancels it in the
/// broker (later ones are absorbed while it ends); a lost connection is reconnected and the
/// merge followed again.
async fn follow(link: &mut Link, mut view: MergeView, tell: bool) -> Result<MergeView, CliError> {
    let install = |kind: SignalKind| {
        signal(kind).map_err(|err| {
            CliError::new(
                ErrorCode::Internal,
                format!("cannot install a signal handler: {err}"),
            )
        })
    };
    let mut interrupt = install(SignalKind::interrupt())?;
    let mut terminate = install(SignalKind::terminate())?;
    let mut hangup = install(SignalKind::hangup())?;
    let mut following = link.generation();
    let mut cancel_asked = false;
    let mut progress = Progress::new(tell);
    let mut still = tokio::time::interval(STILL_EVERY);
    still.tick().await;
    while !view.finished {
        progress.show(&view);
        if link.generation() != following || !link.is_connected() {
            let params = MergeIdParams {
                merge_id: view.merge_id.clone(),
            };
            view = send::<calls::MergeAttach>(link, &params).await?;
            following = link.generation();
            continue;
        }
        let signalled = tokio::select! {
            push = link.next_event() => {
                match push {
                    Ok(Push::Merge(pushed)) => {
                        if pushed.merge_id == view.merge_id {
                            view = *pushed;
                        }
                    }
                    Ok(_) => {}
                    Err(err) if err.is_lost() => {}
                    Err(err) => return Err(err.into()),
                }
                false
            }
            _ = interrupt.recv() => true,
            _ = terminate.recv() => true,
            _ = hangup.recv() => true,
            _ = still.tick() => {
                progress.still(&view);
                false
            }
        };
        if signalled && !cancel_asked {
            cancel_asked = true;
            progress.say(&format!("cancelling {}…", view.merge_id));
            let params = MergeIdParams {
                merge_id: view.merge_id.clone(),
            };
            view = send::<calls::MergeCancel>(link, &params).await?;
        }
    }
    Ok(view)
}

/// What the CLI says on stderr while a merge runs: each change of what it is doing, once.
struct Progress {
    on: bool,
    said: Option<String>,
    since: Instant,
}

impl Progress {
    fn new(on: bool) -> Self {
        Self {
            on,
            said: None,
            since: Instant::now(),
        }
    }

    fn say(&self, line: &str) {
        if self.on {
            let mut err = std::io::stderr().lock();
            let _said = writeln!(err, "{line}");
        }
    }

    /// What the merge is doing now, in one line, when it is doing something.
    fn doing(view: &MergeView) -> Option<String> {
        if let Some(waiting) = &view.waiting_for {
            return Some(format!(
                "waiting for {waiting}, which lands into {} first…",
                view.target
            ));
        }
        let branch = view.branches.iter().find(|b| {
            matches!(
                b.state,
                BranchState::Merging | BranchState::Checking | BranchState::Fixing
            )
        })?;
        let doing = match branch.state {
            BranchState::Checking => format!(
                "checking {} ({})…",
                branch.branch,
                view.check.as_deref().unwrap_or_default()
            ),
            BranchState::Fixing => {
                format!("the check failed on {}; a fixer is at work…", branch.branch)
            }
            _ if branch.resolver.is_some() => {
                format!("{} conflicts; a resolver is at work…", branch.branch)
            }
            _ => format!("merging {}…", branch.branch),
        };
        Some(doing)
    }

    fn show(&mut self, view: &MergeView) {
        let doing = Self::doing(view);
        if doing != self.said {
            if let Some(line) = &doing {
                self.say(line);
            }
            self.said = doing;
            self.since = Instant::now();
        }
    }

    fn still(&self, view: &MergeView) {
        if let Some(doing) = Self::doing(view) {
            let secs = self.since.elapsed().as_secs();
            self.say(&format!(
                "  still {} ({} s)",
                doing.trim_end_matches('…'),
                secs
            ));
        }
    }
}

/// Lands a finished run's branches (`shepherd run --merge`), with the run's own check,
/// strategy and resolver: only those whose task completed.
pub(crate) fn land_run(
    ctx: &Context,
    herd: &HerdArgs,
    run_id: &str,
    check: Option<String>,
    resolve: Option<String>,
    strategy: Option<Strategy>,
    tell: bool,
) -> Result<MergeView, CliError> {
    let params = MergeParams {
        targets: vec![run_id.to_owned()],
        check,
        resolve,
        strategy,
        caller: Some(caller_context()),
        ..MergeParams::default()
    };
    land(ctx, herd, &params, tell)
}
