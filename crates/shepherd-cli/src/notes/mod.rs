//! `shepherd notes …`: the fieldnotes store from the command line.
//!
//! An offline tool for scripts and for programs that want to write notes without a broker:
//! list and show sessions, reserve a note, mark it started, finish it, attach related files,
//! delete a note or attach feedback to it (`curate`).
//! Every command works on one project (`--project`, default the current directory); note
//! commands find their project from the note's path. With `--json` each prints one JSON
//! document with absolute paths and their project-relative twins. All writing goes through
//! `shepherd-notes`, the only code that writes fieldnotes.

mod curate;
mod held;
mod through_broker;

use shepherd_core::error_code::ErrorCode;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Subcommand, ValueEnum};
use jiff::Timestamp;
use serde::Serialize;
use serde_json::{Value, json};
use shepherd_core::fieldnotes::Binding;
use shepherd_notes::{
    ArtifactRecord, Finalization, ListedSession, LocatedNote, Metadata, Mode, NoteStatus,
    PlannedNote, SessionKey, SessionMetadata, Store, StoreError,
};

use crate::Printer;
use crate::ProjectArg;
use held::refuse_if_held_by_broker;
use shepherd_client::CliError;
use shepherd_client::Context;
use shepherd_core::protocol::{NoteChange, NotesSession};
use through_broker::Written;

/// Read and write fieldnotes sessions (`.shepherd/sessions/NNNN-slug/`).
#[derive(Debug, Subcommand)]
pub enum NotesCommand {
    /// List the sessions of a project with their status and note count.
    List(ListArgs),
    /// Show one session: its metadata and its notes.
    Show(ShowArgs),
    /// Reserve a note for an agent, creating or continuing the session.
    Reserve(ReserveArgs),
    /// Mark a reserved note running.
    Start(StartArgs),
    /// Finalise a note with its outcome, once (again with the same status, error and metadata
    /// changes nothing).
    Finish(FinishArgs),
    /// Attach a project file or a URL to a session's Related files.
    Link(LinkArgs),
    /// Delete a final note: its file goes, its record stays marked deleted.
    Delete(curate::DeleteArgs),
    /// Attach feedback to a note, for its owner and every reader of the session.
    Feedback(curate::FeedbackArgs),
}

#[derive(Debug, Args)]
pub struct ListArgs {
    #[command(flatten)]
    project: ProjectArg,
}

#[derive(Debug, Args)]
pub struct ShowArgs {
    /// The session: directory name (`0003-fix-login`), ordinal (`3`) or exact session name.
    session: String,
    #[command(flatten)]
    project: ProjectArg,
}

