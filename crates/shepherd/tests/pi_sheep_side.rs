//! The sheep side of Shepherd for pi, in the real pi: a pi sheep's model is offered the
//! catalogue's sheep tools in its words, and the parent extension, loaded into a sheep as into
//! every pi of the user's, stays silent there — told so by the sheep's environment, or, when a
//! wrapper stripped it, by pi's command line, with the sheep's variables put back from beside
//! its session. Headless sheep; both pi versions.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::pi_support;

use pi_support::{Backend, Options, Shepherd, commands, offered_tools, offers_the_catalogue};
use serde_json::json;
use shepherd_mcp::catalogue;
use shepherd_testkit::fake_llm::Step;
use shepherd_testkit::pi::PiBinary;

/// A pi sheep's model is offered the catalogue's sheep tools.
fn registers_the_sheep_tools(pi: &PiBinary) {
    let mut s = Shepherd::start(pi, Backend::Headless, &Options::default());
    let worker = s.spawn("worker", "tools");
    s.fake.append(
        "worker-model",
        [
            Step::tool_call(
                "shepherd_done",
                json!({"status": "completed", "summary": "looked at my tools"}),
            ),
            Step::text("Looked at my tools."),
        ],
    );
    s.delegate(&worker, "Look at your tools.", None);
    let request = s.wait_requests("worker-model", 1).remove(0);
    offers_the_catalogue(&request, catalogue::SHEEP);
}

/// Inside a sheep (SHEPHERD_AGENT_ID set) the extension registers nothing.
fn silent_inside_a_sheep(pi: &PiBinary) {
    let options = Options {
        env: vec![("SHEPHERD_AGENT_ID".into(), "shepherd-agent-test".into())],
        ..Options::default()
    };
    let mut s = Shepherd::start(pi, Backend::Headless, &options);
    assert!(!commands(&mut s).contains(&"shepherd".to_owned()));
    let names = offered_tools(&mut s);
    assert!(
        names.iter().all(|n| !n.starts_with("shepherd")),
        "{names:?}"
    );
}

/// A sheep whose environment a wrapper stripped (a launcher that starts pi clean but for what pi
/// itself needs) still knows it is a sheep: the parent extension, loaded into it as into every pi
/// of the user's, registers nothing, and the sheep extension gets its variables back from
/// beside its session, so its tools reach the broker and its task ends.
fn silent_inside_a_sheep_whose_environment_was_stripped(pi: &PiBinary) {
    let dir = tempfile::tempdir().unwrap();
    let wrapper = dir.path().join("clean-pi");
    let kept: Vec<String> = [
        "PATH",
        "HOME",
        "TMPDIR",
        "PI_CODING_AGENT_DIR",
        "PI_OFFLINE",
        "XDG_CONFIG_HOME",
        "XDG_CACHE_HOME",
        "XDG_DATA_HOME",
        "XDG_STATE_HOME",
        "NO_COLOR",
    ]
    .iter()
    .map(|name| format!("{name}=\"${name}\""))
    .collect();
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nexec env -i {} '{}' -e '{}' \"$@\"\n",
            kept.join(" "),
            pi.path.display(),
            pi_support::extension_path().display()
        ),
    )
    .unwrap();
    let mut permissions = std::fs::metadata(&wrapper).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
    std::fs::set_permissions(&wrapper, permissions).unwrap();
    let options = Options {
        env: vec![("SHEPHERD_PI".into(), wrapper.display().to_string())],
        ..Options::default()
    };
    let mut s = Shepherd::start(pi, Backend::Headless, &options);
    let worker = s.spawn("worker", "stripped");
    s.fake.append(
        "worker-model",
        [
            Step::tool_call(
                "shepherd_done",
                json!({"status": "completed", "summary": "done without its environment"}),
            )
            .held_until("hold"),
            Step::text("Done."),
        ],
    );
    let task = s.delegate(&worker, "Look at your tools.", None)["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    // Exactly the sheep's tools, in the sheep's words: none of the parent's.
    let request = s.wait_requests("worker-model", 1).remove(0);
    offers_the_catalogue(&request, catalogue::SHEEP);
    s.watch(&[&task]);
    s.parent_says([Step::text("Noted.")]);
    s.fake.release("hold");
    let wake = s.wait_parent_input("worker: stripped completed");
    assert!(wake.contains("done without its environment"), "{wake}");
}

shepherd_testkit::pi_tests!(
    registers_the_sheep_tools,
    silent_inside_a_sheep,
    silent_inside_a_sheep_whose_environment_was_stripped,
);
