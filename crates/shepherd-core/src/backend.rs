//! Where a sheep runs: the terminal backend that holds it, where a visible one's pane goes,
//! what of its output can be read, and the facts that find it again ([`LaunchRecord`]).
//!
//! Both sets are closed and cross every boundary — the herd model and its journal, the
//! protocol, the settings, the command line — so they are types here, in the pure core, and
//! every layer passes the value instead of a string it would have to parse back. The backend a
//! request may ask for also includes `auto` ([`crate::settings::Backend`]); the one a sheep
//! runs in never does.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Which backend runs a sheep.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum BackendKind {
    /// A detached process; output kept in a log.
    Headless,
    /// A tmux window or pane.
    Tmux,
    /// A Herdr tab, pane or workspace.
    Herdr,
}

impl BackendKind {
    /// Every backend.
    pub const ALL: [Self; 3] = [Self::Headless, Self::Tmux, Self::Herdr];

    /// The wire and setting name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Headless => "headless",
            Self::Tmux => "tmux",
            Self::Herdr => "herdr",
        }
    }

    /// Whether the sheep has a pane people can look at.
    pub fn is_visible(self) -> bool {
        self != Self::Headless
    }
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is not one of a closed set's values.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} `{value}` is not one of {accepted}")]
pub struct UnknownName {
    /// What kind of value it should have been.
    pub what: &'static str,
    /// The value given.
    pub value: String,
    /// The accepted values, comma-separated.
    pub accepted: &'static str,
}

impl FromStr for BackendKind {
    type Err = UnknownName;

    fn from_str(raw: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|kind| kind.as_str() == raw)
            .ok_or_else(|| UnknownName {
                what: "backend",
                value: raw.to_owned(),
                accepted: "headless, tmux, herdr",
            })
    }
}

impl From<BackendKind> for Backend {
    fn from(kind: BackendKind) -> Self {
        match kind {
            BackendKind::Headless => Self::Headless,
            BackendKind::Tmux => Self::Tmux,
            BackendKind::Herdr => Self::Herdr,
        }
    }
}

/// Where a visible sheep goes.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "snake_case")]
pub enum Placement {
    /// A background tab (tmux: window). The default.
    #[default]
    Tab,
    /// Split the caller's pane to the right.
    #[cfg_attr(feature = "clap", value(name = "pane_right"))]
    PaneRight,
    /// Split the caller's pane downwards.
    #[cfg_attr(feature = "clap", value(name = "pane_down"))]
    PaneDown,
    /// A new workspace (tmux: session).
    Workspace,
}

impl Placement {
    /// Every placement.
    pub const ALL: [Self; 4] = [Self::Tab, Self::PaneRight, Self::PaneDown, Self::Workspace];

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Tab => "tab",
            Self::PaneRight => "pane_right",
            Self::PaneDown => "pane_down",
            Self::Workspace => "workspace",
        }
    }
}

impl fmt::Display for Placement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Placement {
    type Err = UnknownName;

    fn from_str(raw: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|placement| placement.as_str() == raw)
            .ok_or_else(|| UnknownName {
                what: "placement",
                value: raw.to_owned(),
                accepted: "tab, pane_right, pane_down, workspace",
            })
    }
}

/// What to read of a sheep's output.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum ReadSource {
    /// The current screen.
    Visible,
    /// Scrollback, soft-wrapped.
    Recent,
    /// Scrollback with soft wraps joined (default).
    #[default]
    #[serde(alias = "recent_unwrapped")]
    RecentUnwrapped,
    /// What an agent-state detector sees (Herdr only).
    Detection,
}

impl ReadSource {
    /// Every source.
    pub const ALL: [Self; 4] = [
        Self::Visible,
        Self::Recent,
        Self::RecentUnwrapped,
        Self::Detection,
    ];

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Visible => "visible",
            Self::Recent => "recent",
            Self::RecentUnwrapped => "recent-unwrapped",
            Self::Detection => "detection",
        }
    }
}

impl fmt::Display for ReadSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ReadSource {
    type Err = UnknownName;

    fn from_str(raw: &str) -> Result<Self, Self::Err> {
        let wanted = if raw == "recent_unwrapped" {
            "recent-unwrapped"
        } else {
            raw
        };
        Self::ALL
            .into_iter()
            .find(|source| source.as_str() == wanted)
            .ok_or_else(|| UnknownName {
                what: "source",
                value: raw.to_owned(),
                accepted: "visible, recent, recent-unwrapped, detection",
            })
    }
}

/// Facts a backend needs to find a sheep again, also after a broker restart.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LaunchRecord {
    /// The supervisor's pid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supervisor_pid: Option<u32>,
    /// The sheep program's pid, which leads its own process group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// The headless output log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log: Option<std::path::PathBuf>,
    /// The pane (tmux `%N`, Herdr `w1:p3`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pane: Option<String>,
    /// The window or tab holding the pane.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<String>,
    /// The tmux server socket or Herdr socket used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// How its supervisor applies its resource limits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<crate::resources::Enforcement>,
}

/// Which terminal backend sheep run in.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema,
)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    /// Herdr when inside a Herdr session, else tmux when inside tmux, else headless.
    #[default]
    Auto,
    /// Herdr panes.
    Herdr,
    /// tmux panes.
    Tmux,
    /// Child processes without a terminal.
    Headless,
}

impl Backend {
    /// Every backend, in the order they are listed to people.
    pub const ALL: [Self; 4] = [Self::Auto, Self::Herdr, Self::Tmux, Self::Headless];

    /// The lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Herdr => "herdr",
            Self::Tmux => "tmux",
            Self::Headless => "headless",
        }
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_through_text_and_json() {
        for kind in BackendKind::ALL {
            assert_eq!(kind.as_str().parse::<BackendKind>(), Ok(kind));
            assert_eq!(serde_json::to_value(kind).unwrap(), kind.as_str());
        }
        for placement in Placement::ALL {
            assert_eq!(placement.as_str().parse::<Placement>(), Ok(placement));
            assert_eq!(serde_json::to_value(placement).unwrap(), placement.as_str());
        }
        for source in ReadSource::ALL {
            assert_eq!(source.as_str().parse::<ReadSource>(), Ok(source));
            assert_eq!(serde_json::to_value(source).unwrap(), source.as_str());
        }
        assert_eq!(
            serde_json::from_value::<ReadSource>("recent_unwrapped".into()).unwrap(),
            ReadSource::RecentUnwrapped
        );
    }

    #[test]
    fn an_unknown_name_says_what_is_accepted() {
        let err = "auto".parse::<BackendKind>().unwrap_err();
        assert_eq!(
            err.to_string(),
            "backend `auto` is not one of headless, tmux, herdr"
        );
        let err = "left".parse::<Placement>().unwrap_err();
        assert_eq!(
            err.to_string(),
            "placement `left` is not one of tab, pane_right, pane_down, workspace"
        );
    }
}
