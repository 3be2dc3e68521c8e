//! Keys, defaults, lenient reading, strict input, layering and edits, on in-memory documents.

use serde_json::json;

use super::*;

fn doc(value: serde_json::Value) -> LayerDoc {
    match value {
        serde_json::Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

#[test]
fn defaults_match_the_original_and_ours() {
    let defaults = serde_json::to_value(EffectiveSettings::default()).unwrap();
    assert_eq!(
        defaults,
        json!({
            "agentScope": "user",
            "includeBundledAgents": true,
            "confirmProjectAgents": true,
            "subagentCompatibility": false,
            "keepOpen": true,
            "stayOpen": false,
            "fieldnotes": true,
            "emojiSheep": true,
            "timeout": 20,
            "staleWaitThreshold": 5,
            "backend": "auto",
            "sandbox": "off",
            "doneNudges": 1,
            "maxParallelTasks": 8,
            "maxConcurrency": 4,
            "maxDepth": 2,
            "brokerIdleMinutes": 10,
            "maxSheep": 0,
            "stallWatchdog": 0,
            "remoteLinkTimeoutMinutes": 10,
            "maxConcurrentTurns": 0,
            "rateLimitWaitSeconds": 60,
            "holdProviderKeys": true,
            "fallbackAfterMinutes": 15,
            "mergeStrategy": "merge",
            "mergeCheckTimeout": 30,
            "notifyDesktop": false,
            "notifyWebhook": "",
            "notifyWebhookFormat": "auto",
            "notifyWords": false
        })
    );
}

#[test]
fn a_merge_strategy_is_one_of_four_and_a_stored_bad_one_falls_back() {
    let key = SettingKey::MergeStrategy;
    assert_eq!(key.parse_input("Squash").unwrap(), json!("squash"));
    let err = key.parse_input("octopus").unwrap_err().to_string();
    assert!(
        err.contains("\"octopus\"") && err.contains("ff-only"),
        "{err}"
    );
    let user = doc(json!({"mergeStrategy": "ff-only", "mergeCheckTimeout": 0.5}));
    let resolved = resolve(Some(&user), None);
    assert_eq!(
        resolved.settings.merge_strategy,
        crate::strategy::Strategy::FfOnly
    );
    assert_eq!(
        resolved.settings.merge_check_timeout(),
        Duration::from_secs(30)
    );
    let bad = doc(json!({"mergeStrategy": "octopus"}));
    let resolved = resolve(Some(&bad), None);
    assert_eq!(
        resolved.settings.merge_strategy,
        crate::strategy::Strategy::Merge
    );
    assert_eq!(resolved.warnings.len(), 1);
}

#[test]
fn no_files_means_defaults_from_nowhere() {
    let resolved = resolve(None, None);
    assert_eq!(resolved.settings, EffectiveSettings::default());
    assert!(!resolved.project_active);
    assert!(resolved.warnings.is_empty());
    assert!(
        SettingKey::ALL
            .into_iter()
            .all(|key| resolved.source(key) == SettingSource::Default)
    );
}

#[test]
fn user_values_apply_and_are_attributed() {
    let user = doc(json!({"agentScope": "both", "timeout": 7.5, "backend": "tmux", "extra": 1}));
    let resolved = resolve(Some(&user), None);
    assert_eq!(resolved.settings.agent_scope, AgentScope::Both);
    assert_eq!(resolved.settings.timeout_minutes, 7.5);
    assert_eq!(resolved.settings.backend, Backend::Tmux);
    assert_eq!(resolved.source(SettingKey::Timeout), SettingSource::User);
    assert_eq!(
        resolved.source(SettingKey::KeepOpen),
        SettingSource::Default
    );
}

#[test]
fn a_dormant_project_file_changes_nothing() {
    let user = doc(json!({"timeout": 30}));
    for project in [
        json!({"timeout": 1}),
        json!({"timeout": 1, "projectScope": false}),
        json!({"timeout": 1, "projectScope": "true"}),
        json!({"timeout": 1, "settingsScope": "user"}),
    ] {
        let resolved = resolve(Some(&user), Some(&doc(project.clone())));
        assert!(!resolved.project_active, "{project}");
        assert_eq!(resolved.settings.timeout_minutes, 30.0, "{project}");
    }
}

#[test]
fn an_active_project_file_is_self_contained() {
    let user = doc(json!({"timeout": 30, "agentScope": "both", "keepOpen": false}));
    let project = doc(json!({"projectScope": true, "stayOpen": true}));
    let resolved = resolve(Some(&user), Some(&project));
    assert!(resolved.project_active);
    assert!(resolved.settings.stay_open);
    // Not the user's 30 / both / false: the project file stands alone.
    assert_eq!(resolved.settings.timeout_minutes, 20.0);
    assert_eq!(resolved.settings.agent_scope, AgentScope::User);
    assert!(resolved.settings.keep_open);
    assert_eq!(
        resolved.source(SettingKey::StayOpen),
        SettingSource::Project
    );
    assert_eq!(resolved.source(SettingKey::Timeout), SettingSource::Default);
}

#[test]
fn legacy_settings_scope_activates_the_project_file() {
    let project = doc(json!({"settingsScope": "project", "fieldnotes": false}));
    let resolved = resolve(None, Some(&project));
    assert!(resolved.project_active);
    assert!(!resolved.settings.fieldnotes);
}

#[test]
fn user_only_keys_come_from_the_user_file_even_with_a_project_layer() {
    let user =
        doc(json!({"confirmProjectAgents": true, "subagentCompatibility": true, "maxDepth": 3}));
    let project = doc(json!({
        "projectScope": true,
        "confirmProjectAgents": false,
        "subagentCompatibility": false,
        "maxDepth": 99
    }));
    let resolved = resolve(Some(&user), Some(&project));
    assert!(resolved.settings.confirm_project_agents);
    assert!(resolved.settings.subagent_compatibility);
    assert_eq!(resolved.settings.max_depth, 3);
    assert_eq!(
        resolved.source(SettingKey::ConfirmProjectAgents),
        SettingSource::User
    );
    let messages: Vec<&str> = resolved
        .warnings
        .iter()
        .map(|w| w.message.as_str())
        .collect();
    assert_eq!(messages.len(), 3, "{messages:?}");
    assert!(messages[0].starts_with("confirmProjectAgents is ignored here"));
}

#[test]
fn a_project_file_cannot_send_the_herds_news_elsewhere() {
    let user = doc(json!({"notifyWebhook": "https://hooks.slack.com/services/T/B/x"}));
    let project = doc(json!({
        "projectScope": true,
        "notifyDesktop": true,
        "notifyWebhook": "https://attacker.example/collect",
        "notifyWebhookFormat": "json",
        "notifyWords": true
    }));
    let settings = resolve(Some(&user), Some(&project)).settings;
    assert_eq!(
        settings.notify_webhook.as_deref(),
        Some("https://hooks.slack.com/services/T/B/x")
    );
    assert!(!settings.notify_desktop);
    assert!(!settings.notify_words);
    assert_eq!(settings.notify_webhook_format, WebhookFormat::Auto);
    let alone = resolve(None, Some(&project)).settings;
    assert_eq!(alone.notify_webhook, None);
}

#[test]
fn a_webhook_is_a_web_address_and_off_clears_it() {
    let key = SettingKey::NotifyWebhook;
    assert_eq!(
        key.parse_input("https://ntfy.sh/herd").unwrap(),
        json!("https://ntfy.sh/herd")
    );
    assert_eq!(key.parse_input("off").unwrap(), json!(""));
    let err = key.parse_input("ntfy.sh/herd").unwrap_err().to_string();
    assert!(
        err.contains("\"ntfy.sh/herd\"") && err.contains("http:// or https://"),
        "{err}"
    );
    let stored = doc(json!({"notifyWebhook": "file:///etc/passwd"}));
    assert_eq!(resolve(Some(&stored), None).settings.notify_webhook, None);
}

#[test]
fn a_project_file_cannot_turn_off_confirmation_even_without_a_user_file() {
    let project = doc(json!({"projectScope": true, "confirmProjectAgents": false}));
    assert!(
        resolve(None, Some(&project))
            .settings
            .confirm_project_agents
    );
}

#[test]
fn user_files_never_activate_anything_with_scope_keys() {
    let user = doc(json!({"projectScope": true, "settingsScope": "project", "timeout": 3}));
    let resolved = resolve(Some(&user), None);
    assert!(!resolved.project_active);
    assert_eq!(resolved.settings.timeout_minutes, 3.0);
}

#[test]
fn invalid_stored_values_fall_back_with_a_warning() {
    let user = doc(json!({
        "agentScope": "everything",
        "keepOpen": "yes",
        "timeout": -4,
        "staleWaitThreshold": "5",
        "backend": "screen",
        "doneNudges": 1.5,
        "maxConcurrency": 0
    }));
    let resolved = resolve(Some(&user), None);
    assert_eq!(resolved.settings, EffectiveSettings::default());
    let messages: Vec<&str> = resolved
        .warnings
        .iter()
        .map(|w| w.message.as_str())
        .collect();
    assert_eq!(
        messages,
        [
            "agentScope: \"everything\" is not valid (expected user, project or both); using the default \"user\"",
            "keepOpen: \"yes\" is not valid (expected true or false); using the default true",
            "timeout: -4 is not valid (expected a positive number of minutes below 1000, fractions allowed (e.g. 20 or 0.5)); using the default 20",
            "staleWaitThreshold: \"5\" is not valid (expected a number of minutes, 0 or more, or off (below 1 is off)); using the default 5",
            "backend: \"screen\" is not valid (expected auto, herdr, tmux or headless); using the default \"auto\"",
            "doneNudges: 1.5 is not valid (expected a whole number, 0 or more); using the default 1",
            "maxConcurrency: 0 is not valid (expected a whole number, 1 or more); using the default 4",
        ]
    );
    assert!(resolved.warnings.iter().all(|w| w.layer == Layer::User));
}

#[test]
fn legacy_millisecond_timeouts_become_minutes() {
    for (stored, minutes) in [
        (json!(600_000), 10.0),
        (json!(1_200_000), 20.0),
        (json!(1000), 1.0),
        (json!(45_000), 1.0),
        (json!(90_000), 2.0),
        (json!(999), 999.0),
        (json!(0.5), 0.5),
    ] {
        let user = doc(json!({ "timeout": stored }));
        let resolved = resolve(Some(&user), None);
        assert_eq!(resolved.settings.timeout_minutes, minutes, "{stored}");
        assert!(resolved.warnings.is_empty());
    }
}

#[test]
fn stale_threshold_below_one_disables_reminders() {
    let mut settings = EffectiveSettings::default();
    assert_eq!(
        settings.stale_wait_threshold(),
        Some(Duration::from_secs(300))
    );
    for off in [0.0, 0.99, -3.0] {
        settings.stale_wait_threshold_minutes = off;
        assert_eq!(settings.stale_wait_threshold(), None);
    }
    assert_eq!(settings.timeout(), Duration::from_secs(1200));
    assert_eq!(settings.broker_idle(), Duration::from_secs(600));
}

#[test]
fn inputs_are_checked_strictly() {
    let ok = |key: SettingKey, raw: &str| key.parse_input(raw).unwrap();
    assert_eq!(ok(SettingKey::AgentScope, "Both"), json!("both"));
    assert_eq!(ok(SettingKey::KeepOpen, "FALSE"), json!(false));
    assert_eq!(ok(SettingKey::Timeout, "0.5"), json!(0.5));
    assert_eq!(ok(SettingKey::Timeout, "20"), json!(20));
    assert_eq!(ok(SettingKey::StaleWaitThreshold, "off"), json!(0));
    assert_eq!(ok(SettingKey::StaleWaitThreshold, "2.5"), json!(2.5));
    assert_eq!(ok(SettingKey::Backend, "headless"), json!("headless"));
    assert_eq!(ok(SettingKey::DoneNudges, "0"), json!(0));
    assert_eq!(ok(SettingKey::MaxConcurrency, " 3 "), json!(3));
    assert_eq!(ok(SettingKey::BrokerIdleMinutes, "0.25"), json!(0.25));
    assert_eq!(ok(SettingKey::MaxSheep, "0"), json!(0));
    assert_eq!(ok(SettingKey::MaxSheep, "12"), json!(12));
    assert_eq!(ok(SettingKey::StallWatchdog, "off"), json!(0));
    assert_eq!(ok(SettingKey::StallWatchdog, "1.5"), json!(1.5));

    for (key, raw) in [
        (SettingKey::AgentScope, "all"),
        (SettingKey::KeepOpen, "yes"),
        (SettingKey::Timeout, "0"),
        (SettingKey::Timeout, "-1"),
        (SettingKey::Timeout, "1000"),
        (SettingKey::Timeout, "NaN"),
        (SettingKey::Timeout, "inf"),
        (SettingKey::StaleWaitThreshold, "-1"),
        (SettingKey::Backend, "screen"),
        (SettingKey::DoneNudges, "-1"),
        (SettingKey::DoneNudges, "1.5"),
        (SettingKey::MaxParallelTasks, "0"),
        (SettingKey::BrokerIdleMinutes, "0"),
        (SettingKey::MaxSheep, "-1"),
        (SettingKey::MaxSheep, "two"),
        (SettingKey::StallWatchdog, "-1"),
        (SettingKey::StallWatchdog, "soon"),
    ] {
        assert!(key.parse_input(raw).is_err(), "{key} accepted {raw:?}");
    }
    assert_eq!(
        SettingKey::Timeout
            .parse_input("soon")
            .unwrap_err()
            .to_string(),
        "Invalid value \"soon\" for timeout: expected a positive number of minutes below 1000, \
         fractions allowed (e.g. 20 or 0.5)."
    );
}

#[test]
fn every_default_is_an_accepted_input_and_a_valid_stored_value() {
    let defaults = EffectiveSettings::default();
    for key in SettingKey::ALL {
        let value = defaults.get(key);
        let typed = match &value {
            serde_json::Value::String(text) => text.clone(),
            other => other.to_string(),
        };
        assert_eq!(key.parse_input(&typed).unwrap(), value, "{key}");
        assert_eq!(key.read_stored(&value), Some(value.clone()), "{key}");
    }
}

#[test]
fn key_names_round_trip_and_unknown_keys_list_the_known_ones() {
    for key in SettingKey::ALL {
        assert_eq!(SettingKey::parse_name(key.name()), Ok(key));
        assert_eq!(serde_json::to_value(key).unwrap(), json!(key.name()));
    }
    let err = SettingKey::parse_name("timeOut").unwrap_err().to_string();
    assert!(
        err.starts_with(
            "Unknown setting \"timeOut\". Known settings: agentScope, includeBundledAgents,"
        ),
        "{err}"
    );
}

#[test]
fn parse_layer_accepts_objects_only() {
    assert_eq!(parse_layer("  \n"), Ok(LayerDoc::new()));
    assert_eq!(parse_layer("[]"), Err(LayerParseError::NotAnObject));
    assert!(matches!(parse_layer("{"), Err(LayerParseError::Json(_))));
    let parsed = parse_layer(r#"{"b": 1, "a": 2}"#).unwrap();
    assert_eq!(parsed.keys().collect::<Vec<_>>(), ["b", "a"]);
}

#[test]
fn user_edits_keep_unknown_keys_in_place_and_drop_scope_keys() {
    let mut user = doc(json!({"mine": {"x": 1}, "timeout": 5, "projectScope": true, "z": 0}));
    set_in_user_layer(&mut user, SettingKey::Timeout, json!(9));
    assert_eq!(
        serde_json::Value::Object(user).to_string(),
        r#"{"mine":{"x":1},"timeout":9,"z":0}"#
    );
}

#[test]
fn project_edits_activate_and_materialise_the_project_keys() {
    let mut project = doc(json!({"settingsScope": "project", "team": "x", "timeout": 3}));
    set_in_project_layer(&mut project, SettingKey::Backend, json!("tmux")).unwrap();
    assert!(is_project_layer_active(&project));
    assert!(!project.contains_key("settingsScope"));
    assert_eq!(project["team"], json!("x"));
    assert_eq!(project["timeout"], json!(3));
    assert_eq!(project["backend"], json!("tmux"));
    assert_eq!(project["keepOpen"], json!(true));
    for key in SettingKey::ALL {
        assert_eq!(
            project.contains_key(key.name()),
            !key.is_user_only(),
            "{key}"
        );
    }
    let resolved = resolve(None, Some(&project));
    assert_eq!(resolved.settings.backend, Backend::Tmux);
    assert_eq!(resolved.settings.timeout_minutes, 3.0);
}

#[test]
fn user_only_keys_cannot_be_written_to_the_project_file() {
    let mut project = LayerDoc::new();
    let err = set_in_project_layer(&mut project, SettingKey::ConfirmProjectAgents, json!(false))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "confirmProjectAgents can only be set in the user file: a project file must not change \
         it. Run the command without --project."
    );
    assert!(project.is_empty());
}

#[test]
fn deactivation_keeps_the_values() {
    let mut project = doc(json!({"settingsScope": "project", "timeout": 3}));
    deactivate_project_layer(&mut project);
    assert_eq!(
        serde_json::Value::Object(project.clone()).to_string(),
        r#"{"timeout":3,"projectScope":false}"#
    );
    activate_project_layer(&mut project);
    assert_eq!(project["projectScope"], json!(true));
    assert_eq!(project["timeout"], json!(3));
}
