//! Finding and creating sessions: name safety, same-name continuation, slug collisions,
//! parent binding (seed 001 §5.1), project isolation, legacy and malformed sessions.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::common;

use common::{Project, at, temp_leftovers};
use serde_json::json;
use shepherd_core::slug::hash8;
use shepherd_notes::{PlannedNote, SessionRef, StoreError};

#[test]
fn unsafe_session_names_are_refused_and_nothing_is_written() {
    let project = Project::new();
    let store = project.store();
    let long = "x".repeat(201);
    for name in [
        "",
        "  ",
        "../escape",
        "a/b",
        "a\\b",
        "/abs",
        ".",
        "..",
        "a\0b",
        "tab\there",
        "!!!",
        &long,
    ] {
        let err = store.create_or_continue_named(name, at(0)).unwrap_err();
        assert!(matches!(err, StoreError::InvalidName(_)), "{name:?}: {err}");
        assert!(err.to_string().contains(&format!("{name:?}")), "{err}");
    }
    assert!(
        !project.root.join(".shepherd").exists(),
        "a refused name wrote something"
    );
}

#[test]
fn same_name_continues_the_session() {
    let project = Project::new();
    let store = project.store();
    let first = store
        .create_or_continue_named("Fix OAuth login", at(0))
        .unwrap();
    assert!(!first.resumed);
    assert_eq!(first.session.directory_name(), "0001-fix-oauth-login");
    store
        .reserve(&first.session, vec![PlannedNote::new("scout")], at(1))
        .unwrap();
    let second = store
        .create_or_continue_named("  Fix OAuth login ", at(2))
        .unwrap();
    assert!(second.resumed);
    assert_eq!(second.session, first.session);
    store
        .reserve(&second.session, vec![PlannedNote::new("worker")], at(3))
        .unwrap();
    assert_eq!(project.session_dirs(), ["0001-fix-oauth-login"]);
    let json = project.session_json(&first.session);
    assert_eq!(json["resumed"], true);
    assert_eq!(json["artifacts"].as_array().unwrap().len(), 2);
    assert!(
        !project.root.join(".shepherd/shepherd.md").exists(),
        "no top-level index"
    );
}

#[test]
fn different_names_with_one_slug_never_merge() {
    let project = Project::new();
    let store = project.store();
    let a = store.create_or_continue_named("fix login", at(0)).unwrap();
    let b = store
        .create_or_continue_named("Fix: Login!", at(1))
        .unwrap();
    let c = store.create_or_continue_named("FIX LOGIN", at(2)).unwrap();
    assert_eq!(a.session.directory_name(), "0001-fix-login");
    assert_eq!(
        b.session.directory_name(),
        format!("0002-fix-login-{}", hash8("Fix: Login!"))
    );
    assert_eq!(
        c.session.directory_name(),
        format!("0003-fix-login-{}", hash8("FIX LOGIN"))
    );
    for (resolved, name) in [(&a, "fix login"), (&b, "Fix: Login!"), (&c, "FIX LOGIN")] {
        let again = store.create_or_continue_named(name, at(5)).unwrap();
        assert_eq!(again.session, resolved.session, "{name}");
        assert!(again.resumed);
    }
}

#[test]
fn unnamed_delegations_always_get_a_new_session() {
    let project = Project::new();
    let store = project.store();
    let task = "Fix the OAuth login bug in src/auth.rs before the release";
    let first = store.create_for_task(Some(task), at(0)).unwrap();
    let second = store.create_for_task(Some(task), at(1)).unwrap();
    let third = store.create_for_task(None, at(2)).unwrap();
    let name = "fix-the-oauth-login-bug-in-src-auth-rs-before";
    assert_eq!(first.metadata.session_name, name);
    assert_eq!(first.session.directory_name(), format!("0001-{name}"));
    assert_ne!(second.session, first.session);
    assert_ne!(second.metadata.session_name, name, "names stay unique");
    assert_eq!(third.metadata.session_name, "delegation");
    let continued = store
        .create_or_continue_named(&second.metadata.session_name, at(3))
        .unwrap();
    assert_eq!(continued.session, second.session);
}

