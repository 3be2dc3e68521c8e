//! `shepherd harness --plan FILE`: the driver that runs a sheep on a coding agent other than pi.
//!
//! The broker composes the agent's configuration and a plan at spawn; this driver is the
//! sheep's program under its supervisor. It speaks for the sheep with the sheep's own
//! credential, the way pi's sheep extension does inside pi: it receives the sheep's inbox as
//! pushes, hands each task, reply, question and reminder to the agent (plain messages wait for
//! the next of those, as with pi), and reports the agent's runs — `ready`, `agent_start`,
//! `run_settled` with the stop reason, an error that ended the run, the final words and what
//! the task's turns cost — so the broker nudges a turn that ended without `shepherd_done`,
//! fails a task whose run hit a provider error, and completes the note. The agent reaches the
//! broker itself only through its sheep tools (`shepherd mcp --sheep`).
//!
//! Headless, each delegation is one turn of the agent's one-shot mode, resuming the same agent
//! session every time (`headless`). In a pane (tmux, Herdr), the agent's own TUI runs there and
//! each delegation is typed into it (`visible`).

mod headless;
mod records;
mod usage;
mod visible;

use shepherd_core::error_code::ErrorCode;
use std::collections::VecDeque;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use shepherd_client::wire::{ClientError, Link, Push};
use shepherd_core::envelope::{Envelope, Kind};
use shepherd_core::herd::Payload;
use shepherd_core::protocol::{AckParams, NoParams, ReportEvent, ReportParams, Role, calls};
use shepherd_harness::{Adapter, Plan, Telemetry, Turn};
use tokio::time::Instant;

use shepherd_client::CliError;
use shepherd_client::connect::{SheepCapability, sheep};

/// How long one report or acknowledgement may take.
const REQUEST_DEADLINE: Duration = Duration::from_secs(15);

#[derive(Debug, Args)]
pub struct HarnessArgs {
    /// The plan the broker wrote for this sheep.
    #[arg(long, value_name = "FILE")]
    plan: PathBuf,
}

pub fn run(args: &HarnessArgs) -> Result<ExitCode, CliError> {
    let plan = Plan::read(&args.plan).map_err(|err| CliError::new(err.code(), err.to_string()))?;
    let adapter = shepherd_harness::adapter(plan.harness).ok_or_else(|| {
        CliError::new(
            ErrorCode::InvalidHarness,
            format!("{} sheep are not run by this driver", plan.harness),
        )
    })?;
    let program = plan.program.first().cloned().unwrap_or_default();
    if !std::path::Path::new(&program).is_file() {
        // Inside a sandbox, an agent installed where the sandbox hides it is missing too.
        let confined = std::env::var("SHEPHERD_SANDBOX")
            .ok()
            .filter(|mode| !mode.is_empty() && mode != "off")
            .map(|mode| {
                format!(
                    ", or not readable in sandbox {mode}: add the directory it is installed in \
                     to the sandboxPaths setting"
                )
            })
            .unwrap_or_default();
        return Err(CliError::new(
            ErrorCode::HarnessMissing,
            format!(
                "{} is not installed at {program}{confined}",
                plan.harness.title()
            ),
        ));
    }
    let cap = SheepCapability::from_env()?;
    let runtime = shepherd_client::connect::runtime()?;
    let code = runtime.block_on(async {
        let in_pane = plan.visible && visible::in_terminal();
        let mut driver = Driver::new(plan, adapter, &cap);
        if in_pane {
            visible::drive(&mut driver).await
        } else {
            headless::drive(&mut driver).await
        }
    });
    // The pane's keys are read on a blocking thread that only a key would end: do not wait
    // for it.
    runtime.shutdown_background();
    Ok(ExitCode::from(code?))
}

/// One envelope waiting for the agent, with its inbox position.
#[derive(Debug, Clone)]
pub(super) struct Pending {
    seq: u64,
    envelope: Envelope,
}

impl Pending {
    /// Whether this item starts a turn (a task, a reply, a question, a reminder); a plain
    /// message waits for the next one, as with pi.
    fn triggers(&self) -> bool {
        self.envelope.triggers_turn()
    }
}

/// The task the agent works on, and what its turns have cost so far.
#[derive(Debug)]
pub(super) struct TaskTrack {
    telemetry: Telemetry,
    /// Its `shepherd_done` was seen: later turns are not the task's.
    settled: bool,
}

/// The state the driver keeps between turns.
pub(super) struct Driver {
    plan: Plan,
    adapter: &'static dyn Adapter,
    link: Link,
    subscribed: u64,
    last_seq: u64,
    queue: VecDeque<Pending>,
    /// The agent's session, once a turn created it.
    session: Option<String>,
    /// The prompt of a first turn that failed before the agent kept its session (a provider
    /// limit on the first request), asked again with the next.
    unsaved_prompt: Option<String>,
    task: Option<TaskTrack>,
}

impl Driver {
    /// Keeps the agent session the turns continue, on disk too, so a resume finds it.
    fn learn_session(&mut self, session: &str) {
        if self.session.as_deref() == Some(session) {
            return;
        }
        self.session = Some(session.to_owned());
        if let Err(err) = shepherd_harness::record_session(&self.plan.dir, session) {
            tracing::warn!("cannot record the agent session: {err}");
        }
    }

    fn new(plan: Plan, adapter: &'static dyn Adapter, cap: &SheepCapability) -> Self {
        // A resumed sheep's first turn continues the session its earlier turns built.
        let session = plan.resume.clone();
        Self {
            plan,
            adapter,
            link: sheep(cap, Role::Sheep),
            subscribed: u64::MAX,
            last_seq: 0,
            queue: VecDeque::new(),
            session,
            unsaved_prompt: None,
            task: None,
        }
    }

