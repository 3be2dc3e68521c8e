//! Settings files: layering, migration, and edits that keep what they do not change.

mod common;

use std::path::{Path, PathBuf};

use common::Fixture;
use serde_json::{Value, json};
use shepherd_config::settings::{ProjectFileState, project_settings_file, user_settings_file};
use shepherd_config::{load_settings, set_setting};
use shepherd_core::agent_def::AgentScope;
use shepherd_core::settings::{Backend, EffectiveSettings, Layer, SettingKey, SettingSource};

fn write_json(fx: &Fixture, path: &Path, value: &Value) -> PathBuf {
    fx.write(path, &serde_json::to_string_pretty(value).unwrap())
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&fs_err::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn no_files_give_the_defaults() {
    let fx = Fixture::new();
    let loaded = load_settings(&fx.dirs, &fx.project);
    assert_eq!(loaded.settings, EffectiveSettings::default());
    assert_eq!(loaded.active_layer, Layer::User);
    assert_eq!(loaded.project_file_state, ProjectFileState::Absent);
    assert_eq!(
        loaded.user_file,
        fx.dirs.pi_agent_dir.join("pi-shepherd/config.json")
    );
    assert_eq!(
        loaded.project_file,
        fx.project.join(".shepherd/config.json")
    );
    assert!(loaded.warnings.is_empty());
}

#[test]
fn the_user_file_applies_with_a_dormant_project_file() {
    let fx = Fixture::new();
    write_json(
        &fx,
        &user_settings_file(&fx.dirs),
        &json!({"agentScope": "both", "timeout": 30}),
    );
    write_json(
        &fx,
        &project_settings_file(&fx.project),
        &json!({"timeout": 1}),
    );
    let loaded = load_settings(&fx.dirs, &fx.project);
    assert_eq!(loaded.project_file_state, ProjectFileState::Dormant);
    assert_eq!(loaded.settings.agent_scope, AgentScope::Both);
    assert_eq!(loaded.settings.timeout_minutes, 30.0);
    assert_eq!(loaded.source(SettingKey::Timeout), SettingSource::User);
}

#[test]
fn an_active_project_file_stands_alone_but_cannot_touch_user_only_keys() {
    let fx = Fixture::new();
    write_json(
        &fx,
        &user_settings_file(&fx.dirs),
        &json!({"agentScope": "both", "timeout": 30, "confirmProjectAgents": true, "maxDepth": 1}),
    );
    let project_file = write_json(
        &fx,
        &project_settings_file(&fx.project),
        &json!({"projectScope": true, "backend": "headless", "confirmProjectAgents": false, "maxDepth": 9}),
    );
    let loaded = load_settings(&fx.dirs, &fx.project);
    assert_eq!(loaded.active_layer, Layer::Project);
    assert_eq!(loaded.project_file_state, ProjectFileState::Active);
    assert_eq!(loaded.settings.backend, Backend::Headless);
    assert_eq!(
        loaded.settings.agent_scope,
        AgentScope::User,
        "not the user's value"
    );
    assert_eq!(
        loaded.settings.timeout_minutes, 20.0,
        "not the user's value"
    );
    assert!(
        loaded.settings.confirm_project_agents,
        "a project cannot disable confirmation"
    );
    assert_eq!(loaded.settings.max_depth, 1);
    assert_eq!(loaded.warnings.len(), 2);
    assert!(loaded.warnings.iter().all(|w| w.file == project_file));
}

#[test]
fn legacy_settings_scope_activates_a_project_file() {
    let fx = Fixture::new();
    write_json(
        &fx,
        &project_settings_file(&fx.project),
        &json!({"settingsScope": "project", "emojiSheep": false}),
    );
    let loaded = load_settings(&fx.dirs, &fx.project);
    assert_eq!(loaded.active_layer, Layer::Project);
    assert!(!loaded.settings.emoji_sheep);
}

#[test]
fn malformed_files_are_ignored_with_a_warning() {
    let fx = Fixture::new();
    let user_file = fx.write(&user_settings_file(&fx.dirs), "{ not json");
    let project_file = fx.write(&project_settings_file(&fx.project), "[true]");
    let loaded = load_settings(&fx.dirs, &fx.project);
    assert_eq!(loaded.settings, EffectiveSettings::default());
    assert_eq!(loaded.project_file_state, ProjectFileState::Unreadable);
    let warnings: Vec<(PathBuf, &str)> = loaded
        .warnings
        .iter()
        .map(|w| (w.file.clone(), w.message.as_str()))
        .collect();
    assert_eq!(warnings.len(), 2);
    assert_eq!(warnings[0].0, user_file);
    assert!(
        warnings[0]
            .1
            .starts_with("ignored: the file is not valid JSON"),
        "{}",
        warnings[0].1
    );
    assert_eq!(
        warnings[1],
        (project_file, "ignored: the file is not a JSON object")
    );
}

#[test]
fn legacy_millisecond_timeouts_are_read_as_minutes() {
    let fx = Fixture::new();
    write_json(
        &fx,
        &user_settings_file(&fx.dirs),
        &json!({"timeout": 600_000}),
    );
    assert_eq!(
        load_settings(&fx.dirs, &fx.project)
            .settings
            .timeout_minutes,
        10.0
    );
}

#[test]
fn a_legacy_settings_json_is_renamed_once() {
    let fx = Fixture::new();
    let legacy = fx.dirs.user_config_dir().join("settings.json");
    write_json(
        &fx,
        &legacy,
        &json!({"timeout": 1_200_000, "keepOpen": false}),
    );
    let loaded = load_settings(&fx.dirs, &fx.project);
    assert!(!legacy.exists());
    assert!(user_settings_file(&fx.dirs).exists());
    assert!(!loaded.settings.keep_open);
    assert_eq!(loaded.settings.timeout_minutes, 20.0);
    assert!(loaded.warnings.is_empty());
}

#[test]
fn an_existing_config_json_wins_over_a_legacy_file() {
    let fx = Fixture::new();
    let legacy = write_json(
        &fx,
        &fx.dirs.user_config_dir().join("settings.json"),
        &json!({"keepOpen": false}),
    );
    write_json(
        &fx,
        &user_settings_file(&fx.dirs),
        &json!({"stayOpen": true}),
    );
    let loaded = load_settings(&fx.dirs, &fx.project);
    assert!(legacy.exists(), "the legacy file is left alone");
    assert!(loaded.settings.keep_open && loaded.settings.stay_open);
}

#[test]
fn set_writes_the_user_file_and_keeps_unknown_keys() {
    let fx = Fixture::new();
    let file = write_json(
        &fx,
        &user_settings_file(&fx.dirs),
        &json!({"theme": {"mine": true}, "timeout": 5, "projectScope": true}),
    );
    let outcome = set_setting(&fx.dirs, &fx.project, "timeout", "7.5", Layer::User).unwrap();
    assert_eq!(outcome.value, json!(7.5));
    assert_eq!(outcome.file, file);
    assert!(!outcome.created && !outcome.overridden_by_project);
    assert_eq!(
        read_json(&file),
        json!({"theme": {"mine": true}, "timeout": 7.5})
    );
    assert_eq!(
        load_settings(&fx.dirs, &fx.project)
            .settings
            .timeout_minutes,
        7.5
    );
}

#[test]
fn set_migrates_a_legacy_file_instead_of_orphaning_it() {
    let fx = Fixture::new();
    let legacy = write_json(
        &fx,
        &fx.dirs.user_config_dir().join("settings.json"),
        &json!({"keepOpen": false}),
    );
    set_setting(&fx.dirs, &fx.project, "stayOpen", "true", Layer::User).unwrap();
    assert!(!legacy.exists());
    assert_eq!(
        read_json(&user_settings_file(&fx.dirs)),
        json!({"keepOpen": false, "stayOpen": true})
    );
}

#[test]
fn invalid_set_values_write_nothing() {
    let fx = Fixture::new();
    let before = "{\"timeout\": 5}";
    let file = fx.write(&user_settings_file(&fx.dirs), before);
    for (key, value, message) in [
        (
            "timeout",
            "soon",
            "Invalid value \"soon\" for timeout: expected a positive number of minutes below 1000, fractions allowed (e.g. 20 or 0.5).",
        ),
        (
            "agentScope",
            "everything",
            "Invalid value \"everything\" for agentScope: expected user, project or both.",
        ),
        (
            "backend",
            "screen",
            "Invalid value \"screen\" for backend: expected auto, herdr, tmux or headless.",
        ),
        ("colour", "blue", ""),
    ] {
        let err = set_setting(&fx.dirs, &fx.project, key, value, Layer::User).unwrap_err();
        if !message.is_empty() {
            assert_eq!(err.to_string(), message);
            assert_eq!(err.code(), "invalid_setting");
        } else {
            assert_eq!(err.code(), "unknown_setting");
            assert!(
                err.to_string()
                    .starts_with("Unknown setting \"colour\". Known settings:")
            );
        }
    }
    assert_eq!(fs_err::read_to_string(&file).unwrap(), before);
    assert!(!project_settings_file(&fx.project).exists());
}

#[test]
fn set_refuses_to_overwrite_a_file_it_cannot_parse() {
    let fx = Fixture::new();
    let file = fx.write(&user_settings_file(&fx.dirs), "{ hand-edited, broken");
    let err = set_setting(&fx.dirs, &fx.project, "timeout", "5", Layer::User).unwrap_err();
    assert_eq!(err.code(), "malformed_file");
    assert!(err.to_string().contains("fix or remove it"), "{err}");
    assert_eq!(
        fs_err::read_to_string(&file).unwrap(),
        "{ hand-edited, broken"
    );
}

#[test]
fn set_project_creates_and_activates_a_self_contained_project_file() {
    let fx = Fixture::new();
    write_json(
        &fx,
        &user_settings_file(&fx.dirs),
        &json!({"agentScope": "both"}),
    );
    let outcome = set_setting(&fx.dirs, &fx.project, "backend", "tmux", Layer::Project).unwrap();
    assert!(outcome.created);
    assert_eq!(outcome.file, project_settings_file(&fx.project));
    let stored = read_json(&outcome.file);
    assert_eq!(stored["backend"], json!("tmux"));
    assert_eq!(
        stored["agentScope"],
        json!("user"),
        "defaults are written out"
    );
    assert_eq!(stored["projectScope"], json!(true));
    assert!(stored.get("confirmProjectAgents").is_none());
    let loaded = load_settings(&fx.dirs, &fx.project);
    assert_eq!(loaded.active_layer, Layer::Project);
    assert_eq!(loaded.settings.backend, Backend::Tmux);
    assert_eq!(loaded.settings.agent_scope, AgentScope::User);
}

#[test]
fn a_user_value_under_an_active_project_file_is_reported_as_overridden() {
    let fx = Fixture::new();
    set_setting(&fx.dirs, &fx.project, "timeout", "3", Layer::Project).unwrap();
    let outcome = set_setting(&fx.dirs, &fx.project, "timeout", "9", Layer::User).unwrap();
    assert!(outcome.overridden_by_project);
    let confirm = set_setting(
        &fx.dirs,
        &fx.project,
        "confirmProjectAgents",
        "false",
        Layer::User,
    )
    .unwrap();
    assert!(
        !confirm.overridden_by_project,
        "user-only keys always apply"
    );
    assert_eq!(
        load_settings(&fx.dirs, &fx.project)
            .settings
            .timeout_minutes,
        3.0
    );
}

#[test]
fn user_only_keys_cannot_go_to_the_project_file() {
    let fx = Fixture::new();
    for key in ["confirmProjectAgents", "subagentCompatibility", "maxDepth"] {
        let value = if key == "maxDepth" { "5" } else { "false" };
        let err = set_setting(&fx.dirs, &fx.project, key, value, Layer::Project).unwrap_err();
        assert_eq!(err.code(), "wrong_settings_layer");
        assert!(
            err.to_string()
                .starts_with(&format!("{key} can only be set in the user file"))
        );
    }
    assert!(!project_settings_file(&fx.project).exists());
}

#[test]
fn project_scope_switches_the_project_file_without_losing_values() {
    let fx = Fixture::new();
    set_setting(&fx.dirs, &fx.project, "stayOpen", "true", Layer::Project).unwrap();
    set_setting(
        &fx.dirs,
        &fx.project,
        "projectScope",
        "false",
        Layer::Project,
    )
    .unwrap();
    let loaded = load_settings(&fx.dirs, &fx.project);
    assert_eq!(loaded.project_file_state, ProjectFileState::Dormant);
    assert!(!loaded.settings.stay_open);
    set_setting(
        &fx.dirs,
        &fx.project,
        "projectScope",
        "true",
        Layer::Project,
    )
    .unwrap();
    assert!(load_settings(&fx.dirs, &fx.project).settings.stay_open);

    let err = set_setting(&fx.dirs, &fx.project, "projectScope", "true", Layer::User).unwrap_err();
    assert_eq!(err.code(), "wrong_settings_layer");
    let err = set_setting(&fx.dirs, &fx.project, "projectScope", "on", Layer::Project).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Invalid value \"on\" for projectScope: expected true or false."
    );
}
