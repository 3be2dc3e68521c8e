//! What a visible turn left in the agent's own records, read once the turn is over.
//!
//! A visible sheep's figures are not on its screen, so after each turn the driver reads what
//! the turn added to the agent's records: the lines its transcript file grew by (Claude Code,
//! Codex, Gemini CLI), or, for an agent that keeps its sessions in a store of its own
//! (opencode's database), the messages its own export command prints after those already read.
//! An export runs the agent's program, which takes seconds on a busy machine, so the reading is
//! a task of its own: the driver keeps relaying the pane meanwhile and settles the turn when the
//! reading is done.

// Owns a process: it runs the agent's own export command.
#![allow(clippy::disallowed_types)]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use shepherd_harness::{Adapter, Plan, Turn};
use tokio::task::JoinHandle;

use super::Driver;

/// How long one of the agent's export commands may take.
const EXPORT_DEADLINE: Duration = Duration::from_secs(60);

/// What a turn left in the agent's records.
pub(super) struct Read {
    /// The turn's figures: its session, model, responses, tool calls, tokens, cost, final
    /// words and the error it recorded.
    pub(super) turn: Turn,
    /// Where the agent keeps the session's transcript.
    pub(super) transcript: Option<PathBuf>,
    /// How far the records have been read: bytes of the transcript file, or messages of the
    /// export.
    pub(super) read_to: u64,
}

/// Starts reading what the turn just over added to the agent's records, past `read_to`.
pub(super) fn start(driver: &Driver, read_to: u64) -> JoinHandle<Read> {
    let adapter = driver.adapter;
    let plan = driver.plan.clone();
    let known = driver
        .plan
        .session
        .clone()
        .or_else(|| driver.session.clone());
    tokio::spawn(async move { read(adapter, &plan, known, read_to).await })
}

async fn read(
    adapter: &'static dyn Adapter,
    plan: &Plan,
    known: Option<String>,
    mut read_to: u64,
) -> Read {
    let mut turn = Turn::default();
    turn.model = plan.model_name().map(str::to_owned);
    let export = adapter.export();
    let mut session = known.or_else(|| adapter.interactive_session(plan));
    if let (None, Some(export)) = (&session, &export) {
        session = run_agent(plan, &export.sessions)
            .await
            .and_then(|listing| adapter.read_sessions(&listing));
    }
    let transcript = session
        .as_deref()
        .and_then(|session| adapter.transcript(plan, session));
    match (&session, &export) {
        (Some(session), Some(export)) => {
            let mut args = export.session.clone();
            args.push(session.clone());
            if let Some(printed) = run_agent(plan, &args).await {
                adapter.read_export(&printed, &mut read_to, &mut turn);
            }
        }
        _ => {
            if let Some(path) = &transcript {
                adapter.read_transcript(&transcript_since(path, &mut read_to), &mut turn);
            }
        }
    }
    turn.session = session;
    turn.finish();
    Read {
        turn,
        transcript,
        read_to,
    }
}

/// Runs the agent's program with `args` and the sheep's configuration; what it printed, when
/// it succeeded in time.
async fn run_agent(plan: &Plan, args: &[String]) -> Option<String> {
    let (program, before) = plan.program.split_first()?;
    let output = tokio::process::Command::new(program)
        .args(before)
        .args(args)
        .envs(plan.env.iter().map(|(k, v)| (k, v)))
        .current_dir(&plan.cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .output();
    match tokio::time::timeout(EXPORT_DEADLINE, output).await {
        Ok(Ok(output)) if output.status.success() => {
            Some(String::from_utf8_lossy(&output.stdout).into_owned())
        }
        Ok(Ok(output)) => {
            eprintln!(
                "shepherd harness: {} {} failed: {}",
                plan.harness.title(),
                args.join(" "),
                output.status
            );
            None
        }
        Ok(Err(err)) => {
            eprintln!("shepherd harness: cannot run {program}: {err}");
            None
        }
        Err(_) => {
            eprintln!(
                "shepherd harness: {} {} took longer than {} s",
                plan.harness.title(),
                args.join(" "),
                EXPORT_DEADLINE.as_secs()
            );
            None
        }
    }
}

/// The whole lines `path` gained since byte `read_to`, moving `read_to` past them.
fn transcript_since(path: &Path, read_to: &mut u64) -> String {
    use std::io::{Read, Seek, SeekFrom};
    let mut added = Vec::new();
    let read = fs_err::File::open(path).and_then(|mut file| {
        file.seek(SeekFrom::Start(*read_to))?;
        file.read_to_end(&mut added)
    });
    if read.is_err() {
        return String::new();
    }
    let whole = added
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(0, |at| at + 1);
    added.truncate(whole);
    *read_to += whole as u64;
    String::from_utf8_lossy(&added).into_owned()
}
