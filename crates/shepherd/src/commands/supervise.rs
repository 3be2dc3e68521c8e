//! `shepherd supervise`: the small process that runs one sheep.
//!
//! Every backend starts this supervisor where the sheep should run; it starts the sheep's
//! program in a process group of its own, tells the broker it runs (that is what makes a spawn
//! ready) and how it ended (code, signal, the end of its output), and ends the whole group when
//! the broker says `terminate`. Headless, it also keeps the sheep's output: a log file for
//! `read` and a small tail in memory for the exit report.
//!
//! If the broker goes away, the supervisor keeps the sheep running for a grace period and keeps
//! trying to reconnect, so a restarted broker re-adopts it; after the grace it ends the sheep
//! and exits, so nothing is orphaned.

use std::collections::VecDeque;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{ExitCode, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::Args;
use serde_json::Value;
use shepherd_broker::client::Client;
use shepherd_core::protocol::{Role, SupervisorExited, SupervisorStarted, event, method};
use shepherd_term::process;
use tokio::io::AsyncReadExt;

use super::connect::{SheepCapability, sheep};
use crate::error::CliError;

/// Bytes of output kept in memory for the exit report.
const TAIL_BYTES: usize = 64 * 1024;
/// Lines of output sent with the exit report.
const TAIL_LINES: usize = 20;
/// A log grows to this size before it is rotated to `<log>.1`.
const LOG_ROTATE_BYTES: u64 = 8 * 1024 * 1024;

#[derive(Debug, Args)]
pub(crate) struct SuperviseArgs {
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
    /// The sheep's program and arguments.
    #[arg(last = true, required = true)]
    program: Vec<String>,
}

pub(crate) fn run(args: &SuperviseArgs) -> Result<ExitCode, CliError> {
    if args.headless {
        let _already_leader = rustix::process::setsid();
    }
    let cap = SheepCapability::from_env()?;
    let code = super::connect::runtime()?.block_on(supervise(args, &cap))?;
    Ok(ExitCode::from(code))
}

/// The end of the sheep's output, bounded.
#[derive(Default)]
struct Tail {
    bytes: VecDeque<u8>,
}

impl Tail {
    fn push(&mut self, chunk: &[u8]) {
        self.bytes.extend(chunk);
        let excess = self.bytes.len().saturating_sub(TAIL_BYTES);
        self.bytes.drain(..excess);
    }

    fn lines(&self) -> String {
        let bytes: Vec<u8> = self.bytes.iter().copied().collect();
        process::last_lines(&String::from_utf8_lossy(&bytes), TAIL_LINES)
    }
}

/// The headless log, rotated when it grows large.
struct Log {
    path: PathBuf,
    file: std::fs::File,
    written: u64,
}

impl Log {
    fn open(path: &Path) -> std::io::Result<Self> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        let written = file.metadata()?.len();
        Ok(Self {
            path: path.to_path_buf(),
            file,
            written,
        })
    }

    fn write(&mut self, chunk: &[u8]) {
        if self.written + chunk.len() as u64 > LOG_ROTATE_BYTES {
            let rotated = self.path.with_extension("log.1");
            if std::fs::rename(&self.path, rotated).is_ok()
                && let Ok(file) = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&self.path)
            {
                self.file = file;
                self.written = 0;
            }
        }
        if self.file.write_all(chunk).is_ok() {
            self.written += chunk.len() as u64;
        }
    }
}

