//! A coding agent installed as a user has it, with Shepherd set up in it exactly as
//! `docs/mcp.md` says: each host's blocks are read from that file (the block after a marker
//! such as `<!-- install: codex -->`), shell lines are run with `sh -c` as written, and
//! configuration blocks are merged into the file the docs name, under the user's private HOME.
//! `shepherd` and the agents are found on `PATH` through small wrappers in the world's own
//! `bin` directory, the way an installed `shepherd` would be.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]
#![allow(dead_code, unreachable_pub)]

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;
use shepherd_testkit::agents::{self, AgentBinary, AgentEnv, Host, RunOutput};

pub const SHEPHERD: &str = env!("CARGO_BIN_EXE_shepherd");

/// The name docs/mcp.md's markers give `host`.
pub fn marker_name(host: Host) -> &'static str {
    match host {
        Host::ClaudeCode => "claude-code",
        Host::Codex => "codex",
        Host::Gemini => "gemini",
        Host::Opencode => "opencode",
    }
}

/// A fenced block of docs/mcp.md: its language and its text.
#[derive(Debug, Clone)]
pub struct Block {
    pub lang: String,
    pub body: String,
}

impl Block {
    /// Its shell lines: every line that is neither empty nor a comment.
    pub fn lines(&self) -> Vec<String> {
        self.body
            .lines()
            .map(str::trim)
            .filter(|line| !line.is_empty() && !line.starts_with('#'))
            .map(str::to_owned)
            .collect()
    }

    /// Its lines without a trailing `# comment` (as a reader would copy them).
    pub fn commands(&self) -> Vec<String> {
        self.lines()
            .into_iter()
            .map(|line| match line.find(" # ") {
                Some(at) if self.lang == "sh" => line[..at].trim_end().to_owned(),
                _ => line,
            })
            .collect()
    }
}

pub fn mcp_docs() -> String {
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/mcp.md");
    std::fs::read_to_string(docs).unwrap()
}

/// The block docs/mcp.md gives after `<!-- kind: host -->`, if any.
pub fn block(kind: &str, host: Host) -> Option<Block> {
    let marker = format!("<!-- {kind}: {} -->", marker_name(host));
    let text = mcp_docs();
    let after = text.split(&marker).nth(1)?;
    let fenced = after.split("```").nth(1).unwrap();
    let (lang, body) = fenced.split_once('\n').unwrap();
    Some(Block {
        lang: lang.trim().to_owned(),
        body: body.trim().to_owned(),
    })
}

/// Like [`block`], for a block every host has.
pub fn required(kind: &str, host: Host) -> Block {
    block(kind, host).unwrap_or_else(|| {
        panic!(
            "docs/mcp.md has no `{kind}` block for {}",
            marker_name(host)
        )
    })
}

/// One user's machine: `host` installed in a private HOME (talking to the fake model at
/// `env`'s URL), with `shepherd` and every installed agent on `PATH`.
pub struct UserWorld {
    pub env: AgentEnv,
    pub agent: AgentBinary,
    bin: PathBuf,
}

impl UserWorld {
    /// `env` must be a [`AgentEnvBuilder::user_setup`] environment for `agent`.
    pub fn new(env: AgentEnv, agent: &AgentBinary) -> Self {
        assert!(env.is_user_setup());
        let bin = env.root().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let wrapper = |name: &str, target: &Path| {
            let path = bin.join(name);
            std::fs::write(
                &path,
                format!("#!/bin/sh\nexec '{}' \"$@\"\n", target.display()),
            )
            .unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        };
        wrapper("shepherd", Path::new(SHEPHERD));
        for host in Host::ALL {
            if let Ok(found) = agents::locate(host) {
                wrapper(host.wrapper(), &found.path);
            }
        }
        Self {
            env,
            agent: agent.clone(),
            bin,
        }
    }

    /// `PATH` with this world's `bin` first.
    pub fn path(&self) -> std::ffi::OsString {
        let mut dirs = vec![self.bin.clone()];
        dirs.extend(std::env::split_paths(
            &std::env::var_os("PATH").unwrap_or_default(),
        ));
        std::env::join_paths(dirs).unwrap()
    }

    /// A command with the user's environment, in the project.
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut command = Command::new(program);
        self.env.apply(&mut command);
        command.env("PATH", self.path()).stdin(Stdio::null());
        command
    }

    /// Runs `line` with `sh -c`, as a user pasting it would.
    pub fn sh(&self, line: &str, timeout: Duration) -> RunOutput {
        let mut command = self.command("sh");
        command.args(["-c", line]);
        agents::run(&mut command, timeout).unwrap()
    }

    /// Applies the block docs/mcp.md gives under `kind` for `host`: shell lines are run,
    /// configuration blocks merged into the file the docs name for it.
    pub fn apply(&self, kind: &str, host: Host) {
        let block = required(kind, host);
        match block.lang.as_str() {
            "sh" => {
                for line in block.lines() {
                    let output = self.sh(&line, Duration::from_secs(60));
                    assert!(output.success(), "{host}: `{line}`\n{}", describe(&output));
                }
            }
            "toml" => {
                assert_eq!(host, Host::Codex, "a TOML block is Codex's config.toml");
                let file = self.env.home().join(".codex/config.toml");
                let mut text = std::fs::read_to_string(&file).unwrap_or_default();
                text.push('\n');
                text.push_str(&block.body);
                text.push('\n');
                std::fs::create_dir_all(file.parent().unwrap()).unwrap();
                std::fs::write(&file, text).unwrap();
            }
            "json" => {
                let file = match (host, kind) {
                    (Host::Opencode, _) => self.env.home().join(".config/opencode/opencode.json"),
                    (Host::ClaudeCode, "allow") => self.env.home().join(".claude/settings.json"),
                    _ => panic!("no file for {host}'s `{kind}` JSON block"),
                };
                let mut settings: Value = std::fs::read_to_string(&file)
                    .ok()
                    .and_then(|text| serde_json::from_str(&text).ok())
                    .unwrap_or_else(|| serde_json::json!({}));
                merge(&mut settings, serde_json::from_str(&block.body).unwrap());
                std::fs::create_dir_all(file.parent().unwrap()).unwrap();
                std::fs::write(&file, settings.to_string()).unwrap();
            }
            other => panic!("{host}: `{kind}` block in `{other}`"),
        }
    }

    /// Installs Shepherd in every host here as documented (Claude Code's tools allowed in its
    /// settings).
    pub fn install_everywhere(&self) {
        for host in Host::ALL {
            if agents::locate(host).is_ok() {
                self.apply("install", host);
                if block("allow", host).is_some() {
                    self.apply("allow", host);
                }
            }
        }
    }
}

/// Lays `add` over `base`, object by object.
pub fn merge(base: &mut Value, add: Value) {
    match (base, add) {
        (Value::Object(base), Value::Object(add)) => {
            for (key, value) in add {
                merge(base.entry(key).or_insert(Value::Null), value);
            }
        }
        (base, add) => *base = add,
    }
}

pub fn describe(output: &RunOutput) -> String {
    format!(
        "{} after {:?}\nstdout:\n{}\nstderr:\n{}",
        output.status, output.elapsed, output.stdout, output.stderr
    )
}
