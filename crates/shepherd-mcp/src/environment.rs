//! What the herd this server would start lacks from its environment, said once.
//!
//! A herd's broker and its sheep inherit the server's environment, which is whatever the host
//! started it with: Claude Code and opencode pass theirs on, Gemini CLI hides every variable
//! named like a key, Codex passes almost nothing. A sheep started without its provider's key
//! fails at its first turn, far from the cause, so when the session starts the server checks
//! what the user's and the project's agent definitions need (`shepherd_client::needs`: each
//! one's program, its provider's key or a login, its `needs-env`). What is missing is said as
//! one MCP log message when the host has initialised the session, and as one paragraph after
//! the first tool result, naming each variable, the agents that need it, and the setting of
//! this host (known from its `clientInfo`) that passes it.

#![allow(
    deprecated,
    reason = "MCP logging is deprecated for protocol 2026-07-28, but it is what 2025-06-18 and 2025-11-25 hosts accept"
)]

use std::sync::atomic::{AtomicBool, Ordering};

use rmcp::RoleServer;
use rmcp::model::{CallToolResult, ContentBlock, LoggingLevel, LoggingMessageNotificationParam};
use rmcp::service::Peer;
use serde_json::json;
use shepherd_client::Context;
use shepherd_client::needs::{Lack, Used, lacks, withheld};
use shepherd_core::agent_def::AgentScope;
use shepherd_harness::{ProcessEnv, UserEnv};
use tokio::sync::OnceCell;

use super::feed::Level;
use super::herd::Choice;

/// The host, as its `clientInfo.name` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Host {
    ClaudeCode,
    Codex,
    Gemini,
    Opencode,
    Other,
}

impl Host {
    pub(crate) fn from_client(name: &str) -> Self {
        match name {
            "claude-code" => Self::ClaudeCode,
            "codex-mcp-client" => Self::Codex,
            "gemini-cli-mcp-client" => Self::Gemini,
            "opencode" => Self::Opencode,
            _ => Self::Other,
        }
    }

    fn title(self) -> &'static str {
        match self {
            Self::ClaudeCode => "Claude Code",
            Self::Codex => "Codex",
            Self::Gemini => "Gemini CLI",
            Self::Opencode => "opencode",
            Self::Other => "the MCP host",
        }
    }
}

/// What the environment lacks, worked out once (by whichever comes first: the session's start
/// or its first tool call), and whether a tool result has said it yet.
#[derive(Debug, Default)]
pub(crate) struct Notice {
    text: OnceCell<Option<String>>,
    said: AtomicBool,
}

impl Notice {
    /// The paragraph, `None` when nothing is missing.
    async fn text(&self, ctx: &Context, choice: &Choice, peer: &Peer<RoleServer>) -> Option<&str> {
        self.text
            .get_or_init(|| async { check(ctx, choice, peer) })
            .await
            .as_deref()
    }

    /// When the session starts: the paragraph as one log message.
    pub(crate) async fn announce(
        &self,
        ctx: &Context,
        choice: &Choice,
        peer: &Peer<RoleServer>,
        level: &Level,
    ) {
        let Some(text) = self.text(ctx, choice, peer).await else {
            return;
        };
        if level.allows(LoggingLevel::Warning) {
            let message = LoggingMessageNotificationParam::new(
                LoggingLevel::Warning,
                json!({ "text": text }),
            )
            .with_logger("shepherd");
            if let Err(err) = peer.notify_logging_message(message).await {
                tracing::debug!("notifications/message not sent: {err}");
            }
        }
    }

    /// Adds the paragraph to `result` if no tool result has had it yet.
    pub(crate) async fn append_once(
        &self,
        ctx: &Context,
        choice: &Choice,
        peer: &Peer<RoleServer>,
        result: &mut CallToolResult,
    ) {
        let Some(text) = self.text(ctx, choice, peer).await else {
            return;
        };
        if self.said.swap(true, Ordering::SeqCst) {
            return;
        }
        let first_text = result.content.iter_mut().find_map(|content| match content {
            ContentBlock::Text(text) => Some(text),
            _ => None,
        });
        match first_text {
            Some(existing) => {
                existing.text.push_str("\n\n");
                existing.text.push_str(text);
            }
            None => result.content.push(ContentBlock::text(text)),
        }
    }
}

