//! Test and benchmark support: drives the fieldnotes store from a separate process.
//!
//! The store's guarantees are about processes — numbering under concurrent writers, locks that
//! die with their holder, commits that a kill cannot tear — so the tests and the benchmark
//! need real processes that use the library. This binary is that process. It is not installed
//! for users and prints only to its own stdout, which its parent reads.
//!
//! ```text
//! notes-worker reserve --project DIR (--session-name NAME | --parent ID) [--agent NAME]
//!                      [--count K] [--lifecycle] [--report-ops] [--wait-go] [--race-resolve]
//!                      [--sessions N] [--ack]
//! notes-worker hold    --project DIR (--session-name NAME | --parent ID)
//!                      --during create|reserve [--pause-at-lock]
//!                      --stage root-locked|locked|staged|committed
//! ```
//!
//! `reserve` resolves the session, prints `ready <directory>`, optionally waits for a line on
//! stdin (so a parent can start many workers at once; with `--race-resolve` it waits before
//! resolving, so the workers race to create the session), then reserves K notes one commit at
//! a time (with `--lifecycle`: reserve, start and finish each), printing
//! `op <name> <micros> direct|queued` per operation with `--report-ops` (`queued`: the session
//! was busy and another process committed it), and finally `done <K>`. `hold` starts a write — creating the
//! session, or reserving a note in it — and stops at the given point of the commit, printing
//! the stage's name, and waits there until it is killed; with `--pause-at-lock` it first
//! stops once it holds the session lock, says `locked`, and goes on at a line on stdin.
//! `--announce-queue` makes `reserve` say `queued` when it had to queue its request.
//! `--sessions N` spreads the K notes round-robin over the named sessions `NAME 0` … `NAME
//! N-1`, and `--ack` prints `acked <op> <session directory> <note>` as soon as each operation
//! returned, so a parent that kills the worker knows exactly which were acknowledged.

use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use jiff::Timestamp;
use shepherd_notes::{
    CommitStage, Finalization, Metadata, NoteStatus, PlannedNote, Resolved, Store, StoreError,
    StoreOptions,
};

#[derive(Debug, Default)]
struct Args {
    command: String,
    project: PathBuf,
    session_name: Option<String>,
    parent: Option<String>,
    agent: String,
    count: usize,
    lifecycle: bool,
    report_ops: bool,
    wait_go: bool,
    race_resolve: bool,
    pause_at_lock: bool,
    announce_queue: bool,
    sessions: usize,
    ack: bool,
    during: String,
    stage: String,
}

