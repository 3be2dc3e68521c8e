//! Every list of the harnesses written out by hand names them all, in `Harness::ALL`'s order.
//!
//! The lists the front ends offer are generated from `Harness::ALL` (the MCP choices, the pi
//! extension's `HARNESSES`, the protocol's types), but the words around them cannot all be:
//! an error's accepted values, a table in the docs, a test that walks every agent. Adding a
//! harness would leave each of those one name short without a word from the compiler, so this
//! reads the repository's sources, scripts and docs for lines that list four or more harness
//! names in a row and checks each names every harness (pi may be left out, where the list is
//! of the agents besides pi), in order.

// A test reading the repository's files directly; clippy.toml's rules are for the code it tests.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::path::{Path, PathBuf};

use shepherd_core::harness::Harness;

/// Where hand-written text lives, from the repository's root.
const ROOTS: &[&str] = &[
    "crates",
    "integrations/pi",
    "docs",
    "scripts",
    "README.md",
    "CONTRIBUTING.md",
    "ARCHITECTURE.md",
];

/// Directories that hold no hand-written text.
const SKIPPED: &[&str] = &["node_modules", "target", ".git"];

/// What may stand between two names of one list: punctuation and quotes, `or`, `and`, and pi's
/// `(default)`.
fn joins_a_list(gap: &str) -> bool {
    let gap = gap.replace("(default)", " ");
    gap.split(|c: char| " ,|\"'`/".contains(c))
        .all(|word| word.is_empty() || word == "or" || word == "and")
}

/// The lists of harness names on `line`: runs of names with nothing but [`joins_a_list`]
/// between them.
fn lists(line: &str) -> Vec<Vec<&'static str>> {
    let is_name_char = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
    let mut found: Vec<(usize, usize, &'static str)> = Vec::new();
    for name in Harness::NAMES {
        for (at, _) in line.match_indices(name) {
            let end = at + name.len();
            let before = line[..at].chars().next_back();
            let after = line[end..].chars().next();
            if !before.is_some_and(is_name_char) && !after.is_some_and(is_name_char) {
                found.push((at, end, name));
            }
        }
    }
    found.sort_unstable();
    let mut lists: Vec<Vec<&'static str>> = Vec::new();
    let mut last_end: Option<usize> = None;
    for (at, end, name) in found {
        match (last_end, lists.last_mut()) {
            (Some(last), Some(list)) if joins_a_list(&line[last..at]) => list.push(name),
            _ => lists.push(vec![name]),
        }
        last_end = Some(end);
    }
    lists
}

/// Whether a list of four or more names, where one is written, names every harness in order.
fn drifted(list: &[&str]) -> bool {
    let mut distinct = list.to_vec();
    distinct.sort_unstable();
    distinct.dedup();
    if distinct.len() < 4 {
        return false;
    }
    let all = Harness::NAMES;
    list != all && list != &all[1..]
}

fn files(root: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut pending: Vec<PathBuf> = ROOTS.iter().map(|path| root.join(path)).collect();
    while let Some(path) = pending.pop() {
        if path.is_dir() {
            for entry in std::fs::read_dir(&path).unwrap() {
                let entry = entry.unwrap().path();
                let skipped = entry
                    .file_name()
                    .is_some_and(|name| SKIPPED.iter().any(|s| name == *s));
                if !skipped {
                    pending.push(entry);
                }
            }
        } else if path.is_file() {
            files.push(path);
        }
    }
    files.sort();
    files
}

#[test]
fn every_hand_written_list_names_every_harness() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut drifts = Vec::new();
    let mut read = 0;
    for file in files(&root) {
        // Binary files and lock files list no harness.
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        read += 1;
        for (number, line) in text.lines().enumerate() {
            for list in lists(line) {
                if drifted(&list) {
                    let shown = file.strip_prefix(&root).unwrap_or(&file).display();
                    drifts.push(format!("{shown}:{}: {}", number + 1, list.join(", ")));
                }
            }
        }
    }
    assert!(
        read > 100,
        "read only {read} files under {}",
        root.display()
    );
    assert!(
        drifts.is_empty(),
        "these lists do not name every harness ({}) in order:\n{}",
        Harness::accepted(),
        drifts.join("\n")
    );
}

#[test]
fn lists_are_read_from_a_line_and_checked() {
    // Written one name a line, so that this file lists no harness itself.
    let line = [
        "expected `pi` (default), `claude-code`,",
        " `codex` or `gemini`; pi-ai says codex",
    ]
    .concat();
    let first = &lists(&line)[0];
    assert_eq!(first.len(), 4, "{first:?}");
    assert_eq!(first[..2], Harness::NAMES[..2]);
    assert!(drifted(first), "opencode is missing");
    assert!(!drifted(&Harness::NAMES));
    assert!(!drifted(&Harness::NAMES[1..]));
    assert!(
        !drifted(&["codex", "gemini", "opencode"]),
        "too short to be all"
    );
    let mut reordered = Harness::NAMES;
    reordered.swap(1, 2);
    assert!(drifted(&reordered));
}
