//! Every frontmatter rule, one test each, plus the JSON shape other programs read.

use super::*;

mod fallback;

fn parse(text: &str) -> Result<ParsedAgentDef, AgentDefError> {
    parse_agent_def(
        text.as_bytes(),
        AgentSource::User,
        PathBuf::from("/agents/x.md"),
    )
}

fn def(frontmatter: &str) -> AgentDef {
    let text = format!("---\nname: x\ndescription: An agent\n{frontmatter}\n---\nBody.\n");
    parse(&text).unwrap().def
}

fn error(frontmatter: &str) -> String {
    let text = format!("---\nname: x\ndescription: An agent\n{frontmatter}\n---\nBody.\n");
    parse(&text).unwrap_err().to_string()
}

#[test]
fn a_minimal_definition_gets_every_default() {
    let text = "---\nname: scout\ndescription: Looks around\n---\n\nYou are a scout.\n\n";
    let parsed = parse(text).unwrap();
    assert!(parsed.ignored.is_empty());
    let def = parsed.def;
    assert_eq!(def.name, "scout");
    assert_eq!(def.description, "Looks around");
    assert_eq!(def.system_prompt, "You are a scout.");
    assert_eq!(def.model, ModelChoice::Inherit);
    assert_eq!(def.thinking, ThinkingChoice::Inherit);
    assert_eq!(def.tools, None);
    assert_eq!(def.command, None);
    assert!(!def.omit_system_prompt && !def.omit_pi_documentation && !def.omit_context_files);
    assert!(def.user_invocable);
    assert!(def.extra.is_empty());
    assert_eq!(def.source, AgentSource::User);
    assert_eq!(def.file_path, PathBuf::from("/agents/x.md"));
}

#[test]
fn content_hash_is_sha256_of_the_exact_bytes() {
    let text = "---\nname: x\ndescription: d\n---\n";
    let def = parse(text).unwrap().def;
    assert_eq!(
        def.content_hash,
        hex::encode(<sha2::Sha256 as sha2::Digest>::digest(text.as_bytes()))
    );
    let edited = parse("---\nname: x\ndescription: d\n---\n ").unwrap().def;
    assert_ne!(def.content_hash, edited.content_hash);
}

#[test]
fn name_and_description_are_required_non_empty_strings() {
    for (text, field) in [
        ("---\ndescription: d\n---\n", "name"),
        ("---\nname: ''\ndescription: d\n---\n", "name"),
        ("---\nname: 42\ndescription: d\n---\n", "name"),
        ("---\nname: x\n---\n", "description"),
        ("---\nname: x\ndescription: '   '\n---\n", "description"),
        ("---\nname: x\ndescription: [a]\n---\n", "description"),
    ] {
        assert_eq!(
            parse(text).unwrap_err(),
            AgentDefError::Missing { field },
            "{text:?}"
        );
    }
}

#[test]
fn block_scalar_descriptions_become_one_line() {
    let def = def_with_description("description: |\n  Reviews diffs.\n  Reports bugs.\n");
    assert_eq!(def.description, "Reviews diffs. Reports bugs.");
}

fn def_with_description(description: &str) -> AgentDef {
    parse(&format!("---\nname: r\n{description}---\n"))
        .unwrap()
        .def
}

#[test]
fn frontmatter_shape_errors_name_the_problem() {
    assert_eq!(
        parse("no frontmatter").unwrap_err(),
        AgentDefError::MissingFrontmatter
    );
    assert_eq!(
        parse("---\nname: x\n").unwrap_err(),
        AgentDefError::UnclosedFrontmatter
    );
    assert_eq!(
        parse("---\n- a\n- b\n---\n").unwrap_err(),
        AgentDefError::NotAMapping
    );
    assert!(matches!(
        parse("---\nname: [unclosed\n---\n").unwrap_err(),
        AgentDefError::Yaml(_)
    ));
    assert!(matches!(
        parse("---\nname: a\nname: b\ndescription: d\n---\n").unwrap_err(),
        AgentDefError::Yaml(_)
    ));
    assert_eq!(
        parse_agent_def(b"\xff\xfe", AgentSource::User, PathBuf::new()).unwrap_err(),
        AgentDefError::NotUtf8
    );
}

