//! A project's fieldnotes folder read as files, the way a person checks it, for the process-level
//! tests of every front end.
//!
//! Seed 001 closes with one assertion: one parent session with two child invocations leaves one
//! `.shepherd/sessions/NNNN-*` directory, two distinct note files in it and one index,
//! `shepherd.md`, linking both. [`assert_one_session`] is that assertion, for any number of
//! invocations: the CLI's, pi's and the MCP server's tests make it through their own front end.

use std::path::{Path, PathBuf};

use serde_json::Value;

/// The one session a project's fieldnotes hold.
#[derive(Debug, Clone)]
pub struct OneSession {
    /// Its directory.
    pub dir: PathBuf,
    /// Its notes' file names, in reservation order.
    pub notes: Vec<String>,
    /// Its index, `shepherd.md`.
    pub index: String,
}

/// Whether `name` is a session directory's name: four or more digits, a dash, a slug.
fn is_session_name(name: &str) -> bool {
    name.split_once('-').is_some_and(|(digits, slug)| {
        digits.len() >= 4 && digits.bytes().all(|b| b.is_ascii_digit()) && !slug.is_empty()
    })
}

/// The `## Notes` section of an index: from its heading to the next `## ` heading.
fn notes_section(index: &str) -> &str {
    let start = index
        .find("\n## Notes\n")
        .unwrap_or_else(|| panic!("no Notes section in shepherd.md:\n{index}"));
    let rest = &index[start + 1..];
    let end = rest[3..].find("\n## ").map_or(rest.len(), |at| at + 4);
    &rest[..end]
}

/// Asserts seed 001's closing assertion on `project`: its fieldnotes hold exactly one session
/// directory; that session's notes are exactly one per entry of `agents`, by those agents in
/// that order, each a file of its own; and the Notes list of its `shepherd.md` links each note
/// exactly once and nothing else. (The Flow section repeats the links as the flow.)
///
/// # Panics
/// When any of that does not hold, saying what was found.
#[must_use]
pub fn assert_one_session(project: &Path, agents: &[&str]) -> OneSession {
    let sessions = project.join(".shepherd/sessions");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&sessions)
        .unwrap_or_else(|err| panic!("{}: {err}", sessions.display()))
        .flatten()
        .filter(|entry| entry.path().is_dir())
        .filter(|entry| entry.file_name().to_str().is_some_and(is_session_name))
        .map(|entry| entry.path())
        .collect();
    assert_eq!(
        dirs.len(),
        1,
        "one parent session, one session directory: {dirs:?}"
    );
    let dir = dirs.remove(0);
    let record: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("session.json")).expect("session.json"),
    )
    .expect("session.json is JSON");
    let artifacts = record["artifacts"].as_array().cloned().unwrap_or_default();
    let by: Vec<&str> = artifacts
        .iter()
        .filter_map(|a| a["agent"].as_str())
        .collect();
    assert_eq!(
        by, agents,
        "one note per invocation, by its agent: {record}"
    );
    let notes: Vec<String> = artifacts
        .iter()
        .filter_map(|a| a["fileName"].as_str().map(str::to_owned))
        .collect();
    for (at, note) in notes.iter().enumerate() {
        assert!(
            !notes[..at].contains(note),
            "{note} is the note of two invocations: {notes:?}"
        );
        assert!(dir.join(note).is_file(), "{note} is a file of its own");
    }
    let index = std::fs::read_to_string(dir.join("shepherd.md")).expect("shepherd.md");
    let listed = notes_section(&index);
    for note in &notes {
        let links = listed.matches(&format!("](./{note})")).count();
        assert_eq!(links, 1, "the Notes list links {note} once:\n{index}");
    }
    assert_eq!(
        listed.matches("](./").count(),
        notes.len(),
        "the Notes list links the session's notes and nothing else:\n{index}"
    );
    OneSession { dir, notes, index }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_names_and_the_notes_section() {
        assert!(is_session_name("0001-orchestrator-1a2b3c4d"));
        assert!(is_session_name("12345-x"));
        for other in [".alloc", ".bindings", "001-x", "0001-", "abcd-x"] {
            assert!(!is_session_name(other), "{other}");
        }
        let index = "# S\n\n## Notes\n\n1. [A](./a-01.md) — done\n\n## Flow\n\n[a-01](./a-01.md)\n";
        assert_eq!(
            notes_section(index),
            "## Notes\n\n1. [A](./a-01.md) — done\n\n"
        );
    }
}
