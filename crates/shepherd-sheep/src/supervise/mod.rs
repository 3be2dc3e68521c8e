//! `shepherd supervise`: the small process that runs one sheep.
//!
//! Every backend starts this supervisor where the sheep should run; it starts the sheep's
//! program in a process group of its own (under a parent-death signal, so the sheep never
//! outlives it), tells the broker it runs (that is what makes a spawn ready) and how it ended
//! (code, signal, the end of its output), and ends it when the broker says `terminate` or the
//! supervisor itself is told to stop (SIGTERM, or SIGHUP when its pane closes). Whatever the
//! sheep leaves behind is ended too before the exit is reported (`reap`). Headless, it also
//! keeps the sheep's output: a log file for `read`, a small tail for the exit report, and a
//! hint to the broker (a few times a second at most) that the sheep printed something, so the
//! herd view shows its last line.
//!
//! The sheep starts under its resource limits (`limits`): in a cgroup of its own where the
//! machine offers one, else under rlimits; the supervisor reports how they are applied, and
//! which limit stopped the sheep when one did.
//!
//! The supervisor speaks for its sheep with a credential of its own, read from a file the
//! broker wrote for it and deleted before the sheep starts, so a sheep can never pose as its
//! supervisor.
//!
//! If the broker goes away, the supervisor keeps the sheep running, reconnects with backoff,
//! and — when nothing answers — starts the broker again itself (`revive`), so a herd recovers
//! with no parent attached. Only if no broker comes back within the grace does it end the
//! sheep, so nothing is orphaned.

// The supervisor owns the sheep's process: it starts, signals and reaps it.
#![allow(clippy::disallowed_types)]

mod enter;
mod limits;
mod net_bridge;
mod net_proxy;
mod output;
mod programs;
mod reap;
mod revive;
mod sandbox;

pub use enter::{EnterArgs, run as run_enter};
pub use limits::LimitArgs;
pub use sandbox::SandboxArgs;