fn parse_args() -> Result<Args, String> {
    let mut raw = std::env::args().skip(1);
    let mut args = Args {
        command: raw.next().ok_or("missing command")?,
        agent: "worker".to_owned(),
        count: 1,
        ..Args::default()
    };
    while let Some(flag) = raw.next() {
        let mut value = || raw.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--project" => args.project = PathBuf::from(value()?),
            "--session-name" => args.session_name = Some(value()?),
            "--parent" => args.parent = Some(value()?),
            "--agent" => args.agent = value()?,
            "--count" => args.count = value()?.parse().map_err(|e| format!("--count: {e}"))?,
            "--stage" => args.stage = value()?,
            "--during" => args.during = value()?,
            "--race-resolve" => args.race_resolve = true,
            "--pause-at-lock" => args.pause_at_lock = true,
            "--announce-queue" => args.announce_queue = true,
            "--sessions" => {
                args.sessions = value()?.parse().map_err(|e| format!("--sessions: {e}"))?;
            }
            "--ack" => args.ack = true,
            "--lifecycle" => args.lifecycle = true,
            "--report-ops" => args.report_ops = true,
            "--wait-go" => args.wait_go = true,
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(args)
}

fn main() -> ExitCode {
    let result = parse_args()
        .map_err(|err| format!("usage: {err}"))
        .and_then(|args| run(&args).map_err(|err| err.to_string()));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            let mut stderr = std::io::stderr().lock();
            let _ignored = writeln!(stderr, "notes-worker: {err}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &Args) -> Result<(), StoreError> {
    match args.command.as_str() {
        "reserve" => reserve(args),
        "hold" => hold(args),
        other => Err(std::io::Error::other(format!("unknown command {other}")).into()),
    }
}

fn say(line: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ignored = writeln!(stdout, "{line}").and_then(|()| stdout.flush());
}

fn resolve(store: &Store, args: &Args) -> Result<Resolved, StoreError> {
    match (&args.parent, &args.session_name) {
        (Some(parent), _) => store.resolve_or_create_parent_session(parent, None, Timestamp::now()),
        (None, Some(name)) => store.create_or_continue_named(name, Timestamp::now()),
        (None, None) => store.create_for_task(None, Timestamp::now()),
    }
}

fn reserve(args: &Args) -> Result<(), StoreError> {
    let mut options = StoreOptions::default();
    let announce = args.announce_queue;
    let queued = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let seen = Arc::clone(&queued);
    options.commit_hook = Some(Arc::new(move |stage: CommitStage<'_>| {
        if let CommitStage::Queued(_) = stage {
            seen.store(true, std::sync::atomic::Ordering::Relaxed);
            if announce {
                say("queued");
            }
        }
    }));
    let store = Store::with_options(&args.project, options)?;
    let wait_go = || -> Result<(), StoreError> {
        let mut line = String::new();
        std::io::stdin().lock().read_line(&mut line)?;
        Ok(())
    };
    if args.race_resolve {
        say("ready");
        wait_go()?;
    }
    let sessions = if args.sessions > 0 {
        let name = args.session_name.clone().unwrap_or_default();
        (0..args.sessions)
            .map(|i| store.create_or_continue_named(&format!("{name} {i}"), Timestamp::now()))
            .map(|resolved| resolved.map(|r| r.session))
            .collect::<Result<Vec<_>, _>>()?
    } else {
        vec![resolve(&store, args)?.session]
    };
    if !args.race_resolve {
        say(&format!("ready {}", sessions[0]));
        if args.wait_go {
            wait_go()?;
        }
    }
    let timed = |name: &str, started: Instant| {
        let path = if queued.swap(false, std::sync::atomic::Ordering::Relaxed) {
            "queued"
        } else {
            "direct"
        };
        if args.report_ops {
            say(&format!(
                "op {name} {} {path}",
                started.elapsed().as_micros()
            ));
        }
    };
    let acked = |op: &str, session: &shepherd_notes::SessionRef, note: &str| {
        if args.ack {
            say(&format!("acked {op} {session} {note}"));
        }
    };
    for i in 0..args.count {
        let session = &sessions[i % sessions.len()];
        let started = Instant::now();
        let planned = PlannedNote::new(args.agent.clone());
        let note = store
            .reserve(session, vec![planned], Timestamp::now())?
            .remove(0);
        timed("reserve", started);
        acked("reserve", session, &note.file_name);
        if args.lifecycle {
            let started = Instant::now();
            let metadata: Metadata = [("pid".to_owned(), std::process::id().into())].into();
            store.start(session, &note.file_name, metadata, Timestamp::now())?;
            timed("start", started);
            acked("start", session, &note.file_name);
            let started = Instant::now();
            let mut result = Finalization::new(NoteStatus::Completed);
            result.output = Some(format!("{} finished", note.file_name));
            store.finalize(session, &note.file_name, result, Timestamp::now())?;
            timed("finish", started);
            acked("finish", session, &note.file_name);
        }
    }
    say(&format!("done {}", args.count));
    Ok(())
}

fn hold(args: &Args) -> Result<(), StoreError> {
    let wanted = args.stage.clone();
    let pause_at_lock = args.pause_at_lock;
    let hook = move |stage: CommitStage<'_>| {
        let name = match stage {
            CommitStage::RootLocked(_) => "root-locked",
            CommitStage::SessionLocked(_) => "locked",
            CommitStage::Staged(_) => "staged",
            CommitStage::Committed(_) => "committed",
            CommitStage::Queued(_) => "queued",
            _ => "other",
        };
        if name == wanted {
            say(name);
            loop {
                std::thread::park();
            }
        }
        if pause_at_lock && name == "locked" {
            say(name);
            let mut line = String::new();
            let _ignored = std::io::stdin().lock().read_line(&mut line);
        }
    };
    let options = StoreOptions {
        commit_hook: Some(Arc::new(hook)),
        ..StoreOptions::default()
    };
    let holding = Store::with_options(&args.project, options)?;
    if args.during == "create" {
        resolve(&holding, args)?;
        return Ok(());
    }
    let store = Store::open(&args.project)?;
    let session = resolve(&store, args)?.session;
    let planned = PlannedNote::new(args.agent.clone());
    holding.reserve(&session, vec![planned], Timestamp::now())?;
    Ok(())
}
