//! Notes in a session: ordinals and file names, batch reservation, the lifecycle and its
//! metadata, body preservation, links, batches with refused operations, atomic commits.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::common;

use std::sync::Arc;

use common::{Project, assert_consistent, at, temp_leftovers};
use serde_json::json;
use shepherd_core::slug::hash8;
use shepherd_notes::{
    CommitStage, Finalization, Metadata, Mode, NoteOp, NoteStatus, OpError, PlannedNote, Resolved,
    Store, StoreError, StoreOptions,
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
        agent: agent.to_owned(),
        mode,
        task: Some(format!("task for {agent}")),
        group: Some(group.to_owned()),
        metadata: Metadata::new(),
        start: false,
    }
}

#[test]
fn ordinals_are_per_agent_and_duplicate_names_are_disambiguated() {
    let project = Project::new();
    let (store, resolved) = named(&project, "ordinals");
    let session = &resolved.session;
    std::fs::write(
        project.session_dir(session).join("planner-01.md"),
        "someone else's",
    )
    .unwrap();
    let notes = store
        .reserve(
            session,
            [
                "scout",
                "scout",
                "Scout",
                "planner",
                "Code Reviewer!",
                "???",
                "scout",
            ]
            .map(PlannedNote::new)
            .to_vec(),
            at(1),
        )
        .unwrap();
    let files: Vec<&str> = notes.iter().map(|n| n.file_name.as_str()).collect();
    assert_eq!(
        files,
        [
            "scout-01.md".to_owned(),
            "scout-02.md".to_owned(),
            format!("scout-{}-01.md", hash8("Scout")),
            "planner-2-01.md".to_owned(),
            "code-reviewer-01.md".to_owned(),
            "agent-01.md".to_owned(),
            "scout-03.md".to_owned(),
        ]
    );
    let ordinals: Vec<u32> = notes.iter().map(|n| n.ordinal).collect();
    assert_eq!(ordinals, [1, 2, 1, 1, 1, 1, 3]);
    assert_eq!(project.read(session, "planner-01.md"), "someone else's");
    for note in &notes {
        let path = std::path::Path::new(&note.file_path);
        assert_eq!(path.parent().unwrap(), project.session_dir(session));
        assert_eq!(
            note.relative_path,
            format!(".shepherd/sessions/0001-ordinals/{}", note.file_name)
        );
    }
    std::fs::remove_file(project.session_dir(session).join("planner-01.md")).unwrap();
    assert_eq!(assert_consistent(&project, session), 7);
}

#[test]
fn parallel_and_chain_notes_are_reserved_before_execution_in_input_order() {
    let project = Project::new();
    let (store, resolved) = named(&project, "flow");
    let session = &resolved.session;
    let chain = ["scout", "planner", "worker"].map(|a| planned(a, Mode::Chain, "call-1"));
    let parallel = ["reviewer", "tester"].map(|a| planned(a, Mode::Parallel, "call-2"));
    let chain = store.reserve(session, chain.to_vec(), at(1)).unwrap();
    let parallel = store.reserve(session, parallel.to_vec(), at(2)).unwrap();
    store
        .reserve(session, vec![PlannedNote::new("worker")], at(3))
        .unwrap();
    for note in chain.iter().chain(&parallel) {
        assert_eq!(note.status, NoteStatus::Pending);
        let text = project.read(session, &note.file_name);
        assert!(text.contains("status: pending"), "{text}");
    }
    let index = project.read(session, "shepherd.md");
    assert!(index.contains(
        "```text\n[scout-01](./scout-01.md) → [planner-01](./planner-01.md) → [worker-01](./worker-01.md)\n\
         parallel: [reviewer-01](./reviewer-01.md) · [tester-01](./tester-01.md)\n\
         [worker-02](./worker-02.md)\n```"
    ), "{index}");
    assert!(index.contains("- **Mode(s):** chain, parallel, single"));
    let json = project.session_json(session);
    assert_eq!(json["modes"], json!(["chain", "parallel", "single"]));
    assert_eq!(json["artifacts"][0]["group"], "call-1");
    assert_eq!(json["artifacts"][0]["task"], "task for scout");
    assert_consistent(&project, session);
}

