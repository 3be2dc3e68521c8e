//! Fieldnotes shared with the original, checked against the original itself: pi-shepherd's own
//! fieldnotes store (`artifact-sessions.ts`), run by Node with its types stripped
//! (`original_node/driver.mjs` calls it as the original's extension does), writing into folders
//! Shepherd wrote, and Shepherd writing after it.
//!
//! The original regenerates the whole of `shepherd.md` whenever it writes a session, from its
//! own rules: these tests pin down what a folder written by both keeps. The shepherd's note,
//! a file the original never writes, is kept word for word; so is everything Shepherd keeps in
//! `session.json` (the original rewrites the record with every key it does not know); what the
//! original's index lacks — the link to the shepherd's note, feedback lines, deleted notes
//! struck through, sheeps' labels — comes back with Shepherd's next write; text a shepherd wrote
//! into `shepherd.md` itself, not yet moved into its note by a write of Shepherd's, is lost.
//!
//! Where the original is: `SHEPHERD_ORIGINAL_SESSIONS` (the path of its `artifact-sessions.ts`),
//! else `.tools/pi-shepherd-original/artifact-sessions.ts` (`scripts/setup`). Node:
//! `SHEPHERD_NODE`, else `.tools/node-22`'s, else `node` on PATH; it must strip types (22.6 or
//! newer). Without either each test says so in one line and passes;
//! `SHEPHERD_REQUIRE_ORIGINAL=1` makes that a failure (`tests/interop.rs` checks the same
//! folders against the original's rules encoded in Rust, which need neither).

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{Project, assert_consistent, at};
use serde_json::{Value, json};
use shepherd_notes::{Finalization, NoteStatus, PlannedNote, SessionRef, Store};

/// The original's fieldnotes store and a Node that runs it.
struct Original {
    node: PathBuf,
    module: PathBuf,
}

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

impl Original {
    /// The original and a Node to run it, or `None` after one printed line saying what is
    /// missing (a failure with `SHEPHERD_REQUIRE_ORIGINAL=1`).
    fn locate(test: &str) -> Option<Self> {
        let module = std::env::var_os("SHEPHERD_ORIGINAL_SESSIONS").map_or_else(
            || repository().join(".tools/pi-shepherd-original/artifact-sessions.ts"),
            PathBuf::from,
        );
        let node = std::env::var_os("SHEPHERD_NODE")
            .map(PathBuf::from)
            .or_else(|| {
                let dir = repository().join(".tools/node-22/node_modules");
                std::fs::read_dir(dir)
                    .ok()?
                    .flatten()
                    .map(|entry| entry.path().join("bin/node"))
                    .find(|node| node.is_file())
            })
            .unwrap_or_else(|| PathBuf::from("node"));
        let strips_types = Command::new(&node)
            .args(["--experimental-strip-types", "-e", "const x: number = 1"])
            .output()
            .is_ok_and(|out| out.status.success());
        let missing = if !module.is_file() {
            format!(
                "the original's artifact-sessions.ts is not at {} (scripts/setup, or set SHEPHERD_ORIGINAL_SESSIONS)",
                module.display()
            )
        } else if !strips_types {
            format!(
                "{} cannot run TypeScript (Node 22.6 or newer; set SHEPHERD_NODE)",
                node.display()
            )
        } else {
            return Some(Self { node, module });
        };
        assert!(
            std::env::var_os("SHEPHERD_REQUIRE_ORIGINAL").is_none_or(|v| v != "1"),
            "{test}: {missing}"
        );
        println!("skipping {test}: {missing}");
        None
    }

