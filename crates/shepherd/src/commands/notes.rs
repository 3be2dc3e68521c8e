//! `shepherd notes …`: the fieldnotes store from the command line.
//!
//! An offline tool for scripts and for programs that want to write notes without a broker:
//! list and show sessions, reserve a note, mark it started, finish it, attach related files.
//! Every command works on one project (`--project`, default the current directory); note
//! commands find their project from the note's path. With `--json` each prints one JSON
//! document with absolute paths and their project-relative twins. All writing goes through
//! `shepherd-notes`, the only code that writes fieldnotes.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Subcommand, ValueEnum};
use jiff::Timestamp;
use serde::Serialize;
use serde_json::{Value, json};
use shepherd_core::fieldnotes::Binding;
use shepherd_notes::{
    ArtifactRecord, Finalization, ListedSession, LocatedNote, Metadata, Mode, NoteStatus, OpError,
    PlannedNote, SessionKey, SessionMetadata, Store, StoreError,
};

use crate::cli::ProjectArg;
use crate::context::Context;
use crate::error::CliError;
use crate::output::Printer;

/// Read and write fieldnotes sessions (`.shepherd/sessions/NNNN-slug/`).
#[derive(Debug, Subcommand)]
pub(crate) enum NotesCommand {
    /// List the sessions of a project with their status and note count.
    List(ListArgs),
    /// Show one session: its metadata and its notes.
    Show(ShowArgs),
    /// Reserve a note for an agent, creating or continuing the session.
    Reserve(ReserveArgs),
    /// Mark a reserved note running.
    Start(StartArgs),
    /// Finalise a note with its outcome (exactly once).
    Finish(FinishArgs),
    /// Attach a project file or a URL to a session's Related files.
    Link(LinkArgs),
}

#[derive(Debug, Args)]
pub(crate) struct ListArgs {
    #[command(flatten)]
    project: ProjectArg,
}

#[derive(Debug, Args)]
pub(crate) struct ShowArgs {
    /// The session: directory name (`0003-fix-login`), ordinal (`3`) or exact session name.
    session: String,
    #[command(flatten)]
    project: ProjectArg,
}

#[derive(Debug, Args)]
#[command(group = clap::ArgGroup::new("owner").required(true).args(["parent_session", "session_name"]))]
pub(crate) struct ReserveArgs {
    #[command(flatten)]
    project: ProjectArg,
    /// Use the session bound to this parent session identity (created on first use).
    #[arg(long, value_name = "ID")]
    parent_session: Option<String>,
    /// The parent's session file, recorded for diagnostics (with --parent-session).
    #[arg(long, value_name = "PATH", requires = "parent_session")]
    parent_session_file: Option<String>,
    /// Use the session with this exact name (created on first use).
    #[arg(long, value_name = "NAME")]
    session_name: Option<String>,
    /// The agent that will write the note.
    #[arg(long, value_name = "NAME")]
    agent: String,
    /// The delegated task, recorded with the note.
    #[arg(long, value_name = "TEXT")]
    task: Option<String>,
    /// How the delegation runs.
    #[arg(long, value_enum, default_value_t = ModeArg::Single)]
    mode: ModeArg,
    /// Notes reserved with the same group form one line of the session's Flow.
    #[arg(long, value_name = "NAME")]
    group: Option<String>,
    /// Reserve the note already running (its agent starts right away).
    #[arg(long)]
    start: bool,
}

#[derive(Debug, Args)]
pub(crate) struct StartArgs {
    /// The note file.
    note: PathBuf,
    /// Metadata to record, as KEY=VALUE (VALUE is JSON if it parses, else text). Repeatable.
    #[arg(long = "meta", value_name = "KEY=VALUE")]
    meta: Vec<String>,
}

