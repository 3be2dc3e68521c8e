//! A visible sheep on another agent: the agent's own TUI in the sheep's pane, driven the way a
//! person drives it.
//!
//! In a pane (tmux, Herdr) the user should see the agent they know and be able to use it, so
//! the driver runs the agent's interactive program inside a pseudo-terminal it owns and relays
//! both ways in raw mode: the pane's keys to the agent, the agent's output to the pane, the
//! pane's size (and every change of it) to the agent. The same output feeds a virtual screen
//! ([`vt100`]), which is how the driver knows what a person looking at the pane would: the TUI
//! takes input once its ready text shows and it has gone quiet; a turn runs while it shows
//! that it works (its interrupt hint or working line), and has ended once that is gone and the
//! screen is quiet again. Each task, reply, question or reminder is typed in once the agent is
//! idle — a bracketed paste, then Enter once the paste has been drawn — and queued until then,
//! so the reports (`ready`, `agent_start`, `run_settled`) and therefore the broker's nudges and
//! failures work as they do headless. What a turn cost is not on the screen: after each turn
//! the driver reads what the turn added to the agent's own records (`records`: its transcript,
//! or its export of the session), where the adapter knows how (the session, tool calls,
//! tokens, cost, final words, a provider's refusal), and settles the turn once that is read.
//!
//! The agent runs in a session of its own (its pseudo-terminal is its controlling terminal),
//! tied to this driver by a parent-death signal; when the sheep is closed the driver ends the
//! agent's whole process group before it exits, and what the agent started (its MCP server) is
//! reparented to the supervisor, which ends it.

// This driver owns the agent's process: it runs the agent's TUI in a pseudo-terminal.
#![allow(clippy::disallowed_types)]

use std::io::Write;
use std::time::Duration;

use pty_process::{OwnedReadPty, OwnedWritePty, Size};
use shepherd_core::error_code::ErrorCode;
use shepherd_harness::Turn;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::signal::unix::{SignalKind, signal};
use tokio::time::Instant;

use super::{Driver, records, report, signal_error};
use shepherd_client::CliError;

/// How long the screen must stay unchanged before the TUI counts as settled (ready, a paste
/// drawn, a turn over). Spinners redraw several times a second while a turn runs.
const QUIET: Duration = Duration::from_millis(800);

/// How long a typed turn may go without showing that it works before it counts as over, once
/// the ready text shows and the screen is quiet: a turn so short that its working sign was
/// drawn and erased within one read of the agent's output. A turn that waits on the model
/// shows its sign (every TUI animates it) long before this.
const UNSEEN_TURN: Duration = Duration::from_secs(5);

/// How long a sheep being closed waits for the records of a turn just over to be read.
const CLOSE_READ: Duration = Duration::from_secs(2);

/// How long the agent gets to end after SIGTERM when the sheep is closed.
const AGENT_GRACE: Duration = Duration::from_secs(3);

/// Bracketed paste markers: the TUI takes what is between them as one pasted text, newlines
/// included, instead of keys (a newline would be Enter).
const PASTE_START: &[u8] = b"\x1b[200~";
const PASTE_END: &[u8] = b"\x1b[201~";

/// Where the TUI is, as far as the driver's typing goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Starting: its ready text has not shown yet.
    Starting,
    /// Waiting for input.
    Idle,
    /// A prompt was pasted; Enter follows once it is drawn.
    Pasted,
    /// Enter was pressed at this instant; the turn has not shown that it works yet.
    Submitted(Instant),
    /// A turn runs.
    Busy,
    /// The turn is over; what it left in the agent's records is being read.
    Reading,
}

/// The agent's screen as the driver sees it, and when it last changed.
struct Screen {
    parser: vt100::Parser,
    changed: Instant,
}

impl Screen {
    fn new(size: PaneSize) -> Self {
        let (rows, cols) = dimensions(size);
        Self {
            parser: vt100::Parser::new(rows, cols, 0),
            changed: Instant::now(),
        }
    }

    fn feed(&mut self, bytes: &[u8]) {
        self.parser.process(bytes);
        self.changed = Instant::now();
    }

