//! Project-agent approval: bound to path and content hash, asked again after an edit.

mod common;

use common::{Fixture, agent};
use shepherd_config::approvals::{APPROVALS_FILE, ApprovalState, Approvals, ApproveOutcome};
use shepherd_config::{approval_state, approve_agent, discover_agents};
use shepherd_core::agent_def::{AgentDef, AgentScope};
use shepherd_core::time::Timestamp;

fn now() -> Timestamp {
    "2026-11-29T12:00:00Z".parse().unwrap()
}

fn find(fx: &Fixture, name: &str) -> AgentDef {
    discover_agents(&fx.dirs, &fx.nested, AgentScope::Both, true)
        .find(name)
        .unwrap()
        .clone()
}

#[test]
fn project_agents_need_approval_and_others_do_not() {
    let fx = Fixture::new();
    fx.project_agent("deploy.md", &agent("deploy", "ships it"));
    fx.user_agent("mine.md", &agent("mine", "user's"));
    let deploy = find(&fx, "deploy");
    assert_eq!(
        approval_state(&fx.dirs, &deploy, true).unwrap(),
        ApprovalState::Required
    );
    for name in ["mine", "worker"] {
        assert_eq!(
            approval_state(&fx.dirs, &find(&fx, name), true).unwrap(),
            ApprovalState::NotRequired,
            "{name}"
        );
        assert_eq!(
            approve_agent(&fx.dirs, &find(&fx, name), now()).unwrap(),
            ApproveOutcome::NotNeeded
        );
    }
    assert!(!fx.dirs.user_config_dir().join(APPROVALS_FILE).exists());
}

#[test]
fn a_non_interactive_caller_is_told_how_to_approve() {
    let fx = Fixture::new();
    let file = fx.project_agent("deploy.md", &agent("deploy", "ships it"));
    let approvals = Approvals::load(&fx.dirs).unwrap();
    let err = approvals.require(&find(&fx, "deploy"), true).unwrap_err();
    assert_eq!(err.code(), "approval_required");
    assert_eq!(
        err.to_string(),
        format!(
            "Project agent \"deploy\" ({}) comes from the repository and is not approved. \
             Review it, then run `shepherd agents approve deploy`.",
            file.display()
        )
    );
}

#[test]
fn approval_binds_path_and_contents_and_an_edit_asks_again() {
    let fx = Fixture::new();
    let file = fx.project_agent("deploy.md", &agent("deploy", "ships it"));
    let original = find(&fx, "deploy");
    assert_eq!(
        approve_agent(&fx.dirs, &original, now()).unwrap(),
        ApproveOutcome::Approved
    );
    assert_eq!(
        approve_agent(&fx.dirs, &original, now()).unwrap(),
        ApproveOutcome::AlreadyApproved
    );
    assert_eq!(
        approval_state(&fx.dirs, &original, true).unwrap(),
        ApprovalState::Approved
    );

    fx.write(&file, &agent("deploy", "ships it, and also deletes prod"));
    let edited = find(&fx, "deploy");
    assert_eq!(
        approval_state(&fx.dirs, &edited, true).unwrap(),
        ApprovalState::Changed
    );
    let err = Approvals::load(&fx.dirs)
        .unwrap()
        .require(&edited, true)
        .unwrap_err();
    assert!(err.changed);
    assert!(
        err.to_string()
            .contains("has changed since it was approved"),
        "{err}"
    );

    assert_eq!(
        approve_agent(&fx.dirs, &edited, now()).unwrap(),
        ApproveOutcome::Approved
    );
    assert_eq!(
        approval_state(&fx.dirs, &edited, true).unwrap(),
        ApprovalState::Approved
    );
    // The old contents are no longer approved: one approval per file.
    assert_eq!(
        approval_state(&fx.dirs, &original, true).unwrap(),
        ApprovalState::Changed
    );
    let approvals = Approvals::load(&fx.dirs).unwrap();
    assert_eq!(approvals.entries().len(), 1);
    assert_eq!(approvals.entries()[0].path, file);
    assert_eq!(approvals.entries()[0].content_hash, edited.content_hash);
    assert_eq!(
        approvals.entries()[0].approved_at,
        "2026-11-29T12:00:00.000Z"
    );
}

