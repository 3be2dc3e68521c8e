//! Notes a dead writer left unlisted: found and removed by the next holder of the session lock.
//!
//! A commit renames its new notes into place before `session.json`, so the record never lists a
//! note that is not there. A writer killed between those renames leaves a note file that no
//! record lists: a reservation nobody was ever told about (its answer needs the record), so no
//! sheep can be writing it. Such a file is recognised by what the store itself wrote into it:
//! a note file name, frontmatter naming this session, and a status a note has only before it
//! finishes (`pending` or `running`). Anything else unlisted — a person's own file, a finished
//! note's copy — is left alone. Call only while holding the session lock (both Shepherd's and
//! the original's), so no live writer of either is between its renames.

use std::collections::HashSet;
use std::io;
use std::path::Path;

use serde_json::Value;
use shepherd_core::fieldnotes::frontmatter::parse_frontmatter;
use shepherd_core::fieldnotes::{NoteStatus, SessionMetadata, is_note_file_name};

use crate::StoreError;
use crate::read::read_regular_file;

/// Removes from `dir` (and from `names`, the directory's entries) every note file a dead
/// writer left unlisted in `metadata`. Returns the names removed.
pub(crate) fn remove_unlisted_reservations(
    dir: &Path,
    metadata: &SessionMetadata,
    names: &mut HashSet<String>,
) -> Result<Vec<String>, StoreError> {
    let listed: HashSet<&str> = metadata
        .artifacts
        .iter()
        .map(|note| note.file_name.as_str())
        .collect();
    let mut removed = Vec::new();
    for name in names.iter() {
        if !name.ends_with(".md") || !is_note_file_name(name) || listed.contains(name.as_str()) {
            continue;
        }
        let path = dir.join(name);
        let Some(text) = read_regular_file(&path)? else {
            continue;
        };
        if !is_unfinished_reservation_of(&text, &metadata.directory_name) {
            continue;
        }
        match fs_err::remove_file(&path) {
            Err(err) if err.kind() != io::ErrorKind::NotFound => return Err(err.into()),
            _ => {
                tracing::warn!(
                    note = %path.display(),
                    "removed a note a writer that died mid-commit left unlisted"
                );
                removed.push(name.clone());
            }
        }
    }
    for name in &removed {
        names.remove(name);
    }
    Ok(removed)
}

/// Whether `text` is a note the store wrote for session `directory` that has not finished.
fn is_unfinished_reservation_of(text: &str, directory: &str) -> bool {
    let Some(fields) = parse_frontmatter(text) else {
        return false;
    };
    let field = |key: &str| match fields.get(key) {
        Some(Value::String(value)) => Some(value.as_str()),
        _ => None,
    };
    field("session") == Some(directory)
        && matches!(
            field("status"),
            Some(status) if status == NoteStatus::Pending.as_str()
                || status == NoteStatus::Running.as_str()
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_unfinished_reservations_of_this_session_count() {
        let note = |session: &str, status: &str| {
            format!("---\nsession: {session}\nagent: worker\nstatus: {status}\n---\n\nbody\n")
        };
        assert!(is_unfinished_reservation_of(
            &note("0001-a", "pending"),
            "0001-a"
        ));
        assert!(is_unfinished_reservation_of(
            &note("0001-a", "running"),
            "0001-a"
        ));
        assert!(!is_unfinished_reservation_of(
            &note("0001-a", "completed"),
            "0001-a"
        ));
        assert!(!is_unfinished_reservation_of(
            &note("0002-b", "pending"),
            "0001-a"
        ));
        assert!(!is_unfinished_reservation_of("# my own notes\n", "0001-a"));
    }
}
