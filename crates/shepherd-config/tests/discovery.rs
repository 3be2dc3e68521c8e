//! Discovery against fixture trees: precedence, scopes, shadowing, malformed files, symlinks.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

mod common;

use std::path::PathBuf;

use common::{Fixture, agent, agent_with};
use shepherd_config::discover_agents;
use shepherd_config::discovery::Discovery;
use shepherd_core::agent_def::{
    AgentScope, AgentSource, ModelChoice, ThinkingChoice, ThinkingLevel,
};

fn names(discovery: &Discovery) -> Vec<String> {
    discovery
        .agents
        .iter()
        .map(|def| format!("{} ({})", def.name, def.source))
        .collect()
}

fn discover(fx: &Fixture, scope: AgentScope) -> Discovery {
    discover_agents(&fx.dirs, &fx.nested, scope, true)
}

/// The original's six-location fixture: one `same` in every location, plus one only-here agent.
fn precedence_fixture() -> Fixture {
    let fx = Fixture::new();
    fx.user_agent("same.md", &agent("same", "from pi user dir"));
    fx.user_agent("only-user.md", &agent("only-user", "u"));
    fx.shared_user_agent("same.md", &agent("same", "from shared user dir"));
    fx.shared_user_agent("shared-only.md", &agent("shared-only", "su"));
    fx.project_agent("same.md", &agent("same", "from project pi dir"));
    fx.project_agent("project-pi.md", &agent("project-pi", "p"));
    fx.shared_project_agent("same.md", &agent("same", "from project shared dir"));
    fx.shared_project_agent("proj-shared.md", &agent("proj-shared", "ps"));
    fx
}

#[test]
fn a_fresh_machine_lists_the_four_bundled_agents() {
    let fx = Fixture::new();
    let discovery = discover(&fx, AgentScope::User);
    assert_eq!(
        names(&discovery),
        [
            "planner (bundled)",
            "reviewer (bundled)",
            "scout (bundled)",
            "worker (bundled)"
        ]
    );
    assert!(discovery.shadowed.is_empty() && discovery.warnings.is_empty());
    assert!(discovery.project_dirs.is_empty());
    assert_eq!(
        discovery.find("worker").unwrap().file_path,
        PathBuf::from("bundled:worker.md")
    );
}

#[test]
fn a_user_worker_shadows_the_bundled_one() {
    let fx = Fixture::new();
    let file = fx.user_agent("worker.md", &agent("worker", "my own worker"));
    let discovery = discover(&fx, AgentScope::User);
    let worker = discovery.find("worker").unwrap();
    assert_eq!(worker.source, AgentSource::User);
    assert_eq!(worker.description, "my own worker");
    assert_eq!(worker.file_path, file);
    assert_eq!(discovery.shadowed.len(), 1);
    assert_eq!(discovery.shadowed[0].def.source, AgentSource::Bundled);
    assert_eq!(discovery.shadowed[0].shadowed_by, file);
}

#[test]
fn user_scope_searches_both_user_dirs_then_bundled() {
    let fx = precedence_fixture();
    let discovery = discover(&fx, AgentScope::User);
    assert_eq!(
        names(&discovery)[..3],
        ["only-user (user)", "same (user)", "shared-only (user)"]
    );
    assert_eq!(
        discovery.find("same").unwrap().description,
        "from pi user dir"
    );
    assert!(discovery.find("project-pi").is_none());
    assert!(discovery.project_dirs.is_empty());
    assert_eq!(discovery.shadowed.len(), 1);
    assert_eq!(
        discovery.shadowed[0].def.description,
        "from shared user dir"
    );
}

