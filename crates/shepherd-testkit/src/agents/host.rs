//! The four agents and where their installs are: [`Host`] (versions, packages, wire formats,
//! how each names MCP tools), [`locate`] and [`installed_or_skip`] for the wrappers
//! `scripts/setup` writes into `.tools/bin`, and [`agent_tests!`](crate::agent_tests), one test
//! per agent that skips (or, with `SHEPHERD_REQUIRE_AGENTS=1`, fails) when it is missing.

use std::fmt;
use std::path::PathBuf;

use shepherd_core::harness::Harness;

use super::AgentError;
use crate::fake_llm::Api;

/// One of the coding agents `scripts/setup` installs beside pi.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Host {
    /// Claude Code (`@anthropic-ai/claude-code`), Anthropic messages.
    ClaudeCode,
    /// Codex CLI (`@openai/codex`), OpenAI responses.
    Codex,
    /// Gemini CLI (`@google/gemini-cli`), Gemini `streamGenerateContent`.
    Gemini,
    /// opencode (`opencode-ai`), OpenAI chat completions.
    Opencode,
}

impl Host {
    /// Every host.
    pub const ALL: [Self; 4] = [Self::ClaudeCode, Self::Codex, Self::Gemini, Self::Opencode];

    /// The harness Shepherd runs this agent through.
    #[must_use]
    pub fn harness(self) -> Harness {
        match self {
            Self::ClaudeCode => Harness::ClaudeCode,
            Self::Codex => Harness::Codex,
            Self::Gemini => Harness::Gemini,
            Self::Opencode => Harness::Opencode,
        }
    }

    /// The exact version `scripts/setup` pins.
    #[must_use]
    pub fn pinned(self) -> &'static str {
        match self {
            Self::ClaudeCode => "2.1.197",
            Self::Codex => "0.171.0",
            Self::Gemini => "0.61.0",
            Self::Opencode => "1.18.33",
        }
    }

    /// The npm package.
    #[must_use]
    pub fn package(self) -> &'static str {
        match self {
            Self::ClaudeCode => "@anthropic-ai/claude-code",
            Self::Codex => "@openai/codex",
            Self::Gemini => "@google/gemini-cli",
            Self::Opencode => "opencode-ai",
        }
    }

    /// The wrapper's name in `.tools/bin`.
    #[must_use]
    pub fn wrapper(self) -> &'static str {
        match self {
            Self::ClaudeCode => "claude",
            Self::Codex => "codex",
            Self::Gemini => "gemini",
            Self::Opencode => "opencode",
        }
    }

    /// The environment variable that points at another binary of this agent.
    #[must_use]
    pub fn env_var(self) -> &'static str {
        match self {
            Self::ClaudeCode => "SHEPHERD_CLAUDE",
            Self::Codex => "SHEPHERD_CODEX",
            Self::Gemini => "SHEPHERD_GEMINI",
            Self::Opencode => "SHEPHERD_OPENCODE",
        }
    }

    /// The wire format it speaks to the model.
    #[must_use]
    pub fn api(self) -> Api {
        match self {
            Self::ClaudeCode => Api::AnthropicMessages,
            Self::Codex => Api::Responses,
            Self::Gemini => Api::Gemini,
            Self::Opencode => Api::ChatCompletions,
        }
    }

    /// The model id an [`AgentEnv`](super::AgentEnv) uses unless told otherwise (each agent accepts any id
    /// against a custom endpoint; Claude Code prices a known one).
    #[must_use]
    pub fn default_model(self) -> &'static str {
        match self {
            Self::ClaudeCode => "claude-sonnet-4-5",
            Self::Codex | Self::Opencode => "fake-model",
            Self::Gemini => "gemini-2.5-pro",
        }
    }

    /// The name the model sees for `tool` of the MCP server `server` (as
    /// [`RecordedRequest::tool_names`](crate::fake_llm::RecordedRequest::tool_names) lists it).
    /// Codex offers it as `tool` inside the namespace `mcp__<server>`, listed here as
    /// `mcp__<server>__<tool>`.
    #[must_use]
    pub fn mcp_tool_name(self, server: &str, tool: &str) -> String {
        match self {
            Self::ClaudeCode | Self::Codex => format!("mcp__{server}__{tool}"),
            Self::Gemini => format!("mcp_{server}_{tool}"),
            Self::Opencode => format!("{server}_{tool}"),
        }
    }

    /// A text the TUI shows once it takes input (in the pinned version): the prompt's
    /// placeholder or hint line.
    #[must_use]
    pub fn tui_ready_text(self) -> &'static str {
        match self {
            Self::ClaudeCode => "? for shortcuts",
            Self::Codex => "Ask Codex",
            Self::Gemini => "Type your message",
            Self::Opencode => "Ask anything",
        }
    }

    /// The `clientInfo.name` it sends an MCP server.
    #[must_use]
    pub fn mcp_client_name(self) -> &'static str {
        match self {
            Self::ClaudeCode => "claude-code",
            Self::Codex => "codex-mcp-client",
            Self::Gemini => "gemini-cli-mcp-client",
            Self::Opencode => "opencode",
        }
    }
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self {
            Self::ClaudeCode => "Claude Code",
            Self::Codex => "Codex",
            Self::Gemini => "Gemini CLI",
            Self::Opencode => "opencode",
        };
        write!(f, "{name} {}", self.pinned())
    }
}

