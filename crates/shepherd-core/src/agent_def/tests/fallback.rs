//! `fallback:` entries: a harness by name, with a model, or on another account of the same
//! provider named by the variable that holds its key.

use super::*;

#[test]
fn fallback_lists_harnesses_by_name_or_with_a_model() {
    assert!(def("").fallback.is_empty());
    let listed = def("fallback:\n  - codex\n  - {harness: gemini, model: gemini-2.5-pro}");
    assert_eq!(
        listed.fallback,
        vec![
            Fallback {
                harness: Harness::Codex,
                model: None,
                credential: None,
            },
            Fallback {
                harness: Harness::Gemini,
                model: Some("gemini-2.5-pro".to_owned()),
                credential: None,
            },
        ]
    );
    assert_eq!(def("fallback: opencode").fallback.len(), 1);
    assert!(!listed.extra.contains_key("fallback"));
}

#[test]
fn a_fallback_that_names_no_harness_is_refused_with_its_value() {
    for (frontmatter, value) in [
        ("fallback: [codexx]", "\"codexx\""),
        ("fallback: [{model: m}]", "{\"model\":\"m\"}"),
        ("fallback: [{harness: codex, modle: m}]", "modle"),
        ("fallback: 3", "3"),
    ] {
        let message = error(frontmatter);
        assert!(
            message.contains("fallback") && message.contains(value),
            "{frontmatter}: {message}"
        );
        assert!(message.contains("a list of harnesses"), "{message}");
    }
}

#[test]
fn a_fallback_may_name_another_account_of_the_same_harness() {
    let pooled = def(
        "fallback:\n  - {harness: claude-code, credential: WORK_ANTHROPIC_KEY}\n  \
         - {harness: codex, credential: WORK_OPENAI_KEY, as: SHEPHERD_FAKE_API_KEY}",
    );
    assert_eq!(
        pooled.fallback[0].credential,
        Some(Credential {
            var: "WORK_ANTHROPIC_KEY".to_owned(),
            into: None
        })
    );
    assert_eq!(
        pooled.fallback[1].credential,
        Some(Credential {
            var: "WORK_OPENAI_KEY".to_owned(),
            into: Some("SHEPHERD_FAKE_API_KEY".to_owned())
        })
    );
    for (frontmatter, line) in [
        (
            "fallback: [{harness: claude-code, credential: sk-ant-api03-secret}]",
            "invalid fallback credential \"sk-…\" (19 characters): expected the name of the environment \
             variable that holds the key (letters, digits and _, not starting with a digit), \
             e.g. WORK_ANTHROPIC_KEY",
        ),
        (
            "fallback: [{harness: codex, credential: [A]}]",
            "invalid fallback credential [\"A\"]: expected the name of the environment variable \
             that holds the key (letters, digits and _, not starting with a digit), e.g. \
             WORK_ANTHROPIC_KEY",
        ),
        (
            "fallback: [{harness: codex, as: OPENAI_API_KEY}]",
            "invalid fallback as \"OPENAI_API_KEY\": expected as: together with credential: \
             (the variable the agent reads the key credential: names from)",
        ),
    ] {
        assert_eq!(error(frontmatter), line, "{frontmatter}");
    }
    assert!(!error("fallback: [{harness: codex, credential: my-key}]").contains("secret"));
    assert!(error("fallback: [{harness: codex, credential: my-key}]").contains("\"my-key\""));
}
