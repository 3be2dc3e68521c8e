//! The records of provider limits: how long limited tasks wait ([`LimitWaits`]), a task's
//! limit episode ([`TaskLimit`], [`LimitEpisode`]), a provider key's [`Limiter`] and the view
//! the front ends show of it, and the clock times they print. The rules that change them are in
//! [`super`].

use std::collections::{BTreeSet, VecDeque};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ids::AgentId;
use crate::limit::{ErrorClass, ProviderKey};

/// How long a sheep let go after a reset may take to show a model response before the next
/// sheep on its key is let go anyway (ms).
pub const PROBE_GRACE_MS: i64 = 30_000;

/// How long a wait lasts when the error named no reset (ms), by class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LimitWaits {
    /// A rate or usage limit without a reset time.
    pub limit_ms: i64,
    /// The first wait after a server error; each further one in the same task doubles.
    pub transient_ms: i64,
    /// Server errors one task rides out before it fails.
    pub transient_tries: u32,
}

impl Default for LimitWaits {
    fn default() -> Self {
        Self {
            limit_ms: 60_000,
            transient_ms: 5_000,
            transient_tries: 5,
        }
    }
}

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
    /// How it ended: `resumed`, or what ended the task during it.
    pub ended: String,
}

/// One provider key's limiter.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Limiter {
    /// The provider, as shown to people.
    pub provider: String,
    /// Until when the key is closed (ms).
    pub until: i64,
    /// Whether the reset has passed and sheep are being let go one at a time.
    #[serde(default)]
    pub releasing: bool,
    /// Limited sheep, in the order they met the limit: the first to be let go.
    #[serde(default)]
    pub held: VecDeque<AgentId>,
    /// The sheep let go since the reset.
    #[serde(default)]
    pub released: BTreeSet<AgentId>,
    /// The sheep let go last, until it shows a model response, and since when.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe: Option<(AgentId, i64)>,
}

/// A task's limit as `status` and `herd` show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LimitView {
    /// Rate limit, usage limit or server error.
    pub class: ErrorClass,
    /// The provider.
    pub provider: String,
    /// When the wait began (ms).
    pub since: i64,
    /// When it is due to end (ms).
    pub until: i64,
    /// Whether the reset passed and the sheep waits for its turn to go on.
    pub queued: bool,
}

impl LimitView {
    /// How a front end says it, times in the reader's own zone:
    /// `rate-limited until 14:05:09 (anthropic)`, `rate-limited, resuming in turn (anthropic)`
    /// once the reset passed, `server error, retrying at 14:05:09 (openai)`.
    pub fn describe(&self) -> String {
        let until = local_clock(self.until);
        match (self.class, self.queued) {
            (ErrorClass::Transient | ErrorClass::Fatal, _) => {
                format!("server error, retrying at {until} ({})", self.provider)
            }
            (_, true) => format!("rate-limited, resuming in turn ({})", self.provider),
            (_, false) => format!("rate-limited until {until} ({})", self.provider),
        }
    }
}

/// `HH:MM:SS` of `ms` in the system's time zone (UTC where it has none).
pub fn local_clock(ms: i64) -> String {
    crate::time::from_millis(ms)
        .to_zoned(jiff::tz::TimeZone::system())
        .strftime("%H:%M:%S")
        .to_string()
}

/// `HH:MM:SS` (UTC) of `ms`.
pub fn clock(ms: i64) -> String {
    crate::time::from_millis(ms)
        .strftime("%H:%M:%S")
        .to_string()
}