#[test]
fn bom_and_crlf_line_ends_are_accepted() {
    let def = parse("\u{feff}---\r\nname: x\r\ndescription: d\r\n---\r\nBody\r\n")
        .unwrap()
        .def;
    assert_eq!(def.name, "x");
    assert_eq!(def.system_prompt, "Body");
}

#[test]
fn model_inherits_when_absent_null_empty_default_or_inherit() {
    for line in [
        "",
        "model:",
        "model: null",
        "model: ''",
        "model: '  '",
        "model: default",
        "model: DEFAULT",
        "model: inherit",
    ] {
        assert_eq!(def(line).model, ModelChoice::Inherit, "{line:?}");
    }
}

#[test]
fn explicit_models_are_kept_as_written() {
    for (line, model) in [
        (
            "model: anthropic/claude-sonnet-4-5",
            "anthropic/claude-sonnet-4-5",
        ),
        (
            "model: ' openrouter/qwen/qwen3-coder '",
            "openrouter/qwen/qwen3-coder",
        ),
        ("model: claude-haiku-4-5", "claude-haiku-4-5"),
        ("model: sonnet", "sonnet"),
    ] {
        assert_eq!(
            def(line).model,
            ModelChoice::Explicit(model.to_owned()),
            "{line:?}"
        );
    }
}

#[test]
fn invalid_models_refuse_the_file() {
    for line in [
        "model: none",
        "model: None",
        "model: 42",
        "model: [a/b]",
        "model: true",
        "model: anthropic/",
        "model: /claude",
        "model: a//b",
        "model: claude sonnet",
    ] {
        let message = error(line);
        assert!(message.starts_with("invalid model "), "{line:?}: {message}");
        assert!(message.contains("expected a model pi accepts"), "{message}");
    }
    assert_eq!(
        error("model: none"),
        "invalid model \"none\": expected a model pi accepts, such as \
         anthropic/claude-sonnet-4-5, or empty, default or inherit to use the shepherd's model"
    );
}

#[test]
fn thinking_levels_are_case_insensitive_and_default_inherits() {
    for (line, level) in [
        ("thinking: off", ThinkingLevel::Off),
        ("thinking: Minimal", ThinkingLevel::Minimal),
        ("thinking: low", ThinkingLevel::Low),
        ("thinking: MEDIUM", ThinkingLevel::Medium),
        ("thinking: ' high '", ThinkingLevel::High),
        ("thinking: xhigh", ThinkingLevel::Xhigh),
        ("thinking: max", ThinkingLevel::Max),
    ] {
        assert_eq!(def(line).thinking, ThinkingChoice::Level(level), "{line:?}");
    }
    for line in ["", "thinking:", "thinking: ''", "thinking: Default"] {
        assert_eq!(def(line).thinking, ThinkingChoice::Inherit, "{line:?}");
    }
}

#[test]
fn invalid_thinking_refuses_the_file() {
    assert_eq!(
        error("thinking: none"),
        "invalid thinking \"none\": expected default, off, minimal, low, medium, high, xhigh or max"
    );
    assert!(error("thinking: false").starts_with("invalid thinking false"));
    assert!(error("thinking: 3").starts_with("invalid thinking 3"));
}

#[test]
fn tools_accept_a_comma_string_or_a_list_trimmed_without_empties() {
    let expected = Some(vec![
        "read".to_owned(),
        "grep".to_owned(),
        "bash".to_owned(),
    ]);
    assert_eq!(def("tools: read, grep,, bash ,").tools, expected);
    assert_eq!(def("tools: [read, ' grep', '', bash]").tools, expected);
    assert_eq!(def("tools:\n  - read\n  - grep\n  - bash").tools, expected);
    // Claude Code writes capitalised names; they are kept as written for the launcher.
    assert_eq!(
        def("tools: Read, Grep, Glob").tools,
        Some(vec![
            "Read".to_owned(),
            "Grep".to_owned(),
            "Glob".to_owned()
        ])
    );
}

#[test]
fn empty_or_absent_tools_mean_pi_defaults() {
    for line in ["", "tools:", "tools: ''", "tools: ' , '", "tools: []"] {
        assert_eq!(def(line).tools, None, "{line:?}");
    }
}

#[test]
fn tools_of_another_type_refuse_the_file() {
    assert!(error("tools: true").starts_with("invalid tools true: expected"));
    assert!(error("tools: [read, 3]").starts_with("invalid tools 3"));
    assert!(error("tools: {read: yes}").starts_with("invalid tools"));
}