#[test]
fn first_parent_binding_allocates_a_version_2_session() {
    let project = Project::new();
    let store = project.store();
    let resolved = store
        .resolve_or_create_parent_session("pi-session-1", Some("/home/u/s.jsonl"), at(0))
        .unwrap();
    assert!(!resolved.resumed);
    let dir = format!("0001-orchestrator-{}", hash8("pi-session-1"));
    assert_eq!(resolved.session.directory_name(), dir);
    let json = project.session_json(&resolved.session);
    let root = project.root.to_str().unwrap();
    let keys: Vec<&str> = json
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "artifactSessionVersion",
            "parentPiSession",
            "parentPiSessionId",
            "parentSessionFile",
            "sessionName",
            "slug",
            "ordinal",
            "directoryName",
            "projectRoot",
            "sessionPath",
            "sessionRelativePath",
            "mocPath",
            "sessionMetadataPath",
            "resumed",
            "startedAt",
            "updatedAt",
            "status",
            "modes",
            "artifacts",
            "shepherdsNote",
        ]
    );
    assert_eq!(json["artifactSessionVersion"], 2);
    assert_eq!(
        json["parentPiSession"],
        json!({
            "identity": "pi-session-1",
            "projectRoot": root,
            "boundAt": "2025-08-14T09:00:00.000Z",
            "sessionFile": "/home/u/s.jsonl",
        })
    );
    assert_eq!(
        json["sessionPath"],
        format!("{root}/.shepherd/sessions/{dir}")
    );
    assert_eq!(
        json["sessionRelativePath"],
        format!(".shepherd/sessions/{dir}")
    );
    assert_eq!(json["status"], "running");
    let index = project.read(&resolved.session, "shepherd.md");
    assert!(index.contains(&format!(
        "- **Parent binding:** parent-bound (identity {})",
        hash8("pi-session-1")
    )));
    assert!(
        !index.contains("pi-session-1"),
        "the raw identity never reaches shepherd.md"
    );
    assert!(project.sessions_dir().join(".alloc/0001").is_dir());
}