/// An installed agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentBinary {
    /// Which agent.
    pub host: Host,
    /// The program to run.
    pub path: PathBuf,
}

/// Finds an agent: `$SHEPHERD_CLAUDE` (…`_CODEX`, `_GEMINI`, `_OPENCODE`) when set, else the
/// wrapper in `.tools/bin`.
///
/// # Errors
/// [`AgentError::NotInstalled`] when the file is not there.
pub fn locate(host: Host) -> Result<AgentBinary, AgentError> {
    let path = std::env::var_os(host.env_var())
        .filter(|value| !value.is_empty())
        .map_or_else(
            || crate::pi::tools_dir().join("bin").join(host.wrapper()),
            PathBuf::from,
        );
    if path.is_file() {
        Ok(AgentBinary { host, path })
    } else {
        Err(AgentError::NotInstalled { host, path })
    }
}

/// For a test that needs `host`: the binary, or `None` after printing one line saying the test
/// is skipped. With `SHEPHERD_REQUIRE_AGENTS=1` a missing agent fails the test instead.
///
/// # Panics
/// When the agent is missing and `SHEPHERD_REQUIRE_AGENTS=1`.
#[must_use]
pub fn installed_or_skip(host: Host, test: &str) -> Option<AgentBinary> {
    match locate(host) {
        Ok(binary) => Some(binary),
        Err(err) if std::env::var_os("SHEPHERD_REQUIRE_AGENTS").is_some_and(|v| v == "1") => {
            panic!("{test}: {err}")
        }
        Err(err) => {
            println!("skipping {test}: {err}");
            None
        }
    }
}

/// Runs `body` with `host` when it is installed; otherwise prints one line and returns (see
/// [`installed_or_skip`]). Used by [`agent_tests!`](crate::agent_tests).
pub fn with_agent(host: Host, test: &str, body: impl FnOnce(&AgentBinary)) {
    if let Some(binary) = installed_or_skip(host, test) {
        body(&binary);
    }
}

/// Defines one test per host for each named function `fn name(agent: &AgentBinary)`: a module
/// `name` with tests `claude_code`, `codex`, `gemini` and `opencode`, each skipped with one
/// printed line when that agent is not installed (failed under `SHEPHERD_REQUIRE_AGENTS=1`).
///
/// ```ignore
/// fn mcp_tool_turn(agent: &AgentBinary) { /* ... */ }
/// shepherd_testkit::agent_tests!(mcp_tool_turn);
/// ```
#[macro_export]
macro_rules! agent_tests {
    ($($name:ident),+ $(,)?) => {$(
        mod $name {
            #[test]
            fn claude_code() {
                $crate::agents::with_agent(
                    $crate::agents::Host::ClaudeCode,
                    concat!(module_path!(), "::claude_code"),
                    super::$name,
                );
            }

            #[test]
            fn codex() {
                $crate::agents::with_agent(
                    $crate::agents::Host::Codex,
                    concat!(module_path!(), "::codex"),
                    super::$name,
                );
            }

            #[test]
            fn gemini() {
                $crate::agents::with_agent(
                    $crate::agents::Host::Gemini,
                    concat!(module_path!(), "::gemini"),
                    super::$name,
                );
            }

            #[test]
            fn opencode() {
                $crate::agents::with_agent(
                    $crate::agents::Host::Opencode,
                    concat!(module_path!(), "::opencode"),
                    super::$name,
                );
            }
        }
    )+};
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every harness but pi (which the testkit runs through its own helpers) has its test host,
    /// in `Harness::ALL`'s order.
    #[test]
    fn every_harness_but_pi_has_a_test_host() {
        let hosts: Vec<Harness> = Host::ALL.iter().map(|host| host.harness()).collect();
        assert_eq!(hosts, Harness::ALL[1..]);
    }
}
