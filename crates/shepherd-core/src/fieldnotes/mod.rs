//! The fieldnotes data model and its rendering: `session.json`, note frontmatter and bodies,
//! `shepherd.md`, and the context block a sheep receives.
//!
//! A fieldnotes session is a folder `<project>/.shepherd/sessions/NNNN-<slug>/` holding
//! `session.json` (the durable record), `shepherd.md` (the index a person reads, regenerated
//! from the record on every change), `shepherds-note.md` (the shepherd's own, which nothing
//! regenerates) and one `<agentSlug>-NN.md` note per delegated task. The
//! layout and both file formats are the original extension's (version 2), so a folder written by
//! either program reads the same to a person and to the other program. Everything here is pure:
//! the store (`shepherd-notes`) reads files, hands their text in, and writes what comes back.
//!
//! - [`metadata`] — the `session.json` model, its defensive validation and path re-derivation,
//!   and the rule a related link's target follows.
//! - `error` — why a change to the record was refused ([`OpError`]), below the record and the
//!   transitions both.
//! - [`ops`] — the state transitions the store applies under its lock (reserve, start, update,
//!   finalise, delete, attach feedback, link, set status).
//! - `curation` — deleting a note and attaching feedback to one.
//! - [`naming`] — note file names and collision-free session slugs.
//! - [`frontmatter`], [`note`] — a note's frontmatter and body, with the store's own
//!   orchestration section kept apart from what the sheep wrote.
//! - [`index`] — `shepherd.md`, linking the shepherd's own note.
//! - [`shepherds_note`] — the shepherd's own note, a file no rewrite of the index touches (its
//!   entry in `session.json` is a record of [`metadata`]).
//! - [`context`] — the text appended to a delegated task.

pub mod branches;
pub mod context;
mod curation;
mod error;
pub mod frontmatter;
pub mod index;
mod markdown;
pub mod metadata;
pub mod naming;
pub mod note;
pub mod ops;
pub mod shepherds_note;
pub mod status;

#[cfg(test)]
mod snapshot_tests;

pub use branches::BranchRecord;
pub use context::{SheepContext, render_context_block, split_context_block};
pub use error::OpError;
pub use metadata::{
    ArtifactRecord, Binding, Feedback, LABEL_KEY, Malformed, Metadata, ParentBinding, RelatedLink,
    SHEPHERDS_NOTE_FILE, SessionMetadata, ShepherdsNote,
};
pub use ops::PlannedNote;
pub use status::{Mode, NoteStatus};

/// The project-level Shepherd directory.
pub const SHEPHERD_DIR: &str = ".shepherd";
/// The directory under [`SHEPHERD_DIR`] that holds the numbered sessions.
pub const SESSIONS_DIR: &str = "sessions";
/// Project-relative path of the sessions directory, with `/` separators.
pub const SESSIONS_RELATIVE: &str = ".shepherd/sessions";
/// A session's durable record.
pub const SESSION_METADATA_FILE: &str = "session.json";
/// A session's human index (map of content).
pub const INDEX_FILE: &str = "shepherd.md";
/// The original's lock file in the sessions directory, created exclusively while sessions are
/// resolved or created (and removed again).
pub const ROOT_LOCK_FILE: &str = ".sessions.lock";
/// The original's lock file in a session directory, created exclusively for every
/// read-modify-write of that session (and removed again).
pub const SESSION_LOCK_FILE: &str = ".session.lock";
/// Shepherd's own OS advisory lock beside [`ROOT_LOCK_FILE`], taken first; it stays on disk.
pub const ROOT_FLOCK_FILE: &str = ".sessions.flock";
/// Shepherd's own OS advisory lock beside [`SESSION_LOCK_FILE`], taken first; it stays on disk.
pub const SESSION_FLOCK_FILE: &str = ".session.flock";
/// Directory of ordinal reservation tokens (`.alloc/NNNN/`), kept so a number is never reused.
pub const ALLOC_DIR: &str = ".alloc";
/// The `artifactSessionVersion` this code writes.
pub const SESSION_VERSION: u32 = 2;

/// `NNNN-<slug>`: the zero-padded ordinal (four digits, more when needed) and the slug.
pub fn directory_name(ordinal: u32, slug: &str) -> String {
    format!("{ordinal:04}-{slug}")
}

/// Splits a session directory name `NNNN-<rest>` (at least four digits, a dash and at least one
/// more character) into its ordinal and the rest; `None` for any other entry.
pub fn parse_directory_name(name: &str) -> Option<(u32, &str)> {
    let (digits, rest) = name.split_once('-')?;
    if rest.is_empty() || !is_plain_name(name) {
        return None;
    }
    Some((parse_ordinal_token(digits)?, rest))
}

/// Parses an ordinal token (`.alloc/NNNN`): four or more ASCII digits.
pub fn parse_ordinal_token(name: &str) -> Option<u32> {
    if name.len() < 4 || !name.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    name.parse().ok()
}

/// Whether `name` is a single path component that names nothing special: not empty, not
/// hidden, no separator, no control character.
pub fn is_plain_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('.')
        && !name.contains(['/', '\\'])
        && !name.chars().any(char::is_control)
}

/// Whether `name` may be a note's file name: a plain name that is not one of the session's
/// own files (its record, its index, the shepherd's note).
pub fn is_note_file_name(name: &str) -> bool {
    is_plain_name(name)
        && name != INDEX_FILE
        && name != SESSION_METADATA_FILE
        && name != SHEPHERDS_NOTE_FILE
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directory_names_round_trip() {
        assert_eq!(directory_name(7, "fix-login"), "0007-fix-login");
        assert_eq!(directory_name(12345, "x"), "12345-x");
        assert_eq!(
            parse_directory_name("0007-fix-login"),
            Some((7, "fix-login"))
        );
        assert_eq!(parse_directory_name("12345-x"), Some((12345, "x")));
        for bad in ["007-x", "0007-", "0007", "abcd-x", ".0007-x", "0007-a/b"] {
            assert_eq!(parse_directory_name(bad), None, "{bad}");
        }
    }

    #[test]
    fn note_file_names_exclude_session_files() {
        assert!(is_note_file_name("scout-01.md"));
        for bad in [
            "shepherd.md",
            "session.json",
            "shepherds-note.md",
            "../x.md",
            ".hidden.md",
            "",
            "a\0b",
        ] {
            assert!(!is_note_file_name(bad), "{bad:?}");
        }
    }
}