#[test]
fn repeated_lookup_reuses_the_parents_session_and_keeps_its_notes() {
    let project = Project::new();
    let store = project.store();
    let first = store
        .resolve_or_create_parent_session("p1", None, at(0))
        .unwrap();
    store
        .reserve(&first.session, vec![PlannedNote::new("scout")], at(1))
        .unwrap();
    store
        .finalize(
            &first.session,
            "scout-01.md",
            shepherd_notes::Finalization::new(shepherd_notes::NoteStatus::Completed),
            at(2),
        )
        .unwrap();
    assert_eq!(project.session_json(&first.session)["status"], "completed");
    let again = store
        .resolve_or_create_parent_session("p1", Some("/s/new.jsonl"), at(3))
        .unwrap();
    assert!(again.resumed);
    assert_eq!(again.session, first.session);
    let json = project.session_json(&first.session);
    assert_eq!(json["resumed"], true);
    assert_eq!(
        json["status"], "running",
        "a finished session runs again when resumed"
    );
    assert_eq!(json["parentSessionFile"], "/s/new.jsonl");
    assert_eq!(json["parentPiSession"]["sessionFile"], "/s/new.jsonl");
    store
        .reserve(&again.session, vec![PlannedNote::new("scout")], at(4))
        .unwrap();
    let json = project.session_json(&first.session);
    let files: Vec<&str> = json["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["fileName"].as_str().unwrap())
        .collect();
    assert_eq!(files, ["scout-01.md", "scout-02.md"]);
    assert_eq!(project.session_dirs().len(), 1);
}

#[test]
fn different_parents_get_separate_sessions_for_the_same_task() {
    let project = Project::new();
    let store = project.store();
    let a = store
        .resolve_or_create_parent_session("parent-a", None, at(0))
        .unwrap();
    let b = store
        .resolve_or_create_parent_session("parent-b", None, at(0))
        .unwrap();
    assert_ne!(a.session, b.session);
    for resolved in [&a, &b] {
        let task = PlannedNote {
            task: Some("same task".to_owned()),
            ..PlannedNote::new("scout")
        };
        let notes = store.reserve(&resolved.session, vec![task], at(1)).unwrap();
        assert_eq!(notes[0].file_name, "scout-01.md");
    }
    assert_eq!(
        store
            .resolve_or_create_parent_session("parent-a", None, at(2))
            .unwrap()
            .session,
        a.session
    );
}

#[test]
fn sessions_are_isolated_per_canonical_project_root() {
    let one = Project::new();
    let two = Project::new();
    let a = one
        .store()
        .resolve_or_create_parent_session("p", None, at(0))
        .unwrap();
    let b = two
        .store()
        .resolve_or_create_parent_session("p", None, at(0))
        .unwrap();
    assert!(!b.resumed, "another project's session is never found");
    assert_eq!(a.session.directory_name(), b.session.directory_name());
    // The same project reached through a symlink is the same project.
    let link = one.temp.path().join("link");
    std::os::unix::fs::symlink(&one.root, &link).unwrap();
    let via_link = shepherd_notes::Store::open(&link).unwrap();
    let again = via_link
        .resolve_or_create_parent_session("p", None, at(1))
        .unwrap();
    assert!(again.resumed);
    assert_eq!(again.session, a.session);
    // A session bound in another project root (e.g. copied here) is never claimed.
    let copied = two.sessions_dir().join("0005-copied");
    std::fs::create_dir(&copied).unwrap();
    let mut json = one.session_json(&a.session);
    json["directoryName"] = json!("0005-copied");
    json["ordinal"] = json!(5);
    let text = serde_json::to_string_pretty(&json).unwrap();
    std::fs::write(copied.join("session.json"), &text).unwrap();
    let c = two
        .store()
        .resolve_or_create_parent_session("p", None, at(2))
        .unwrap();
    assert_eq!(c.session, b.session);
    assert_eq!(
        std::fs::read_to_string(copied.join("session.json")).unwrap(),
        text
    );
}

/// A session as the original extension's name-based flow wrote it: no version, no binding.
fn write_legacy(project: &Project, dir: &str, name: &str) -> String {
    let path = project.sessions_dir().join(dir);
    std::fs::create_dir_all(&path).unwrap();
    let root = project.root.to_str().unwrap();
    let json = json!({
        "sessionName": name, "slug": "legacy", "ordinal": 1, "directoryName": dir,
        "projectRoot": root, "sessionPath": format!("{root}/.shepherd/sessions/{dir}"),
        "sessionRelativePath": format!(".shepherd/sessions/{dir}"),
        "mocPath": "/somewhere/else/shepherd.md", "sessionMetadataPath": "/x/session.json",
        "resumed": false, "startedAt": "2025-01-01T00:00:00.000Z",
        "updatedAt": "2025-01-01T00:00:00.000Z", "status": "completed", "modes": ["single"],
        "artifacts": [], "customKey": [1, 2, 3],
    });
    let text = format!("{}\n", serde_json::to_string_pretty(&json).unwrap());
    std::fs::write(path.join("session.json"), &text).unwrap();
    text
}

#[test]
fn legacy_unbound_sessions_are_never_claimed_by_a_parent() {
    let project = Project::new();
    let legacy = write_legacy(
        &project,
        "0001-legacy",
        &format!("orchestrator-{}", hash8("p")),
    );
    let store = project.store();
    let bound = store
        .resolve_or_create_parent_session("p", None, at(0))
        .unwrap();
    assert_eq!(bound.session.ordinal(), 2);
    let legacy_path = project.sessions_dir().join("0001-legacy/session.json");
    assert_eq!(std::fs::read_to_string(&legacy_path).unwrap(), legacy);
    // A name lookup also never picks a parent-bound session by its name.
    let named = store
        .create_or_continue_named(&bound.metadata.session_name, at(1))
        .unwrap();
    assert_eq!(
        named.session.directory_name(),
        "0001-legacy",
        "legacy named flow continues"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&legacy_path).unwrap()).unwrap();
    assert_eq!(
        json["customKey"],
        json!([1, 2, 3]),
        "unknown keys survive a rewrite"
    );
    assert!(
        json.get("artifactSessionVersion").is_none(),
        "a legacy session stays legacy"
    );
    assert_eq!(
        json["mocPath"],
        format!(
            "{}/.shepherd/sessions/0001-legacy/shepherd.md",
            project.root.display()
        ),
        "stored paths are re-derived"
    );
}