    fn shows(&self, text: &str) -> bool {
        self.parser.screen().contents().contains(text)
    }

    fn quiet(&self) -> bool {
        self.changed.elapsed() >= QUIET
    }
}

/// A terminal's rows and columns.
type PaneSize = (u16, u16);

fn dimensions((rows, cols): PaneSize) -> (std::num::NonZeroU16, std::num::NonZeroU16) {
    let nonzero = |n: u16, fallback: u16| {
        std::num::NonZeroU16::new(n).unwrap_or(std::num::NonZeroU16::new(fallback).expect("> 0"))
    };
    (nonzero(rows, 24), nonzero(cols, 80))
}

/// The pane's terminal in raw mode for as long as this lives; its settings are restored after.
struct RawTerminal {
    saved: Option<rustix::termios::Termios>,
}

impl RawTerminal {
    fn enter() -> Self {
        let stdin = std::io::stdin();
        let saved = rustix::termios::tcgetattr(&stdin).ok();
        if let Some(saved) = &saved {
            let mut raw = saved.clone();
            raw.make_raw();
            if let Err(err) =
                rustix::termios::tcsetattr(&stdin, rustix::termios::OptionalActions::Now, &raw)
            {
                eprintln!("shepherd harness: cannot put the pane in raw mode: {err}");
            }
        }
        Self { saved }
    }
}

impl Drop for RawTerminal {
    fn drop(&mut self) {
        if let Some(saved) = &self.saved {
            let stdin = std::io::stdin();
            let _restored =
                rustix::termios::tcsetattr(&stdin, rustix::termios::OptionalActions::Now, saved);
        }
    }
}

/// Whether the driver runs in a terminal it can hand to the agent.
pub(super) fn in_terminal() -> bool {
    rustix::termios::isatty(std::io::stdin()) && rustix::termios::isatty(std::io::stdout())
}

/// The pane's size.
fn pane_size() -> PaneSize {
    match rustix::termios::tcgetwinsize(std::io::stdin()) {
        Ok(size) if size.ws_row > 0 && size.ws_col > 0 => (size.ws_row, size.ws_col),
        _ => (24, 80),
    }
}

/// The agent's TUI and the driver's ends of its terminal.
struct Agent {
    child: tokio::process::Child,
    pid: u32,
    output: OwnedReadPty,
    input: OwnedWritePty,
}

/// Starts the agent's TUI in a pseudo-terminal of `size`, tied to the driver: the runtime is
/// single-threaded, so the forking thread is the driver's main thread, which lives as long as
/// the driver.
fn start_agent(driver: &Driver, (rows, cols): PaneSize) -> Result<Agent, CliError> {
    let plan = &driver.plan;
    let (program, before) = plan.program.split_first().expect("plans name a program");
    let terminal = |err: pty_process::Error| {
        CliError::new(
            ErrorCode::Internal,
            format!("cannot open a terminal for the agent: {err}"),
        )
    };
    let (pty, pts) = pty_process::open().map_err(terminal)?;
    pty.resize(Size::new(rows, cols)).map_err(terminal)?;
    let mut agent = tokio::process::Command::new(program);
    agent
        .args(before)
        .args(driver.adapter.interactive_args(plan))
        .envs(plan.env.iter().map(|(k, v)| (k, v)))
        .current_dir(&plan.cwd)
        .kill_on_drop(true);
    shepherd_term::platform::tie_to_this_process(
        agent.as_std_mut(),
        shepherd_term::platform::NothingMore,
    );
    let command = pty_process::Command::from(agent);
    let child = command.spawn(pts).map_err(|err| {
        CliError::new(
            ErrorCode::HarnessMissing,
            format!("could not run {program}: {err}"),
        )
    })?;
    let pid = child.id().unwrap_or_default();
    let (output, input) = pty.into_split();
    Ok(Agent {
        child,
        pid,
        output,
        input,
    })
}

