//! `shepherd doctor` on a user's machine: a private HOME with the real Claude Code, Codex,
//! Gemini CLI and opencode installed, Shepherd registered in each by the host's own `mcp add`
//! or by the configuration block `docs/mcp.md` gives, and agent definitions that need a key.
//! Set up as documented, every host is ready and doctor exits 0; set up as a user first does
//! it (the bare `mcp add` lines, a key missing, a server turned off), each gap is a miss with
//! the line that fixes it, and doctor exits 69. It never changes a file it reads. A host
//! `scripts/setup` did not install skips the test with one line (or fails it under
//! `SHEPHERD_REQUIRE_AGENTS=1`).

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use crate::host_setup;

use std::time::Duration;

use host_setup::{SHEPHERD, UserWorld, describe};
use serde_json::{Value, json};
use shepherd_testkit::agents::{self, AgentBinary, AgentEnv, Host};

/// A user's machine with every agent installed (none granted anything), the bundled agents off
/// (pi is not this test's business) and one definition of each kind that needs a key: a
/// `command` sheep naming `OPENAI_API_KEY`, and a Claude Code sheep (whose key, the user's
/// `ANTHROPIC_API_KEY`, is set).
fn machine(test: &str) -> Option<UserWorld> {
    let mut found: Vec<AgentBinary> = Vec::new();
    for host in Host::ALL {
        found.push(agents::installed_or_skip(host, test)?);
    }
    let env = AgentEnv::builder_with_url(Host::ClaudeCode, "http://127.0.0.1:9")
        .user_setup()
        .build()
        .unwrap();
    let agents_dir = env.home().join(".pi/agent/agents");
    std::fs::create_dir_all(&agents_dir).unwrap();
    std::fs::write(
        agents_dir.join("waiter.md"),
        "---\nname: waiter\ndescription: Needs a key.\ncommand: [\"true\"]\nneeds-env: [OPENAI_API_KEY]\n---\nA test sheep.\n",
    )
    .unwrap();
    std::fs::write(
        agents_dir.join("reviewer.md"),
        "---\nname: reviewer\ndescription: Reviews.\nharness: claude-code\n---\nReview.\n",
    )
    .unwrap();
    let config = env.home().join(".pi/agent/pi-shepherd");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("config.json"),
        r#"{"includeBundledAgents": false}"#,
    )
    .unwrap();
    Some(UserWorld::new(env, &found[0]))
}

/// `shepherd doctor --json` in `world` with `extra` variables: its exit status and report.
fn doctor(world: &UserWorld, extra: &[(&str, &str)]) -> (i32, Value) {
    let mut command = world.command(SHEPHERD);
    command
        .args(["doctor", "--json"])
        .envs(extra.iter().copied());
    let output = agents::run(&mut command, Duration::from_secs(60)).unwrap();
    let report: Value = serde_json::from_str(output.stdout.trim())
        .unwrap_or_else(|err| panic!("{err}: {}", describe(&output)));
    (output.status.code().unwrap(), report)
}

/// The findings about `what`.
fn findings<'a>(report: &'a Value, what: &str) -> Vec<&'a Value> {
    report["sections"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["findings"].as_array().unwrap())
        .filter(|f| f["what"] == what)
        .collect()
}

/// The hosts' configuration files doctor reads, with their text, to see that it changed none.
/// (The agents' own `--version` runs may leave state of theirs, such as a lock file.)
fn host_configs(home: &std::path::Path) -> Vec<(&'static str, Option<String>)> {
    [
        ".claude.json",
        ".claude/settings.json",
        ".codex/config.toml",
        ".gemini/settings.json",
        ".config/opencode/opencode.json",
    ]
    .into_iter()
    .map(|file| (file, std::fs::read_to_string(home.join(file)).ok()))
    .collect()
}