#[test]
fn boolean_flags_honour_only_yaml_booleans() {
    let d = def(
        "omit-system-prompt: true\nomit-pi-documentation: true\nomit-context-files: true\n\
         user-invocable: false",
    );
    assert!(d.omit_system_prompt && d.omit_pi_documentation && d.omit_context_files);
    assert!(!d.user_invocable);

    let d = def("omit-system-prompt: false\nomit-context-files: null");
    assert!(!d.omit_system_prompt && !d.omit_context_files);
}

#[test]
fn non_boolean_flags_are_ignored_and_reported() {
    let text = "---\nname: x\ndescription: d\nomit-system-prompt: 'true'\n\
                omit-context-files: yes\nuser-invocable: 0\n---\n";
    let parsed = parse(text).unwrap();
    assert!(!parsed.def.omit_system_prompt);
    assert!(!parsed.def.omit_context_files);
    assert!(parsed.def.user_invocable);
    let messages: Vec<String> = parsed.ignored.iter().map(ToString::to_string).collect();
    assert_eq!(
        messages,
        [
            "omit-system-prompt: \"true\" is not a YAML boolean (true or false); using false",
            "omit-context-files: \"yes\" is not a YAML boolean (true or false); using false",
            "user-invocable: 0 is not a YAML boolean (true or false); using true",
        ]
    );
}

#[test]
fn command_is_a_non_empty_argv_list() {
    assert_eq!(
        def("command: [python3, sheep.py, '--fast', '']").command,
        Some(vec![
            "python3".to_owned(),
            "sheep.py".to_owned(),
            "--fast".to_owned(),
            String::new(),
        ])
    );
    for line in [
        "command: python3 sheep.py",
        "command: []",
        "command: ['']",
        "command: [python3, 3]",
        "command: {program: python3}",
    ] {
        assert!(
            error(line).starts_with("invalid command "),
            "{line:?}: {}",
            error(line)
        );
    }
}

#[test]
fn unknown_keys_are_kept_in_order() {
    let d = def("permissionMode: acceptEdits\nmaxTurns: 12\ncolor: blue\n\
         hooks:\n  PreToolUse: [lint]\nomitContextFiles: true");
    let keys: Vec<&str> = d.extra.keys().map(String::as_str).collect();
    // `maxTurns` is Claude Code's turn budget, which Shepherd reads.
    assert_eq!(
        keys,
        ["permissionMode", "color", "hooks", "omitContextFiles"]
    );
    assert_eq!(d.budget.unwrap().turns, Some(12));
    assert_eq!(
        d.extra["hooks"],
        serde_json::json!({"PreToolUse": ["lint"]})
    );
    // The old camelCase spelling is not honoured (the newest original reads kebab-case only).
    assert!(!d.omit_context_files);
}

#[test]
fn a_claude_code_agent_file_parses() {
    let text = "---\nname: code-reviewer\ndescription: Expert code review specialist.\n\
                tools: Read, Grep, Glob, Bash\nmodel: inherit\ncolor: red\n---\n\
                You are a senior code reviewer.\n";
    let d = parse(text).unwrap().def;
    assert_eq!(d.model, ModelChoice::Inherit);
    assert_eq!(d.tools.as_ref().map(Vec::len), Some(4));
    assert_eq!(d.extra["color"], serde_json::json!("red"));
}