#[test]
fn project_scope_searches_the_nearest_project_dirs_then_bundled() {
    let fx = precedence_fixture();
    let discovery = discover(&fx, AgentScope::Project);
    assert_eq!(
        names(&discovery)[..3],
        [
            "project-pi (project)",
            "same (project)",
            "proj-shared (project)"
        ]
    );
    assert_eq!(
        discovery.find("same").unwrap().description,
        "from project pi dir"
    );
    assert!(discovery.find("only-user").is_none());
    assert_eq!(
        discovery.project_dirs,
        [
            fx.project.join(".pi/agents"),
            fx.project.join(".agents/agents")
        ]
    );
}

#[test]
fn both_scope_puts_user_first_and_reports_every_shadowed_definition() {
    let fx = precedence_fixture();
    let discovery = discover(&fx, AgentScope::Both);
    assert_eq!(
        names(&discovery),
        [
            "only-user (user)",
            "same (user)",
            "shared-only (user)",
            "project-pi (project)",
            "proj-shared (project)",
            "planner (bundled)",
            "reviewer (bundled)",
            "scout (bundled)",
            "worker (bundled)",
        ]
    );
    let shadowed: Vec<&str> = discovery
        .shadowed
        .iter()
        .map(|s| s.def.description.as_str())
        .collect();
    assert_eq!(
        shadowed,
        [
            "from shared user dir",
            "from project pi dir",
            "from project shared dir"
        ]
    );
}

#[test]
fn bundled_agents_can_be_left_out() {
    let fx = precedence_fixture();
    let discovery = discover_agents(&fx.dirs, &fx.nested, AgentScope::User, false);
    assert!(
        discovery
            .agents
            .iter()
            .all(|def| def.source == AgentSource::User)
    );
    assert!(discovery.find("worker").is_none());
}

#[test]
fn the_nearest_ancestor_project_dir_wins() {
    let fx = Fixture::new();
    fx.project_agent("outer.md", &agent("outer", "root of the project"));
    let inner = fx.write(
        &fx.project.join("src/.pi/agents/inner.md"),
        &agent("inner", "closer to the working directory"),
    );
    let discovery = discover(&fx, AgentScope::Project);
    assert_eq!(discovery.find("inner").unwrap().file_path, inner);
    assert!(
        discovery.find("outer").is_none(),
        "only the nearest dir counts"
    );
    assert_eq!(discovery.project_dirs, [fx.project.join("src/.pi/agents")]);
}

#[test]
fn the_users_shared_dir_is_not_a_project_dir_for_projects_under_home() {
    let fx = Fixture::new();
    fx.shared_user_agent("mine.md", &agent("mine", "user's own"));
    let project_in_home = fx.dirs.home.join("code/app");
    fs_err::create_dir_all(&project_in_home).unwrap();
    let discovery = discover_agents(&fx.dirs, &project_in_home, AgentScope::Project, false);
    assert!(discovery.agents.is_empty(), "{:?}", names(&discovery));
    assert!(discovery.project_dirs.is_empty());
}

#[test]
fn within_a_directory_the_first_valid_file_in_sorted_order_wins() {
    let fx = Fixture::new();
    fx.user_agent("a-broken.md", "---\nname: dup\n---\n");
    fx.user_agent("b.md", &agent("dup", "from b"));
    fx.user_agent("c.agent.md", &agent("dup", "from c"));
    let discovery = discover(&fx, AgentScope::User);
    assert_eq!(discovery.find("dup").unwrap().description, "from b");
    assert_eq!(discovery.shadowed.len(), 1);
    assert_eq!(discovery.shadowed[0].def.description, "from c");
    assert_eq!(discovery.warnings.len(), 1);
}

#[test]
fn agent_md_files_are_read_and_other_files_are_not() {
    let fx = Fixture::new();
    fx.user_agent("helper.agent.md", &agent("helper", "h"));
    fx.user_agent("notes.txt", &agent("txt", "not markdown"));
    fx.user_agent("README", &agent("readme", "no extension"));
    fs_err::create_dir_all(fx.dirs.pi_user_agents_dir().join("folder.md")).unwrap();
    let discovery = discover_agents(&fx.dirs, &fx.nested, AgentScope::User, false);
    assert_eq!(names(&discovery), ["helper (user)"]);
    assert!(discovery.warnings.is_empty(), "{:?}", discovery.warnings);
}