    /// Runs `steps` (see `original_node/driver.mjs`) in one Node process; what it printed.
    fn run(&self, steps: &Value) -> Value {
        let driver = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/original_node/driver.mjs");
        let out = Command::new(&self.node)
            .arg("--experimental-strip-types")
            .arg("--no-warnings")
            .arg(driver)
            .arg(&self.module)
            .arg(steps.to_string())
            .output()
            .expect("node runs");
        assert!(
            out.status.success(),
            "the original failed: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("the driver prints JSON")
    }
}

const GUIDANCE: &str = "## Guidance\n\nAll sheep: use the staging database.\n";
const LINK: &str = "[Shepherd's note](./shepherds-note.md) — ";

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|err| panic!("{}: {err}", path.display()))
}

fn append(path: &Path, text: &str) {
    let mut existing = std::fs::read_to_string(path).unwrap_or_default();
    existing.push_str(text);
    std::fs::write(path, existing).unwrap();
}

/// Shepherd's part: a labelled note with feedback, a deleted note, and the shepherd's own note
/// with guidance in it.
fn shepherd_writes(store: &Store, session: &SessionRef, dir: &Path) {
    let mut labelled = PlannedNote::new("scout");
    labelled
        .metadata
        .insert("label".to_owned(), Value::from("map"));
    store
        .reserve(session, vec![labelled, PlannedNote::new("worker")], at(1))
        .unwrap();
    for note in ["scout-01.md", "worker-01.md"] {
        store
            .finalize(
                session,
                note,
                Finalization::new(NoteStatus::Completed),
                at(2),
            )
            .unwrap();
    }
    store
        .add_feedback(
            session,
            "scout-01.md",
            "shepherd",
            "Check the token expiry too.",
            at(3),
        )
        .unwrap();
    store.delete_note(session, "worker-01.md", at(4)).unwrap();
    append(&dir.join("shepherds-note.md"), GUIDANCE);
}

/// What Shepherd's index shows of its part.
fn shows_shepherds_part(index: &str) {
    assert_eq!(index.matches(LINK).count(), 1, "{index}");
    assert!(
        index.contains("[Scout 01: map](./scout-01.md) — completed"),
        "{index}"
    );
    assert!(
        index.contains("- Feedback from shepherd (")
            && index.contains("Check the token expiry too."),
        "{index}"
    );
    assert!(
        index.contains("~~Worker 01~~ — completed, deleted "),
        "{index}"
    );
}

