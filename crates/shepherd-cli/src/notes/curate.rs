//! `shepherd notes delete` and `shepherd notes feedback`: what a note's owner and its readers do
//! with a note besides writing it.
//!
//! The concept dictionary lets an owner delete a note and lets anyone share feedback on one.
//! Both go through the store like every other write, so `session.json` records them (a deleted
//! note keeps its record, marked `deletedAt`, so its number is never reused; feedback is a
//! list on the note's record) and `shepherd.md` shows them (a deleted note struck through, each
//! piece of feedback under its note).

use std::path::PathBuf;

use clap::Args;
use jiff::Timestamp;
use serde_json::json;

use shepherd_core::protocol::NoteChange;

use super::{change_note, locate, note_result, text_or_stdin};
use crate::Printer;
use shepherd_client::CliError;
use shepherd_client::Context;

#[derive(Debug, Args)]
pub struct DeleteArgs {
    /// The note file (it must be final: completed, failed, timed-out or cancelled).
    note: PathBuf,
}

#[derive(Debug, Args)]
pub struct FeedbackArgs {
    /// The note file.
    note: PathBuf,
    /// The feedback (`-` reads it from standard input).
    #[arg(long, value_name = "TEXT")]
    text: String,
    /// Who gives it.
    #[arg(long, value_name = "NAME", default_value = "shepherd")]
    from: String,
}

pub(super) fn delete(args: &DeleteArgs, ctx: &Context, printer: Printer) -> Result<(), CliError> {
    let located = locate(ctx, &args.note)?;
    let change = NoteChange::Delete {
        note: located.record.file_name.clone(),
    };
    let record = change_note(ctx, &located, change, || {
        located.store.delete_note(
            &located.session,
            &located.record.file_name,
            Timestamp::now(),
        )
    })?;
    let mut doc = note_result(&located, &record);
    doc["deletedAt"] = json!(record.deleted_at);
    printer.emit(&doc, || format!("{} is deleted", record.file_path));
    Ok(())
}

pub(super) fn feedback(
    args: FeedbackArgs,
    ctx: &Context,
    printer: Printer,
) -> Result<(), CliError> {
    let located = locate(ctx, &args.note)?;
    let text = text_or_stdin(args.text)?;
    let change = NoteChange::Feedback {
        note: located.record.file_name.clone(),
        from: args.from.clone(),
        text: text.clone(),
    };
    let record = change_note(ctx, &located, change, || {
        located.store.add_feedback(
            &located.session,
            &located.record.file_name,
            &args.from,
            &text,
            Timestamp::now(),
        )
    })?;
    let mut doc = note_result(&located, &record);
    doc["feedback"] = json!(record.feedback);
    printer.emit(&doc, || {
        format!(
            "feedback attached to {} ({} in all)",
            record.file_path,
            record.feedback.len()
        )
    });
    Ok(())
}