#[derive(Debug, Args)]
pub(crate) struct FinishArgs {
    /// The note file.
    note: PathBuf,
    /// The outcome.
    #[arg(long, value_enum)]
    status: FinalStatus,
    /// The final output (`-` reads it from standard input).
    #[arg(long, value_name = "TEXT")]
    output: Option<String>,
    /// What went wrong (`-` reads it from standard input).
    #[arg(long, value_name = "TEXT")]
    error: Option<String>,
    /// Metadata to record, as KEY=VALUE (VALUE is JSON if it parses, else text). Repeatable.
    #[arg(long = "meta", value_name = "KEY=VALUE")]
    meta: Vec<String>,
}

#[derive(Debug, Args)]
pub(crate) struct LinkArgs {
    /// The session: directory name, ordinal or exact session name.
    session: String,
    /// A URL (`https://…`) or a path to an existing file or directory inside the project.
    target: String,
    /// The link text (default: the target).
    #[arg(long, value_name = "TEXT")]
    title: Option<String>,
    #[command(flatten)]
    project: ProjectArg,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum ModeArg {
    Single,
    Parallel,
    Chain,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum FinalStatus {
    Completed,
    Failed,
    TimedOut,
    Cancelled,
}

pub(crate) fn run(
    cmd: NotesCommand,
    ctx: &Context,
    printer: &Printer,
) -> Result<ExitCode, CliError> {
    match cmd {
        NotesCommand::List(args) => list(&args, ctx, *printer),
        NotesCommand::Show(args) => show(&args, ctx, *printer),
        NotesCommand::Reserve(args) => reserve(args, ctx, *printer),
        NotesCommand::Start(args) => start(&args, ctx, *printer),
        NotesCommand::Finish(args) => finish(args, ctx, *printer),
        NotesCommand::Link(args) => link(args, ctx, *printer),
    }?;
    Ok(ExitCode::SUCCESS)
}

fn open_store(ctx: &Context, project: &ProjectArg) -> Result<Store, CliError> {
    Store::open(&ctx.project_root(project.project.as_deref())).map_err(|err| store_error(&err))
}

fn list(args: &ListArgs, ctx: &Context, printer: Printer) -> Result<(), CliError> {
    let store = open_store(ctx, &args.project)?;
    let listed = store.list_sessions().map_err(|err| store_error(&err))?;
    let sessions: Vec<Value> = listed
        .iter()
        .map(|entry| listed_json(&store, entry))
        .collect();
    let doc = json!({ "project": store.project_root(), "sessions": sessions });
    printer.emit(&doc, || {
        if listed.is_empty() {
            return format!(
                "no fieldnotes sessions in {}",
                store.project_root().display()
            );
        }
        listed
            .iter()
            .map(listed_line)
            .collect::<Vec<_>>()
            .join("\n")
    });
    Ok(())
}

fn listed_json(store: &Store, entry: &ListedSession) -> Value {
    match entry {
        ListedSession::Valid { session, metadata } => {
            let path = store.session_dir(session);
            json!({
                "ordinal": session.ordinal(),
                "directoryName": session.directory_name(),
                "sessionName": metadata.session_name,
                "status": metadata.status,
                "notes": metadata.artifacts.len(),
                "resumed": metadata.resumed,
                "binding": binding_name(metadata),
                "path": path,
                "relativePath": metadata.session_relative_path,
            })
        }
        ListedSession::Invalid { session, reason } => json!({
            "ordinal": session.ordinal(),
            "directoryName": session.directory_name(),
            "invalid": reason,
            "path": store.session_dir(session),
        }),
    }
}

fn listed_line(entry: &ListedSession) -> String {
    match entry {
        ListedSession::Valid { session, metadata } => format!(
            "{:04}  {:<9}  {:>3} notes  {}  ({})",
            session.ordinal(),
            metadata.status,
            metadata.artifacts.len(),
            metadata.session_name,
            metadata.session_relative_path
        ),
        ListedSession::Invalid { session, reason } => {
            format!(
                "{:04}  invalid    {}: {reason}",
                session.ordinal(),
                session.directory_name()
            )
        }
    }
}

fn binding_name(metadata: &SessionMetadata) -> &'static str {
    match metadata.binding() {
        Binding::Parent { .. } => "parent-bound",
        Binding::Named => "named",
        Binding::Legacy => "legacy",
    }
}

fn show(args: &ShowArgs, ctx: &Context, printer: Printer) -> Result<(), CliError> {
    let store = open_store(ctx, &args.project)?;
    let session = store
        .find_session(&args.session)
        .map_err(|err| store_error(&err))?;
    let metadata = store.load(&session).map_err(|err| store_error(&err))?;
    let notes: Vec<Value> = metadata.artifacts.iter().map(note_json).collect();
    let doc = json!({
        "session": {
            "ordinal": metadata.ordinal,
            "directoryName": metadata.directory_name,
            "sessionName": metadata.session_name,
            "status": metadata.status,
            "resumed": metadata.resumed,
            "binding": binding_name(&metadata),
            "modes": metadata.modes,
            "startedAt": metadata.started_at,
            "updatedAt": metadata.updated_at,
            "path": metadata.session_path,
            "relativePath": metadata.session_relative_path,
            "index": metadata.moc_path,
            "indexRelative": format!("{}/shepherd.md", metadata.session_relative_path),
        },
        "notes": notes,
        "related": metadata.related,
    });
    printer.emit(&doc, || {
        let mut lines = vec![
            format!(
                "Session {:04} — {} ({}, {})",
                metadata.ordinal,
                metadata.session_name,
                metadata.status,
                binding_name(&metadata)
            ),
            format!("  directory: {}", metadata.session_relative_path),
        ];
        if metadata.artifacts.is_empty() {
            lines.push("  no notes reserved yet".to_owned());
        }
        for (number, note) in (1..).zip(&metadata.artifacts) {
            lines.push(format!(
                "  {number}. {}  {}  {}",
                note.file_name, note.agent, note.status
            ));
        }
        for related in &metadata.related {
            lines.push(format!("  related: {}", related.target));
        }
        lines.join("\n")
    });
    Ok(())
}

fn note_json(note: &ArtifactRecord) -> Value {
    json!({
        "fileName": note.file_name,
        "agent": note.agent,
        "ordinal": note.ordinal,
        "mode": note.mode,
        "status": note.status,
        "task": note.task,
        "group": note.group,
        "reservedAt": note.reserved_at,
        "startedAt": note.started_at,
        "completedAt": note.completed_at,
        "error": note.error,
        "metadata": note.metadata,
        "path": note.file_path,
        "relativePath": note.relative_path,
    })
}

/// What `notes reserve --json` prints.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Reserved {
    session: String,
    session_name: String,
    session_relative: String,
    note: String,
    note_relative: String,
    resumed: bool,
}

