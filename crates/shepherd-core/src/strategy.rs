//! How a branch lands on its target: merge, squash, rebase or fast-forward only.
//!
//! A setting, a plan key, a flag and the merge request all name one, so it lives apart from the
//! merge queue's shapes ([`crate::land`]) and the settings that default it, neither of which
//! then has to know the other.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How a branch lands on its target.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum Strategy {
    /// A merge commit whose parents are the target and the branch (the default).
    #[default]
    #[serde(rename = "merge")]
    Merge,
    /// One commit on the target holding the branch's changes.
    #[serde(rename = "squash")]
    Squash,
    /// The branch's commits replayed on the target, one by one (a linear history).
    #[serde(rename = "rebase")]
    Rebase,
    /// The target moved to the branch's tip; refused when that is not a fast-forward.
    #[serde(rename = "ff-only")]
    FfOnly,
}

impl Strategy {
    /// Every strategy, in the order help lists them.
    pub const ALL: [Strategy; 4] = [Self::Merge, Self::Squash, Self::Rebase, Self::FfOnly];

    /// Its spelling (`ff-only`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Merge => "merge",
            Self::Squash => "squash",
            Self::Rebase => "rebase",
            Self::FfOnly => "ff-only",
        }
    }

    /// The strategy spelt `text`, or a one-line refusal naming it and what is accepted.
    pub fn parse(text: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|s| s.as_str() == text.trim())
            .ok_or_else(|| {
                format!("`{text}` is not a merge strategy: use merge, squash, rebase or ff-only")
            })
    }

    /// Whether a resolver or a fixer can work under it: only a strategy that makes a commit of
    /// its own (a merge, a squash) has one for them to make; a rebase replays the branch's own
    /// patches and a fast-forward makes none.
    pub fn takes_sheep(self) -> bool {
        matches!(self, Self::Merge | Self::Squash)
    }
}

impl std::fmt::Display for Strategy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