#[test]
fn the_same_contents_at_another_path_are_not_approved() {
    let fx = Fixture::new();
    let text = agent("deploy", "ships it");
    fx.project_agent("deploy.md", &text);
    approve_agent(&fx.dirs, &find(&fx, "deploy"), now()).unwrap();
    let elsewhere = fx.project.parent().unwrap().join("elsewhere");
    fx.write(&elsewhere.join(".pi/agents/deploy.md"), &text);
    let moved = discover_agents(&fx.dirs, &elsewhere, AgentScope::Project, false)
        .find("deploy")
        .unwrap()
        .clone();
    assert_eq!(moved.content_hash, find(&fx, "deploy").content_hash);
    assert_eq!(
        approval_state(&fx.dirs, &moved, true).unwrap(),
        ApprovalState::Required
    );
}

#[test]
fn confirmation_off_means_no_approval_is_needed() {
    let fx = Fixture::new();
    fx.project_agent("deploy.md", &agent("deploy", "ships it"));
    let deploy = find(&fx, "deploy");
    assert_eq!(
        approval_state(&fx.dirs, &deploy, false).unwrap(),
        ApprovalState::NotRequired
    );
    assert!(
        Approvals::load(&fx.dirs)
            .unwrap()
            .require(&deploy, false)
            .is_ok()
    );
}

#[test]
fn approvals_are_stored_per_user_in_a_readable_file() {
    let fx = Fixture::new();
    let file = fx.project_agent("deploy.md", &agent("deploy", "ships it"));
    let deploy = find(&fx, "deploy");
    approve_agent(&fx.dirs, &deploy, now()).unwrap();
    let stored: serde_json::Value = serde_json::from_str(
        &fs_err::read_to_string(fx.dirs.user_config_dir().join(APPROVALS_FILE)).unwrap(),
    )
    .unwrap();
    assert_eq!(
        stored,
        serde_json::json!({
            "version": 1,
            "approvals": [{
                "path": file.to_str().unwrap(),
                "contentHash": deploy.content_hash,
                "name": "deploy",
                "approvedAt": "2026-11-29T12:00:00.000Z"
            }]
        })
    );
}

#[test]
fn a_damaged_approvals_file_is_an_error_not_an_approval() {
    let fx = Fixture::new();
    fx.project_agent("deploy.md", &agent("deploy", "ships it"));
    let approvals_file = fx.write(&fx.dirs.user_config_dir().join(APPROVALS_FILE), "{oops");
    let deploy = find(&fx, "deploy");
    let err = approval_state(&fx.dirs, &deploy, true).unwrap_err();
    assert_eq!(err.code(), "malformed_file");
    assert!(err.to_string().starts_with(&format!(
        "{} is not a valid approvals file",
        approvals_file.display()
    )));
    assert!(approve_agent(&fx.dirs, &deploy, now()).is_err());
    assert_eq!(fs_err::read_to_string(&approvals_file).unwrap(), "{oops");
}

#[test]
fn resolve_agent_applies_the_settings_scope_and_the_approval_gate() {
    use shepherd_config::{ResolveAgentError, resolve_agent};
    use shepherd_core::settings::EffectiveSettings;

    let fx = Fixture::new();
    fx.project_agent("deploy.md", &agent("deploy", "ships it"));
    let mut settings = EffectiveSettings::default();
    let resolve = |settings: &EffectiveSettings, name: &str| {
        resolve_agent(&fx.dirs, &fx.nested, settings, name)
    };

    assert_eq!(resolve(&settings, "worker").unwrap().name, "worker");
    let unknown = resolve(&settings, "deploy").unwrap_err();
    assert!(
        matches!(unknown, ResolveAgentError::Unknown(_)),
        "user scope by default"
    );
    assert_eq!(unknown.code(), "unknown_agent");

    settings.agent_scope = AgentScope::Both;
    let refused = resolve(&settings, "deploy").unwrap_err();
    assert_eq!(refused.code(), "approval_required");
    assert!(
        refused
            .to_string()
            .contains("run `shepherd agents approve deploy`")
    );

    approve_agent(&fx.dirs, &find(&fx, "deploy"), now()).unwrap();
    assert_eq!(resolve(&settings, "deploy").unwrap().name, "deploy");

    settings.include_bundled_agents = false;
    assert!(matches!(
        resolve(&settings, "worker").unwrap_err(),
        ResolveAgentError::Unknown(_)
    ));
}
