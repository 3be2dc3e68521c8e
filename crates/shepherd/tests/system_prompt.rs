//! The system prompt a pi sheep gets, seen through `shepherd agents prompt` and checked against
//! the prompt a real sheep sends to its model: the definition's body replaces pi's identity
//! sentence once, `omit-pi-documentation` drops only the documentation section,
//! `omit-system-prompt` replaces pi's prompt, `omit-context-files` drops the project's
//! AGENTS.md, and `tools` is the allowlist plus the two tools every sheep needs. Both pi
//! versions (their default prompts differ).

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::pi_support;

use pi_support::{Backend, Options, Shepherd};
use serde_json::json;
use shepherd_testkit::fake_llm::Step;
use shepherd_testkit::pi::PiBinary;

const BODY: &str = "You are the shaped test agent. BODY-MARKER.";
const CONTEXT: &str = "CONTEXT-MARKER: the project's own instructions.";

/// Writes a user agent definition with this frontmatter (beside `model`) and the body.
fn define(s: &Shepherd, name: &str, frontmatter: &str) {
    let file = s.env.agent_dir().join("agents").join(format!("{name}.md"));
    std::fs::write(
        file,
        format!(
            "---\nname: {name}\ndescription: Test {name}.\nmodel: fake/worker-model\n{frontmatter}---\n{BODY}\n"
        ),
    )
    .unwrap();
}

fn prompt_of(s: &Shepherd, name: &str) -> String {
    let shown = s.shepherd_project(&["agents", "prompt", name]);
    assert_eq!(shown["name"], name, "{shown}");
    shown["prompt"]
        .as_str()
        .unwrap_or_else(|| panic!("no prompt in {shown}"))
        .to_owned()
}

fn world(pi: &PiBinary) -> Shepherd {
    let s = Shepherd::start(pi, Backend::Headless, &Options::default());
    std::fs::write(s.project().join("AGENTS.md"), format!("{CONTEXT}\n")).unwrap();
    s
}

fn prompt_is_what_the_sheep_sends(pi: &PiBinary) {
    let mut s = world(pi);
    define(
        &s,
        "shaped",
        "omit-pi-documentation: true\ntools: read, grep\n",
    );
    let captured = prompt_of(&s, "shaped");

    assert!(
        captured.starts_with(BODY),
        "the body opens the prompt:\n{captured}"
    );
    assert_eq!(captured.matches("BODY-MARKER").count(), 1, "{captured}");
    for identity in ["operating inside pi", "running inside pi"] {
        assert!(
            !captured.contains(identity),
            "pi's identity stays: {captured}"
        );
    }
    assert!(!captured.contains("Pi documentation"), "{captured}");
    assert!(
        captured.contains(CONTEXT),
        "context files are kept: {captured}"
    );
    let cwd = s.project().display().to_string();
    assert!(
        captured.contains(&cwd),
        "what follows the docs stays: {captured}"
    );
    // The definition's tools, and the four every sheep has: its allowlist is exactly these.
    let allowed = [
        "read",
        "grep",
        "shepherd_message",
        "shepherd_done",
        "shepherd_herd",
        "shepherd_status",
    ];
    for tool in allowed {
        assert!(
            captured.contains(&format!("- {tool}:")),
            "{tool} offered: {captured}"
        );
    }
    for tool in ["bash", "edit", "write"] {
        assert!(
            !captured.contains(&format!("- {tool}:")),
            "{tool} not allowed: {captured}"
        );
    }

    let id = s.spawn("shaped", "prompt");
    s.fake.append(
        "worker-model",
        [
            Step::tool_call("shepherd_done", json!({"status": "completed"})),
            Step::text("Done."),
        ],
    );
    s.delegate(&id, "Say done.", None);
    let requests = s.wait_requests("worker-model", 1);
    let sent = requests[0]
        .system_prompt()
        .expect("the sheep sends a system prompt");
    assert_eq!(sent, captured, "agents prompt shows what the sheep sends");
    let mut offered = requests[0].tool_names();
    offered.sort_unstable();
    let mut expected = allowed.map(str::to_owned).to_vec();
    expected.sort_unstable();
    assert_eq!(
        offered, expected,
        "the sheep's model is offered its allowlist"
    );
}

fn flags_shape_the_prompt(pi: &PiBinary) {
    let s = world(pi);
    define(&s, "plain", "");
    define(&s, "replaced", "omit-system-prompt: true\n");
    define(&s, "bare", "omit-context-files: true\n");

    let plain = prompt_of(&s, "plain");
    assert!(plain.starts_with(BODY), "{plain}");
    assert!(
        plain.contains("Pi documentation"),
        "docs kept unless omitted: {plain}"
    );
    assert!(plain.contains(CONTEXT), "{plain}");
    assert!(
        plain.contains("- bash:"),
        "pi's default tools without a tools list: {plain}"
    );

    let replaced = prompt_of(&s, "replaced");
    assert!(replaced.starts_with(BODY), "{replaced}");
    assert_eq!(replaced.matches("BODY-MARKER").count(), 1, "{replaced}");
    assert!(
        !replaced.contains("- bash:"),
        "pi's own prompt is replaced: {replaced}"
    );
    assert!(!replaced.contains("Pi documentation"), "{replaced}");

    let bare = prompt_of(&s, "bare");
    assert!(!bare.contains(CONTEXT), "context files omitted: {bare}");
    assert!(bare.starts_with(BODY), "{bare}");
}

fn bad_names_and_other_runtimes(pi: &PiBinary) {
    let s = world(pi);
    let file = s.env.agent_dir().join("agents").join("script.md");
    std::fs::write(
        &file,
        "---\nname: script\ndescription: Not pi.\ncommand: [\"sh\", \"-c\", \"true\"]\n---\nBody.\n",
    )
    .unwrap();
    let missing = s.shepherd_project_failing(&["agents", "prompt", "nobody"]);
    assert!(missing.contains("\"nobody\""), "{missing}");
    let other = s.shepherd_project_failing(&["agents", "prompt", "script"]);
    assert!(other.contains("not pi"), "{other}");
}

shepherd_testkit::pi_tests!(
    prompt_is_what_the_sheep_sends,
    flags_shape_the_prompt,
    bad_names_and_other_runtimes
);