fn reserve(args: ReserveArgs, ctx: &Context, printer: Printer) -> Result<(), CliError> {
    let store = open_store(ctx, &args.project)?;
    let key = match (args.parent_session, args.session_name) {
        (Some(identity), _) => SessionKey::Parent(identity),
        (None, Some(name)) => SessionKey::Name(name),
        (None, None) => unreachable!("clap requires --parent-session or --session-name"),
    };
    let planned = PlannedNote {
        agent: args.agent,
        mode: match args.mode {
            ModeArg::Single => Mode::Single,
            ModeArg::Parallel => Mode::Parallel,
            ModeArg::Chain => Mode::Chain,
        },
        task: args.task,
        group: args.group,
        metadata: Metadata::new(),
        start: args.start,
    };
    // One commit when the store's binding index knows the session (it checks and continues
    // the session in the same commit); nothing else in the project is read.
    let mut done = store
        .reserve_in(
            &key,
            args.parent_session_file.as_deref(),
            vec![planned],
            Timestamp::now(),
        )
        .map_err(|err| store_error(&err))?;
    let note = done.notes.remove(0);
    let session_dir = store.session_dir(&done.session);
    let reserved = Reserved {
        session: session_dir.display().to_string(),
        session_name: done.session_name,
        session_relative: store
            .relative(&session_dir)
            .unwrap_or_else(|| session_dir.display().to_string()),
        note: note.file_path,
        note_relative: note.relative_path,
        resumed: done.resumed,
    };
    printer.emit(&reserved, || {
        format!("session: {}\nnote: {}", reserved.session, reserved.note)
    });
    Ok(())
}