#[test]
fn json_shape_is_stable() {
    let text = "---\nname: worker\ndescription: Does the work\ntools: read, bash\n\
                model: anthropic/claude-sonnet-4-5\nthinking: high\ncolor: green\n---\nWork.\n";
    let d = parse_agent_def(
        text.as_bytes(),
        AgentSource::Project,
        PathBuf::from("/p/.pi/agents/worker.md"),
    )
    .unwrap()
    .def;
    insta::assert_json_snapshot!(d, @r#"
    {
      "name": "worker",
      "description": "Does the work",
      "source": "project",
      "filePath": "/p/.pi/agents/worker.md",
      "contentHash": "191b8e2070b19dcf736d8c01ef2da0ed89f926bcdeee8156929b68abdc006589",
      "model": "anthropic/claude-sonnet-4-5",
      "thinking": "high",
      "tools": [
        "read",
        "bash"
      ],
      "command": null,
      "harness": "pi",
      "omitSystemPrompt": false,
      "omitPiDocumentation": false,
      "omitContextFiles": false,
      "userInvocable": true,
      "extra": {
        "color": "green"
      },
      "systemPrompt": "Work."
    }
    "#);
    let back: AgentDef = serde_json::from_value(serde_json::to_value(&d).unwrap()).unwrap();
    assert_eq!(back, d);
    assert!(d.is_repository_controlled());
}

#[test]
fn inherit_round_trips_through_json() {
    let d = def("");
    let json = serde_json::to_value(&d).unwrap();
    assert_eq!(json["model"], "inherit");
    assert_eq!(json["thinking"], "inherit");
    let back: AgentDef = serde_json::from_value(json).unwrap();
    assert_eq!(back, d);
}

#[test]
fn scopes_parse_and_say_what_they_include() {
    assert_eq!("both".parse::<AgentScope>(), Ok(AgentScope::Both));
    assert_eq!(
        "all".parse::<AgentScope>().unwrap_err().to_string(),
        "unknown agent scope \"all\"; expected user, project or both"
    );
    assert!(AgentScope::User.includes_user() && !AgentScope::User.includes_project());
    assert!(!AgentScope::Project.includes_user() && AgentScope::Project.includes_project());
    assert!(AgentScope::Both.includes_user() && AgentScope::Both.includes_project());
    assert_eq!(AgentScope::default(), AgentScope::User);
}

#[test]
fn a_harness_and_models_per_harness_are_read() {
    use crate::harness::Harness;
    let d = def(
        "harness: codex\nmodel: gpt-5-codex\nmodels:\n  claude-code: sonnet\n  pi: anthropic/x",
    );
    assert_eq!(d.harness, Harness::Codex);
    assert_eq!(
        d.models.get(&Harness::ClaudeCode).map(String::as_str),
        Some("sonnet")
    );
    // The definition's own harness takes `model`; another takes its `models` entry; pi without
    // one would inherit the parent's, and any other harness keeps its own default.
    assert_eq!(
        d.model_for(Harness::Codex, None, Some("p/m")).as_deref(),
        Some("gpt-5-codex")
    );
    assert_eq!(
        d.model_for(Harness::ClaudeCode, None, None).as_deref(),
        Some("sonnet")
    );
    assert_eq!(d.model_for(Harness::Gemini, None, Some("p/m")), None);
    assert_eq!(
        d.model_for(Harness::Gemini, Some("flash"), None).as_deref(),
        Some("flash")
    );
    let plain = def("");
    assert_eq!(plain.harness, Harness::Pi);
    assert_eq!(
        plain.model_for(Harness::Pi, None, Some("p/m")).as_deref(),
        Some("p/m")
    );
    assert_eq!(plain.model_for(Harness::Opencode, None, Some("p/m")), None);
    assert_eq!(
        plain.thinking_for(Harness::Codex, Some(ThinkingLevel::High)),
        None
    );
    assert_eq!(
        plain.thinking_for(Harness::Pi, Some(ThinkingLevel::High)),
        Some(ThinkingLevel::High)
    );
}

#[test]
fn a_bad_harness_or_models_or_a_harness_beside_command_skips_the_file() {
    assert_eq!(
        error("harness: claude"),
        "invalid harness \"claude\": expected one of pi, claude-code, codex, gemini, opencode"
    );
    assert!(error("models: {emacs: x}").starts_with("invalid models"));
    assert!(error("models: [a]").starts_with("invalid models"));
    assert!(error("harness: codex\ncommand: [sh]").starts_with("invalid harness \"codex\""));
    assert_eq!(def("harness: pi\ncommand: [sh]").command.unwrap(), ["sh"]);
}

#[test]
fn a_budget_is_read_from_the_frontmatter_and_max_turns_fills_its_turns() {
    let budget = def("budget:\n  turns: 12\n  toolCalls: 40\n  cost: 0.5")
        .budget
        .unwrap();
    assert_eq!(budget.turns, Some(12));
    assert_eq!(budget.tool_calls, Some(40));
    assert_eq!(budget.cost, Some(0.5));
    assert_eq!(def("maxTurns: 7").budget.unwrap().turns, Some(7));
    assert_eq!(
        def("maxTurns: 7\nbudget: {turns: 3}").budget.unwrap().turns,
        Some(3),
        "an explicit budget wins"
    );
    assert_eq!(def("").budget, None);
    assert!(!def("maxTurns: 7").extra.contains_key("maxTurns"));
}

#[test]
fn a_bad_budget_skips_the_file_naming_the_value() {
    assert_eq!(
        error("budget: {turns: 0}"),
        "invalid budget {\"turns\":0}: expected a mapping of turns, toolCalls and tokens (whole \
         numbers, 1 or more) and cost (a positive number)"
    );
    assert!(error("budget: {turn: 2}").starts_with("invalid budget"));
    assert!(error("budget: lots").starts_with("invalid budget \"lots\""));
    assert_eq!(
        error("maxTurns: many"),
        "invalid maxTurns \"many\": expected a whole number, 1 or more"
    );
}

#[test]
fn needs_env_lists_variable_names_once() {
    assert!(def("").needs_env.is_empty());
    assert_eq!(
        def("needs-env: [OPENAI_API_KEY, _TOKEN2, OPENAI_API_KEY]").needs_env,
        ["OPENAI_API_KEY", "_TOKEN2"]
    );
    assert_eq!(def("needs-env: MY_KEY").needs_env, ["MY_KEY"]);
    assert!(def("needs-env: [A]").extra.is_empty());
    for bad in [
        "needs-env: [2FA]",
        "needs-env: [\"A B\"]",
        "needs-env: [1]",
        "needs-env: {a: b}",
    ] {
        let error = error(bad);
        assert!(
            error.starts_with("invalid needs-env") && error.contains("environment variable names"),
            "{bad}: {error}"
        );
    }
}

#[test]
fn sandbox_and_network_are_read_and_an_unknown_value_is_refused_naming_the_accepted_ones() {
    let confined = def("sandbox: workspace\nnetwork: model");
    assert_eq!(confined.sandbox, Some(crate::sandbox::Sandbox::Workspace));
    assert_eq!(confined.network, crate::sandbox::Network::Model);
    assert!(
        confined.extra.is_empty(),
        "sandbox is not kept aside as unknown"
    );
    let plain = def("");
    assert_eq!(plain.sandbox, None);
    assert_eq!(plain.network, crate::sandbox::Network::All);
    assert_eq!(
        error("sandbox: jail"),
        "invalid sandbox \"jail\": expected off, workspace or strict"
    );
    assert_eq!(
        error("network: [model]"),
        "invalid network [\"model\"]: expected all, model or none"
    );
}

#[test]
fn limits_are_read_and_a_bad_value_is_refused_in_one_line_naming_what_is_accepted() {
    use crate::resources::{Bytes, Cap};
    let limited = def("limits:\n  pids: 512\n  memory: 4G\n  cpus: 1.5\n  disk: 10G");
    assert_eq!(limited.limits.pids, Some(Cap::At(512)));
    assert_eq!(limited.limits.memory, Some(Cap::At(Bytes(4 << 30))));
    assert_eq!(limited.limits.disk, Some(Cap::At(Bytes(10 << 30))));
    assert!(
        limited.extra.is_empty(),
        "limits is not kept aside as unknown"
    );
    assert!(def("").limits.is_empty());
    let refused = error("limits:\n  memory: 4 gallons");
    assert!(
        refused.starts_with("invalid limits.memory \"4 gallons\": expected a size")
            && !refused.contains('\n'),
        "{refused}"
    );
    assert!(error("limits: {pids: -1}").contains("a whole number of processes"));
    assert!(error("limits: {swap: 1G}").contains("pids, memory, cpus and disk"));
    assert!(error("limits: lots").starts_with("invalid limits \"lots\""));
}

#[test]
fn a_users_definition_may_raise_the_limits_and_a_projects_only_lower_them() {
    use crate::resources::{Bytes, LimitsLayer};
    let settings = LimitsLayer::from_json(Some(&serde_json::json!({"memory": "2G"}))).unwrap();
    let mut raising = def("limits: {memory: 16G, pids: 100}");
    assert_eq!(raising.limits(&settings).memory, Some(Bytes(16 << 30)));
    raising.source = AgentSource::Project;
    let limits = raising.limits(&settings);
    assert_eq!(
        limits.memory,
        Some(Bytes(2 << 30)),
        "the user's setting is a floor"
    );
    assert_eq!(limits.pids, Some(100));
}
