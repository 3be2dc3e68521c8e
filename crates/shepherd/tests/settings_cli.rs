//! `shepherd settings`: the built binary against temporary homes and projects.

use crate::agents_support;

use agents_support::{Machine, snapshot_settings};
use serde_json::json;

fn read_json(path: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&fs_err::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn fresh_settings_are_the_defaults() {
    let machine = Machine::new();
    let run = machine.run(&["settings"]);
    snapshot_settings().bind(|| insta::assert_snapshot!(run.transcript()));
    assert!(
        !machine.user_config().exists(),
        "showing settings writes nothing"
    );
}

#[test]
fn set_then_get_round_trips_and_keeps_unknown_keys() {
    let machine = Machine::new();
    machine.write(
        &machine.user_config(),
        "{\n  \"myOwnNote\": \"keep me\",\n  \"timeout\": 5\n}\n",
    );
    let set = machine.run(&["settings", "set", "timeout", "2.5"]);
    assert_eq!(
        set.ok(),
        "Set timeout to 2.5 in [TMP]/pi-agent/pi-shepherd/config.json.\n"
    );
    assert_eq!(machine.run(&["settings", "get", "timeout"]).ok(), "2.5\n");
    assert_eq!(
        machine
            .run(&["--json", "settings", "get", "timeout"])
            .json(),
        json!({"key": "timeout", "value": 2.5, "source": "user"})
    );
    assert_eq!(
        read_json(&machine.user_config()),
        json!({"myOwnNote": "keep me", "timeout": 2.5})
    );
}

#[test]
fn invalid_values_fail_clearly_and_write_nothing() {
    let machine = Machine::new();
    let before = "{\"timeout\": 5}";
    machine.write(&machine.user_config(), before);
    let bad_value = machine.run(&["settings", "set", "timeout", "1000"]);
    let bad_key = machine.run(&["--json", "settings", "set", "colour", "blue"]);
    let bad_scope = machine.run(&["settings", "set", "agentScope", "all", "--project"]);
    snapshot_settings().bind(|| {
        insta::assert_snapshot!("invalid_value", bad_value.transcript());
        insta::assert_snapshot!("invalid_key", bad_key.transcript());
        insta::assert_snapshot!("invalid_scope", bad_scope.transcript());
    });
    assert_eq!(
        fs_err::read_to_string(machine.user_config()).unwrap(),
        before
    );
    assert!(!machine.nested.join(".shepherd").exists());
}

#[test]
fn a_project_file_is_written_active_and_self_contained() {
    let machine = Machine::new();
    machine.run(&["settings", "set", "agentScope", "both"]).ok();
    let set = machine.run_in(
        &machine.project,
        &["settings", "set", "backend", "headless", "--project"],
    );
    assert_eq!(
        set.ok(),
        "Set backend to headless in [TMP]/project/.shepherd/config.json (created).\n"
    );
    let shown = machine.run_in(&machine.project, &["settings"]);
    snapshot_settings().bind(|| insta::assert_snapshot!(shown.transcript()));
    let stored = read_json(&machine.project.join(".shepherd/config.json"));
    assert_eq!(stored["projectScope"], true);
    assert_eq!(stored["agentScope"], "user");

    let overridden = machine.run_in(&machine.project, &["settings", "set", "backend", "tmux"]);
    assert_eq!(
        overridden.ok(),
        "Set backend to tmux in [TMP]/pi-agent/pi-shepherd/config.json. The project file is \
         active here and decides backend; add --project to change it there.\n"
    );
    let off = machine.run(&[
        "settings",
        "set",
        "projectScope",
        "false",
        "--project",
        "../..",
    ]);
    assert_eq!(
        off.ok(),
        "Deactivated the project file [TMP]/project/.shepherd/config.json; the user file \
         applies. Its values are kept.\n"
    );
    assert_eq!(
        machine
            .run_in(&machine.project, &["settings", "get", "backend"])
            .ok(),
        "tmux\n"
    );
}

#[test]
fn a_project_file_cannot_turn_off_confirmation() {
    let machine = Machine::new();
    machine.write(
        &machine.project.join(".shepherd/config.json"),
        "{\"projectScope\": true, \"confirmProjectAgents\": false}",
    );
    let get = machine.run(&[
        "--json",
        "settings",
        "get",
        "confirmProjectAgents",
        "--project",
        "../..",
    ]);
    assert_eq!(
        get.json(),
        json!({"key": "confirmProjectAgents", "value": true, "source": "default"})
    );
    let refused = machine.run(&[
        "settings",
        "set",
        "confirmProjectAgents",
        "false",
        "--project",
        "../..",
    ]);
    assert_eq!(refused.code, 1);
    assert_eq!(
        refused.stderr,
        "shepherd: confirmProjectAgents can only be set in the user file: a project file must \
         not change it. Run the command without --project.\n"
    );
    let shown = machine.run(&["settings", "--project", "../.."]);
    assert!(
        shown.ok().ends_with(
            "warning: [TMP]/project/.shepherd/config.json: confirmProjectAgents is ignored here: \
             only the user file may set it, so a repository cannot change it\n"
        ),
        "{}",
        shown.stdout
    );
}

#[test]
fn the_legacy_settings_file_is_migrated_and_millisecond_timeouts_read_as_minutes() {
    let machine = Machine::new();
    let legacy = machine.write(
        &machine.pi_dir.join("pi-shepherd/settings.json"),
        "{\"timeout\": 600000, \"settingsScope\": \"project\"}",
    );
    assert_eq!(machine.run(&["settings", "get", "timeout"]).ok(), "10\n");
    assert!(!legacy.exists());
    assert!(machine.user_config().is_file());
    let doc = machine.run(&["--json", "settings"]).json();
    assert_eq!(doc["activeLayer"], "user");
    assert_eq!(doc["settings"]["timeout"], 10);
    assert_eq!(doc["sources"]["timeout"], "user");
    assert_eq!(doc["projectFileState"], "absent");
    assert_eq!(doc["warnings"], json!([]));
}

#[test]
fn concurrent_changes_to_one_file_all_land() {
    let machine = Machine::new();
    let changes = [
        ("timeout", "7"),
        ("staleWaitThreshold", "3"),
        ("doneNudges", "2"),
        ("maxParallelTasks", "6"),
        ("maxConcurrency", "3"),
        ("maxDepth", "1"),
        ("brokerIdleMinutes", "5"),
        ("keepOpen", "false"),
    ];
    for _round in 0..3 {
        fs_err::remove_file(machine.user_config()).ok();
        std::thread::scope(|scope| {
            for (key, value) in changes {
                let machine = &machine;
                scope.spawn(move || {
                    let run = machine.run(&["settings", "set", key, value]);
                    assert_eq!(run.code, 0, "{}", run.stderr);
                });
            }
        });
        let stored = read_json(&machine.user_config());
        for (key, _) in changes {
            assert!(stored.get(key).is_some(), "{key} was lost: {stored}");
        }
    }
}