#[test]
fn symlinks_to_files_and_directories_are_followed() {
    let fx = Fixture::new();
    let elsewhere = fx.write(
        &fx.dirs.home.join("dotfiles/linked.md"),
        &agent("linked", "through a file symlink"),
    );
    fs_err::create_dir_all(fx.dirs.pi_user_agents_dir()).unwrap();
    std::os::unix::fs::symlink(&elsewhere, fx.dirs.pi_user_agents_dir().join("linked.md")).unwrap();
    std::os::unix::fs::symlink(
        fx.dirs.home.join("missing.md"),
        fx.dirs.pi_user_agents_dir().join("dangling.md"),
    )
    .unwrap();
    // A whole shared directory that is a symlink.
    let real_dir = fx.dirs.home.join("team-agents");
    fx.write(
        &real_dir.join("teammate.md"),
        &agent("teammate", "through a dir symlink"),
    );
    fs_err::create_dir_all(fx.dirs.home.join(".agents")).unwrap();
    std::os::unix::fs::symlink(&real_dir, fx.dirs.shared_user_agents_dir()).unwrap();

    let discovery = discover_agents(&fx.dirs, &fx.nested, AgentScope::User, false);
    assert_eq!(names(&discovery), ["linked (user)", "teammate (user)"]);
    let linked = discovery.find("linked").unwrap();
    assert_eq!(
        linked.file_path,
        fx.dirs.pi_user_agents_dir().join("linked.md")
    );
    assert_eq!(discovery.warnings.len(), 1);
    assert!(discovery.warnings[0].skipped);
    assert_eq!(
        discovery.warnings[0].to_string(),
        format!(
            "skipped {}: it is a symlink to a file that does not exist",
            fx.dirs.pi_user_agents_dir().join("dangling.md").display()
        )
    );
}

#[test]
fn malformed_files_are_skipped_alone_with_a_warning_naming_file_and_reason() {
    let fx = Fixture::new();
    fx.user_agent("good.md", &agent("good", "fine"));
    let none = fx.user_agent("model-none.md", &agent_with("bad-model", "model: none"));
    let thinking = fx.user_agent("thinking.md", &agent_with("bad-thinking", "thinking: none"));
    let no_name = fx.user_agent("no-name.md", "---\ndescription: d\n---\n");
    let no_front = fx.user_agent("plain.md", "# Just notes\n");
    let bad_yaml = fx.user_agent("yaml.md", "---\nname: [x\n---\n");
    fs_err::write(fx.dirs.pi_user_agents_dir().join("binary.md"), b"\xff\xfe").unwrap();

    let discovery = discover_agents(&fx.dirs, &fx.nested, AgentScope::User, false);
    assert_eq!(names(&discovery), ["good (user)"]);
    let warnings: Vec<String> = discovery.warnings.iter().map(ToString::to_string).collect();
    let dir = fx.dirs.pi_user_agents_dir();
    assert_eq!(warnings.len(), 6, "{warnings:#?}");
    assert_eq!(
        warnings[0],
        format!(
            "skipped {}: not UTF-8 text",
            dir.join("binary.md").display()
        )
    );
    assert!(warnings[1].starts_with(&format!(
        "skipped {}: invalid model \"none\"",
        none.display()
    )));
    assert_eq!(
        warnings[2],
        format!(
            "skipped {}: name is required (a non-empty string)",
            no_name.display()
        )
    );
    assert_eq!(
        warnings[3],
        format!(
            "skipped {}: no YAML frontmatter (the file must start with a line `---`)",
            no_front.display()
        )
    );
    assert!(warnings[4].starts_with(&format!(
        "skipped {}: invalid thinking \"none\"",
        thinking.display()
    )));
    assert!(warnings[5].starts_with(&format!(
        "skipped {}: invalid YAML frontmatter:",
        bad_yaml.display()
    )));
}

