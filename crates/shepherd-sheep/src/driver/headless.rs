//! A headless sheep on another agent: one turn of the agent's one-shot mode per delegation,
//! each resuming the agent session the first one created.
//!
//! A turn runs with stdin `/dev/null` (Codex and opencode wait for an open stdin to end) in the
//! sheep's process group, so closing the sheep ends it too. Its machine-readable output is read
//! event by event into a [`Turn`], whose readable lines the driver prints: that is the sheep's
//! log, so `shepherd read` shows what it was told, what it ran and what it said. The raw output
//! and the agent's stderr go to `turns.log` in the sheep's directory.

// This driver owns the agent's process: it runs one turn of the agent per delegation.
#![allow(clippy::disallowed_types)]

use shepherd_core::error_code::ErrorCode;
use std::io::Write;
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use shepherd_harness::Turn;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::signal::unix::{SignalKind, signal};
use tokio::time::Instant;

use super::{Driver, report, signal_error};
use shepherd_client::CliError;

/// How much of the agent's stderr is kept to explain a failed turn.
const STDERR_TAIL: usize = 4000;

/// Longest the prompt is shown in the transcript, in characters.
const PROMPT_SHOWN: usize = 600;

/// Runs the sheep until it is told to stop. Returns the exit status.
pub(super) async fn drive(driver: &mut Driver) -> Result<u8, CliError> {
    let mut terminate = signal(SignalKind::terminate()).map_err(|err| signal_error(&err))?;
    let mut hangup = signal(SignalKind::hangup()).map_err(|err| signal_error(&err))?;
    driver
        .ensure_subscribed()
        .await
        .map_err(|err| CliError::new(ErrorCode::BrokerUnavailable, err.to_string()))?;
    driver
        .report(&report(shepherd_core::protocol::ReportEvent::Ready))
        .await;
    let mut backoff = Duration::from_millis(50);
    loop {
        if let Some((prompt, seq)) = driver.next_prompt() {
            driver.ack(seq).await;
            let stop = tokio::select! {
                () = run_turn(driver, &prompt) => false,
                _ = terminate.recv() => true,
                _ = hangup.recv() => true,
            };
            if stop {
                return Ok(0);
            }
            continue;
        }
        if let Err(err) = driver.ensure_subscribed().await {
            eprintln!("shepherd harness: the broker is not reachable: {err}");
            tokio::select! {
                () = tokio::time::sleep(backoff) => {}
                _ = terminate.recv() => return Ok(0),
                _ = hangup.recv() => return Ok(0),
            }
            backoff = (backoff * 2).min(Duration::from_secs(1));
            continue;
        }
        backoff = Duration::from_millis(50);
        tokio::select! {
            push = driver.link.next_event() => match push {
                Ok(push) => {
                    if !driver.take_push(push) {
                        // The broker is stopping on purpose: its supervisor ends this sheep.
                        driver.link.disconnect();
                    }
                }
                Err(_) => driver.link.disconnect(),
            },
            _ = terminate.recv() => return Ok(0),
            _ = hangup.recv() => return Ok(0),
        }
    }
}

/// Runs one turn with `prompt` and reports it: started, then settled with what it did.
async fn run_turn(driver: &mut Driver, prompt: &str) {
    driver
        .report(&report(shepherd_core::protocol::ReportEvent::AgentStart))
        .await;
    show(&[format!("» {}", shown(prompt))]);
    // A prompt whose turn left no session behind is asked again with this one.
    let prompt = match driver.unsaved_prompt.take() {
        Some(earlier) => format!("{earlier}\n\n{prompt}"),
        None => prompt.to_owned(),
    };
    let started = Instant::now();
    let mut turn = Turn::default();
    turn.provider = shepherd_harness::provider_name(driver.plan.harness);
    let outcome = run_agent(driver, &prompt, &mut turn).await;
    turn.finish();
    show(&turn.take_lines());
    let turn_failed = !matches!(&outcome, Ok(ran) if ran.status.success()) || turn.error.is_some();
    if let Some(session) = &turn.session {
        if driver.session.is_none()
            && turn_failed
            && !driver.adapter.session_saved(&driver.plan, session)
        {
            driver.unsaved_prompt = Some(prompt.clone());
            driver.adapter.new_session(&mut driver.plan);
        } else {
            driver.learn_session(session);
        }
    }
    if turn.model.is_none() {
        turn.model = driver.plan.model_name().map(str::to_owned);
    }
    // A turn that failed without saying why is explained by its exit and stderr; one ended at
    // its task's budget did not fail (the task is settled `blocked` already).
    let failed = match outcome {
        // An error no retry gets past ended the run at once, whatever the agent's retries.
        _ if turn.stop_now.is_some() => turn.stop_now.clone(),
        Ok(ran) if ran.budget.is_some() => {
            show(&[format!(
                "■ stopped: the task reached its budget ({})",
                ran.budget.unwrap_or_default()
            )]);
            None
        }
        Ok(ran) if ran.status.success() => turn.error.clone(),
        Ok(ran) => Some(turn.error.clone().unwrap_or_else(|| {
            let tail = last_lines(&ran.stderr);
            format!(
                "{} exited with {}{tail}",
                driver.plan.harness.title(),
                ran.status
            )
        })),
        Err(err) => Some(err),
    };
    if let Some(error) = &failed
        && turn.error.is_none()
        && turn.stop_now.is_none()
    {
        show(&[format!("✗ error: {error}")]);
    }
    let elapsed = started.elapsed();
    let transcript = driver
        .session
        .as_deref()
        .and_then(|session| driver.adapter.transcript(&driver.plan, session));
    driver.settle_run(&turn, elapsed, transcript, failed).await;
}

