//! The broker's process, `shepherd broker serve`: what the `shepherd` binary runs when a herd's
//! broker starts (on demand, detached, or in the foreground).
//!
//! It lives in the binary because it is the one command that runs the broker crate in this
//! process: the command-line crate parses `broker serve`'s arguments and hands them here (its
//! `broker::Serve`), so no front end links the broker. It detaches when asked, records the
//! herd's environment and how to start its broker again, logs to the broker's state directory,
//! and tells the starting client `ready` or `error: …` on stdout.

// This module is the broker's process: `--detach` starts it again, detached.
#![allow(clippy::disallowed_types)]

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use shepherd_broker::BrokerConfig;
use shepherd_broker::clock::SystemClock;
use shepherd_broker::serve::{ServeError, start};
use shepherd_cli::Printer;
use shepherd_cli::broker::ServeArgs;
use shepherd_client::paths::{BrokerAddress, BrokerPaths};
use shepherd_client::wire::StartSpec;
use shepherd_client::{CliError, Context};
use shepherd_core::error_code::ErrorCode;

fn env_duration(name: &str, default: Duration) -> Duration {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .map_or(default, Duration::from_millis)
}

/// `--detach`: starts the broker again without it, handing over stdout (where it says it is
/// ready), and exits, so the broker is reparented away from whoever started this.
fn detach(args: &ServeArgs, printer: Printer) -> Result<ExitCode, CliError> {
    let exe = std::env::current_exe().map_err(|err| {
        CliError::new(
            ErrorCode::Environment,
            format!("cannot find the shepherd executable: {err}"),
        )
    })?;
    let mut command = std::process::Command::new(exe);
    command
        .args(["broker", "serve", "--parent-session"])
        .arg(&args.parent_session)
        .arg("--project")
        .arg(&args.project)
        .arg("--depth")
        .arg(args.depth.to_string())
        .args(args.notify_ready.then_some("--notify-ready"))
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    match command.spawn() {
        Ok(_broker) => Ok(ExitCode::SUCCESS),
        Err(err) => {
            notify(printer, &format!("error: cannot start the broker: {err}"));
            Ok(ExitCode::from(1))
        }
    }
}

/// Runs the broker of `args`' herd in this process until it stops (`shepherd broker serve`).
pub(crate) fn serve(
    args: &ServeArgs,
    ctx: &Context,
    printer: Printer,
) -> Result<ExitCode, CliError> {
    if args.detach {
        return detach(args, printer);
    }
    if args.notify_ready {
        // Leave the starting client's session: the broker outlives that client and its terminal.
        let _already_leader = rustix::process::setsid();
    }
    let project_root = fs_err::canonicalize(&args.project).map_err(|err| {
        CliError::new(
            ErrorCode::InvalidProject,
            format!("project `{}`: {err}", args.project.display()),
        )
    })?;
    let address = BrokerAddress::new(&args.parent_session, &project_root);
    let paths = BrokerPaths::new(&ctx.dirs, &address);
    init_logging(&paths);
    let config = BrokerConfig {
        address,
        paths: paths.clone(),
        dirs: ctx.dirs.clone(),
        shepherd_exe: std::env::current_exe().map_err(|err| {
            CliError::new(
                ErrorCode::Environment,
                format!("cannot find the shepherd executable: {err}"),
            )
        })?,
        depth: args.depth,
        startup_limit: env_duration("SHEPHERD_STARTUP_LIMIT_MS", Duration::from_secs(30)),
        adoption_grace: env_duration("SHEPHERD_ADOPTION_GRACE_MS", Duration::from_secs(10)),
        orphan_grace: env_duration("SHEPHERD_ORPHAN_GRACE_MS", Duration::from_secs(60)),
        hello_deadline: env_duration("SHEPHERD_HELLO_DEADLINE_MS", Duration::from_secs(10)),
        pi_command: std::env::var(
            shepherd_harness::profile(shepherd_core::harness::Harness::Pi)
                .program
                .var,
        )
        .ok()
        .filter(|p| !p.is_empty())
        .map(|p| vec![p]),
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|err| {
            CliError::new(
                ErrorCode::Internal,
                format!("cannot start the async runtime: {err}"),
            )
        })?;
    let tmux = shepherd_term::tmux::TmuxBackend::new();
    let mut backends: Vec<Arc<dyn shepherd_term::Backend>> = Vec::new();
    if tmux.available() {
        backends.push(Arc::new(tmux));
    }
    let start_spec = StartSpec {
        exe: config.shepherd_exe.clone(),
        identity: args.parent_session.clone(),
        project_root: project_root.clone(),
        depth: args.depth,
        state_dir: paths.state_dir.clone(),
        env: Vec::new(),
    };
    let started = rt.block_on(start(config, Arc::new(SystemClock), backends));
    match started {
        Ok(running) => {
            record_herd(&start_spec);
            // SIGTERM ends the herd in order (every sheep closed), as `broker stop` does: it is
            // how a supervisor cleaning up after a sheep ends the herd that sheep started.
            let handle = running.handle();
            rt.spawn(async move {
                if let Ok(mut term) =
                    tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
                {
                    term.recv().await;
                    handle.stop_herd().await;
                }
            });
            if args.notify_ready {
                notify(printer, &format!("ready {}", running.socket().display()));
            }
            rt.block_on(running.wait());
            Ok(ExitCode::SUCCESS)
        }
        Err(ServeError::AlreadyRunning(socket)) => {
            if args.notify_ready {
                notify(printer, &format!("ready {socket}"));
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(err) => {
            if args.notify_ready {
                notify(printer, &format!("error: {err}"));
            }
            Err(CliError::new(ErrorCode::Broker, err.to_string()))
        }
    }
}

/// Records what this herd's brokers must share whoever starts them: the environment (kept from
/// the herd's first broker) and how to start one.
fn record_herd(spec: &StartSpec) {
    use shepherd_client::wire::start;
    if let Err(err) = start::record_env(&spec.state_dir, std::env::vars()) {
        tracing::warn!("could not record the herd's environment: {err}");
    }
    let written = serde_json::to_vec_pretty(spec)
        .map_err(std::io::Error::other)
        .and_then(|bytes| {
            shepherd_fs::write_atomic(&start::spec_file(&spec.state_dir), &bytes, Some(0o600))
        });
    if let Err(err) = written {
        tracing::warn!("could not record how to start this broker: {err}");
    }
}

/// Tells the starting client how start-up went, then lets go of the pipe it reads.
fn notify(printer: Printer, line: &str) {
    printer.line(line);
    if let Ok(null) = fs_err::OpenOptions::new().write(true).open("/dev/null") {
        let _kept = rustix::stdio::dup2_stdout(&null);
    }
}

fn init_logging(paths: &BrokerPaths) {
    let _created = fs_err::create_dir_all(&paths.state_dir);
    let Ok(file) = fs_err::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&paths.log)
    else {
        return;
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("SHEPHERD_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _already = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(false)
        .with_writer(Arc::new(file))
        .try_init();
}