/// Runs the sheep until it is told to stop or the agent ends. Returns the exit status.
pub(super) async fn drive(driver: &mut Driver) -> Result<u8, CliError> {
    let mut terminate = signal(SignalKind::terminate()).map_err(|err| signal_error(&err))?;
    let mut hangup = signal(SignalKind::hangup()).map_err(|err| signal_error(&err))?;
    let mut resized = signal(SignalKind::window_change()).map_err(|err| signal_error(&err))?;
    driver
        .ensure_subscribed()
        .await
        .map_err(|err| CliError::new(ErrorCode::BrokerUnavailable, err.to_string()))?;
    let size = pane_size();
    let mut agent = start_agent(driver, size)?;
    keep_errors_off_the_screen(driver);
    let _raw = RawTerminal::enter();
    let mut visible = Visible {
        screen: Screen::new(size),
        phase: Phase::Starting,
        turn_started: Instant::now(),
        transcript_read: 0,
        reading: None,
        retry_broker: None,
        error_before: None,
    };
    let mut stdin = tokio::io::stdin();
    let mut keys_open = true;
    let mut keys = [0u8; 1024];
    let mut bytes = vec![0u8; 64 * 1024];
    let code = loop {
        visible.advance(driver, &mut agent.input).await;
        let wake = visible.wake();
        let connected = driver.link.is_connected() && visible.retry_broker.is_none();
        tokio::select! {
            read = agent.output.read(&mut bytes) => match read {
                Ok(n) if n > 0 => {
                    let mut out = std::io::stdout().lock();
                    let _shown = out.write_all(&bytes[..n]).and_then(|()| out.flush());
                    visible.screen.feed(&bytes[..n]);
                }
                // The terminal closes (EIO) when the agent ends.
                _ => {
                    let status = agent.child.wait().await.ok();
                    break finish(driver, status, &mut visible).await;
                }
            },
            read = stdin.read(&mut keys), if keys_open => match read {
                Ok(n) if n > 0 => {
                    let _typed = agent.input.write_all(&keys[..n]).await;
                }
                _ => keys_open = false,
            },
            _ = resized.recv() => {
                let size = pane_size();
                let _resized = agent.input.resize(Size::new(size.0, size.1));
                let (rows, cols) = dimensions(size);
                visible.screen.parser.set_size(rows, cols);
            }
            push = driver.link.next_event(), if connected => match push {
                Ok(push) => {
                    if !driver.take_push(push) {
                        // The broker is stopping on purpose: its supervisor ends this sheep.
                        driver.link.disconnect();
                    }
                }
                Err(_) => {
                    driver.link.disconnect();
                    visible.retry_broker = Some(Instant::now() + Duration::from_millis(200));
                }
            },
            read = reading(&mut visible.reading) => visible.read(driver, read).await,
            () = sleep_until(wake) => {}
            status = agent.child.wait() => break finish(driver, status.ok(), &mut visible).await,
            _ = terminate.recv() => break close(driver, &agent, &mut visible).await,
            _ = hangup.recv() => break close(driver, &agent, &mut visible).await,
        }
        if !driver.link.is_connected() && visible.retry_broker.is_none() {
            visible.retry_broker = Some(Instant::now() + Duration::from_millis(200));
        }
        if visible.retry_broker.is_some_and(|at| at <= Instant::now()) {
            visible.retry_broker = match driver.ensure_subscribed().await {
                Ok(()) => None,
                Err(_) => Some(Instant::now() + Duration::from_secs(1)),
            };
        }
    };
    Ok(code)
}

/// Sends the driver's own complaints (a report the broker did not take) to `driver.log` in the
/// sheep's directory: written to the pane, they would land in the middle of the agent's screen.
fn keep_errors_off_the_screen(driver: &Driver) {
    let log = fs_err::OpenOptions::new()
        .create(true)
        .append(true)
        .open(driver.plan.dir.join("driver.log"));
    if let Ok(log) = log {
        let _redirected = rustix::stdio::dup2_stderr(&log);
    }
}