async fn pump(
    mut from: impl tokio::io::AsyncRead + Unpin,
    log: Option<Arc<Mutex<Log>>>,
    tail: Arc<Mutex<Tail>>,
) {
    let mut buf = vec![0; 8192];
    while let Ok(n) = from.read(&mut buf).await {
        if n == 0 {
            break;
        }
        if let Some(log) = &log {
            log.lock().expect("log lock").write(&buf[..n]);
        }
        tail.lock().expect("tail lock").push(&buf[..n]);
    }
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

async fn supervise(args: &SuperviseArgs, cap: &SheepCapability) -> Result<u8, CliError> {
    let mut client = Some(sheep(cap, Role::Supervisor).await?);
    let (program, rest) = args.program.split_first().expect("clap requires a program");
    let mut command = tokio::process::Command::new(program);
    command.args(rest).process_group(0).kill_on_drop(false);
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
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(err) => {
            let report = SupervisorExited {
                error: Some(format!("could not run `{program}`: {err}")),
                ..SupervisorExited::default()
            };
            if let Some(client) = client.as_mut() {
                let _reported: Result<Value, _> =
                    client.call(method::SUPERVISOR_EXITED, &report).await;
            }
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
    let mut pumps = Vec::new();
    if args.headless {
        let log = args
            .log
            .as_deref()
            .and_then(|path| Log::open(path).ok())
            .map(|log| Arc::new(Mutex::new(log)));
        if let Some(stdout) = child.stdout.take() {
            pumps.push(tokio::spawn(pump(stdout, log.clone(), tail.clone())));
        }
        if let Some(stderr) = child.stderr.take() {
            pumps.push(tokio::spawn(pump(stderr, log, tail.clone())));
        }
    }
    let started = SupervisorStarted {
        pid,
        supervisor_pid: std::process::id(),
    };
    if let Some(connected) = client.as_mut()
        && connected
            .call::<_, Value>(method::SUPERVISOR_STARTED, &started)
            .await
            .is_err()
    {
        client = None;
    }

    let grace = Duration::from_millis(args.grace_ms);
    let mut orphaned_since = client.is_none().then(Instant::now);
    let mut exit: Option<SupervisorExited> = None;
    let mut backoff = Duration::from_millis(50);
    loop {
        if let Some(report) = &exit
            && let Some(connected) = client.as_mut()
        {
            let _delivered: Result<Value, _> =
                connected.call(method::SUPERVISOR_EXITED, report).await;
            return Ok(exit_code(report));
        }
        tokio::select! {
            status = child.wait(), if exit.is_none() => {
                for pump in pumps.drain(..) {
                    let _drained = tokio::time::timeout(Duration::from_secs(2), pump).await;
                }
                // Whatever the sheep left running in its group ends with it.
                process::signal_group(pid, rustix::process::Signal::KILL);
                let status = status.ok();
                exit = Some(SupervisorExited {
                    code: status.and_then(|s| s.code()),
                    signal: status.and_then(|s| std::os::unix::process::ExitStatusExt::signal(&s)),
                    error: None,
                    tail: tail.lock().expect("tail lock").lines(),
                });
            }
            push = next_push(client.as_mut()), if client.is_some() => match push {
                Some((name, data)) if name == event::TERMINATE => {
                    let grace_ms = data["graceMs"].as_u64().unwrap_or(3000);
                    let grace = Duration::from_millis(grace_ms);
                    tokio::task::spawn_blocking(move || {
                        process::terminate_group(pid, grace, Instant::now() + grace + Duration::from_secs(2))
                    });
                }
                Some(_) => {}
                None => {
                    client = None;
                    orphaned_since = Some(Instant::now());
                    backoff = Duration::from_millis(50);
                }
            },
            () = tokio::time::sleep(backoff), if client.is_none() => {
                let since = orphaned_since.get_or_insert_with(Instant::now);
                if since.elapsed() >= grace {
                    // No broker came back: end the sheep so nothing is orphaned.
                    let deadline = Instant::now() + Duration::from_secs(5);
                    let _gone = tokio::task::spawn_blocking(move || process::terminate_group(pid, Duration::from_secs(2), deadline)).await;
                    return Ok(exit.as_ref().map_or(1, exit_code));
                }
                backoff = (backoff * 2).min(Duration::from_secs(1));
                if let Ok(mut reconnected) = sheep(cap, Role::Supervisor).await {
                    let readopted = match &exit {
                        Some(_) => true,
                        None => reconnected.call::<_, Value>(method::SUPERVISOR_STARTED, &started).await.is_ok(),
                    };
                    if readopted {
                        client = Some(reconnected);
                        orphaned_since = None;
                    }
                }
            }
        }
    }
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

/// The next push, or `None` when the connection is gone.
async fn next_push(client: Option<&mut Client>) -> Option<(String, Value)> {
    match client {
        Some(client) => client.next_push().await.ok(),
        None => std::future::pending().await,
    }
}

fn exit_code(report: &SupervisorExited) -> u8 {
    match (report.code, report.signal) {
        (Some(code), _) => u8::try_from(code).unwrap_or(1),
        (None, Some(signal)) => u8::try_from(128 + signal).unwrap_or(1),
        (None, None) => 1,
    }
}