fn locate(ctx: &Context, note: &Path) -> Result<LocatedNote, CliError> {
    Store::locate_note(&ctx.cwd.join(note)).map_err(|err| store_error(&err))
}

/// What `notes start` and `notes finish` print.
fn note_result(located: &LocatedNote, record: &ArtifactRecord) -> Value {
    let session_dir = located.store.session_dir(&located.session);
    json!({
        "note": record.file_path,
        "noteRelative": record.relative_path,
        "session": session_dir,
        "sessionRelative": located.store.relative(&session_dir),
        "status": record.status,
        "startedAt": record.started_at,
        "completedAt": record.completed_at,
    })
}

fn start(args: &StartArgs, ctx: &Context, printer: Printer) -> Result<(), CliError> {
    let located = locate(ctx, &args.note)?;
    refuse_if_held_by_broker(ctx, &located)?;
    let metadata = parse_meta(&args.meta)?;
    let record = located
        .store
        .start(
            &located.session,
            &located.record.file_name,
            metadata,
            Timestamp::now(),
        )
        .map_err(|err| store_error(&err))?;
    let doc = note_result(&located, &record);
    printer.emit(&doc, || format!("{} is running", record.file_path));
    Ok(())
}

fn finish(args: FinishArgs, ctx: &Context, printer: Printer) -> Result<(), CliError> {
    let located = locate(ctx, &args.note)?;
    refuse_if_held_by_broker(ctx, &located)?;
    let status = match args.status {
        FinalStatus::Completed => NoteStatus::Completed,
        FinalStatus::Failed => NoteStatus::Failed,
        FinalStatus::TimedOut => NoteStatus::TimedOut,
        FinalStatus::Cancelled => NoteStatus::Cancelled,
    };
    let result = Finalization {
        status,
        output: args.output.map(text_or_stdin).transpose()?,
        error: args.error.map(text_or_stdin).transpose()?,
        metadata: parse_meta(&args.meta)?,
    };
    let record = located
        .store
        .finalize(
            &located.session,
            &located.record.file_name,
            result,
            Timestamp::now(),
        )
        .map_err(|err| store_error(&err))?;
    let doc = note_result(&located, &record);
    printer.emit(&doc, || {
        format!("{} is {}", record.file_path, record.status)
    });
    Ok(())
}

fn link(args: LinkArgs, ctx: &Context, printer: Printer) -> Result<(), CliError> {
    let store = open_store(ctx, &args.project)?;
    let session = store
        .find_session(&args.session)
        .map_err(|err| store_error(&err))?;
    let target = if shepherd_core::fieldnotes::ops::is_url(&args.target) {
        args.target
    } else {
        let path = ctx.cwd.join(&args.target);
        path.to_str()
            .ok_or_else(|| {
                CliError::new(
                    "invalid_argument",
                    format!("link target `{}` is not valid UTF-8", path.display()),
                )
            })?
            .to_owned()
    };
    let linked = store
        .link(&session, &target, args.title, Timestamp::now())
        .map_err(|err| store_error(&err))?;
    let doc = json!({
        "session": store.session_dir(&session),
        "target": linked.target,
        "title": linked.title,
    });
    printer.emit(&doc, || {
        format!("linked {} from {}", linked.target, session.directory_name())
    });
    Ok(())
}