/// What the user's and the project's definitions need that this server's environment lacks, in
/// words for this host; `None` when nothing is missing.
fn check(ctx: &Context, choice: &Choice, peer: &Peer<RoleServer>) -> Option<String> {
    let project = match (&choice.project, &ctx.sheep_project) {
        (Some(dir), _) => ctx.project_root(Some(dir)),
        (None, Some(dir)) => dir.clone(),
        (None, None) => ctx.cwd.clone(),
    };
    // The user's and the project's own definitions; the bundled ones are `shepherd doctor`'s.
    let discovery = shepherd_config::discover_agents(&ctx.dirs, &project, AgentScope::Both, false);
    let missing = lacks(&discovery.agents, &ProcessEnv);
    // What the host itself has (a base URL, a key) and did not pass on; a key already named
    // as missing is said once.
    let named: Vec<&str> = missing.iter().flat_map(Lack::variables).collect();
    let withheld: Vec<Used> = host_env()
        .map(|host| withheld(&discovery.agents, &host, &ProcessEnv))
        .unwrap_or_default()
        .into_iter()
        .filter(|used| !named.contains(&used.name.as_str()))
        .collect();
    if missing.is_empty() && withheld.is_empty() {
        return None;
    }
    let host = peer.peer_info().map_or(Host::Other, |info| {
        Host::from_client(&info.client_info.name)
    });
    Some(words(&missing, &withheld, host))
}

/// The environment of the program that started this server (the MCP host), when it can be
/// read: what the user's shell gave the host, before the host chose what to pass on.
fn host_env() -> Option<HostEnv> {
    let parent = std::os::unix::process::parent_id();
    let bytes = fs_err::read(format!("/proc/{parent}/environ")).ok()?;
    let vars = bytes
        .split(|byte| *byte == 0)
        .filter_map(|entry| {
            let text = std::str::from_utf8(entry).ok()?;
            let (name, value) = text.split_once('=')?;
            Some((name.to_owned(), std::ffi::OsString::from(value)))
        })
        .collect();
    Some(HostEnv(vars))
}

/// The host's environment, as read once.
struct HostEnv(std::collections::HashMap<String, std::ffi::OsString>);

impl UserEnv for HostEnv {
    fn var(&self, name: &str) -> Option<std::ffi::OsString> {
        self.0.get(name).cloned()
    }
}

/// The paragraph: what is missing, what the host has and keeps, then how this host passes it.
pub(crate) fn words(missing: &[Lack], withheld: &[Used], host: Host) -> String {
    let mut text = format!(
        "Shepherd's environment lacks what some sheep need (a herd's sheep inherit the environment {} started `shepherd mcp` with): ",
        host.title()
    );
    let mut described: Vec<String> = missing.iter().map(Lack::describe).collect();
    described.extend(withheld.iter().map(|used| {
        format!(
            "{} is set where {} runs but not passed on (used by the sheep of {})",
            used.name,
            host.title(),
            used.agents.join(", ")
        )
    }));
    text.push_str(&described.join("; "));
    text.push('.');
    let mut vars: Vec<&str> = Vec::new();
    let names = missing
        .iter()
        .flat_map(Lack::variables)
        .chain(withheld.iter().map(|used| used.name.as_str()));
    for name in names {
        if !vars.contains(&name) {
            vars.push(name);
        }
    }
    if !vars.is_empty() {
        text.push(' ');
        text.push_str(&fix(host, &vars));
    }
    text
}