use shepherd_core::error_code::ErrorCode;
use std::path::{Path, PathBuf};
use std::process::{ExitCode, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use clap::Args;
use shepherd_client::wire::{ClientError, Link, Push};
use shepherd_core::protocol::{
    Call, NoParams, OkResult, Role, SupervisorExited, SupervisorStarted, calls, event,
};
use shepherd_term::process;
use tokio::signal::unix::{SignalKind, signal};
use tokio::time::Instant;

use self::output::{Log, Tail, pump};
use shepherd_client::CliError;
use shepherd_client::connect::{SheepCapability, sheep};

/// How long one report to the broker may take before the connection counts as lost.
const REPORT_DEADLINE: Duration = Duration::from_secs(5);
/// How long the sheep gets to end when asked to stop without a grace of its own.
const STOP_GRACE: Duration = Duration::from_secs(3);
/// The shortest time between two reports that a headless sheep printed something: a chatty
/// sheep costs the broker a few reads a second, not one per line.
const OUTPUT_REPORT_EVERY: Duration = Duration::from_millis(250);

#[derive(Debug, Args)]
pub struct SuperviseArgs {
    /// Run detached in a session of its own and capture the sheep's output.
    #[arg(long)]
    headless: bool,
    /// Where captured output goes.
    #[arg(long, value_name = "FILE")]
    log: Option<PathBuf>,
    /// How long to keep the sheep alive while no broker answers (ms).
    #[arg(long, default_value_t = 60_000)]
    grace_ms: u64,
    /// Hold the sheep's stdin open (a pi sheep in RPC mode shuts down when it closes).
    #[arg(long)]
    keep_stdin: bool,
    /// The file holding this supervisor's credential (read, then deleted).
    #[arg(long, value_name = "FILE")]
    credential_file: Option<PathBuf>,
    /// The broker's state directory, to start the broker again if it dies.
    #[arg(long, value_name = "DIR")]
    broker_state: Option<PathBuf>,
    /// How the sheep is confined.
    #[command(flatten)]
    sandbox: SandboxArgs,
    /// The resources the sheep may use.
    #[command(flatten)]
    limits: LimitArgs,
    /// The sheep's program and arguments.
    #[arg(last = true, required = true)]
    program: Vec<String>,
}

pub fn run(args: &SuperviseArgs) -> Result<ExitCode, CliError> {
    if args.headless {
        let _already_leader = rustix::process::setsid();
    }
    reap::set_subreaper(true);
    let mut cap = SheepCapability::from_env()?;
    if let Some(file) = &args.credential_file {
        let token = fs_err::read_to_string(file)
            .map_err(|err| CliError::new(ErrorCode::Unauthenticated, err.to_string()))?;
        let _deleted = fs_err::remove_file(file);
        cap.supervisor_token = Some(token.trim().to_owned());
    }
    let code = shepherd_client::connect::runtime()?.block_on(supervise(args, &cap))?;
    Ok(ExitCode::from(code))
}

/// The connection to the broker, and since when it has been missing.
struct BrokerLink {
    link: Link,
    connected: bool,
    orphaned_since: Option<Instant>,
    backoff: Duration,
    last_revival: Option<Instant>,
}

impl BrokerLink {
    fn lost(&mut self) {
        self.link.disconnect();
        self.connected = false;
        self.orphaned_since.get_or_insert_with(Instant::now);
        self.backoff = Duration::from_millis(50);
    }

    /// Sends one report `C`, noting a lost broker.
    async fn report<C: Call<Result = OkResult>>(
        &mut self,
        params: &C::Params,
    ) -> Result<(), ClientError> {
        let result = self
            .link
            .send::<C>(params, Instant::now() + REPORT_DEADLINE)
            .await;
        match &result {
            Err(err)
                if err.is_lost()
                    || matches!(
                        err,
                        ClientError::Timeout { .. } | ClientError::Unavailable(_)
                    ) =>
            {
                self.lost();
            }
            _ => {}
        }
        result.map(|_| ())
    }
}

async fn supervise(args: &SuperviseArgs, cap: &SheepCapability) -> Result<u8, CliError> {
    let mut broker = BrokerLink {
        link: sheep(cap, Role::Supervisor),
        connected: false,
        orphaned_since: None,
        backoff: Duration::from_millis(50),
        last_revival: None,
    };
    match broker.link.reach(Instant::now() + REPORT_DEADLINE).await {
        Ok(_) => broker.connected = true,
        Err(ClientError::Remote(err)) => {
            return Err(CliError::new(err.code, err.message));
        }
        Err(_) => broker.lost(),
    }
    let net = match NetProxy::start(args, &cap.socket) {
        Ok(net) => net,
        Err(err) => {
            let report = SupervisorExited {
                error: Some(err),
                ..SupervisorExited::default()
            };
            let _reported = broker.report::<calls::SupervisorExited>(&report).await;
            return Ok(127);
        }
    };
    let applied = limits::Applied::prepare(&args.limits, &cap.agent_id);
    let net_dir = net.as_ref().map(|net| net.dir.as_path());
    let mut child = match start_sheep(args, &cap.socket, net_dir, &applied) {
        Ok(child) => child,
        Err(err) => {
            let report = SupervisorExited {
                error: Some(err),
                ..SupervisorExited::default()
            };
            let _reported = broker.report::<calls::SupervisorExited>(&report).await;
            return Ok(127);
        }
    };
    let pid = child.id().unwrap_or_default();
    // Held, never written: the sheep's stdin stays open until the supervisor ends.
    let _stdin = child.stdin.take();
    if !args.headless {
        hand_over_terminal(pid);
    }
    let tail = Arc::new(Mutex::new(Tail::default()));
    let printed = Arc::new(tokio::sync::Notify::new());
    let mut pumps = Vec::new();
    if args.headless {
        let log = args
            .log
            .as_deref()
            .and_then(|path| Log::open(path).ok())
            .map(|log| Arc::new(Mutex::new(log)));
        if let Some(stdout) = child.stdout.take() {
            pumps.push(tokio::spawn(pump(
                stdout,
                log.clone(),
                tail.clone(),
                printed.clone(),
            )));
        }
        if let Some(stderr) = child.stderr.take() {
            pumps.push(tokio::spawn(pump(
                stderr,
                log,
                tail.clone(),
                printed.clone(),
            )));
        }
    }
    let started = SupervisorStarted {
        pid,
        supervisor_pid: std::process::id(),
        limits: applied.enforcement.clone(),
    };
    if broker.connected
        && let Err(ClientError::Remote(err)) =
            broker.report::<calls::SupervisorStarted>(&started).await
    {
        // Refused (the sheep was closed meanwhile): nobody wants this sheep.
        eprintln!(
            "shepherd supervise: the broker refused this sheep: {}",
            err.message
        );
        stop_sheep(pid, STOP_GRACE).await;
    }

    let mut terminate = signal(SignalKind::terminate()).map_err(|err| signal_error(&err))?;
    let mut hangup = signal(SignalKind::hangup()).map_err(|err| signal_error(&err))?;
    let grace = Duration::from_millis(args.grace_ms);
    let mut exit: Option<SupervisorExited> = None;
    // When the next report that the sheep printed something goes out, while one is due.
    let mut output_due: Option<Instant> = None;
    let mut output_reported = Instant::now() - OUTPUT_REPORT_EVERY;
    loop {
        if let Some(report) = &exit
            && broker.connected
        {
            match broker.report::<calls::SupervisorExited>(report).await {
                Ok(()) | Err(ClientError::Remote(_)) => return Ok(exit_code(report)),
                Err(_) => continue,
            }
        }
        tokio::select! {
            status = child.wait(), if exit.is_none() => {
                // Whatever the sheep left running ends with it, in its group or not — first,
                // since a leftover may hold the output pipes open.
                process::signal_group(pid, rustix::process::Signal::KILL);
                let _ended = tokio::task::spawn_blocking(reap::end_leftovers).await;
                // And whatever of its tree is still in its cgroup, wherever it moved.
                applied.end(std::time::Instant::now() + Duration::from_secs(2));
                for pump in pumps.drain(..) {
                    let _drained = tokio::time::timeout(Duration::from_secs(2), pump).await;
                }
                let status = status.ok();
                let code = status.and_then(|s| s.code());
                let signal = status.and_then(|s| std::os::unix::process::ExitStatusExt::signal(&s));
                let tail = tail.lock().expect("tail lock").lines();
                exit = Some(SupervisorExited {
                    code,
                    signal,
                    error: None,
                    stopped_by: applied.stopped_by(code, signal, &tail),
                    tail,
                });
            }
            push = broker.link.next_event(), if broker.connected => match push {
                Ok(Push::Terminate(terminate)) => {
                    stop_sheep(pid, Duration::from_millis(terminate.grace_ms)).await;
                }
                // Told to end in words this build cannot read: end it all the same.
                Ok(Push::Other { event, .. }) if event == event::TERMINATE => {
                    stop_sheep(pid, STOP_GRACE).await;
                }
                Ok(_) => {}
                Err(_) => broker.lost(),
            },
            () = printed.notified(), if args.headless && output_due.is_none() && exit.is_none() => {
                output_due = Some(Instant::now().max(output_reported + OUTPUT_REPORT_EVERY));
            }
            () = tokio::time::sleep_until(output_due.unwrap_or_else(Instant::now)),
                if output_due.is_some() && broker.connected && exit.is_none() =>
            {
                output_due = None;
                output_reported = Instant::now();
                // Only a hint for the herd view: a lost one is made up by the next output.
                let _hinted = broker
                    .report::<calls::SupervisorOutput>(&NoParams {})
                    .await;
            }
            _ = terminate.recv(), if exit.is_none() => stop_sheep(pid, STOP_GRACE).await,
            _ = hangup.recv(), if exit.is_none() => stop_sheep(pid, STOP_GRACE).await,
            () = tokio::time::sleep(broker.backoff), if !broker.connected => {
                let since = *broker.orphaned_since.get_or_insert_with(Instant::now);
                if since.elapsed() >= grace {
                    // No broker came back: end the sheep so nothing is orphaned.
                    stop_sheep(pid, Duration::from_secs(2)).await;
                    let _ended = tokio::task::spawn_blocking(reap::end_leftovers).await;
                    applied.end(std::time::Instant::now() + Duration::from_secs(2));
                    return Ok(exit.as_ref().map_or(1, exit_code));
                }
                broker.backoff = (broker.backoff * 2).min(Duration::from_secs(1));
                reconnect(&mut broker, &cap.socket, args.broker_state.as_deref(), &started, exit.is_some()).await;
            }
        }
    }
}

/// One attempt to reach the broker again; when nothing answers, starts it (at most every few
/// seconds). Once connected, the sheep is reported again: that re-adopts it.
async fn reconnect(
    broker: &mut BrokerLink,
    socket: &Path,
    state: Option<&Path>,
    started: &SupervisorStarted,
    exited: bool,
) {
    match broker
        .link
        // A short attempt: when nothing answers, starting the broker is what helps.
        .reach(Instant::now() + Duration::from_millis(250))
        .await
    {
        Ok(_) => {
            broker.connected = true;
            // The next outage may start the broker again at once.
            broker.last_revival = None;
            if exited {
                // The exit report goes out at the top of the loop.
                broker.orphaned_since = None;
                return;
            }
            if broker
                .report::<calls::SupervisorStarted>(started)
                .await
                .is_ok()
            {
                broker.orphaned_since = None;
            }
        }
        Err(ClientError::Remote(err)) => {
            eprintln!(
                "shepherd supervise: the broker refused this supervisor: {}",
                err.message
            );
        }
        Err(_) => {
            let Some(state) = state else { return };
            let due = broker
                .last_revival
                .is_none_or(|at| at.elapsed() >= Duration::from_secs(3));
            let quiet_for = broker
                .orphaned_since
                .map_or(Duration::ZERO, |since| since.elapsed());
            if due && quiet_for >= revive::stagger() {
                broker.last_revival = Some(Instant::now());
                match revive::revive(socket, state).await {
                    // A broker answers now: should it die again before this supervisor has
                    // reconnected, the next outage may start one again at once.
                    Ok(()) => broker.last_revival = None,
                    Err(err) => {
                        eprintln!("shepherd supervise: could not start the broker again: {err}");
                    }
                }
            }
        }
    }
}

/// Starts the sheep's program in a process group of its own, tied to this supervisor by a
/// parent-death signal: if the supervisor dies, however it dies, the kernel kills the sheep.
fn start_sheep(
    args: &SuperviseArgs,
    socket: &Path,
    net_dir: Option<&Path>,
    applied: &limits::Applied,
) -> Result<tokio::process::Child, String> {
    let argv = confined(args, socket, net_dir)?;
    let (program, rest) = argv.split_first().expect("clap requires a program");
    let mut command = tokio::process::Command::new(program);
    command
        .args(rest)
        .process_group(0)
        .kill_on_drop(false)
        .env_remove("SHEPHERD_SUPERVISOR_TOKEN");
    tie_to_supervisor(&mut command, applied.hook());
    if let Some(path) = path_with_shepherd_first() {
        command.env("PATH", path);
    }
    if args.headless {
        let stdin = if args.keep_stdin {
            Stdio::piped()
        } else {
            Stdio::null()
        };
        command
            .stdin(stdin)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
    }
    command.spawn().map_err(|err| {
        // A sandbox that cannot be made says what is missing, not just that bwrap failed.
        let missing = args
            .sandbox
            .sandbox
            .is_on()
            .then(shepherd_term::sandbox_probe::unavailable)
            .flatten();
        match missing {
            Some(missing) => format!("the sandbox cannot be made: {missing}"),
            None => format!("could not run `{program}`: {err}"),
        }
    })
}

/// The sheep's command line: its program, inside bubblewrap when it is confined.
fn confined(
    args: &SuperviseArgs,
    socket: &Path,
    net_dir: Option<&Path>,
) -> Result<Vec<String>, String> {
    if !args.sandbox.sandbox.is_on() {
        return Ok(args.program.clone());
    }
    let cwd = std::env::current_dir().map_err(|err| format!("no working directory: {err}"))?;
    let exe = std::env::current_exe().map_err(|err| format!("no shepherd binary: {err}"))?;
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let runtime_dir = std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from);
    let around = sandbox::Surroundings {
        cwd: &cwd,
        home: home.as_deref(),
        runtime_dir: runtime_dir.as_deref(),
        socket,
        exe_dir: exe.parent(),
        net_dir,
        exe: &exe,
        path: path_with_shepherd_first().or_else(|| std::env::var_os("PATH")),
        headless: args.headless,
    };
    let mut argv = sandbox::bwrap_command(&args.sandbox, &around, &args.program);
    limits::size_tmpfs(&mut argv, args.limits.limit_disk);
    Ok(argv)
}

