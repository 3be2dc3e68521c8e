//! The `/shepherd` command's argument completion, which pi's RPC mode cannot drive: the
//! extension's TypeScript is loaded the way pi loads it (jiti, from the pinned pi 0.73 install)
//! by a small Node driver, against a real broker and real agent definitions. The driver spawns a
//! sheep through the command, then asks for the completions of a list of prefixes.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};
use shepherd_testkit::pi::{PiVersion, installed_or_skip, tools_dir};

const TEST: &str = "pi_completion::completes_actions_agents_sheep_scopes_keys_and_flags";

fn values(offered: &Value, prefix: &str) -> Vec<String> {
    offered[prefix]
        .as_array()
        .unwrap_or_else(|| panic!("no completions for {prefix:?}: {offered}"))
        .iter()
        .map(|item| item["value"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn completes_actions_agents_sheep_scopes_keys_and_flags() {
    if installed_or_skip(PiVersion::V0_73, TEST).is_none() {
        return;
    }
    let pi_dir = tools_dir().join("pi-0.73");
    assert!(
        pi_dir.join("node_modules/jiti").is_dir(),
        "{} has no jiti: run scripts/setup",
        pi_dir.display()
    );
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let runtime = dir.path().join("run");
    let project = dir.path().join("project");
    let agents = home.join(".pi/agent/agents");
    for d in [&agents, &runtime, &project] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::write(
        agents.join("worker.md"),
        "---\nname: worker\ndescription: A script worker.\ncommand: [\"sh\", \"-c\", \"exec sleep 600\"]\n---\nBody.\n",
    )
    .unwrap();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let driver = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/pi_support/completions.mjs");
    let shepherd = env!("CARGO_BIN_EXE_shepherd");
    let env = |command: &mut Command| {
        command
            .current_dir(&project)
            .env("HOME", &home)
            .env("XDG_RUNTIME_DIR", &runtime)
            .env("SHEPHERD_BIN", shepherd)
            .env_remove("PI_CODING_AGENT_DIR")
            .env_remove("SHEPHERD_AGENT_ID")
            .env_remove("TMUX");
    };
    let prefixes = [
        "",
        "st",
        "spa",
        "spawn wor",
        "spawn worker --p",
        "status ",
        "read ",
        "agents b",
        "settings ti",
        "read nobody-",
    ];
    let mut node = Command::new("node");
    node.arg(&driver)
        .arg(&pi_dir)
        .arg(repo.join("integrations/pi/extensions"))
        .arg(&project)
        .args(prefixes);
    env(&mut node);
    let output = node.output().expect("node runs");
    let mut stop = Command::new(shepherd);
    stop.args(["broker", "stop", "--parent-session", "completion-test"]);
    env(&mut stop);
    let stopped = stop.output().unwrap();
    assert!(
        output.status.success(),
        "the driver failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stopped.status.success(), "{stopped:?}");
    let offered: Value = serde_json::from_slice(&output.stdout).unwrap();

    assert_eq!(
        values(&offered, ""),
        [
            "agents", "herd", "spawn", "status", "read", "settings", "prune"
        ]
    );
    assert_eq!(values(&offered, "st"), ["status"]);
    let spawn = values(&offered, "spa");
    assert_eq!(spawn[0], "spawn");
    assert!(spawn.contains(&"spawn worker".to_owned()), "{spawn:?}");
    assert!(
        spawn.contains(&"spawn scout".to_owned()),
        "bundled: {spawn:?}"
    );
    assert_eq!(
        offered["spawn wor"],
        json!([{"value": "spawn worker", "description": "A script worker."}])
    );
    assert_eq!(
        values(&offered, "spawn worker --p"),
        ["spawn worker --placement"]
    );
    // The sheep the driver spawned, by agent id, described by its display name and state.
    for action in ["status", "read"] {
        let items = offered[format!("{action} ")].as_array().unwrap();
        assert_eq!(items.len(), 1, "{offered}");
        let value = items[0]["value"].as_str().unwrap();
        assert!(
            value.starts_with(&format!("{action} shepherd-agent-")),
            "{value}"
        );
        assert_eq!(items[0]["description"], "worker: alpha [idle]", "{offered}");
    }
    assert_eq!(values(&offered, "agents b"), ["agents both"]);
    assert_eq!(values(&offered, "settings ti"), ["settings timeout"]);
    assert_eq!(offered["read nobody-"], Value::Null);
}