#[test]
fn every_outcome_is_recorded_with_its_metadata() {
    let project = Project::new();
    let (store, resolved) = named(&project, "outcomes");
    let session = &resolved.session;
    let agents = ["done", "broken", "slow", "stopped"];
    store
        .reserve(session, agents.map(PlannedNote::new).to_vec(), at(1))
        .unwrap();
    let outcomes = [
        ("done-01.md", NoteStatus::Completed, Some("All good."), None),
        (
            "broken-01.md",
            NoteStatus::Failed,
            Some("partial"),
            Some("exit 1: boom"),
        ),
        (
            "slow-01.md",
            NoteStatus::TimedOut,
            None,
            Some("deadline of 600 s passed"),
        ),
        (
            "stopped-01.md",
            NoteStatus::Cancelled,
            None,
            Some("closed by the shepherd"),
        ),
    ];
    for (minute, (file, status, output, error)) in (2..).zip(outcomes) {
        let metadata = meta(&[
            ("taskId", json!(format!("t-{file}"))),
            ("pane", json!("w8:pY")),
        ]);
        store.start(session, file, metadata, at(minute)).unwrap();
        let result = Finalization {
            status,
            output: output.map(str::to_owned),
            error: error.map(str::to_owned),
            metadata: meta(&[("durationMs", json!(1500)), ("model", json!("fake/1"))]),
        };
        let record = store
            .finalize(session, file, result, at(minute + 10))
            .unwrap();
        assert_eq!(record.status, status);
        let text = project.read(session, file);
        assert!(text.contains(&format!("status: {status}\n")), "{text}");
        assert!(
            text.contains(&format!("- **Final status:** {status}\n")),
            "{text}"
        );
        assert!(text.contains("taskId: t-"), "{text}");
        assert!(text.contains("pane: \"w8:pY\""), "{text}");
        assert!(text.contains("started: \"2025-08-14T09:"), "{text}");
        assert!(text.contains("completed: \"2025-08-14T09:"), "{text}");
        assert!(text.contains(r#""durationMs":1500"#), "{text}");
        if let Some(output) = output {
            assert!(
                text.contains(&format!("### Final output\n\n{output}\n")),
                "{text}"
            );
        }
        if let Some(error) = error {
            assert!(text.contains(&format!("### Error\n\n{error}\n")), "{text}");
        }
        let view = store.read_note(session, file).unwrap();
        assert_eq!(view.final_output.as_deref(), output);
        assert_eq!(view.frontmatter.unwrap()["status"], status.as_str());
    }
    let json = project.session_json(session);
    assert_eq!(json["artifacts"][1]["error"], "exit 1: boom");
    assert_eq!(json["artifacts"][2]["status"], "timed-out");
    assert_eq!(json["artifacts"][2]["model"], "fake/1");
    assert_eq!(json["status"], "failed", "the most serious outcome wins");
    assert!(
        project
            .read(session, "shepherd.md")
            .contains("3. [Slow 01](./slow-01.md) — timed-out")
    );
}

#[test]
fn finalisation_happens_once_and_keeps_the_sheeps_words() {
    let project = Project::new();
    let (store, resolved) = named(&project, "once");
    let session = &resolved.session;
    store
        .reserve(session, vec![PlannedNote::new("scout")], at(1))
        .unwrap();
    store
        .start(session, "scout-01.md", Metadata::new(), at(2))
        .unwrap();
    let path = project.session_dir(session).join("scout-01.md");
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str("\n## Findings\n\n- tabs\tand trailing spaces   \n- [link](../../../src/lib.rs)");
    std::fs::write(&path, &text).unwrap();
    let (_, body) = text.split_once("\n---\n").unwrap();
    store
        .update(session, "scout-01.md", meta(&[("turns", json!(3))]), at(3))
        .unwrap();
    let mut result = Finalization::new(NoteStatus::Completed);
    result.output = Some("final words".to_owned());
    store
        .finalize(session, "scout-01.md", result, at(4))
        .unwrap();
    let finished = std::fs::read_to_string(&path).unwrap();
    assert!(finished.contains(body), "the body changed:\n{finished}");
    assert_eq!(finished.matches("# Scout 01").count(), 1);
    let again = store
        .finalize(
            session,
            "scout-01.md",
            Finalization::new(NoteStatus::Failed),
            at(5),
        )
        .unwrap_err();
    assert!(
        matches!(
            again,
            StoreError::Op(OpError::AlreadyFinal {
                status: NoteStatus::Completed,
                ..
            })
        ),
        "{again}"
    );
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        finished,
        "a refused finalise wrote"
    );
    // Late words replace only the final output; status and body stay.
    store
        .update_final_output(
            session,
            "scout-01.md",
            Some("last words".to_owned()),
            Metadata::new(),
            at(6),
        )
        .unwrap();
    let late = std::fs::read_to_string(&path).unwrap();
    assert!(late.contains(body));
    assert!(late.contains("### Final output\n\nlast words\n") && !late.contains("final words"));
    assert!(late.contains("status: completed"));
    assert_eq!(late.matches("<!-- Shepherd orchestration -->").count(), 1);
    let err = store
        .start(session, "scout-01.md", Metadata::new(), at(7))
        .unwrap_err();
    assert!(matches!(err, StoreError::Op(OpError::AlreadyFinal { .. })));
}

#[test]
fn a_batch_reports_refused_operations_without_failing_the_others() {
    let project = Project::new();
    let (store, resolved) = named(&project, "batch");
    let session = &resolved.session;
    store
        .reserve(session, vec![PlannedNote::new("a")], at(1))
        .unwrap();
    store
        .finalize(
            session,
            "a-01.md",
            Finalization::new(NoteStatus::Completed),
            at(2),
        )
        .unwrap();
    let src = project.root.join("src");
    std::fs::create_dir(&src).unwrap();
    std::fs::write(src.join("lib.rs"), "").unwrap();
    let ops = vec![
        NoteOp::Reserve(PlannedNote::new("b")),
        NoteOp::Finalize {
            note: "a-01.md".to_owned(),
            result: Finalization::new(NoteStatus::Failed),
        },
        NoteOp::Start {
            note: "b-01.md".to_owned(),
            metadata: meta(&[("agentId", json!("ag-1"))]),
            task: None,
        },
        NoteOp::Update {
            note: "missing.md".to_owned(),
            metadata: Metadata::new(),
        },
        NoteOp::Update {
            note: "b-01.md".to_owned(),
            metadata: meta(&[("status", json!("x"))]),
        },
        NoteOp::Link {
            target: "src/lib.rs".to_owned(),
            title: Some("Library".to_owned()),
        },
        NoteOp::Link {
            target: "../outside".to_owned(),
            title: None,
        },
        NoteOp::Link {
            target: "https://example.com/issues/1".to_owned(),
            title: None,
        },
        NoteOp::Reserve(PlannedNote::new("")),
    ];
    let applied = store.apply(session, ops, at(3)).unwrap();
    let ok: Vec<bool> = applied.outcomes.iter().map(Result::is_ok).collect();
    assert_eq!(
        ok,
        [true, false, true, false, false, true, false, true, false]
    );
    assert!(matches!(
        applied.outcomes[1],
        Err(OpError::AlreadyFinal { .. })
    ));
    assert!(matches!(
        applied.outcomes[3],
        Err(OpError::UnknownNote { .. })
    ));
    assert!(matches!(
        applied.outcomes[4],
        Err(OpError::InvalidMetadataKey { .. })
    ));
    assert!(matches!(
        applied.outcomes[6],
        Err(OpError::InvalidLink { .. })
    ));
    let started = applied.outcomes[2].as_ref().unwrap().note().unwrap();
    assert_eq!(started.status, NoteStatus::Running);
    assert_eq!(started.metadata["agentId"], "ag-1");
    let json = project.session_json(session);
    assert_eq!(json["artifacts"][0]["status"], "completed");
    assert_eq!(
        json["related"],
        json!([
            {"target": "src/lib.rs", "title": "Library"},
            {"target": "https://example.com/issues/1"},
        ])
    );
    assert_eq!(json["status"], "running");
    // A batch of only refused operations writes nothing at all.
    let before =
        std::fs::read_to_string(project.session_dir(session).join("session.json")).unwrap();
    let refused = store
        .apply(
            session,
            vec![NoteOp::Update {
                note: "nope.md".to_owned(),
                metadata: Metadata::new(),
            }],
            at(9),
        )
        .unwrap();
    assert!(refused.outcomes[0].is_err());
    let after = std::fs::read_to_string(project.session_dir(session).join("session.json")).unwrap();
    assert_eq!(before, after);
}

#[test]
fn stored_paths_are_rederived_and_unknown_keys_survive() {
    let project = Project::new();
    let (store, resolved) = named(&project, "paths");
    let session = &resolved.session;
    store
        .reserve(session, vec![PlannedNote::new("scout")], at(1))
        .unwrap();
    let file = project.session_dir(session).join("session.json");
    let mut json = project.session_json(session);
    json["sessionPath"] = json!("/tmp/evil");
    json["artifacts"][0]["filePath"] = json!("/tmp/evil/scout-01.md");
    json["artifacts"][0]["promptId"] = json!("pr-1");
    json["laterVersionKey"] = json!({"x": 1});
    std::fs::write(&file, serde_json::to_string_pretty(&json).unwrap()).unwrap();
    store
        .start(session, "scout-01.md", Metadata::new(), at(2))
        .unwrap();
    let json = project.session_json(session);
    let dir = project.session_dir(session);
    assert_eq!(json["sessionPath"], dir.to_str().unwrap());
    assert_eq!(
        json["artifacts"][0]["filePath"],
        dir.join("scout-01.md").to_str().unwrap()
    );
    assert_eq!(json["artifacts"][0]["promptId"], "pr-1");
    assert_eq!(json["laterVersionKey"], json!({"x": 1}));
    assert!(!std::path::Path::new("/tmp/evil").exists());
}

#[test]
fn a_failed_commit_changes_nothing_and_leaves_no_temp_files() {
    let project = Project::new();
    let (store, resolved) = named(&project, "atomic");
    let session = resolved.session.clone();
    store
        .reserve(&session, vec![PlannedNote::new("scout")], at(1))
        .unwrap();
    let dir = project.session_dir(&session);
    let snapshot = |dir: &std::path::Path| {
        let mut files: Vec<(String, String)> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap())
            .filter(|e| e.file_type().unwrap().is_file())
            .map(|e| {
                (
                    e.file_name().to_string_lossy().into_owned(),
                    std::fs::read_to_string(e.path()).unwrap(),
                )
            })
            .collect();
        files.sort();
        files
    };
    let before = snapshot(&dir);
    let failing = StoreOptions {
        commit_hook: Some(Arc::new(|stage: CommitStage<'_>| {
            if let CommitStage::Staged(_) = stage {
                panic!("disk full (simulated)");
            }
        })),
        ..StoreOptions::default()
    };
    let broken = Store::with_options(&project.root, failing).unwrap();
    let crashed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        broken.reserve(&session, vec![PlannedNote::new("planner")], at(2))
    }));
    assert!(crashed.is_err());
    assert_eq!(snapshot(&dir), before);
    assert!(
        temp_leftovers(&project.root).is_empty(),
        "{:?}",
        temp_leftovers(&project.root)
    );
    store
        .reserve(&session, vec![PlannedNote::new("planner")], at(3))
        .unwrap();
    assert!(temp_leftovers(&project.root).is_empty());
    assert_consistent(&project, &session);
}

