//! What a merge says, against real git: the conflict markers a report's hunks and a resolver
//! show name the branch being landed, not a commit id, and the commit that lands a resolved
//! conflict carries Shepherd's message without git's `# Conflicts:` lines, whatever the
//! resolver committed with.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use shepherd_testkit::git::git;

use crate::herd_support::World;
use crate::merge_support::{conflicting_run, define_resolver, run_json};

#[test]
fn conflict_markers_name_the_branch_and_a_resolved_merge_keeps_no_conflicts_lines() {
    let world = World::new();
    let (run_id, _) = conflicting_run(&world);
    // Without a resolver the report's hunks carry the markers.
    let (code, merge) = run_json(&world, &["merge", &run_id]);
    assert_eq!(code, 2, "{merge}");
    let branch = merge["branches"][1]["branch"].as_str().unwrap().to_owned();
    let hunks = merge["branches"][1]["conflict"]["hunks"].as_str().unwrap();
    let names_it = |text: &str| {
        text.lines()
            .any(|l| l.ends_with(&format!(">>>>>>> {branch}")))
    };
    assert!(names_it(hunks), "{hunks}");
    // A resolver sees the same markers, and commits with git's own message.
    let seen = world.dir.path().join("markers");
    define_resolver(
        &world,
        "resolver",
        &format!(
            "cp same '{}'; printf 'same one\\nsame two\\n' > same; git add same; \
             git -c user.name=R -c user.email=r@example.invalid commit -q --no-edit",
            seen.display()
        ),
    );
    let (code, merge) = run_json(&world, &["merge", &run_id, "--resolve", "resolver"]);
    assert_eq!(code, 0, "{merge}");
    let markers = std::fs::read_to_string(&seen).unwrap();
    assert!(names_it(&markers), "{markers}");
    let message = git(&world.project, &["log", "-1", "--format=%B", "main"]);
    assert!(message.starts_with(&format!("Land {branch}")), "{message}");
    assert!(!message.contains("Conflicts"), "{message}");
    assert!(!message.lines().any(|l| l.starts_with('#')), "{message}");
}