    /// Subscribes (again, after a reconnect) so the inbox is pushed.
    async fn ensure_subscribed(&mut self) -> Result<(), ClientError> {
        if self.link.is_connected() && self.link.generation() == self.subscribed {
            return Ok(());
        }
        self.link
            .send::<calls::Subscribe>(&NoParams {}, deadline())
            .await?;
        self.subscribed = self.link.generation();
        Ok(())
    }

    /// Takes what a push brought into the queue (each item once).
    fn take_push(&mut self, push: Push) -> bool {
        let inbox = match push {
            Push::Shutdown => return false,
            Push::Inbox(inbox) => inbox,
            _ => return true,
        };
        for item in inbox.items {
            if item.seq <= self.last_seq {
                continue;
            }
            self.last_seq = item.seq;
            if let Payload::Envelope { envelope } = item.payload {
                self.queue.push_back(Pending {
                    seq: item.seq,
                    envelope,
                });
            }
        }
        true
    }

    /// The next turn's prompt, when a triggering item is queued: the plain messages before it
    /// and the item itself, in order, with the inbox position to acknowledge.
    fn next_prompt(&mut self) -> Option<(String, u64)> {
        let until = self.queue.iter().position(Pending::triggers)?;
        let items: Vec<Pending> = self.queue.drain(..=until).collect();
        let mut parts = Vec::new();
        for item in &items {
            if item.envelope.kind == Kind::Task {
                self.task = Some(TaskTrack {
                    telemetry: Telemetry {
                        harness: Some(self.plan.harness),
                        ..Telemetry::default()
                    },
                    settled: false,
                });
            }
            parts.push(shepherd_client::envelope_text::envelope_for_sheep(
                &item.envelope,
            ));
        }
        let seq = items.last().map_or(0, |item| item.seq);
        Some((parts.join("\n\n"), seq))
    }

    async fn ack(&mut self, seq: u64) {
        if let Err(err) = self
            .link
            .send::<calls::Ack>(&AckParams { seq }, deadline())
            .await
        {
            eprintln!("shepherd harness: acknowledging the inbox failed: {err}");
        }
    }

    /// Reports what one model response used; returns the limit the task reached when the
    /// broker says to stop.
    async fn report_usage(&mut self, usage: shepherd_core::budget::Usage) -> Option<String> {
        let params = ReportParams {
            event: ReportEvent::Turn,
            usage: Some(usage),
            ..ReportParams::default()
        };
        match self.link.send::<calls::Report>(&params, deadline()).await {
            Ok(answer) => answer.stop,
            Err(err) => {
                eprintln!("shepherd harness: a usage report to the broker failed: {err}");
                None
            }
        }
    }

    /// Reports that the run's first model response showed: a sheep let go after a provider
    /// limit has answered, so the next ones on its key may go.
    async fn report_answered(&mut self) {
        let params = ReportParams {
            event: ReportEvent::Answered,
            ..ReportParams::default()
        };
        if let Err(err) = self.link.send::<calls::Report>(&params, deadline()).await {
            eprintln!("shepherd harness: reporting a model response to the broker failed: {err}");
        }
    }

    /// Reports a limit the agent rode out with its own retries, for the task's note.
    async fn report_ridden(&mut self, ridden: &shepherd_harness::Ridden) {
        let since = ridden
            .since
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        let ms = |d: Duration| i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
        let params = ReportParams {
            event: ReportEvent::RiddenOut,
            ridden_out: Some(shepherd_core::herd::limits::RiddenOut {
                class: ridden.class,
                since: ms(since),
                waited_ms: ms(ridden.waited),
                replies: ridden.replies,
            }),
            ..ReportParams::default()
        };
        self.report(&params).await;
    }

    /// Reports the end of a run: what `turn` added to the open task's figures (until the turn
    /// that settled it), the task's final words, and the error that ended the run.
    async fn settle_run(
        &mut self,
        turn: &Turn,
        elapsed: Duration,
        transcript: Option<PathBuf>,
        error: Option<String>,
    ) {
        let mut text = None;
        let mut telemetry = None;
        if let Some(task) = self.task.as_mut() {
            if !task.settled {
                task.telemetry.add(turn, elapsed);
                task.telemetry.transcript = transcript;
                task.settled = turn.done_called;
            }
            text = task.telemetry.final_text.clone();
            telemetry = Some(task.telemetry.to_metadata());
        }
        // An agent that found no login says so in its own words ("Not logged in"); the sheep
        // adds which variables its environment lacks, since the fix is the parent's.
        let error = error.map(|error| {
            match self
                .adapter
                .missing_login(&error, &shepherd_harness::ProcessEnv)
            {
                Some(lacks) => format!("{error}: {lacks}"),
                None => error,
            }
        });
        let params = ReportParams {
            event: ReportEvent::RunSettled,
            stop_reason: Some(if error.is_some() { "error" } else { "stop" }.to_owned()),
            retry_after_ms: turn.retry_after_ms.filter(|_| error.is_some()),
            error,
            text,
            session_file: None,
            telemetry,
            usage: None,
            ridden_out: None,
        };
        self.report(&params).await;
    }

    async fn report(&mut self, params: &ReportParams) {
        if let Err(err) = self.link.send::<calls::Report>(params, deadline()).await {
            eprintln!("shepherd harness: a report to the broker failed: {err}");
        }
    }
}

/// A report with nothing but its event.
fn report(event: ReportEvent) -> ReportParams {
    ReportParams {
        event,
        ..ReportParams::default()
    }
}

fn signal_error(err: &std::io::Error) -> CliError {
    CliError::new(
        ErrorCode::Internal,
        format!("cannot install a signal handler: {err}"),
    )
}

fn deadline() -> Instant {
    Instant::now() + REQUEST_DEADLINE
}
