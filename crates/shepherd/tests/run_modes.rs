//! `shepherd run` end to end with scripted command sheep: single, parallel and chain runs, their
//! notes and sessions, result order, `{previous}`, chain stops, truncation, and every refusal
//! that must happen before anything launches.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::herd_support;

use std::io::Write as _;
use std::path::Path;
use std::process::Stdio;

use herd_support::{World, parse_one_line, read};
use serde_json::Value;

fn note_field(note: &str, key: &str) -> String {
    let text = read(Path::new(note));
    text.lines()
        .find_map(|line| line.strip_prefix(&format!("{key}: ")))
        .unwrap_or_else(|| panic!("no `{key}` in {note}:\n{text}"))
        .trim_matches('"')
        .to_owned()
}

/// Runs `shepherd run … --json` with `stdin` on standard input; returns (exit code, document).
fn run_with_stdin(world: &World, args: &[&str], stdin: &str) -> (i32, Value) {
    let mut all = vec!["run"];
    all.extend_from_slice(args);
    all.push("--json");
    let mut child = world
        .command(&all)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    (
        output.status.code().unwrap_or(-1),
        parse_one_line(&output.stdout),
    )
}

fn sessions(world: &World) -> Vec<String> {
    let dir = world.project.join(".shepherd/sessions");
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|name| !name.starts_with('.'))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[test]
fn a_single_run_reports_the_result_its_note_and_session() {
    let world = World::new();
    world.define_test_sheep("worker", "done completed did {task}", None);
    let (code, doc) = world.json_status(&["run", "worker", "list the files"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["mode"], "single");
    assert_eq!(doc["resumed"], false);
    let result = &doc["results"][0];
    assert_eq!(result["agent"], "worker");
    assert_eq!(result["status"], "completed");
    assert_eq!(result["returnCode"], 0);
    assert_eq!(result["text"], "did list the files");
    assert!(result["fullOutput"].is_null());
    assert!(
        result["taskId"]
            .as_str()
            .unwrap()
            .starts_with("shepherd-task-")
    );
    let note = result["note"].as_str().unwrap();
    assert_eq!(note_field(note, "status"), "completed");
    let session = Path::new(doc["sessionPath"].as_str().unwrap());
    assert!(
        session.ends_with(doc["sessionRelativePath"].as_str().unwrap()),
        "{doc}"
    );
    let index = read(&session.join("shepherd.md"));
    assert!(
        index.contains("[Worker 01](./worker-01.md) — completed"),
        "{index}"
    );

    let human = world.run(&["run", "worker", "count the lines"]);
    assert!(human.status.success());
    let stdout = String::from_utf8_lossy(&human.stdout);
    assert!(stdout.starts_with("did count the lines\n"), "{stdout}");
    assert!(stdout.contains("Session `"), "{stdout}");
    let stderr = String::from_utf8_lossy(&human.stderr);
    assert!(
        stderr.contains("[1/1] worker: running") && stderr.contains("[1/1] worker: completed in"),
        "plain progress on stderr when it is not a terminal: {stderr}"
    );
}

#[test]
fn parallel_results_come_back_in_input_order_whatever_finishes_first() {
    let world = World::new();
    world.define_test_sheep("slow", "sleep 2000; done completed slow result", None);
    world.define_test_sheep("fast", "done completed fast result", None);
    let (code, doc) = world.json_status(&["run", "--parallel", "slow=first", "fast=second"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["mode"], "parallel");
    let results = doc["results"].as_array().unwrap();
    assert_eq!(results[0]["agent"], "slow");
    assert_eq!(results[0]["text"], "slow result");
    assert_eq!(results[1]["agent"], "fast");
    assert_eq!(results[1]["text"], "fast result");
    let completed = |i: usize| note_field(results[i]["note"].as_str().unwrap(), "completed");
    assert!(
        completed(1) < completed(0),
        "the second task finished first ({} vs {}), so order is not finishing order",
        completed(1),
        completed(0)
    );
    let index = read(&Path::new(doc["sessionPath"].as_str().unwrap()).join("shepherd.md"));
    assert!(
        index.contains("parallel: [slow-01](./slow-01.md) · [fast-01](./fast-01.md)"),
        "{index}"
    );
}

#[test]
fn parallel_output_has_a_summary_and_the_first_failure_in_input_order_sets_the_exit_status() {
    let world = World::new();
    world.define_test_sheep("ok", "done completed fine", None);
    world.define_test_sheep("blocker", "sleep 300; done blocked need credentials", None);
    world.define_test_sheep("breaker", "done failed it broke", None);
    let output = world.run(&["run", "--parallel", "ok=a", "blocker=b", "breaker=c"]);
    assert_eq!(
        output.status.code(),
        Some(2),
        "blocked (2) comes before failed (1)"
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.starts_with("Parallel: 1/3 succeeded\n"), "{stdout}");
    let ok = stdout.find("### [ok] completed").unwrap();
    let blocked = stdout.find("### [blocker] blocked").unwrap();
    let failed = stdout.find("### [breaker] failed").unwrap();
    assert!(ok < blocked && blocked < failed, "{stdout}");
    assert!(stdout.contains("need credentials"), "{stdout}");
}

#[test]
fn at_most_max_concurrency_tasks_run_at_once() {
    let world = World::new();
    world.settings(r#"{"maxConcurrency": 1}"#);
    world.define_test_sheep("worker", "sleep 200; done completed {task}", None);
    let (code, doc) = world.json_status(&["run", "--parallel", "worker=one", "worker=two"]);
    assert_eq!(code, 0, "{doc}");
    let note = |i: usize| doc["results"][i]["note"].as_str().unwrap().to_owned();
    let first_done = note_field(&note(0), "completed");
    let second_started = note_field(&note(1), "started");
    assert!(
        second_started >= first_done,
        "with one slot the second task starts after the first ends ({second_started} < {first_done})"
    );
}

#[test]
fn a_chain_passes_the_previous_result_and_stops_at_the_first_step_that_does_not_complete() {
    let world = World::new();
    world.define_test_sheep("a", "done completed alpha result", None);
    world.define_test_sheep("b", "done failed b saw: {task}", None);
    world.define_test_sheep("c", "done completed never", None);
    let output = world.run(&["run", "--chain", "a=start", "b=use {previous}", "c=finish"]);
    assert_eq!(output.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.starts_with("b saw: use alpha result\n"), "{stdout}");
    assert!(
        stdout.contains("Chain stopped at step 2 of 3 (b): failed (rc 1)"),
        "{stdout}"
    );

    let (code, doc) =
        world.json_status(&["run", "--chain", "a=start", "b=use {previous}", "c=end"]);
    assert_eq!(code, 1);
    assert_eq!(doc["stopped"]["step"], 2);
    assert_eq!(doc["stopped"]["agent"], "b");
    assert_eq!(doc["stopped"]["status"], "failed");
    let skipped = &doc["results"][2];
    assert_eq!(skipped["status"], "skipped");
    assert!(skipped["returnCode"].is_null() && skipped["taskId"].is_null());
    let note = skipped["note"].as_str().unwrap();
    assert_eq!(
        note_field(note, "status"),
        "cancelled",
        "a step never run is not left pending"
    );
    assert!(read(Path::new(note)).contains("chain stopped at step 2"));
}

/// The issue's "done when": two command sheep `a` and `b`, the same chain run twice into the
/// session `demo`.
#[test]
fn the_same_chain_twice_continues_one_named_session() {
    let world = World::new();
    world.define_test_sheep("a", "done completed files: Cargo.toml src", None);
    world.define_test_sheep("b", "done completed {task}", None);
    let args = [
        "run",
        "--chain",
        "a=list the files",
        "b=summarise: {previous}",
        "--session-name",
        "demo",
    ];
    let (code, first) = world.json_status(&args);
    assert_eq!(code, 0, "{first}");
    assert_eq!(first["resumed"], false);
    let (code, second) = world.json_status(&args);
    assert_eq!(code, 0, "{second}");
    assert_eq!(second["resumed"], true);
    assert_eq!(second["sessionPath"], first["sessionPath"]);
    assert_eq!(second["sessionName"], "demo");
    for doc in [&first, &second] {
        assert_eq!(
            doc["results"][1]["text"],
            "summarise: files: Cargo.toml src"
        );
    }

    let demo: Vec<String> = sessions(&world)
        .into_iter()
        .filter(|name| name.ends_with("-demo"))
        .collect();
    assert_eq!(demo.len(), 1, "{:?}", sessions(&world));
    assert_eq!(
        sessions(&world).len(),
        1,
        "a run into a named session leaves no other session: {:?}",
        sessions(&world)
    );
    assert!(demo[0].len() == "0001-demo".len() && demo[0][..4].chars().all(|c| c.is_ascii_digit()));
    let session = world.project.join(".shepherd/sessions").join(&demo[0]);
    let index = read(&session.join("shepherd.md"));
    let notes = [
        "1. [A 01](./a-01.md) — completed",
        "2. [B 01](./b-01.md) — completed",
        "3. [A 02](./a-02.md) — completed",
        "4. [B 02](./b-02.md) — completed",
    ];
    let mut at = 0;
    for line in notes {
        let found = index[at..]
            .find(line)
            .unwrap_or_else(|| panic!("`{line}` in order:\n{index}"));
        at += found + line.len();
    }
    assert!(
        index.contains("[a-01](./a-01.md) → [b-01](./b-01.md)\n"),
        "{index}"
    );
    assert!(
        index.contains("[a-02](./a-02.md) → [b-02](./b-02.md)\n"),
        "{index}"
    );
    let record: Value = serde_json::from_str(&read(&session.join("session.json"))).unwrap();
    let tasks: Vec<&str> = record["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|note| note["task"].as_str().unwrap())
        .collect();
    assert_eq!(
        tasks,
        [
            "list the files",
            "summarise: files: Cargo.toml src",
            "list the files",
            "summarise: files: Cargo.toml src"
        ],
        "each note records the task text its sheep was given"
    );
    let b_note = read(&session.join("b-02.md"));
    assert!(
        b_note.contains("summarise: files: Cargo.toml src"),
        "{b_note}"
    );
}

#[test]
fn a_long_result_is_cut_at_50_kib_with_a_private_file_holding_all_of_it() {
    let world = World::new();
    world.define_test_sheep("echo", "done completed {task}", None);
    let long = "x".repeat(60 * 1024);
    let plan = serde_json::json!({ "agent": "echo", "task": long }).to_string();
    let (code, doc) = run_with_stdin(&world, &["--plan", "-"], &plan);
    assert_eq!(code, 0, "{doc}");
    let result = &doc["results"][0];
    let full = Path::new(result["fullOutput"].as_str().unwrap());
    assert!(full.starts_with(&world.runtime), "{}", full.display());
    assert_eq!(read(full), long);
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(full).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600);
    let text = result["text"].as_str().unwrap();
    assert!(
        text.starts_with(&"x".repeat(50 * 1024)),
        "the first 50 KiB are kept"
    );
    assert!(!text.starts_with(&"x".repeat(50 * 1024 + 1)), "and no more");
    assert!(
        text.ends_with(&format!(
            "[Output truncated at 50 KiB of 61440 bytes. Full output: {}]",
            full.display()
        )),
        "{}",
        &text[text.len() - 200..]
    );
}

#[test]
fn plan_files_in_yaml_give_every_mode_and_defaults() {
    let world = World::new();
    world.define_test_sheep("a", "done completed a: {task}", None);
    world.define_test_sheep("b", "done completed b: {task}", None);
    let yaml = "sessionName: planned\ntimeout: 2\nchain:\n  - agent: a\n    task: one\n  - {agent: b, task: \"two {previous}\"}\n";
    let (code, doc) = run_with_stdin(&world, &["--plan", "-"], yaml);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["mode"], "chain");
    assert_eq!(doc["sessionName"], "planned");
    assert_eq!(doc["results"][1]["text"], "b: two a: one");
    let file = world.dir.path().join("plan.json");
    std::fs::write(
        &file,
        r#"{"tasks":[{"agent":"a","task":"x"},{"agent":"b","task":"y"}]}"#,
    )
    .unwrap();
    let (code, doc) = world.json_status(&["run", "--plan", file.to_str().unwrap()]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["mode"], "parallel");
    assert_eq!(doc["succeeded"], 2);
}

#[test]
fn bad_command_lines_are_refused_before_anything_happens() {
    let world = World::new();
    world.define_test_sheep("a", "done completed ok", None);
    // (arguments, exit status, error code, part of the message)
    let cases: &[(&[&str], i32, &str, &str)] = &[
        (&["run"], 2, "invalid_run", "nothing to run"),
        (
            &["run", "a", "x", "--chain", "a=y"],
            2,
            "invalid_run",
            "more than one mode",
        ),
        (
            &["run", "a"],
            2,
            "invalid_run",
            "missing TASK after agent `a`",
        ),
        (
            &["run", "--parallel", "a"],
            2,
            "invalid_run",
            "item `a` must be AGENT=TASK",
        ),
        (
            &["run", "a", "x", "--timeout=-1"],
            2,
            "invalid_run",
            "timeout `-1`",
        ),
        (
            &["run", "a", "x", "--backend", "screen"],
            2,
            "invalid_argument",
            "'screen'",
        ),
        (
            &["run", "a", "x", "--label", "a:b"],
            2,
            "invalid_label",
            "a:b",
        ),
        (
            &["run", "a", "x", "--session-name", "../up"],
            2,
            "invalid_session_name",
            "../up",
        ),
        (
            &["run", "--chain", "a=use {previous}"],
            2,
            "invalid_run",
            "step 1 uses {previous}",
        ),
        (
            &["run", "--plan", "/nonexistent/plan.yaml"],
            2,
            "invalid_run",
            "/nonexistent/plan.yaml",
        ),
        (&["run", "nobody", "x"], 1, "unknown_agent", "nobody"),
        (
            &[
                "run",
                "--parallel",
                "a=edit src/main.rs",
                "a=fix the bug in ./src/main.rs",
            ],
            1,
            "write_conflict",
            "parallel tasks 1 (a) and 2 (a) would both write `src/main.rs`",
        ),
    ];
    for (args, exit, code, needle) in cases {
        let (status, got, message) = world.error(args);
        assert_eq!(
            (status, got.as_str()),
            (*exit, *code),
            "{args:?}: {message}"
        );
        assert!(message.contains(needle), "{args:?}: {message}");
    }
    assert!(
        !world.project.join(".shepherd").exists(),
        "a refused run reserves no note"
    );
}

#[test]
fn limits_and_depth_are_checked_before_anything_launches() {
    let world = World::new();
    world.settings(r#"{"maxParallelTasks": 2}"#);
    world.define_test_sheep("a", "done completed ok", None);
    let (_, code, message) = world.error(&["run", "--parallel", "a=1", "a=2", "a=3"]);
    assert_eq!(code, "too_many_tasks");
    assert_eq!(
        message,
        "Too many parallel tasks (3). Max is 2 (setting maxParallelTasks)."
    );

    let output = world
        .command(&["run", "a", "x", "--json"])
        .env("SHEPHERD_DEPTH", "2")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let doc = parse_one_line(&output.stdout);
    assert_eq!(doc["error"]["code"], "depth_exceeded");
    let message = doc["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("nested 2 deep") && message.contains("maxDepth is 2"),
        "{message}"
    );
    assert!(!world.project.join(".shepherd").exists());
}

#[test]
fn a_task_past_its_timeout_ends_timed_out_with_124() {
    let world = World::new();
    world.define_test_sheep("sleeper", "idle", None);
    let (code, doc) = world.json_status(&["run", "sleeper", "never ends", "--timeout", "0.02"]);
    assert_eq!(code, 124, "{doc}");
    let result = &doc["results"][0];
    assert_eq!(result["status"], "timed_out");
    assert_eq!(
        note_field(result["note"].as_str().unwrap(), "status"),
        "timed-out"
    );
}

#[test]
fn a_sheep_that_cannot_start_fails_its_task_and_its_note() {
    let world = World::new();
    world.define("missing", &["/nonexistent/program".into()]);
    let (code, doc) = world.json_status(&["run", "missing", "anything"]);
    assert_eq!(code, 1, "{doc}");
    let result = &doc["results"][0];
    assert_eq!(result["status"], "failed");
    assert!(
        result["agentId"].is_null() && result["taskId"].is_null(),
        "{result}"
    );
    let error = result["error"].as_str().unwrap();
    assert!(
        error.contains("its sheep could not be started") && error.contains("/nonexistent/program"),
        "{error}"
    );
    assert_eq!(
        note_field(result["note"].as_str().unwrap(), "status"),
        "failed"
    );
}