fn a_folder_written_by_both(binding: &str) {
    let test = format!("original_node::{binding}");
    let Some(original) = Original::locate(&test) else {
        return;
    };
    let project = Project::new();
    let store = project.store();
    let root = project.root.to_str().unwrap().to_owned();
    let (session, find) = match binding {
        "parent" => (
            store
                .resolve_or_create_parent_session("pi-session-7", None, at(0))
                .unwrap()
                .session,
            json!({"op": "resolveParent", "identity": "pi-session-7", "projectRoot": root}),
        ),
        _ => (
            store
                .create_or_continue_named("fix login", at(0))
                .unwrap()
                .session,
            json!({"op": "named", "name": "fix login", "projectRoot": root}),
        ),
    };
    let dir = project.session_dir(&session);
    shepherd_writes(&store, &session, &dir);
    shows_shepherds_part(&read(&dir.join("shepherd.md")));
    let note = read(&dir.join("shepherds-note.md"));
    assert!(note.ends_with(GUIDANCE), "{note}");

    // The original continues the session and delegates a task in it.
    let done = original.run(&json!([
        find,
        {"op": "delegate", "agent": "reviewer", "task": "review it", "taskId": "t-9", "output": "looks fine"}
    ]));
    assert_eq!(done["sessionPath"], dir.to_str().unwrap(), "{done}");
    assert_eq!(done["resumed"], true, "{done}");
    assert_eq!(done["notes"], json!(["reviewer-01.md"]), "{done}");

    // Its index is its own: none of Shepherd's additions, a deleted note linked though gone,
    // and the shepherd's note not linked.
    let theirs = read(&dir.join("shepherd.md"));
    assert!(
        theirs.contains("1. [Scout 01](./scout-01.md) — completed"),
        "{theirs}"
    );
    assert!(
        theirs.contains("2. [Worker 01](./worker-01.md) — completed"),
        "{theirs}"
    );
    assert!(
        theirs.contains("3. [Reviewer 01](./reviewer-01.md) — completed"),
        "{theirs}"
    );
    for gone in ["Shepherd's note", "Feedback from", "~~", "Scout 01: map"] {
        assert!(
            !theirs.contains(gone),
            "{gone:?} in the original's index: {theirs}"
        );
    }
    // The shepherd's note is untouched, and the record keeps everything Shepherd put in it.
    assert_eq!(read(&dir.join("shepherds-note.md")), note);
    let record: Value = serde_json::from_str(&read(&dir.join("session.json"))).unwrap();
    assert_eq!(
        record["shepherdsNote"]["fileName"], "shepherds-note.md",
        "{record}"
    );
    assert_eq!(record["artifacts"][0]["label"], "map", "{record}");
    assert_eq!(
        record["artifacts"][0]["feedback"][0]["text"], "Check the token expiry too.",
        "{record}"
    );
    assert!(record["artifacts"][1]["deletedAt"].is_string(), "{record}");

    // Shepherd's next write brings its part of the index back, with the original's note in it.
    store
        .reserve(&session, vec![PlannedNote::new("tester")], at(5))
        .unwrap();
    let ours = read(&dir.join("shepherd.md"));
    shows_shepherds_part(&ours);
    assert!(
        ours.contains("[Reviewer 01](./reviewer-01.md) — completed"),
        "{ours}"
    );
    assert_eq!(read(&dir.join("shepherds-note.md")), note);
    assert_eq!(assert_consistent(&project, &session), 4);

    // And the original goes on reading it.
    let again = original.run(&json!([find]));
    assert_eq!(again["sessionPath"], dir.to_str().unwrap(), "{again}");
}

#[test]
fn a_parent_bound_session_written_by_both_keeps_the_shepherds_note_and_shepherds_part_returns() {
    a_folder_written_by_both("parent");
}

#[test]
fn a_named_session_written_by_both_keeps_the_shepherds_note_and_shepherds_part_returns() {
    a_folder_written_by_both("named");
}

/// Text a shepherd writes into `shepherd.md` itself is moved into its note by Shepherd's next
/// write; should the original rewrite the index first, that text is gone.
#[test]
fn text_written_into_shepherd_md_survives_a_write_of_shepherds_but_not_one_of_the_originals() {
    let Some(original) = Original::locate("original_node::text_written_into_shepherd_md") else {
        return;
    };
    let project = Project::new();
    let store = project.store();
    let root = project.root.to_str().unwrap().to_owned();
    let session = store
        .create_or_continue_named("moved", at(0))
        .unwrap()
        .session;
    let dir = project.session_dir(&session);
    append(
        &dir.join("shepherd.md"),
        "\n## Map\n\nAuth lives in src/auth.\n",
    );
    store
        .reserve(&session, vec![PlannedNote::new("scout")], at(1))
        .unwrap();
    assert!(read(&dir.join("shepherds-note.md")).contains("Auth lives in src/auth."));

    append(
        &dir.join("shepherd.md"),
        "\n## Later\n\nWritten after Shepherd's last write.\n",
    );
    original.run(&json!([
        {"op": "named", "name": "moved", "projectRoot": root},
        {"op": "delegate", "agent": "reviewer", "task": "t", "taskId": "t-1", "output": "ok"}
    ]));
    store
        .reserve(&session, vec![PlannedNote::new("worker")], at(2))
        .unwrap();
    let note = read(&dir.join("shepherds-note.md"));
    assert!(note.contains("Auth lives in src/auth."), "{note}");
    assert!(
        !note.contains("Written after"),
        "the original's rewrite erased it: {note}"
    );
    assert!(!read(&dir.join("shepherd.md")).contains("Written after"));
}