/// The allow-listing proxy of a sheep with `network: model`, and the private directory its
/// socket lives in (bound into the sandbox); both go when the supervisor ends.
struct NetProxy {
    dir: PathBuf,
    task: tokio::task::JoinHandle<()>,
}

impl NetProxy {
    fn start(args: &SuperviseArgs, socket: &Path) -> Result<Option<Self>, String> {
        let wanted = args.sandbox.sandbox.is_on()
            && args.sandbox.sandbox_network == shepherd_core::sandbox::Network::Model;
        if !wanted {
            return Ok(None);
        }
        let parent = socket.parent().unwrap_or(Path::new("/tmp"));
        let dir = parent.join(format!("net-{}", std::process::id()));
        let _stale = fs_err::remove_dir_all(&dir);
        fs_err::create_dir_all(&dir)
            .map_err(|err| format!("cannot make the network proxy's directory: {err}"))?;
        let allowed = net_proxy::AllowList::new(&args.sandbox.sandbox_allow);
        let task = net_proxy::serve(&dir.join(sandbox::NET_SOCKET), allowed)
            .map_err(|err| format!("cannot start the network proxy: {err}"))?;
        Ok(Some(Self { dir, task }))
    }
}

impl Drop for NetProxy {
    fn drop(&mut self) {
        self.task.abort();
        let _removed = fs_err::remove_dir_all(&self.dir);
    }
}

