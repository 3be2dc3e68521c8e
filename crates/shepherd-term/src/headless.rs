//! The headless backend: the supervisor runs as a detached process in its own session, holding
//! the sheep's output in a log file that `read` tails. Nothing is visible; everything is still
//! readable and closable.

// This backend owns the sheep's process: it starts the detached supervisor.
#![allow(clippy::disallowed_types)]

use std::process::Stdio;
use std::time::{Duration, Instant};

use rustix::process::Signal;

use crate::process;
use crate::{Backend, BackendKind, LaunchRecord, LaunchSpec, Presence, ReadSource, TermError};

/// Largest slice of a log read for one `read`.
const READ_MAX_BYTES: u64 = 256 * 1024;

/// How long a sheep gets to end after SIGTERM before SIGKILL.
pub const TERM_GRACE: Duration = Duration::from_secs(3);

/// Runs sheep as detached processes.
#[derive(Debug, Default, Clone, Copy)]
pub struct HeadlessBackend;

impl Backend for HeadlessBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Headless
    }

    fn launch(&self, spec: &LaunchSpec) -> Result<LaunchRecord, TermError> {
        let io = |context: &str| {
            let context = context.to_owned();
            move |source| TermError::Io { context, source }
        };
        if let Some(dir) = spec.log.parent() {
            fs_err::create_dir_all(dir).map_err(io("creating the sheep log directory"))?;
        }
        let stderr = fs_err::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&spec.log)
            .map_err(io("opening the sheep log"))?
            .into_parts()
            .0;
        let mut extra = vec![
            "--headless".to_owned(),
            "--log".to_owned(),
            spec.log.display().to_string(),
        ];
        if spec.keep_stdin {
            extra.push("--keep-stdin".to_owned());
        }
        let mut command = std::process::Command::new(&spec.shepherd_exe);
        command
            .args(spec.supervisor_args(&extra))
            .envs(spec.env.iter().map(|(k, v)| (k, v)))
            .current_dir(&spec.cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr);
        let child = command.spawn().map_err(|err| {
            TermError::Launch(format!(
                "cannot run `{}`: {err}",
                spec.shepherd_exe.display()
            ))
        })?;
        let supervisor_pid = child.id();
        reap_in_background(child);
        Ok(LaunchRecord {
            supervisor_pid: Some(supervisor_pid),
            pid: None,
            log: Some(spec.log.clone()),
            pane: None,
            window: None,
            server: None,
            limits: None,
        })
    }

    fn read(
        &self,
        record: &LaunchRecord,
        _source: ReadSource,
        lines: u32,
    ) -> Result<String, TermError> {
        let Some(log) = &record.log else {
            return Ok(String::new());
        };
        match process::tail_of_file(log, lines as usize, READ_MAX_BYTES) {
            Ok(text) => Ok(text),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
            Err(err) => Err(TermError::Read(format!(
                "cannot read {}: {err}",
                log.display()
            ))),
        }
    }

    fn close(
        &self,
        record: &LaunchRecord,
        _keep_pane: bool,
        deadline: Instant,
    ) -> Result<(), TermError> {
        let mut gone = true;
        if let Some(pid) = record.pid {
            gone &= process::terminate_group(pid, TERM_GRACE, deadline);
        }
        if let Some(supervisor) = record.supervisor_pid {
            if !process::wait_gone(supervisor, Instant::now().min(deadline)) {
                process::signal_process(supervisor, Signal::TERM);
            }
            if !process::wait_gone(supervisor, (Instant::now() + TERM_GRACE).min(deadline)) {
                process::signal_process(supervisor, Signal::KILL);
            }
            gone &= process::wait_gone(supervisor, deadline);
        }
        if gone {
            Ok(())
        } else {
            Err(TermError::NotConfirmed(
                "the sheep's processes did not end in time".into(),
            ))
        }
    }

    fn presence(&self, record: &LaunchRecord) -> Presence {
        let running = |pid: Option<u32>| {
            pid.is_some_and(|pid| process::alive(pid) && !process::is_zombie(pid))
        };
        if running(record.supervisor_pid) || record.pid.is_some_and(process::group_alive) {
            Presence::Present
        } else {
            Presence::Gone
        }
    }
}

/// Reaps a detached child when it exits, so finished supervisors never linger as zombies.
fn reap_in_background(mut child: std::process::Child) {
    let spawned = std::thread::Builder::new()
        .name("reap".into())
        .stack_size(64 * 1024)
        .spawn(move || {
            let _status = child.wait();
        });
    if let Err(err) = spawned {
        tracing::warn!("could not start a reaper thread: {err}");
    }
}