/// How `host` passes `vars` to its MCP server.
fn fix(host: Host, vars: &[&str]) -> String {
    let list = |each: &dyn Fn(&str) -> String, sep: &str| {
        vars.iter()
            .map(|name| each(name))
            .collect::<Vec<_>>()
            .join(sep)
    };
    match host {
        Host::Codex => format!(
            "Codex passes an MCP server only the variables listed for it: add env_vars = [{}] under [mcp_servers.shepherd] in ~/.codex/config.toml (or $CODEX_HOME/config.toml), then start a new Codex session.",
            list(&|name| format!("\"{name}\""), ", ")
        ),
        Host::Gemini => format!(
            "Gemini CLI hides variables named like keys from MCP servers: pass them with \"env\": {{{}}} in the shepherd entry of mcpServers in ~/.gemini/settings.json (or gemini mcp add --scope user --trust {} shepherd shepherd mcp), then start a new Gemini CLI session.",
            list(&|name| format!("\"{name}\": \"${name}\""), ", "),
            list(&|name| format!("-e '{name}=${name}'"), " ")
        ),
        Host::ClaudeCode => format!(
            "Claude Code passes its own environment on: set {} in the shell you start claude from, or give the server {} (claude mcp add --scope user shepherd {} -- shepherd mcp), then start a new session.",
            vars.join(", "),
            if vars.len() == 1 {
                "its value"
            } else {
                "their values"
            },
            list(&|name| format!("-e {name}=…"), " ")
        ),
        Host::Opencode => format!(
            "opencode passes its own environment on: set {} in the shell you start opencode from, or add \"environment\": {{{}}} to mcp.shepherd in ~/.config/opencode/opencode.json.",
            vars.join(", "),
            list(&|name| format!("\"{name}\": \"{{env:{name}}}\""), ", ")
        ),
        Host::Other => format!(
            "Set {} in the environment your MCP host starts `shepherd mcp` with (its server entry's env).",
            vars.join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use shepherd_core::harness::Harness;

    use super::*;

    fn missing() -> Vec<Lack> {
        vec![
            Lack::Variable {
                name: "TOKEN_X".into(),
                agents: vec!["bot".into()],
            },
            Lack::Credential {
                harness: Harness::ClaudeCode,
                provider: "anthropic".into(),
                vars: vec!["ANTHROPIC_API_KEY".into(), "TOKEN_X".into()],
                agents: vec!["reviewer".into()],
            },
        ]
    }

    #[test]
    fn each_host_is_told_its_own_setting_for_every_variable_once() {
        let codex = words(&missing(), &[], Host::Codex);
        assert!(
            codex.starts_with("Shepherd's environment lacks what some sheep need (a herd's sheep inherit the environment Codex started `shepherd mcp` with): TOKEN_X is not set (named in the `needs-env` of bot); none of ANTHROPIC_API_KEY, TOKEN_X is set and there is no Claude Code login for anthropic (needed by reviewer). Codex passes"),
            "{codex}"
        );
        assert!(
            codex.contains(
                "add env_vars = [\"TOKEN_X\", \"ANTHROPIC_API_KEY\"] under [mcp_servers.shepherd] in ~/.codex/config.toml"
            ),
            "{codex}"
        );
        let gemini = words(&missing(), &[], Host::Gemini);
        assert!(
            gemini.contains("\"env\": {\"TOKEN_X\": \"$TOKEN_X\", \"ANTHROPIC_API_KEY\": \"$ANTHROPIC_API_KEY\"}")
                && gemini.contains("-e 'TOKEN_X=$TOKEN_X' -e 'ANTHROPIC_API_KEY=$ANTHROPIC_API_KEY' shepherd shepherd mcp"),
            "{gemini}"
        );
        let opencode = words(&missing(), &[], Host::Opencode);
        assert!(
            opencode.contains("\"environment\": {\"TOKEN_X\": \"{env:TOKEN_X}\""),
            "{opencode}"
        );
        assert!(
            words(&missing(), &[], Host::ClaudeCode)
                .contains("-e TOKEN_X=… -e ANTHROPIC_API_KEY=…")
        );
        assert!(
            words(&missing(), &[], Host::Other)
                .contains("Set TOKEN_X, ANTHROPIC_API_KEY in the environment")
        );
    }

    #[test]
    fn a_missing_program_alone_names_no_setting() {
        let text = words(
            &[Lack::Program {
                program: "pi".into(),
                var: Some("SHEPHERD_PI".into()),
                agents: vec!["scout".into()],
            }],
            &[],
            Host::Codex,
        );
        assert!(
            text.ends_with(
                "`pi` is not found (needed by scout; install it, or set SHEPHERD_PI to its path)."
            ),
            "{text}"
        );
    }
}
