//! What a merge says, against real git: the conflict markers a report's hunks and a resolver
//! show name the branch being landed, not a commit id; the commit that lands a resolved
//! conflict carries Shepherd's message without git's `# Conflicts:` lines, whatever the
//! resolver committed with; while a check runs the CLI says which branch it checks; and a
//! plan's `mergeCheck` without `merge: true` is refused rather than ignored.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use shepherd_testkit::git::git;

use crate::herd_support::{World, release};
use crate::merge_support::{
    conflicting_run, define_resolver, define_writer, file_on, isolated_run, repository, run_json,
};

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

#[test]
fn while_a_check_runs_the_cli_says_which_branch_it_checks() {
    let world = World::new();
    repository(&world, &["a"]);
    define_writer(&world, "writer");
    let (run_id, _) = isolated_run(&world, &["writer=a one"]);
    // The check waits until the test has read the line saying it runs.
    let gate = world.fifo("gate");
    let check = format!("read line < '{}'", gate.display());
    let mut child = world
        .command(&["merge", &run_id, "--check", &check])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufRead::lines(std::io::BufReader::new(stderr)).map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut seen = Vec::new();
    let said = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match lines.recv_timeout(left) {
            Ok(line) if line.starts_with("checking ") => break line,
            Ok(line) => seen.push(line),
            Err(_) => panic!("no `checking` line within 60 s; said so far: {seen:?}"),
        }
    };
    assert!(said.contains(&format!("({check})")), "{said}");
    assert!(said.contains("shepherd/run-"), "{said}");
    release(&gate);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
    assert_eq!(file_on(&world, "main", "a"), "a one");
}

#[test]
fn a_plans_merge_check_without_merge_is_refused_and_nothing_runs() {
    let world = World::new();
    repository(&world, &["a"]);
    define_writer(&world, "writer");
    let plan = world.dir.path().join("plan.yaml");
    std::fs::write(
        &plan,
        "mergeCheck: \"true\"\ntasks:\n  - {agent: writer, task: a planned, isolate: true}\n",
    )
    .unwrap();
    let (code, error, message) = world.error(&["run", "--plan", plan.to_str().unwrap()]);
    assert_eq!((code, error.as_str()), (2, "invalid_run"), "{message}");
    assert!(
        message.contains("mergeCheck") && message.contains("merge: true"),
        "{message}"
    );
    assert!(
        !world.project.join(".shepherd/sessions").exists(),
        "a refused plan started something"
    );
    assert_eq!(file_on(&world, "main", "a"), "base");
}