/// The driver's view of the TUI between events.
struct Visible {
    screen: Screen,
    phase: Phase,
    turn_started: Instant,
    /// How far the agent's records have been read (bytes of its transcript, messages of its
    /// export).
    transcript_read: u64,
    /// The turn that is over, while its records are read.
    reading: Option<Reading>,
    /// When to subscribe again after the broker's connection dropped.
    retry_broker: Option<Instant>,
    /// The provider error the screen showed when the turn began: only another one is news.
    error_before: Option<String>,
}

impl Visible {
    /// The provider error the screen shows now, for agents that record it only there.
    fn screen_error(&self, driver: &Driver) -> Option<String> {
        driver
            .adapter
            .screen_error(&self.screen.parser.screen().contents())
    }

    /// A provider error this turn drew (not the one already on the screen when it began).
    fn new_screen_error(&self, driver: &Driver) -> Option<String> {
        self.screen_error(driver)
            .filter(|error| Some(error) != self.error_before.as_ref())
    }

    /// Moves on as far as the screen allows: reports readiness, types the next prompt, presses
    /// Enter, notices a turn starting and ending.
    async fn advance(&mut self, driver: &mut Driver, input: &mut OwnedWritePty) {
        let ready = driver.adapter.ready_text();
        loop {
            let busy = driver.adapter.busy(&self.screen.parser.screen().contents());
            match self.phase {
                Phase::Starting => {
                    if !(self.screen.shows(ready) && self.screen.quiet()) {
                        return;
                    }
                    driver
                        .report(&report(shepherd_core::protocol::ReportEvent::Ready))
                        .await;
                    self.phase = Phase::Idle;
                }
                Phase::Idle => {
                    let Some((prompt, seq)) = driver.next_prompt() else {
                        return;
                    };
                    driver.ack(seq).await;
                    driver
                        .report(&report(shepherd_core::protocol::ReportEvent::AgentStart))
                        .await;
                    self.turn_started = Instant::now();
                    self.error_before = self.screen_error(driver);
                    let _typed = input.write_all(&typed(&prompt, &self.screen)).await;
                    // The paste is drawn after this; Enter waits for the screen to settle.
                    self.screen.changed = Instant::now();
                    self.phase = Phase::Pasted;
                }
                Phase::Pasted => {
                    if !self.screen.quiet() {
                        return;
                    }
                    let _entered = input.write_all(b"\r").await;
                    self.screen.changed = Instant::now();
                    self.phase = Phase::Submitted(Instant::now());
                }
                Phase::Submitted(at) => {
                    if busy {
                        self.phase = Phase::Busy;
                    } else if at.elapsed() >= UNSEEN_TURN
                        && self.screen.quiet()
                        && self.screen.shows(ready)
                    {
                        let error = self.new_screen_error(driver);
                        self.turn_over(driver, error);
                    } else {
                        return;
                    }
                }
                Phase::Busy => {
                    // Not the ready text: a notice can stand in its place for seconds after a
                    // turn (Claude Code's "paste again to expand").
                    if busy || !self.screen.quiet() {
                        return;
                    }
                    let error = self.new_screen_error(driver);
                    self.turn_over(driver, error);
                }
                Phase::Reading => return,
            }
        }
    }

    /// The turn is over (with the error its screen shows, if any): its records are read next.
    fn turn_over(&mut self, driver: &Driver, error: Option<String>) {
        self.reading = Some(Reading {
            task: records::start(driver, self.transcript_read),
            ended: Ended {
                run: self.turn_started.elapsed(),
                error,
            },
        });
        self.phase = Phase::Reading;
    }

    /// The records of the turn that is over have been read: the turn settles.
    async fn read(&mut self, driver: &mut Driver, read: Option<records::Read>) {
        let Some(Reading { ended, .. }) = self.reading.take() else {
            return;
        };
        let read = read.unwrap_or_else(|| records::Read {
            turn: Turn::default(),
            transcript: None,
            read_to: self.transcript_read,
        });
        self.transcript_read = read.read_to;
        settle(driver, &ended, read).await;
        self.phase = Phase::Idle;
    }