#[test]
fn every_frontmatter_rule_holds_through_discovery() {
    let fx = Fixture::new();
    for (file, frontmatter) in [
        ("model-empty.md", "model: ''"),
        ("model-null.md", "model: null"),
        ("model-default.md", "model: default"),
        ("model-explicit.md", "model: openai/gpt-5"),
        ("thinking-high.md", "thinking: HIGH"),
        ("tools-string.md", "tools: read, grep"),
        ("tools-list.md", "tools: [read, grep]"),
        (
            "omit-true.md",
            "omit-system-prompt: true\nomit-pi-documentation: true",
        ),
        ("omit-invalid.md", "omit-system-prompt: 'yes'"),
        ("omit-context-true.md", "omit-context-files: true"),
        (
            "command.md",
            "command: [sh, -c, 'shepherd done completed ok']",
        ),
        ("unknown.md", "color: blue\npermissionMode: plan"),
    ] {
        fx.user_agent(file, &agent_with(file.trim_end_matches(".md"), frontmatter));
    }
    let discovery = discover_agents(&fx.dirs, &fx.nested, AgentScope::User, false);
    let get = |name: &str| discovery.find(name).unwrap();
    for name in ["model-empty", "model-null", "model-default"] {
        assert_eq!(get(name).model, ModelChoice::Inherit, "{name}");
    }
    assert_eq!(
        get("model-explicit").model,
        ModelChoice::Explicit("openai/gpt-5".into())
    );
    assert_eq!(
        get("thinking-high").thinking,
        ThinkingChoice::Level(ThinkingLevel::High)
    );
    assert_eq!(get("tools-string").tools, get("tools-list").tools);
    assert!(get("omit-true").omit_system_prompt && get("omit-true").omit_pi_documentation);
    assert!(!get("omit-invalid").omit_system_prompt);
    assert!(get("omit-context-true").omit_context_files);
    assert_eq!(
        get("command").command.as_deref().unwrap(),
        ["sh", "-c", "shepherd done completed ok"]
    );
    assert_eq!(
        get("unknown").extra.keys().collect::<Vec<_>>(),
        ["color", "permissionMode"]
    );
    // The ignored value is reported, but the file still counts.
    assert_eq!(discovery.warnings.len(), 1);
    assert!(!discovery.warnings[0].skipped);
    assert!(discovery.warnings[0].to_string().contains(
        "omit-invalid.md: omit-system-prompt: \"yes\" is not a YAML boolean (true or false); using false"
    ));
}

#[test]
fn unknown_names_suggest_a_case_insensitive_match_and_list_the_available_ones() {
    let fx = Fixture::new();
    let discovery = discover(&fx, AgentScope::User);
    assert_eq!(discovery.get("worker").unwrap().name, "worker");
    let err = discovery.get("Worker").unwrap_err();
    assert_eq!(err.code(), "unknown_agent");
    assert_eq!(
        err.to_string(),
        "Unknown agent \"Worker\" in user scope. Did you mean \"worker\"? \
         Available agents: planner, reviewer, scout, worker."
    );
    let empty = discover_agents(&fx.dirs, &fx.nested, AgentScope::Project, false);
    assert_eq!(
        empty.get("x").unwrap_err().to_string(),
        "Unknown agent \"x\" in project scope. No agents are available."
    );
}

#[test]
fn edits_are_seen_on_the_next_discovery() {
    let fx = Fixture::new();
    let file = fx.user_agent("w.md", &agent("w", "first"));
    let first = discover(&fx, AgentScope::User).find("w").unwrap().clone();
    fx.write(&file, &agent("w", "second"));
    let second = discover(&fx, AgentScope::User).find("w").unwrap().clone();
    assert_eq!(second.description, "second");
    assert_ne!(first.content_hash, second.content_hash);
}