/// Sets SIGKILL as the sheep's parent-death signal, between fork and exec, and starts it
/// under its limits (`limits`: its cgroup entered, its rlimits set). The supervisor runs a
/// single-threaded runtime, so the thread that forks (whose end would fire the signal) is the
/// main thread, which lives as long as the supervisor. The sheep does not start when the
/// supervisor died before the signal was set, or when its limits cannot be set.
fn tie_to_supervisor(command: &mut tokio::process::Command, limits: limits::ChildHook) {
    shepherd_term::platform::tie_to_this_process(command.as_std_mut(), limits);
}

/// Ends the sheep's process group: SIGTERM, `grace`, SIGKILL. The exit itself is noticed by
/// the main loop, which then ends whatever the sheep left behind.
async fn stop_sheep(pid: u32, grace: Duration) {
    let deadline = std::time::Instant::now() + grace + Duration::from_secs(2);
    let _stopped =
        tokio::task::spawn_blocking(move || process::terminate_group(pid, grace, deadline)).await;
}

fn signal_error(err: &std::io::Error) -> CliError {
    CliError::new(
        ErrorCode::Internal,
        format!("cannot install a signal handler: {err}"),
    )
}

/// The sheep's PATH with this `shepherd` binary's directory first, so a sheep's plain
/// `shepherd done` reaches this very build. The supervisor sets it rather than the launch
/// environment because some terminals (tmux) give a new pane the launching client's PATH
/// whatever the launch asked for.
fn path_with_shepherd_first() -> Option<std::ffi::OsString> {
    let exe = std::env::current_exe().ok()?;
    let dir = exe.parent()?;
    let current = std::env::var_os("PATH").unwrap_or_default();
    let rest = std::env::split_paths(&current).filter(|entry| entry != dir);
    std::env::join_paths(std::iter::once(dir.to_path_buf()).chain(rest)).ok()
}

