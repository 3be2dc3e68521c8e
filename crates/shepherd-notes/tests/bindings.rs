//! The binding index: a parent's or a name's session is found by reading one session's record,
//! whatever the number of sessions; the index is rebuilt when missing, never believed when it
//! is wrong, and stays right when the original's rules create sessions in the same project.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::common;
use crate::original;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::{Project, assert_consistent, at};
use original::Original;
use shepherd_notes::{CommitStage, PlannedNote, SessionKey, SessionRef, Store, StoreOptions};

/// A store that counts how many session records it reads.
fn counting_store(project: &Project) -> (Store, Arc<AtomicUsize>) {
    let loads = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&loads);
    let options = StoreOptions {
        commit_hook: Some(Arc::new(move |stage: CommitStage<'_>| {
            if let CommitStage::Loaded(_) = stage {
                seen.fetch_add(1, Ordering::SeqCst);
            }
        })),
        ..StoreOptions::default()
    };
    (Store::with_options(&project.root, options).unwrap(), loads)
}

/// `n` sessions of other parents and names, each with a note.
fn crowd(store: &Store, n: usize) {
    for i in 0..n {
        let session = if i % 2 == 0 {
            store
                .resolve_or_create_parent_session(&format!("other-{i}"), None, at(0))
                .unwrap()
                .session
        } else {
            store
                .create_or_continue_named(&format!("other {i}"), at(0))
                .unwrap()
                .session
        };
        store
            .reserve(&session, vec![PlannedNote::new("scout")], at(1))
            .unwrap();
    }
}

fn loads_during<T>(loads: &AtomicUsize, f: impl FnOnce() -> T) -> (T, usize) {
    let before = loads.load(Ordering::SeqCst);
    let out = f();
    (out, loads.load(Ordering::SeqCst) - before)
}

#[test]
fn a_known_binding_costs_one_read_however_many_sessions_there_are() {
    let project = Project::new();
    let (store, loads) = counting_store(&project);
    crowd(&store, 30);
    let mine = store
        .resolve_or_create_parent_session("me", None, at(2))
        .unwrap()
        .session;
    let named = store
        .create_or_continue_named("mine", at(2))
        .unwrap()
        .session;
    crowd(&store, 10);
    // The first continuation marks each session resumed (a write, which reads again under
    // the lock); the figures below are for every continuation after it.
    store
        .resolve_or_create_parent_session("me", None, at(3))
        .unwrap();
    store.create_or_continue_named("mine", at(3)).unwrap();

    let (again, read) = loads_during(&loads, || {
        store
            .resolve_or_create_parent_session("me", None, at(3))
            .unwrap()
    });
    assert_eq!(again.session, mine);
    assert_eq!(read, 1, "one record read to confirm the index's answer");
    let (again, read) = loads_during(&loads, || {
        store.create_or_continue_named("mine", at(3)).unwrap()
    });
    assert_eq!(again.session, named);
    assert_eq!(read, 1);
    let (found, read) = loads_during(&loads, || store.find_session("mine").unwrap());
    assert_eq!(found, named);
    assert_eq!(read, 1);

    // Reserving through the index reads the record once: inside its own commit.
    let (reserved, read) = loads_during(&loads, || {
        store
            .reserve_in(
                &SessionKey::Parent("me".to_owned()),
                None,
                vec![PlannedNote::new("worker")],
                at(4),
            )
            .unwrap()
    });
    assert_eq!(reserved.session, mine);
    assert!(reserved.resumed);
    assert_eq!(read, 1);
    assert_eq!(assert_consistent(&project, &mine), 1);
}