#[test]
fn words_a_sheep_writes_during_a_commit_are_kept() {
    let project = Project::new();
    let (store, resolved) = named(&project, "late");
    let session = resolved.session.clone();
    store
        .reserve(&session, vec![PlannedNote::new("scout")], at(1))
        .unwrap();
    let note = project.session_dir(&session).join("scout-01.md");
    let path = note.clone();
    let sheep = StoreOptions {
        commit_hook: Some(Arc::new(move |stage: CommitStage<'_>| {
            if let CommitStage::Staged(_) = stage {
                let mut text = std::fs::read_to_string(&path).unwrap();
                text.push_str("\nwritten mid-commit\n");
                std::fs::write(&path, text).unwrap();
            }
        })),
        ..StoreOptions::default()
    };
    let racing = Store::with_options(&project.root, sheep).unwrap();
    racing
        .finalize(
            &session,
            "scout-01.md",
            Finalization::new(NoteStatus::Completed),
            at(2),
        )
        .unwrap();
    let text = std::fs::read_to_string(&note).unwrap();
    assert!(text.contains("\nwritten mid-commit\n"), "{text}");
    assert!(text.contains("status: completed"));
    assert!(text.contains("- **Final status:** completed"));
}

#[test]
fn a_note_a_dead_writer_left_unlisted_goes_with_the_next_commit_and_other_files_stay() {
    let project = Project::new();
    let (store, resolved) = named(&project, "orphans");
    let session = &resolved.session;
    let listed = store
        .reserve(session, vec![PlannedNote::new("scout")], at(1))
        .unwrap();
    let dir = project.session_dir(session);
    // What a writer killed between renaming its new note and renaming `session.json` leaves:
    // a pending note of this session that no record lists.
    let text = std::fs::read_to_string(dir.join(&listed[0].file_name)).unwrap();
    std::fs::write(dir.join("scout-07.md"), &text).unwrap();
    // A finished note's copy and a person's own file are not the store's to remove.
    std::fs::write(
        dir.join("kept-copy.md"),
        text.replace("status: pending", "status: completed"),
    )
    .unwrap();
    std::fs::write(dir.join("my-notes.md"), "# mine\n").unwrap();

    store
        .reserve(session, vec![PlannedNote::new("planner")], at(2))
        .unwrap();

    assert!(!dir.join("scout-07.md").exists(), "the orphan is removed");
    assert!(dir.join("kept-copy.md").exists());
    assert!(dir.join("my-notes.md").exists());
    let metadata = store.load(session).unwrap();
    assert_eq!(metadata.artifacts.len(), 2);
    assert!(
        dir.join(&listed[0].file_name).exists(),
        "the listed note stays"
    );
}