#[test]
fn set_up_as_documented_every_host_is_ready() {
    let Some(world) = machine("doctor::set_up_as_documented_every_host_is_ready") else {
        return;
    };
    world.install_everywhere();
    let home = world.env.home().to_owned();
    let before = host_configs(&home);
    assert!(before.iter().all(|(_, text)| text.is_some()), "{before:#?}");
    // This user's sheep use the default endpoints (an empty variable is an unset one).
    let (status, report) = doctor(
        &world,
        &[("OPENAI_API_KEY", "k"), ("ANTHROPIC_BASE_URL", "")],
    );
    assert_eq!(status, 0, "{report:#}");
    assert_eq!(report["ready"], true, "{report:#}");
    for host in ["claude-code", "codex", "gemini", "opencode"] {
        let about = findings(&report, host);
        // One line for the agent, one for its MCP setup; both fine.
        assert_eq!(about.len(), 2, "{host}: {about:#?}");
        assert!(
            about.iter().all(|f| f["status"] == "ok"),
            "{host}: {about:#?}"
        );
    }
    let codex = findings(&report, "codex")[1]["detail"].as_str().unwrap();
    assert!(
        codex.contains("approved, and given what the sheep need"),
        "{codex}"
    );
    assert_eq!(host_configs(&home), before, "doctor changed a file it read");
}

/// A base URL in the user's shell is something the sheep use: Codex, which passes only the
/// variables listed for it, must pass it too, or the sheep reach the default endpoint.
#[test]
fn a_base_url_in_the_shell_is_one_more_variable_codex_must_pass() {
    let Some(world) =
        machine("doctor::a_base_url_in_the_shell_is_one_more_variable_codex_must_pass")
    else {
        return;
    };
    world.install_everywhere();
    let (status, report) = doctor(
        &world,
        &[
            ("OPENAI_API_KEY", "k"),
            ("ANTHROPIC_BASE_URL", "http://127.0.0.1:9"),
        ],
    );
    assert_eq!(status, 69, "{report:#}");
    let codex = findings(&report, "codex");
    let miss = codex
        .iter()
        .find(|f| f["status"] == "miss")
        .unwrap_or_else(|| panic!("{codex:#?}"));
    assert!(
        miss["detail"]
            .as_str()
            .unwrap()
            .contains("does not pass ANTHROPIC_BASE_URL (needed by reviewer)"),
        "{miss:#}"
    );
    assert!(
        miss["fix"]
            .as_str()
            .unwrap()
            .starts_with("add env_vars = [\"ANTHROPIC_BASE_URL\"]"),
        "{miss:#}"
    );
    // Claude Code, Gemini CLI and opencode pass it on.
    for host in ["claude-code", "gemini", "opencode"] {
        assert!(
            findings(&report, host).iter().all(|f| f["status"] == "ok"),
            "{host}: {report:#}"
        );
    }
}