#[test]
fn a_missing_index_is_rebuilt_by_one_scan() {
    let project = Project::new();
    let (store, loads) = counting_store(&project);
    crowd(&store, 12);
    let mine = store
        .create_or_continue_named("mine", at(2))
        .unwrap()
        .session;
    std::fs::remove_dir_all(project.sessions_dir().join(".bindings")).unwrap();

    let (found, read) = loads_during(&loads, || {
        store.create_or_continue_named("mine", at(3)).unwrap()
    });
    assert_eq!(found.session, mine);
    assert!(read >= 13, "the scan read every session ({read})");
    // The scan indexed every session it read, not only the one asked for.
    let (_, read) = loads_during(&loads, || {
        store
            .resolve_or_create_parent_session("other-4", None, at(4))
            .unwrap()
    });
    assert!(
        read <= 2,
        "one read to confirm, one under the lock to mark it resumed ({read})"
    );
}

#[test]
fn a_wrong_index_entry_is_never_believed() {
    let project = Project::new();
    let store = project.store();
    let a = store
        .resolve_or_create_parent_session("a", None, at(0))
        .unwrap()
        .session;
    let b = store
        .resolve_or_create_parent_session("b", None, at(0))
        .unwrap()
        .session;
    // Make the index say that parent `a`'s session is `b`'s.
    let bindings = project.sessions_dir().join(".bindings");
    let entry_of = |wanted: &SessionRef| {
        std::fs::read_dir(&bindings)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| {
                std::fs::read_to_string(p)
                    .unwrap()
                    .contains(wanted.directory_name())
            })
            .unwrap()
    };
    let entry_a = entry_of(&a);
    let text = std::fs::read_to_string(&entry_a).unwrap();
    std::fs::write(
        &entry_a,
        text.replace(a.directory_name(), b.directory_name()),
    )
    .unwrap();

    let reserved = store
        .reserve_in(
            &SessionKey::Parent("a".to_owned()),
            None,
            vec![PlannedNote::new("scout")],
            at(1),
        )
        .unwrap();
    assert_eq!(reserved.session, a, "the session's own record decides");
    assert_eq!(assert_consistent(&project, &a), 1);
    assert_eq!(assert_consistent(&project, &b), 0, "nothing written into b");
    assert_eq!(
        store
            .resolve_or_create_parent_session("a", None, at(2))
            .unwrap()
            .session,
        a
    );
    // An entry naming a session that is gone, or garbage, sends the lookup to the scan too.
    std::fs::write(&entry_a, "{not json").unwrap();
    let again = store.create_or_continue_named("fresh", at(3)).unwrap();
    std::fs::remove_dir_all(project.session_dir(&again.session)).unwrap();
    let made = store.create_or_continue_named("fresh", at(4)).unwrap();
    assert_ne!(made.session, again.session);
    assert!(!made.resumed);
    assert_eq!(
        store
            .resolve_or_create_parent_session("a", None, at(5))
            .unwrap()
            .session,
        a
    );
}

#[test]
fn sessions_the_originals_rules_create_are_found_by_index_and_scan_alike() {
    let project = Project::new();
    let store = project.store();
    crowd(&store, 6);
    let original = Original::new(&project.root);
    // Sessions only the original knows: not in the index.
    let theirs = original.resolve_parent("pi-9").unwrap();
    let named = original.create_or_resume_named("shared name").unwrap();
    let dir_of = |path: &std::path::Path| {
        SessionRef::new(path.file_name().unwrap().to_str().unwrap()).unwrap()
    };
    let reserved = store
        .reserve_in(
            &SessionKey::Parent("pi-9".to_owned()),
            None,
            vec![PlannedNote::new("scout")],
            at(1),
        )
        .unwrap();
    assert_eq!(reserved.session, dir_of(&theirs.path));
    assert!(reserved.resumed, "continued, not made again");
    let reserved = store
        .reserve_in(
            &SessionKey::Name("shared name".to_owned()),
            None,
            vec![PlannedNote::new("scout")],
            at(1),
        )
        .unwrap();
    assert_eq!(reserved.session, dir_of(&named.path));
    // Shepherd made a session and the original another for the same name? It cannot: the
    // original continues Shepherd's, which its rules find by name.
    let ours = store.create_or_continue_named("ours", at(2)).unwrap();
    let same = original.create_or_resume_named("ours").unwrap();
    assert_eq!(dir_of(&same.path), ours.session);
    assert_eq!(project.session_dirs().len(), 6 + 3);
}