    /// When to look at the screen again without new output: once it would count as quiet,
    /// or an unseen turn would count as over.
    fn wake(&self) -> Option<Instant> {
        let quiet_at = self.screen.changed + QUIET;
        let mut wake = match self.phase {
            Phase::Idle | Phase::Reading => None,
            _ => Some(quiet_at).filter(|at| *at > Instant::now()),
        };
        if let Phase::Submitted(at) = self.phase {
            let over = (at + UNSEEN_TURN).max(quiet_at);
            if over > Instant::now() {
                wake = Some(wake.map_or(over, |w| w.min(over)));
            }
        }
        if let Some(retry) = self.retry_broker {
            wake = Some(wake.map_or(retry, |w| w.min(retry)));
        }
        wake
    }
}

/// What typing `prompt` sends: a bracketed paste when the TUI asked for them, else the text
/// on one line (a newline would submit it early).
fn typed(prompt: &str, screen: &Screen) -> Vec<u8> {
    if screen.parser.screen().bracketed_paste() {
        [PASTE_START, prompt.as_bytes(), PASTE_END].concat()
    } else {
        prompt.replace('\n', " ").into_bytes()
    }
}

/// A turn that is over, whose records are being read.
struct Reading {
    task: tokio::task::JoinHandle<records::Read>,
    ended: Ended,
}

/// How a turn ended: how long it ran, and the provider error its screen showed.
struct Ended {
    run: Duration,
    error: Option<String>,
}

/// What the reading of a turn's records found, once it is done (`None` if it failed); never
/// while nothing is read.
async fn reading(reading: &mut Option<Reading>) -> Option<records::Read> {
    match reading {
        Some(reading) => (&mut reading.task).await.ok(),
        None => std::future::pending().await,
    }
}

async fn sleep_until(wake: Option<Instant>) {
    match wake {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Reports the end of a turn: what the task has cost as far as the agent tells outside its
/// screen (what `read` found in its records: the session, the model, the turn's figures and
/// final words), and the error that ended it (the screen's, else one its records tell).
async fn settle(driver: &mut Driver, ended: &Ended, read: records::Read) {
    if let Some(session) = read.turn.session.clone() {
        driver.learn_session(&session);
    }
    let error = ended.error.clone().or_else(|| read.turn.error.clone());
    driver
        .settle_run(&read.turn, ended.run, read.transcript, error)
        .await;
}

/// The agent ended by itself (the user quit it): a turn it was in fails, and the sheep ends
/// with the agent's status.
async fn finish(
    driver: &mut Driver,
    status: Option<std::process::ExitStatus>,
    visible: &mut Visible,
) -> u8 {
    if !matches!(
        visible.phase,
        Phase::Idle | Phase::Starting | Phase::Reading
    ) {
        let title = driver.plan.harness.title();
        visible.turn_over(driver, Some(format!("{title} exited during the turn")));
    }
    if visible.reading.is_some() {
        let read = reading(&mut visible.reading).await;
        visible.read(driver, read).await;
    }
    exit_code(status)
}

/// The sheep is being closed: a turn just over settles if its records are read in a moment,
/// and the agent ends.
async fn close(driver: &mut Driver, agent: &Agent, visible: &mut Visible) -> u8 {
    if visible.reading.is_some()
        && let Ok(read) = tokio::time::timeout(CLOSE_READ, reading(&mut visible.reading)).await
    {
        visible.read(driver, read).await;
    }
    stop_agent(agent).await
}

/// Ends the agent's process group (SIGTERM, a grace, SIGKILL), for a sheep being closed.
async fn stop_agent(agent: &Agent) -> u8 {
    let pid = agent.pid;
    if pid != 0 {
        let deadline = std::time::Instant::now() + AGENT_GRACE + Duration::from_secs(2);
        let _stopped = tokio::task::spawn_blocking(move || {
            shepherd_term::process::terminate_group(pid, AGENT_GRACE, deadline)
        })
        .await;
    }
    0
}

fn exit_code(status: Option<std::process::ExitStatus>) -> u8 {
    status
        .and_then(|s| s.code())
        .and_then(|c| u8::try_from(c).ok())
        .unwrap_or(1)
}
