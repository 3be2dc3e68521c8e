//! What starts a sheep: a spawn's parameters and the caller's terminal.
//!
//! They sit below both the protocol (where `spawn` carries them) and the herd (which keeps a
//! sheep's spawn parameters as its recipe, so a resume or a fallback starts it the same way),
//! so neither has to import the other for them. The protocol re-exports both.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `spawn` parameters.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SpawnParams {
    /// The agent definition's exact name.
    pub agent: String,
    /// A short task-specific label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// `auto`, `headless`, `tmux` or `herdr` (default: the setting).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<crate::settings::Backend>,
    /// Working directory (default: the project root).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// `tab`, `pane_right`, `pane_down` or `workspace` (visible backends).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<crate::backend::Placement>,
    /// A model override (`provider/id`); refused when the runtime cannot honour it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The coding agent to run the definition on, instead of the definition's own harness.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub harness: Option<crate::harness::Harness>,
    /// Where the caller runs, so `auto` can pick its terminal and splits find its pane.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caller: Option<CallerContext>,
    /// The parent's own model (`provider/id`), inherited by pi sheep whose definition names none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_model: Option<String>,
    /// The parent's thinking level, inherited likewise (a level this Shepherd does not know is
    /// dropped, so the sheep runs at its agent's default).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::agent_def::ThinkingLevel::deserialize_known"
    )]
    pub parent_thinking: Option<crate::agent_def::ThinkingLevel>,
    /// The command that runs pi for a pi sheep (the parent's own pi, e.g. `[node, …/cli.js]`),
    /// so sheep run the same pi as their parent; `SHEPHERD_PI`, when set, wins.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pi_command: Option<Vec<String>>,
    /// The fieldnotes session this sheep's tasks will go to, by its name (created or
    /// continued), as `delegate`'s `sessionName` names it; without it, the parent's own.
    /// Spawn reports the session's directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_name: Option<String>,
    /// Run the sheep in its own git worktree on its own branch; on close, a clean worktree
    /// without new commits is removed, any other is kept and reported.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub isolate: bool,
    /// Run the sheep on this host, one the user defined under `hosts` in their settings
    /// (default: the agent definition's `host:`, else this machine).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// Confine the sheep at least this much: `off`, `workspace` or `strict`. It only tightens
    /// what the definition's `sandbox:` and the user's `sandbox` setting give.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<crate::sandbox::Sandbox>,
    /// The person's own `--sandbox` at the command line, which may also confine the sheep less
    /// than the definition and the setting say (the CLI alone sends it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_sandbox: Option<crate::sandbox::Sandbox>,
    /// Resource limits: they may only lower what the definition and the settings give (a
    /// sheep's recipe keeps the limits it ran with).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<crate::resources::Limits>,
    /// Spend this credential instead of the agent's usual one: another account of the same
    /// provider (a `fallback:` entry's `credential:`). Only the variable's name is kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credential: Option<Credential>,
}

pub use crate::agent_def::Credential;

/// The terminal a caller runs in, as its environment tells.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CallerContext {
    /// `HERDR_ENV=1`: the caller runs inside Herdr.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub in_herdr: bool,
    /// `HERDR_PANE_ID`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub herdr_pane: Option<String>,
    /// `HERDR_WORKSPACE_ID`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub herdr_workspace: Option<String>,
    /// `HERDR_SOCKET_PATH`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub herdr_socket: Option<String>,
    /// `$TMUX` (`<socket>,<pid>,<session>`): the caller runs inside tmux.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tmux: Option<String>,
    /// `TMUX_PANE`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tmux_pane: Option<String>,
    /// The caller's pid, to find its pane through its parents when a wrapper stripped the
    /// variables above.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A parent's level comes from whatever pi the parent runs: one Shepherd knows is kept, in any
    /// case, and one it does not (a newer pi's) is dropped instead of refusing the spawn.
    #[test]
    fn a_parent_s_thinking_level_is_read_leniently() {
        let read = |json: &str| {
            serde_json::from_str::<SpawnParams>(json)
                .expect(json)
                .parent_thinking
        };
        assert_eq!(
            read(r#"{"agent":"a","parentThinking":"high"}"#),
            Some(crate::agent_def::ThinkingLevel::High)
        );
        assert_eq!(
            read(r#"{"agent":"a","parentThinking":" XHigh "}"#),
            Some(crate::agent_def::ThinkingLevel::Xhigh)
        );
        assert_eq!(read(r#"{"agent":"a","parentThinking":"ultra"}"#), None);
        assert_eq!(read(r#"{"agent":"a","parentThinking":null}"#), None);
        assert_eq!(read(r#"{"agent":"a"}"#), None);
        let written = serde_json::to_value(SpawnParams {
            agent: "a".into(),
            parent_thinking: Some(crate::agent_def::ThinkingLevel::Max),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(written["parentThinking"], "max");
    }
}