/// Whether a running broker still holds the task that owns this note, so the note is not ours
/// to change: asks every broker of this user that serves the note's project whether the note's
/// task is still open there. Returns the holding task's id.
fn note_task_held_by_broker(
    ctx: &Context,
    located: &LocatedNote,
) -> Result<Option<String>, CliError> {
    let Some(task) = located
        .record
        .metadata
        .get("taskId")
        .and_then(Value::as_str)
    else {
        return Ok(None);
    };
    let root = located.store.project_root().display().to_string();
    let Ok(entries) = fs_err::read_dir(&ctx.dirs.runtime_dir) else {
        return Ok(None);
    };
    let sockets: Vec<PathBuf> = entries
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| {
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            name.starts_with("b-") && name.ends_with(".sock")
        })
        .collect();
    super::connect::runtime()?.block_on(async {
        for socket in sockets {
            let hello = super::connect::hello(shepherd_core::protocol::Role::Observer, None, None);
            let opened = tokio::time::timeout(
                std::time::Duration::from_secs(2),
                shepherd_broker::client::Client::open(&socket, &hello),
            )
            .await;
            let Ok(Ok((mut client, greeting))) = opened else {
                continue;
            };
            if greeting.project_root != root {
                continue;
            }
            let params = serde_json::json!({ "id": task, "timeoutMs": 0 });
            if let Ok(waited) = client
                .call_value(shepherd_core::protocol::method::WAIT, params)
                .await
                && waited["pending"]
                    .as_array()
                    .is_some_and(|pending| pending.iter().any(|id| id == task))
            {
                return Ok(Some(task.to_owned()));
            }
        }
        Ok(None)
    })
}

fn refuse_if_held_by_broker(ctx: &Context, located: &LocatedNote) -> Result<(), CliError> {
    match note_task_held_by_broker(ctx, located)? {
        None => Ok(()),
        Some(task) => Err(CliError::new(
            "held_by_broker",
            format!(
                "note `{}` belongs to task `{task}`, which a running broker still holds; finish the task through the broker instead",
                located.record.file_path
            ),
        )),
    }
}

/// `KEY=VALUE` pairs; a VALUE that parses as JSON is kept as JSON, anything else as text.
fn parse_meta(pairs: &[String]) -> Result<Metadata, CliError> {
    let mut metadata = Metadata::new();
    for pair in pairs {
        let Some((key, value)) = pair.split_once('=') else {
            return Err(CliError::new(
                "invalid_argument",
                format!("--meta `{pair}` is not KEY=VALUE (e.g. --meta taskId=t-1)"),
            ));
        };
        let value = serde_json::from_str(value).unwrap_or_else(|_| Value::from(value));
        metadata.insert(key.to_owned(), value);
    }
    Ok(metadata)
}

/// `text`, or standard input when `text` is `-`.
fn text_or_stdin(text: String) -> Result<String, CliError> {
    if text != "-" {
        return Ok(text);
    }
    let mut input = String::new();
    std::io::stdin()
        .read_to_string(&mut input)
        .map_err(|err| CliError::new("io", format!("cannot read standard input: {err}")))?;
    Ok(input)
}

/// The one-line rendering and stable code of a store error.
fn store_error(err: &StoreError) -> CliError {
    let code = match err {
        StoreError::Io(_) => "io",
        StoreError::LockTimeout { .. } => "lock_timeout",
        StoreError::InvalidName(_) => "invalid_name",
        StoreError::InvalidIdentity { .. } => "invalid_identity",
        StoreError::ProjectRoot { .. } => "invalid_project",
        StoreError::SessionNotFound { .. } | StoreError::NotANote { .. } => "not_found",
        StoreError::Malformed { .. } => "malformed",
        StoreError::UnsafePath { .. } => "unsafe_path",
        StoreError::Op(op) => match op {
            OpError::AlreadyFinal { .. } => "already_final",
            OpError::NotFinal { .. } => "not_final",
            OpError::UnknownNote { .. } => "not_found",
            OpError::InvalidLink { .. } => "invalid_link",
            OpError::OtherSession { .. } => "stale_session",
            _ => "invalid_argument",
        },
    };
    let mut message = err.to_string();
    let mut source = std::error::Error::source(err);
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    CliError::new(code, message)
}