#[test]
fn set_up_halfway_each_gap_is_a_miss_with_its_fix() {
    let Some(world) = machine("doctor::set_up_halfway_each_gap_is_a_miss_with_its_fix") else {
        return;
    };
    // What a user types first: the bare lines, nothing allowed, no keys passed.
    for line in [
        "claude mcp add --scope user shepherd -- shepherd mcp",
        "codex mcp add shepherd -- shepherd mcp",
        "gemini mcp add --scope user --trust shepherd shepherd mcp",
    ] {
        let output = world.sh(line, Duration::from_secs(60));
        assert!(output.success(), "`{line}`: {}", describe(&output));
    }
    let opencode = world.env.home().join(".config/opencode/opencode.json");
    std::fs::create_dir_all(opencode.parent().unwrap()).unwrap();
    let config = json!({"mcp": {"shepherd": {"type": "local", "command": ["shepherd", "mcp"], "enabled": false}}});
    std::fs::write(&opencode, config.to_string()).unwrap();

    let (status, report) = doctor(&world, &[]);
    assert_eq!(status, 69, "{report:#}");
    assert_eq!(report["ready"], false);
    let miss = |what: &str, needle: &str| -> String {
        let found = findings(&report, what)
            .into_iter()
            .find(|f| f["status"] == "miss" && f["detail"].as_str().unwrap().contains(needle))
            .unwrap_or_else(|| panic!("no miss for {what} with `{needle}`: {report:#}"));
        found["fix"].as_str().unwrap().to_owned()
    };
    assert!(
        miss("OPENAI_API_KEY", "named in the `needs-env` of waiter")
            .contains("export OPENAI_API_KEY="),
        "{report:#}"
    );
    assert!(
        miss("claude-code", "its tools are not allowed").contains(
            "{\"permissions\": {\"allow\": [\"mcp__shepherd\"]}} to ~/.claude/settings.json"
        ),
        "{report:#}"
    );
    assert!(
        miss("codex", "need approval").contains(
            "default_tools_approval_mode = \"approve\" under [mcp_servers.shepherd] in ~/.codex/config.toml"
        ),
        "{report:#}"
    );
    assert!(
        miss("codex", "ANTHROPIC_API_KEY (needed by reviewer)")
            .contains("env_vars = [\"ANTHROPIC_API_KEY\", \"ANTHROPIC_BASE_URL\"]"),
        "{report:#}"
    );
    assert!(
        miss("gemini", "ANTHROPIC_API_KEY (needed by reviewer)")
            .contains("-e 'ANTHROPIC_API_KEY=$ANTHROPIC_API_KEY'"),
        "{report:#}"
    );
    assert!(
        miss("opencode", "disabled").contains("remove \"enabled\": false"),
        "{report:#}"
    );

    // The human report: one screen, each miss with its fix under it.
    let mut command = world.command(SHEPHERD);
    command.arg("doctor");
    let output = agents::run(&mut command, Duration::from_secs(60)).unwrap();
    assert_eq!(output.status.code(), Some(69), "{}", describe(&output));
    let text = &output.stdout;
    assert!(
        text.starts_with("shepherd doctor: not ready, 6 things to fix"),
        "{text}"
    );
    for section in ["Backends", "Agents", "Environment", "MCP hosts"] {
        assert!(text.contains(&format!("\n{section}\n")), "{text}");
    }
    assert!(text.contains("  MISS codex"), "{text}");
    assert!(
        text.contains("fix: add default_tools_approval_mode"),
        "{text}"
    );
}

/// Doctor asks every agent for its version side by side, and Gemini CLI's answer leaves
/// nothing in the user's `~/.gemini`. Each stand-in agent answers `--version` only once all
/// five have been asked (or gives up after 8 s, before doctor's 10 s deadline), so asking one
/// after another gets no version at all; the Gemini stand-in writes a temp file under its home
/// as Gemini CLI 0.61.0 does.
#[test]
fn versions_are_asked_side_by_side_and_gemini_leaves_no_files() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let (bin, home, asked) = (root.join("bin"), root.join("home"), root.join("asked"));
    for d in [&bin, &home, &asked] {
        std::fs::create_dir_all(d).unwrap();
    }
    let names = ["pi", "claude", "codex", "gemini", "opencode"];
    for name in names {
        let leaves = if name == "gemini" {
            "mkdir -p \"${GEMINI_CLI_HOME:-$HOME}/.gemini\" && : > \"${GEMINI_CLI_HOME:-$HOME}/.gemini/projects.json.$$.tmp\"\n"
        } else {
            ""
        };
        let script = format!(
            "#!/bin/sh\n: > '{asked}/{name}'\ni=0\nwhile [ \"$(ls '{asked}' | wc -l)\" -lt {count} ]; do\n  i=$((i+1)); [ $i -gt 160 ] && exit 1\n  sleep 0.05\ndone\n{leaves}echo '{name} 9.8.7'\n",
            asked = asked.display(),
            count = names.len(),
        );
        let path = bin.join(name);
        std::fs::write(&path, script).unwrap();
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let output = std::process::Command::new(SHEPHERD)
        .args(["doctor", "--json"])
        .current_dir(&root)
        .env_clear()
        .env("HOME", &home)
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|err| panic!("{err}: {}", String::from_utf8_lossy(&output.stderr)));
    for (name, what) in names
        .iter()
        .zip(["pi", "claude-code", "codex", "gemini", "opencode"])
    {
        let agent = findings(&report, what)[0]["detail"].as_str().unwrap();
        assert!(
            agent.ends_with(&format!("({name} 9.8.7)")),
            "{what}: {agent}"
        );
    }
    let gemini_home = home.join(".gemini");
    let left: Vec<_> = std::fs::read_dir(&gemini_home)
        .map(|entries| entries.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "doctor left {left:?} in ~/.gemini");
}
