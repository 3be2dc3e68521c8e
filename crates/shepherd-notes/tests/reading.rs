//! Reading a session the way a person and a sheep do: relative links that resolve, the
//! context block, finding a note's session from its path, and snapshots of a whole session.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::common;

use common::{Project, at};
use serde_json::json;
use shepherd_notes::{
    Finalization, Metadata, Mode, NoteOp, NoteStatus, OpError, PlannedNote, Resolved, Store,
    StoreError,
};

fn named(project: &Project, name: &str) -> (Store, Resolved) {
    let store = project.store();
    let resolved = store.create_or_continue_named(name, at(0)).unwrap();
    (store, resolved)
}

fn meta(pairs: &[(&str, serde_json::Value)]) -> Metadata {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect()
}

fn planned(agent: &str, mode: Mode, group: &str) -> PlannedNote {
    PlannedNote {
        group: Some(group.to_owned()),
        mode,
        task: Some(format!("task for {agent}")),
        ..PlannedNote::new(agent)
    }
}

#[test]
fn links_in_the_fieldnotes_are_relative_and_resolve() {
    let project = Project::new();
    let (store, resolved) = named(&project, "links");
    let session = &resolved.session;
    std::fs::create_dir_all(project.root.join("src/auth")).unwrap();
    std::fs::write(project.root.join("src/auth/service.ts"), "").unwrap();
    store
        .reserve(session, vec![PlannedNote::new("scout")], at(1))
        .unwrap();
    let absolute = project.root.join("src/auth/service.ts");
    let link = store
        .link(
            session,
            absolute.to_str().unwrap(),
            Some("Auth service".to_owned()),
            at(2),
        )
        .unwrap();
    assert_eq!(link.target, "src/auth/service.ts");
    for bad in ["/etc/passwd", "../x", "no/such/file", "", "http://"] {
        let err = store.link(session, bad, None, at(3)).unwrap_err();
        assert!(
            matches!(err, StoreError::Op(OpError::InvalidLink { .. })),
            "{bad}: {err}"
        );
    }
    let index = project.read(session, "shepherd.md");
    let dir = project.session_dir(session);
    let mut links = 0;
    for piece in index.split("](").skip(1) {
        let href = &piece[..piece.find(')').unwrap()];
        if href.starts_with("http") {
            continue;
        }
        assert!(!href.starts_with('/'), "absolute link {href}");
        assert!(dir.join(href).exists(), "link {href} does not resolve");
        links += 1;
    }
    // Two notes' links, the related file and the shepherd's note.
    assert_eq!(links, 4, "{index}");
    assert!(index.contains("- [Auth service](../../../src/auth/service.ts)"));
}

#[test]
fn the_context_block_points_at_the_session_and_the_note() {
    let project = Project::new();
    let (store, resolved) = named(&project, "context");
    let session = &resolved.session;
    let notes = store
        .reserve(session, vec![PlannedNote::new("scout")], at(1))
        .unwrap();
    let metadata = store.load(session).unwrap();
    let block = store.context_block(&metadata, &notes[0]);
    let dir = project.session_dir(session);
    assert!(block.contains(&format!(
        "- Session directory: {} (project-relative: .shepherd/sessions/0001-context)",
        dir.display()
    )));
    assert!(block.contains(&format!(
        "- Session fieldnotes: {}/shepherd.md",
        dir.display()
    )));
    assert!(block.contains(&format!("- Your note: {}/scout-01.md (project-relative: .shepherd/sessions/0001-context/scout-01.md)", dir.display())));
    assert!(!block.contains("continues earlier work"));
    let later = store
        .reserve(session, vec![PlannedNote::new("worker")], at(2))
        .unwrap();
    let metadata = store.load(session).unwrap();
    let block = store.context_block(&metadata, &later[0]);
    assert!(
        block.contains("continues earlier work: 1 earlier note(s)"),
        "{block}"
    );
}

#[test]
fn locate_note_finds_the_session_from_any_path_form() {
    let project = Project::new();
    let (store, resolved) = named(&project, "locate");
    let session = &resolved.session;
    store
        .reserve(session, vec![PlannedNote::new("scout")], at(1))
        .unwrap();
    let path = project.session_dir(session).join("scout-01.md");
    let found = Store::locate_note(&path).unwrap();
    assert_eq!(&found.session, session);
    assert_eq!(found.record.file_name, "scout-01.md");
    assert_eq!(found.store.project_root(), project.root);
    for bad in [
        project.session_dir(session).join("shepherd.md"),
        project.session_dir(session).join("nope.md"),
        project.root.join("scout-01.md"),
    ] {
        assert!(Store::locate_note(&bad).is_err(), "{}", bad.display());
    }
}

#[test]
fn a_whole_session_reads_well() {
    let project = Project::new();
    let store = project.store();
    let resolved = store
        .resolve_or_create_parent_session("pi-1", None, at(0))
        .unwrap();
    let session = &resolved.session;
    std::fs::create_dir_all(project.root.join("docs")).unwrap();
    std::fs::write(project.root.join("docs/plan.md"), "").unwrap();
    let chain = ["scout", "planner"].map(|a| planned(a, Mode::Chain, "d1"));
    store.reserve(session, chain.to_vec(), at(1)).unwrap();
    let ops = vec![
        NoteOp::Start {
            note: "scout-01.md".to_owned(),
            metadata: meta(&[("taskId", json!("t1")), ("agentId", json!("a1"))]),
            task: None,
        },
        NoteOp::Finalize {
            note: "scout-01.md".to_owned(),
            result: Finalization {
                output: Some("Found the bug.".to_owned()),
                ..Finalization::new(NoteStatus::Completed)
            },
        },
        NoteOp::Reserve(planned("reviewer", Mode::Parallel, "d2")),
        NoteOp::Reserve(planned("tester", Mode::Parallel, "d2")),
        NoteOp::Link {
            target: "docs/plan.md".to_owned(),
            title: Some("Plan".to_owned()),
        },
    ];
    store.apply(session, ops, at(2)).unwrap();
    let root = project.root.to_str().unwrap().to_owned();
    let mut settings = insta::Settings::clone_current();
    settings.add_filter(&regex_escape(&root), "[PROJECT]");
    settings.bind(|| {
        insta::assert_snapshot!("store_index", project.read(session, "shepherd.md"));
        insta::assert_snapshot!("store_note_finished", project.read(session, "scout-01.md"));
        insta::assert_snapshot!(
            "store_note_pending",
            project.read(session, "reviewer-01.md")
        );
        insta::assert_snapshot!("store_session_json", project.read(session, "session.json"));
    });
}

fn regex_escape(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '/' || c == '_' || c == '-' {
                c.to_string()
            } else {
                format!("\\{c}")
            }
        })
        .collect()
}