/// `shepherd flush-input`: throws away what waits in this terminal's input queue, so a keep-open
/// pane's shell starts with nothing a sheep may have pushed there. Nothing to do off a terminal.
pub fn flush_input() -> ExitCode {
    let stdin = std::io::stdin();
    if rustix::termios::isatty(&stdin) {
        let _flushed = rustix::termios::tcflush(&stdin, rustix::termios::QueueSelector::IFlush);
    }
    ExitCode::SUCCESS
}

/// In a pane, the sheep gets the terminal: its process group becomes the foreground group, so
/// an interactive program can read the keyboard. A sheep that tried to read before that was
/// stopped by the kernel, so it is continued.
fn hand_over_terminal(pid: u32) {
    let stdin = std::io::stdin();
    if !rustix::termios::isatty(&stdin) {
        return;
    }
    let Some(group) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    else {
        return;
    };
    if let Err(err) = rustix::termios::tcsetpgrp(&stdin, group) {
        eprintln!("shepherd supervise: could not give the terminal to the sheep: {err}");
    }
    process::signal_group(pid, rustix::process::Signal::CONT);
}

fn exit_code(report: &SupervisorExited) -> u8 {
    match (report.code, report.signal) {
        (Some(code), _) => u8::try_from(code).unwrap_or(1),
        (None, Some(signal)) => u8::try_from(128 + signal).unwrap_or(1),
        (None, None) => 1,
    }
}
