//! A pi sheep on another machine: `shepherd run --host` starts the host's own pi (its `pi`
//! command, its model configuration) on a loopback sshd host, with the sheep extension and
//! the definition's prompt copied there; the run's result is the sheep's final words, and its
//! note, on the parent's machine, has the same model, turns and tool calls a local pi sheep's
//! has (its session comes home from the host). Runs once per installed pi version.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::herd_support;
use crate::remote_support;

use std::path::Path;

use herd_support::{World, read};
use remote_support::{define_hosts, required};
use serde_json::json;
use shepherd_testkit::fake_llm::{FakeLlm, Script, Step};
use shepherd_testkit::pi::{PiBinary, PiEnv};
use shepherd_testkit::sshd::LoopbackHost;

const MODEL: &str = "remote-model";

fn pi_on_a_host(pi: &PiBinary) {
    if !required() {
        return;
    }
    let script = Script::new().with_queue(
        MODEL,
        vec![
            Step::tool_call("bash", json!({"command": "pwd > where.txt"})),
            Step::tool_call(
                "shepherd_done",
                json!({"status": "completed", "summary": "looked around"}),
            ),
            Step::text("Worked on the host."),
        ],
    );
    let fake = FakeLlm::start(script).expect("fake model server");
    let env = PiEnv::builder(&fake)
        .model(MODEL)
        .build()
        .expect("pi environment");
    let devbox = LoopbackHost::start("devbox").unwrap();
    // The host's pi: its own agent directory (models, settings) and a `pi` command for it.
    let host_agent = devbox.home.join(".pi/agent");
    std::fs::create_dir_all(&host_agent).unwrap();
    for file in ["models.json", "settings.json"] {
        std::fs::copy(env.agent_dir().join(file), host_agent.join(file)).unwrap();
    }
    let host_pi = devbox.home.join("pi");
    std::fs::write(
        &host_pi,
        format!(
            "#!/bin/sh\nexport PI_CODING_AGENT_DIR='{}' PI_OFFLINE=1 NO_COLOR=1\nexec '{}' \"$@\"\n",
            host_agent.display(),
            pi.path.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(
        &host_pi,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();

    let world = World::new();
    define_hosts(&world, &[&devbox], json!({}));
    let mut settings: serde_json::Value =
        serde_json::from_str(&read(&world.home.join(".pi/agent/pi-shepherd/config.json"))).unwrap();
    settings["hosts"]["devbox"]["pi"] = json!([host_pi]);
    world.settings(&settings.to_string());
    world.define_file(
        "sheep",
        &format!(
            "---\nname: sheep\ndescription: A pi sheep on a scripted model.\nmodel: fake/{MODEL}\ntools: read, bash\n---\nYou are a test sheep.\n"
        ),
    );
    // No pi on this side at all: the host runs its own.
    let (code, doc) = world.json_status(&[
        "run",
        "sheep",
        "look around",
        "--host",
        "devbox",
        "--timeout",
        "2",
    ]);
    assert_eq!(code, 0, "{doc}");
    let result = &doc["results"][0];
    assert_eq!(result["status"], "completed", "{result}");
    assert_eq!(
        result["text"], "Worked on the host.\n\nSummary: looked around",
        "{result}"
    );
    assert_eq!(
        read(&devbox.project.join("where.txt")).trim(),
        devbox.project.display().to_string(),
        "pi's tools ran in the host's project"
    );
    let note = read(Path::new(result["note"].as_str().unwrap()));
    assert!(note.contains("status: completed"), "{note}");
    assert!(note.contains("Worked on the host."), "{note}");
    assert!(note.contains(&format!("model: \"fake/{MODEL}\"")), "{note}");
    assert!(
        note.contains("toolCalls: 2"),
        "the session came home: {note}"
    );
    assert!(fake.mismatches().is_empty(), "{:?}", fake.mismatches());
}

shepherd_testkit::pi_tests!(pi_on_a_host);