#[test]
fn malformed_sessions_are_absent_and_untouched() {
    let project = Project::new();
    let sessions = project.sessions_dir();
    let cases = [
        ("0001-garbage", "{ not json".to_owned()),
        ("0002-wrong-dir", {
            let mut j = serde_json::from_str::<serde_json::Value>(&write_legacy(
                &project,
                "0002-wrong-dir",
                "wrong",
            ))
            .unwrap();
            j["directoryName"] = json!("0009-elsewhere");
            serde_json::to_string(&j).unwrap()
        }),
        ("0003-traversal", {
            let mut j = serde_json::from_str::<serde_json::Value>(&write_legacy(
                &project,
                "0003-traversal",
                "traversal",
            ))
            .unwrap();
            j["ordinal"] = json!(3);
            j["artifacts"] = json!([{
                "agent": "evil", "ordinal": 1, "fileName": "../../../../escape.md",
                "mode": "single", "status": "pending", "reservedAt": "t"
            }]);
            serde_json::to_string(&j).unwrap()
        }),
    ];
    for (dir, text) in &cases {
        std::fs::create_dir_all(sessions.join(dir)).unwrap();
        std::fs::write(sessions.join(dir).join("session.json"), text).unwrap();
    }
    let store = project.store();
    for name in ["garbage", "wrong", "traversal"] {
        let created = store.create_or_continue_named(name, at(0)).unwrap();
        assert!(!created.resumed, "{name} must not be claimed");
    }
    let session = SessionRef::new("0003-traversal").unwrap();
    let err = store
        .reserve(&session, vec![PlannedNote::new("x")], at(1))
        .unwrap_err();
    assert!(matches!(err, StoreError::Malformed { .. }), "{err}");
    for (dir, text) in &cases {
        let now = std::fs::read_to_string(sessions.join(dir).join("session.json")).unwrap();
        assert_eq!(&now, text, "{dir} was rewritten");
        assert!(!sessions.join(dir).join("shepherd.md").exists());
    }
    assert!(!project.temp.path().join("escape.md").exists());
    let listed = store.list_sessions().unwrap();
    let invalid = listed
        .iter()
        .filter(|s| matches!(s, shepherd_notes::ListedSession::Invalid { .. }))
        .count();
    assert_eq!(invalid, 3);
}

#[test]
fn abandoned_numbers_are_never_reused() {
    let project = Project::new();
    let store = project.store();
    store.create_or_continue_named("one", at(0)).unwrap();
    std::fs::create_dir(project.sessions_dir().join(".alloc/0002")).unwrap();
    std::fs::create_dir(project.sessions_dir().join(".alloc/0007")).unwrap();
    let next = store.create_or_continue_named("two", at(1)).unwrap();
    assert_eq!(next.session.ordinal(), 8);
    assert_eq!(project.session_dirs(), ["0001-one", "0008-two"]);
    assert!(temp_leftovers(&project.root).is_empty());
}

#[test]
fn invalid_parent_identities_are_refused() {
    let project = Project::new();
    let store = project.store();
    for identity in ["", "a\nb", "nul\0"] {
        let err = store
            .resolve_or_create_parent_session(identity, None, at(0))
            .unwrap_err();
        assert!(matches!(err, StoreError::InvalidIdentity { .. }), "{err}");
    }
    assert!(!project.root.join(".shepherd").exists());
}

#[test]
fn a_symlinked_sessions_directory_is_refused() {
    let project = Project::new();
    let elsewhere = project.temp.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, project.root.join(".shepherd")).unwrap();
    let err = project
        .store()
        .create_or_continue_named("x", at(0))
        .unwrap_err();
    assert!(matches!(err, StoreError::UnsafePath { .. }), "{err}");
}
