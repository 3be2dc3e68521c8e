//! The closed sets a command line accepts, checked by clap before anything starts: a bad
//! `--backend foo` is a usage error (exit status 2) that lists the values, and never reaches
//! a broker. Each value is sent on as the protocol's word for it.

use clap::ValueEnum;

/// `--backend`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum BackendArg {
    /// Herdr inside Herdr, tmux inside tmux, else headless.
    Auto,
    /// No terminal: output goes to a log.
    Headless,
    /// A tmux window or pane.
    Tmux,
    /// A Herdr tab or pane.
    Herdr,
}

impl BackendArg {
    /// The protocol's word.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Headless => "headless",
            Self::Tmux => "tmux",
            Self::Herdr => "herdr",
        }
    }
}

/// `--placement`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum PlacementArg {
    /// A background tab (window).
    Tab,
    /// A pane to the right of the caller's.
    #[value(name = "pane_right")]
    PaneRight,
    /// A pane below the caller's.
    #[value(name = "pane_down")]
    PaneDown,
    /// A workspace (session) of its own.
    Workspace,
}

impl PlacementArg {
    /// The protocol's word.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Tab => "tab",
            Self::PaneRight => "pane_right",
            Self::PaneDown => "pane_down",
            Self::Workspace => "workspace",
        }
    }
}

/// `read --source`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum SourceArg {
    /// What the terminal shows now.
    Visible,
    /// Recent output with the terminal's line wrapping.
    Recent,
    /// Recent output with wrapped lines joined.
    RecentUnwrapped,
    /// What Shepherd reads to tell the sheep's state.
    Detection,
}

impl SourceArg {
    /// The protocol's word.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Visible => "visible",
            Self::Recent => "recent",
            Self::RecentUnwrapped => "recent-unwrapped",
            Self::Detection => "detection",
        }
    }
}
