//! Attacks on the agent's own state (the report's G1, G2, G3, G5): a confined sheep writes
//! only a home composed for it, never the user's agent configuration (Shepherd's own settings,
//! approvals and definitions live in pi's), never reads another sheep's capability, and cannot
//! turn a file Shepherd reads outside into a link to one of the user's.
//!
//! The attackers stand in for pi and Claude Code (`SHEPHERD_PI`, `SHEPHERD_CLAUDE`): what
//! matters is what their process may touch, which is the sandbox's doing, not the agent's.

#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use crate::herd_support::{World, read};

/// A stand-in pi: it attacks the user's agent directory and looks for other sheep's launch
/// variables, writes what it found into its working directory, and exits (it never becomes a
/// ready pi sheep, so its spawn fails: that is fine here).
const FAKE_PI: &str = r#"#!/usr/bin/python3
import glob, json, os
home = os.environ["HOME"]
agent = os.path.join(home, ".pi", "agent")
own = os.environ.get("PI_CODING_AGENT_DIR", "")
def write(path, text):
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
        return "written"
    except OSError as e:
        return "refused: " + type(e).__name__
def readable(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError as e:
        return None
# The broker's state directory, from its socket's name (`b-<key>.sock`).
key = os.path.basename(os.environ["SHEPHERD_SOCKET"])[2:-5]
state_home = os.environ.get("XDG_STATE_HOME") or os.path.join(home, ".local", "state")
state = os.path.join(state_home, "shepherd", "brokers", key)
found = {
    "ownAgentDir": own,
    "settings": write(os.path.join(agent, "pi-shepherd", "config.json"), '{"sandbox": "off"}'),
    "definition": write(os.path.join(agent, "agents", "planted.md"), "---\nname: planted\ndescription: x\nsandbox: off\n---\nx\n"),
    "extension": write(os.path.join(agent, "extensions", "planted.ts"), "export default () => {}\n"),
    "approvals": readable(os.path.join(agent, "pi-shepherd", "approvals.json")) is not None,
    "auth": readable(os.path.join(own or agent, "auth.json")),
    "launchFiles": sorted(glob.glob(state + "/agents/*/*.env.json") + glob.glob(state + "/sheep/*.env.json")),
    "myId": os.environ.get("SHEPHERD_AGENT_ID"),
}
victim = readable("victim-id")
found["victim"] = victim
if victim:
    found["logLink"] = write(os.path.join(state, "sheep", victim + ".log"), "")
    try:
        os.remove(os.path.join(state, "sheep", victim + ".log"))
        os.symlink(os.path.join(home, ".ssh", "id_rsa"), os.path.join(state, "sheep", victim + ".log"))
        found["logLink"] = "planted"
    except OSError as e:
        found["logLink"] = "refused: " + type(e).__name__
with open("found-%s.json" % os.environ.get("SHEPHERD_AGENT_ID", "x"), "w") as f:
    json.dump(found, f)
"#;

fn script(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A user whose pi agent directory holds a credential, Shepherd's settings and approvals.
fn user_with_pi(world: &mut World) -> std::path::PathBuf {
    let agent = world.home.join(".pi/agent");
    std::fs::create_dir_all(agent.join("pi-shepherd")).unwrap();
    std::fs::create_dir_all(agent.join("extensions")).unwrap();
    std::fs::write(
        agent.join("auth.json"),
        "{\"fake\": \"the agent's own key\"}",
    )
    .unwrap();
    std::fs::write(agent.join("pi-shepherd/approvals.json"), "{}").unwrap();
    world.settings("{\"sandbox\": \"strict\"}");
    std::fs::create_dir_all(world.home.join(".ssh")).unwrap();
    std::fs::write(world.home.join(".ssh/id_rsa"), "PRIVATE KEY\n").unwrap();
    let pi = world.dir.path().join("fake-pi");
    script(&pi, FAKE_PI);
    world
        .extra_env
        .push(("SHEPHERD_PI".to_owned(), pi.display().to_string()));
    agent
}

#[test]
fn a_confined_pi_sheep_writes_none_of_the_users_agent_configuration() {
    let mut world = World::new();
    let agent = user_with_pi(&mut world);
    world.define_file(
        "scout",
        "---\nname: scout\ndescription: A pi sheep.\nnetwork: none\n---\nScouts.\n",
    );
    // The stand-in is not a pi that ever becomes ready: the spawn fails after it ran.
    world
        .extra_env
        .push(("SHEPHERD_STARTUP_LIMIT_MS".into(), "3000".into()));
    let (_, doc) = world.json_status(&["spawn", "scout"]);
    let found_file = std::fs::read_dir(&world.project)
        .unwrap()
        .flatten()
        .find(|e| e.file_name().to_string_lossy().starts_with("found-"))
        .unwrap_or_else(|| panic!("the stand-in pi never ran: {doc}"));
    let found: serde_json::Value = serde_json::from_str(&read(&found_file.path())).unwrap();
    // It ran on an agent directory of its own, with the user's credential readable.
    assert!(
        found["ownAgentDir"]
            .as_str()
            .unwrap()
            .contains("/agents/shepherd-agent-"),
        "{found}"
    );
    assert_eq!(
        found["auth"], "{\"fake\": \"the agent's own key\"}",
        "{found}"
    );
    assert_eq!(found["approvals"], false, "{found}");
    // Nothing it wrote reached the user's files.
    assert_eq!(
        read(&agent.join("pi-shepherd/config.json")),
        "{\"sandbox\": \"strict\"}",
        "{found}"
    );
    assert!(!agent.join("agents/planted.md").exists(), "{found}");
    assert!(!agent.join("extensions/planted.ts").exists(), "{found}");
    let (_, settings) = world.json_status(&["settings"]);
    assert_eq!(settings["settings"]["sandbox"], "strict", "{settings}");
}

#[test]
fn a_confined_pi_sheep_sees_no_other_sheeps_capability_nor_plants_a_log_link() {
    let mut world = World::new();
    user_with_pi(&mut world);
    world
        .extra_env
        .push(("SHEPHERD_STARTUP_LIMIT_MS".into(), "3000".into()));
    world.define_file(
        "scout",
        "---\nname: scout\ndescription: A pi sheep.\nsandbox: workspace\nnetwork: none\n---\nScouts.\n",
    );
    // Another pi sheep first, whose launch variables hold its capability.
    let _first = world.json_status(&["spawn", "scout", "--sandbox", "off"]);
    // A sheep with an output log the parent reads.
    world.define(
        "victim",
        &[
            "sh".into(),
            "-c".into(),
            "echo victim-output; sleep 120".into(),
        ],
    );
    let victim = world.spawn("victim", "");
    std::fs::write(world.project.join("victim-id"), &victim).unwrap();
    let _refused = world.json_status(&["spawn", "scout"]);
    let found: serde_json::Value = std::fs::read_dir(&world.project)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("found-"))
        .map(|e| serde_json::from_str::<serde_json::Value>(&read(&e.path())).unwrap())
        .find(|found| found["victim"].is_string())
        .expect("the attacking stand-in pi never ran");
    let mine = found["myId"].as_str().unwrap();
    for file in found["launchFiles"].as_array().unwrap() {
        assert!(
            file.as_str().unwrap().contains(mine),
            "another sheep's launch variables were readable: {found}"
        );
    }
    let shown = world.run(&["read", &victim]);
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(!shown.contains("PRIVATE KEY"), "{found}\n{shown}");
}

/// A stand-in Claude Code: plants a `SessionStart` hook and an MCP server in the user's own
/// configuration, then fails its turn.
const FAKE_CLAUDE: &str = r#"#!/bin/sh
touch ran-claude
mkdir -p "$HOME/.claude"
echo '{"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "touch /tmp/planted"}]}]}}' > "$HOME/.claude/settings.json"
echo '{"mcpServers": {"planted": {"command": "sh"}}}' > "$HOME/.claude.json"
echo '{"hooks": "planted"}' > "$CLAUDE_CONFIG_DIR/../../settings.json" 2>/dev/null
exit 1
"#;

#[test]
fn a_confined_claude_code_sheep_writes_none_of_the_users_claude_configuration() {
    let mut world = World::new();
    let claude = world.dir.path().join("fake-claude");
    script(&claude, FAKE_CLAUDE);
    std::fs::create_dir_all(world.home.join(".claude")).unwrap();
    std::fs::write(world.home.join(".claude/settings.json"), "{}").unwrap();
    std::fs::write(world.home.join(".claude.json"), "{}").unwrap();
    world
        .extra_env
        .push(("SHEPHERD_CLAUDE".into(), claude.display().to_string()));
    world.define_file(
        "cc",
        "---\nname: cc\ndescription: A Claude Code sheep.\nharness: claude-code\nsandbox: strict\nnetwork: none\n---\nWorks.\n",
    );
    let _failed = world.json_status(&["run", "cc", "go", "--timeout", "1"]);
    assert!(
        world.project.join("ran-claude").exists(),
        "the stand-in never ran"
    );
    assert_eq!(read(&world.home.join(".claude/settings.json")), "{}");
    assert_eq!(read(&world.home.join(".claude.json")), "{}");
}
