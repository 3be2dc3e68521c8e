//! `shepherd notes`: the built binary against temporary projects and homes.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

/// A temp home and project; every command runs isolated in them.
struct Machine {
    temp: tempfile::TempDir,
    project: PathBuf,
    /// Whether the project's broker runs (note commands then go through it).
    broker: bool,
}

impl Machine {
    fn new() -> Self {
        let temp = tempfile::tempdir().unwrap();
        let temp_path = std::fs::canonicalize(temp.path()).unwrap();
        let project = temp_path.join("project");
        std::fs::create_dir_all(&project).unwrap();
        std::fs::create_dir_all(temp_path.join("home")).unwrap();
        Self {
            temp,
            project,
            broker: false,
        }
    }

    /// A machine whose project has its broker running.
    fn with_broker() -> Self {
        let mut machine = Self::new();
        let output = machine.run(&["broker", "ensure"]);
        assert!(
            output.status.success(),
            "broker ensure: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        machine.broker = true;
        machine
    }

    /// How many note changes the running broker made (`broker status`).
    fn notes_written_by_broker(&self) -> u64 {
        let status = self.json(&["broker", "status", "--json"]);
        status["status"]["notesWritten"].as_u64().unwrap()
    }

    fn root(&self) -> PathBuf {
        std::fs::canonicalize(self.temp.path()).unwrap()
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_shepherd"));
        command
            .args(args)
            .current_dir(&self.project)
            .env_clear()
            .env("HOME", self.root().join("home"))
            .env("XDG_RUNTIME_DIR", self.root().join("run"))
            .env("PI_CODING_AGENT_DIR", self.root().join("pi"))
            .stdin(Stdio::null());
        command
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    /// Runs a `--json` command that must succeed; returns its one JSON line.
    fn json(&self, args: &[&str]) -> Value {
        let output = self.run(args);
        assert!(
            output.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        one_json_line(&output)
    }

    /// Runs a `--json` command that must fail; returns its error code and message.
    fn error(&self, args: &[&str]) -> (String, String) {
        let output = self.run(args);
        assert!(!output.status.success(), "{args:?} succeeded");
        let doc = one_json_line(&output);
        let stderr = String::from_utf8(output.stderr).unwrap();
        let lines: Vec<&str> = stderr.lines().collect();
        assert!(
            lines.len() == 1 || (lines.len() == 2 && lines[1].starts_with("hint: ")),
            "one line on stderr (and at most a hint: line): {stderr}"
        );
        let code = doc["error"]["code"].as_str().unwrap().to_owned();
        (code, doc["error"]["message"].as_str().unwrap().to_owned())
    }

    fn session_dir(&self) -> PathBuf {
        self.project.join(".shepherd/sessions/0001-fix-login")
    }
}

impl Drop for Machine {
    fn drop(&mut self) {
        if self.broker {
            let _stopped = self.run(&["broker", "stop"]);
        }
    }
}

fn one_json_line(output: &Output) -> Value {
    let stdout = String::from_utf8(output.stdout.clone()).unwrap();
    assert_eq!(stdout.lines().count(), 1, "exactly one line: {stdout}");
    serde_json::from_str(&stdout).unwrap()
}

fn snapshot_settings(machine: &Machine) -> insta::Settings {
    let mut settings = insta::Settings::clone_current();
    let root = machine.root().to_str().unwrap().to_owned();
    settings.add_filter(&regex_escape(&root), "[TMP]");
    settings.add_filter(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", "[TIME]");
    settings
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

#[test]
fn reserve_finish_list_show_and_link_speak_json() {
    reserve_finish_list_show_and_link(&Machine::new());
}

#[test]
fn through_a_running_broker_the_same_commands_print_the_same() {
    let machine = Machine::with_broker();
    reserve_finish_list_show_and_link(&machine);
    // Two reservations, the link and the finish went through the broker.
    assert_eq!(machine.notes_written_by_broker(), 4);
}

fn reserve_finish_list_show_and_link(machine: &Machine) {
    let reserve = [
        "notes",
        "reserve",
        "--json",
        "--session-name",
        "fix login",
        "--agent",
    ];
    let first = machine.json(&[&reserve[..], &["scout", "--task", "Find the bug"]].concat());
    let second = machine.json(&[&reserve[..], &["scout", "--mode", "chain"]].concat());
    assert_eq!(first["resumed"], false);
    assert_eq!(second["resumed"], true);
    std::fs::create_dir_all(machine.project.join("src")).unwrap();
    std::fs::write(machine.project.join("src/auth.rs"), "").unwrap();
    let link = machine.json(&[
        "notes",
        "link",
        "fix login",
        "src/auth.rs",
        "--title",
        "Auth",
        "--json",
    ]);
    let finish = machine.json(&[
        "notes",
        "finish",
        ".shepherd/sessions/0001-fix-login/scout-01.md",
        "--status",
        "timed-out",
        "--error",
        "deadline passed",
        "--meta",
        "durationMs=600000",
        "--json",
    ]);
    let list = machine.json(&["notes", "list", "--json"]);
    let show = machine.json(&["notes", "show", "1", "--json"]);
    let keys: Vec<&str> = first
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "session",
            "sessionName",
            "sessionRelative",
            "note",
            "noteRelative",
            "resumed"
        ]
    );
    snapshot_settings(machine).bind(|| {
        insta::assert_json_snapshot!("reserve_json", first);
        insta::assert_json_snapshot!("finish_json", finish);
        insta::assert_json_snapshot!("link_json", link);
        insta::assert_json_snapshot!("list_json", list);
        insta::assert_json_snapshot!("show_json", show);
    });
    let note = std::fs::read_to_string(machine.session_dir().join("scout-01.md")).unwrap();
    assert!(note.contains("status: timed-out") && note.contains("### Error\n\ndeadline passed"));
}

#[test]
fn human_output_is_short_text() {
    let machine = Machine::new();
    let output = machine.run(&["notes", "list"]);
    assert!(output.status.success());
    assert!(String::from_utf8_lossy(&output.stdout).starts_with("no fieldnotes sessions in "));
    let output = machine.run(&[
        "notes",
        "reserve",
        "--parent-session",
        "pi-1",
        "--agent",
        "scout",
    ]);
    let text = String::from_utf8(output.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(
        lines[0].starts_with("session: /") && lines[1].ends_with("/scout-01.md"),
        "{text}"
    );
    let list = String::from_utf8(machine.run(&["notes", "list"]).stdout).unwrap();
    assert!(
        list.starts_with("0001  running      1 notes  orchestrator-"),
        "{list}"
    );
}

#[test]
fn bad_input_fails_with_one_line_naming_the_value_and_writes_nothing() {
    let machine = Machine::new();
    let (code, message) = machine.error(&[
        "notes",
        "reserve",
        "--json",
        "--session-name",
        "../escape",
        "--agent",
        "scout",
    ]);
    assert_eq!(code, "invalid_name");
    assert!(message.contains(r#""../escape""#), "{message}");
    assert!(!machine.project.join(".shepherd").exists());
    let (code, _) = machine.error(&["notes", "show", "nope", "--json"]);
    assert_eq!(code, "not_found");
    machine.json(&[
        "notes",
        "reserve",
        "--json",
        "--session-name",
        "fix login",
        "--agent",
        "a",
    ]);
    let note = ".shepherd/sessions/0001-fix-login/a-01.md";
    machine.json(&["notes", "finish", note, "--status", "completed", "--json"]);
    let before = std::fs::read_to_string(machine.session_dir().join("a-01.md")).unwrap();
    let (code, message) = machine.error(&["notes", "finish", note, "--status", "failed", "--json"]);
    assert_eq!(code, "already_final");
    assert!(message.contains("a-01.md"), "{message}");
    assert_eq!(
        std::fs::read_to_string(machine.session_dir().join("a-01.md")).unwrap(),
        before
    );
    let (code, message) = machine.error(&["notes", "link", "1", "/etc/passwd", "--json"]);
    assert_eq!(code, "invalid_link");
    assert!(message.contains("/etc/passwd"), "{message}");
    let (code, _) = machine.error(&[
        "notes",
        "finish",
        "elsewhere.md",
        "--status",
        "failed",
        "--json",
    ]);
    assert_eq!(code, "not_found");
    let output = machine.run(&["notes", "reserve", "--agent", "a"]);
    assert!(!output.status.success(), "a session must be named or bound");
}

#[test]
fn sixteen_shell_processes_reserve_sixteen_distinct_notes() {
    let machine = Machine::new();
    let children: Vec<_> = (0..16)
        .map(|i| {
            machine
                .command(&[
                    "notes",
                    "reserve",
                    "--json",
                    "--session-name",
                    "fix login",
                    "--agent",
                    if i % 2 == 0 { "scout" } else { "worker" },
                ])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut notes = std::collections::HashSet::new();
    for child in children {
        let output = child.wait_with_output().unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let doc = one_json_line(&output);
        assert!(
            notes.insert(doc["note"].as_str().unwrap().to_owned()),
            "duplicate note"
        );
    }
    assert_eq!(notes.len(), 16);
    let index = std::fs::read_to_string(machine.session_dir().join("shepherd.md")).unwrap();
    for note in &notes {
        let file = Path::new(note).file_name().unwrap().to_str().unwrap();
        assert!(Path::new(note).is_file());
        assert_eq!(
            index.matches(&format!("](./{file}) — pending")).count(),
            1,
            "{file}"
        );
    }
    let sessions: Vec<String> = machine
        .project
        .join(".shepherd/sessions")
        .read_dir()
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| !name.starts_with('.'))
        .collect();
    assert_eq!(sessions, ["0001-fix-login"], "one session");
}

#[test]
fn delete_and_feedback_show_in_session_json_and_shepherd_md() {
    delete_and_feedback(&Machine::new());
}

#[test]
fn through_a_running_broker_delete_and_feedback_are_refused_and_made_alike() {
    let machine = Machine::with_broker();
    delete_and_feedback(&machine);
    // Two reservations, the feedback, the finish and the delete; the two refusals made nothing.
    assert_eq!(machine.notes_written_by_broker(), 5);
}

fn delete_and_feedback(machine: &Machine) {
    let reserve = [
        "notes",
        "reserve",
        "--json",
        "--session-name",
        "fix login",
        "--agent",
        "reviewer",
    ];
    machine.json(&reserve);
    machine.json(&reserve);
    let first = ".shepherd/sessions/0001-fix-login/reviewer-01.md";
    let second = ".shepherd/sessions/0001-fix-login/reviewer-02.md";
    // Feedback may go to a note in any status; a note still open cannot be deleted.
    let feedback = machine.json(&[
        "notes",
        "feedback",
        first,
        "--text",
        "Check the token expiry too.",
        "--json",
    ]);
    assert_eq!(feedback["feedback"][0]["from"], "shepherd");
    let (code, message) = machine.error(&["notes", "delete", second, "--json"]);
    assert_eq!(code, "not_final", "{message}");
    machine.json(&["notes", "finish", second, "--status", "completed", "--json"]);
    let deleted = machine.json(&["notes", "delete", second, "--json"]);
    assert!(deleted["deletedAt"].is_string(), "{deleted}");
    assert!(!machine.session_dir().join("reviewer-02.md").exists());
    let (code, message) =
        machine.error(&["notes", "feedback", second, "--text", "too late", "--json"]);
    assert_eq!(code, "deleted", "{message}");
    assert!(message.contains("reviewer-02.md"), "{message}");

    let record: Value = serde_json::from_str(
        &std::fs::read_to_string(machine.session_dir().join("session.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        record["artifacts"][0]["feedback"][0]["text"],
        "Check the token expiry too."
    );
    assert_eq!(record["artifacts"][1]["deletedAt"], deleted["deletedAt"]);
    let index = std::fs::read_to_string(machine.session_dir().join("shepherd.md")).unwrap();
    assert!(
        index.contains(
            "1. [Reviewer 01](./reviewer-01.md) — running\n   - Feedback from shepherd ("
        ) || index.contains(
            "1. [Reviewer 01](./reviewer-01.md) — pending\n   - Feedback from shepherd ("
        ),
        "{index}"
    );
    assert!(
        index.contains("): Check the token expiry too.\n"),
        "{index}"
    );
    assert!(
        index.contains("2. ~~Reviewer 02~~ — completed, deleted "),
        "{index}"
    );
    let show = machine.json(&["notes", "show", "1", "--json"]);
    assert_eq!(show["notes"][1]["deletedAt"], deleted["deletedAt"]);
}

#[test]
fn a_label_given_as_metadata_is_checked_as_a_spawn_checks_it_and_changes_nothing() {
    let machine = Machine::new();
    machine.json(&[
        "notes",
        "reserve",
        "--json",
        "--session-name",
        "labels",
        "--agent",
        "scout",
    ]);
    let note = ".shepherd/sessions/0001-labels/scout-01.md";
    let record = machine
        .project
        .join(".shepherd/sessions/0001-labels/session.json");
    let before = std::fs::read(&record).unwrap();
    for bad in [
        "label=a:b",
        "label=",
        "label=42",
        "label=\u{1b}]52;c;x\u{7}",
    ] {
        for command in ["start", "finish"] {
            let mut args = vec!["notes", command, note, "--meta", bad, "--json"];
            if command == "finish" {
                args.extend(["--status", "completed"]);
            }
            let (code, message) = machine.error(&args);
            assert_eq!(code, "invalid_label", "{command} {bad}: {message}");
        }
    }
    assert_eq!(
        std::fs::read(&record).unwrap(),
        before,
        "a refused label changed the record"
    );
    machine.json(&[
        "notes",
        "finish",
        note,
        "--status",
        "completed",
        "--meta",
        "label=map the auth code",
        "--json",
    ]);
    let index = std::fs::read_to_string(
        machine
            .project
            .join(".shepherd/sessions/0001-labels/shepherd.md"),
    )
    .unwrap();
    assert!(index.contains("map the auth code"), "{index}");
}
