//! A task's limit episodes: the one it is waiting out ([`TaskLimit`]) and those it went through
//! ([`LimitEpisode`]). The rules that open and close them are in `herd::limits`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::limit::{ErrorClass, ProviderKey};

/// A task's open limit episode.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskLimit {
    /// Rate limit, usage limit or server error.
    pub class: ErrorClass,
    /// The provider, as shown to people.
    pub provider: String,
    /// The key it holds, when its sheep has one (a server error holds none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<ProviderKey>,
    /// When the episode began (ms).
    pub since: i64,
    /// When the wait is due to end (ms).
    pub until: i64,
    /// The provider's message.
    pub message: String,
    /// Whether `until` is Shepherd's guess (the error named no reset): the probe tries then.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub guessed: bool,
}

/// A limit episode a task went through, as its note records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LimitEpisode {
    /// Rate limit, usage limit or server error.
    pub class: ErrorClass,
    /// The provider.
    pub provider: String,
    /// When it began (ms).
    pub since: i64,
    /// How long the task waited (ms).
    pub waited_ms: i64,
    /// How many limit replies the episode drew.
    pub replies: u32,
    /// How it ended: `resumed`, [`RIDDEN_OUT`](crate::herd::limits::RIDDEN_OUT), or what ended
    /// the task during it.
    pub ended: String,
    /// Whether its wait was Shepherd's guess (the error named no reset).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub guessed: bool,
}