/// How an agent's run ended.
struct Ran {
    status: std::process::ExitStatus,
    /// The end of its stderr.
    stderr: String,
    /// The budget limit its task reached, when the driver ended the run for it.
    budget: Option<String>,
}

/// Runs the agent for one turn, reading its output into `turn` and reporting each response's
/// usage; returns how it ended, or why it could not run.
async fn run_agent(driver: &mut Driver, prompt: &str, turn: &mut Turn) -> Result<Ran, String> {
    let plan = driver.plan.clone();
    let (program, before) = plan.program.split_first().expect("plans name a program");
    let mut args: Vec<String> = before.to_vec();
    args.extend(
        driver
            .adapter
            .headless_args(&plan, prompt, driver.session.as_deref()),
    );
    let mut command = tokio::process::Command::new(program);
    command
        .args(&args)
        .envs(plan.env.iter().map(|(k, v)| (k, v)))
        .current_dir(&plan.cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own group, so that ending a run at its budget ends the tools it started too.
        .process_group(0)
        .kill_on_drop(true);
    let mut child = command
        .spawn()
        .map_err(|err| format!("could not run {program}: {err}"))?;
    let stdout = child.stdout.take().expect("piped");
    let mut stderr = child.stderr.take().expect("piped");
    let errors = tokio::spawn(async move {
        let mut text = String::new();
        let _read = stderr.read_to_string(&mut text).await;
        text
    });
    let mut log = fs_err::OpenOptions::new()
        .create(true)
        .append(true)
        .open(plan.dir.join("turns.log"))
        .ok();
    let mut lines = BufReader::new(stdout).lines();
    let mut usage = super::usage::UsageReports::default();
    let mut budget = None;
    while let Ok(Some(line)) = lines.next_line().await {
        if let Some(log) = log.as_mut() {
            let _logged = writeln!(log, "{line}");
        }
        match serde_json::from_str::<Value>(line.trim()) {
            Ok(event) if event.is_object() => driver.adapter.read_event(&event, turn),
            _ => {}
        }
        show(&turn.take_lines());
        for ridden in turn.take_ridden() {
            driver.report_ridden(&ridden).await;
        }
        if turn.stop_now.is_some() {
            // The agent retries what will not pass (a bad key): end it now.
            if let Some(pid) = child.id() {
                shepherd_term::process::signal_group(pid, rustix::process::Signal::KILL);
            }
            break;
        }
        budget = usage.report(driver, turn, false).await;
        if budget.is_some() {
            if let Some(pid) = child.id() {
                shepherd_term::process::signal_group(pid, rustix::process::Signal::KILL);
            }
            break;
        }
    }
    if budget.is_none() {
        budget = usage.report(driver, turn, true).await;
    }
    let status = child
        .wait()
        .await
        .map_err(|err| format!("waiting for {program}: {err}"))?;
    let stderr = errors.await.unwrap_or_default();
    if let Some(log) = log.as_mut() {
        let _logged = write!(log, "{stderr}");
    }
    let keep = stderr.len().saturating_sub(STDERR_TAIL);
    let start = (keep..stderr.len())
        .find(|i| stderr.is_char_boundary(*i))
        .unwrap_or(stderr.len());
    Ok(Ran {
        status,
        stderr: stderr[start..].to_owned(),
        budget,
    })
}

/// The last few non-empty lines of `text`, after a colon, or nothing.
fn last_lines(text: &str) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let tail = lines[lines.len().saturating_sub(3)..].join(" / ");
    if tail.is_empty() {
        String::new()
    } else {
        format!(": {tail}")
    }
}

/// Prints transcript lines (the sheep's log).
fn show(lines: &[String]) {
    if lines.is_empty() {
        return;
    }
    let mut out = std::io::stdout().lock();
    for line in lines {
        let _shown = writeln!(out, "{line}");
    }
    let _flushed = out.flush();
}

fn shown(prompt: &str) -> String {
    let flat = prompt.replace('\n', " ⏎ ");
    if flat.chars().count() <= PROMPT_SHOWN {
        flat
    } else {
        format!("{}…", flat.chars().take(PROMPT_SHOWN).collect::<String>())
    }
}