#[derive(Debug, Args)]
#[command(group = clap::ArgGroup::new("owner").required(true).args(["parent_session", "session_name"]))]
pub struct ReserveArgs {
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
pub struct StartArgs {
    /// The note file.
    note: PathBuf,
    /// Metadata to record, as KEY=VALUE (VALUE is JSON if it parses, else text). Repeatable.
    #[arg(long = "meta", value_name = "KEY=VALUE")]
    meta: Vec<String>,
}

#[derive(Debug, Args)]
pub struct FinishArgs {
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
pub struct LinkArgs {
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

pub fn run(cmd: NotesCommand, ctx: &Context, printer: &Printer) -> Result<ExitCode, CliError> {
    match cmd {
        NotesCommand::List(args) => list(&args, ctx, *printer),
        NotesCommand::Show(args) => show(&args, ctx, *printer),
        NotesCommand::Reserve(args) => reserve(args, ctx, *printer),
        NotesCommand::Start(args) => start(&args, ctx, *printer),
        NotesCommand::Finish(args) => finish(args, ctx, *printer),
        NotesCommand::Link(args) => link(args, ctx, *printer),
        NotesCommand::Delete(args) => curate::delete(&args, ctx, *printer),
        NotesCommand::Feedback(args) => curate::feedback(args, ctx, *printer),
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
        "label": note.label(),
        "deletedAt": note.deleted_at,
        "feedback": note.feedback,
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
    let session = match &key {
        SessionKey::Parent(identity) => NotesSession::Parent {
            parent_session: identity.clone(),
            parent_session_file: args.parent_session_file.clone(),
        },
        SessionKey::Name(name) => NotesSession::Named {
            session_name: name.clone(),
        },
    };
    let change = NoteChange::Reserve {
        agent: planned.agent.clone(),
        mode: planned.mode,
        task: planned.task.clone(),
        group: planned.group.clone(),
        start: planned.start,
    };
    // One commit when the store's binding index knows the session (it checks and continues
    // the session in the same commit); nothing else in the project is read.
    let done = through_broker::write(ctx, &store, session, change, || {
        let mut reserved = store.reserve_in(
            &key,
            args.parent_session_file.as_deref(),
            vec![planned],
            Timestamp::now(),
        )?;
        Ok(Written {
            session: reserved.session,
            session_name: reserved.session_name,
            resumed: reserved.resumed,
            note: Some(reserved.notes.remove(0)),
            related: None,
        })
    })?;
    let session_dir = store.session_dir(&done.session);
    let (session_name, resumed) = (done.session_name.clone(), done.resumed);
    let note = done.note()?;
    let reserved = Reserved {
        session: session_dir.display().to_string(),
        session_name,
        session_relative: store
            .relative(&session_dir)
            .unwrap_or_else(|| session_dir.display().to_string()),
        note: note.file_path,
        note_relative: note.relative_path,
        resumed,
    };
    printer.emit(&reserved, || {
        format!("session: {}\nnote: {}", reserved.session, reserved.note)
    });
    Ok(())
}

pub(super) fn locate(ctx: &Context, note: &Path) -> Result<LocatedNote, CliError> {
    Store::locate_note(&ctx.cwd.join(note)).map_err(|err| store_error(&err))
}

/// What `notes start` and `notes finish` print.
pub(super) fn note_result(located: &LocatedNote, record: &ArtifactRecord) -> Value {
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
    let change = NoteChange::Start {
        note: located.record.file_name.clone(),
        metadata: metadata.clone(),
    };
    let record = change_note(ctx, &located, change, || {
        located.store.start(
            &located.session,
            &located.record.file_name,
            metadata,
            Timestamp::now(),
        )
    })?;
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
    let change = NoteChange::Finish {
        note: located.record.file_name.clone(),
        status: result.status,
        output: result.output.clone(),
        error: result.error.clone(),
        metadata: result.metadata.clone(),
    };
    let record = change_note(ctx, &located, change, || {
        located.store.finalize(
            &located.session,
            &located.record.file_name,
            result,
            Timestamp::now(),
        )
    })?;
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
    let target = if shepherd_core::fieldnotes::metadata::is_url(&args.target) {
        args.target
    } else {
        let path = ctx.cwd.join(&args.target);
        path.to_str()
            .ok_or_else(|| {
                CliError::new(
                    ErrorCode::InvalidArgument,
                    format!("link target `{}` is not valid UTF-8", path.display()),
                )
            })?
            .to_owned()
    };
    let change = NoteChange::Link {
        target: target.clone(),
        title: args.title.clone(),
    };
    let to = NotesSession::Directory {
        directory: session.directory_name().to_owned(),
    };
    let written = through_broker::write(ctx, &store, to, change, || {
        let related = store.link(&session, &target, args.title, Timestamp::now())?;
        Ok(Written {
            session: session.clone(),
            session_name: String::new(),
            resumed: true,
            note: None,
            related: Some(related),
        })
    })?;
    let linked = written.related.ok_or_else(|| {
        CliError::new(
            ErrorCode::Internal,
            "the link was made but not reported back",
        )
    })?;
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

/// Changes the note `located` names, through the project's broker when one runs.
pub(super) fn change_note(
    ctx: &Context,
    located: &LocatedNote,
    change: NoteChange,
    direct: impl FnOnce() -> Result<ArtifactRecord, StoreError>,
) -> Result<ArtifactRecord, CliError> {
    let to = NotesSession::Directory {
        directory: located.session.directory_name().to_owned(),
    };
    through_broker::write(ctx, &located.store, to, change, || {
        Ok(Written {
            session: located.session.clone(),
            session_name: String::new(),
            resumed: true,
            note: Some(direct()?),
            related: None,
        })
    })?
    .note()
}

/// `KEY=VALUE` pairs; a VALUE that parses as JSON is kept as JSON, anything else as text.
fn parse_meta(pairs: &[String]) -> Result<Metadata, CliError> {
    let mut metadata = Metadata::new();
    for pair in pairs {
        let Some((key, value)) = pair.split_once('=') else {
            return Err(CliError::new(
                ErrorCode::InvalidArgument,
                format!("--meta `{pair}` is not KEY=VALUE (e.g. --meta taskId=t-1)"),
            ));
        };
        let value = serde_json::from_str(value).unwrap_or_else(|_| Value::from(value));
        metadata.insert(key.to_owned(), value);
    }
    Ok(metadata)
}

/// `text`, or standard input when `text` is `-`.
pub(super) fn text_or_stdin(text: String) -> Result<String, CliError> {
    if text != "-" {
        return Ok(text);
    }
    let mut input = String::new();
    std::io::stdin().read_to_string(&mut input).map_err(|err| {
        CliError::new(ErrorCode::Io, format!("cannot read standard input: {err}"))
    })?;
    Ok(input)
}

/// The one-line rendering and stable code of a store error.
pub(super) fn store_error(err: &StoreError) -> CliError {
    CliError::new(err.code(), err.one_line())
}
