//! The records of provider limits the rules keep: how long limited tasks wait
//! ([`LimitWaits`]), a provider key's [`Limiter`], a limit an agent rode out ([`RiddenOut`]) and
//! the view the front ends show of a task's limit, and the clock times they print. The rules
//! that change them are in [`super`]; a task's own episodes ([`crate::herd::TaskLimit`],
//! [`crate::herd::LimitEpisode`]) are records of the task, with the herd's model.

use std::collections::{BTreeSet, VecDeque};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ids::AgentId;
use crate::limit::ErrorClass;

/// How long the sheep let go after a reset may take to show a model response before the next
/// round on their key is let go anyway (ms).
pub const PROBE_GRACE_MS: i64 = 30_000;

/// The first round let go after the probe answered.
pub const FIRST_BATCH: u32 = 2;

/// How long a wait lasts when the error named no reset (ms): a few seconds, doubling with each
/// refusal in a row up to the cap, so a short limit costs a short wait and a long one a few
/// tries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LimitWaits {
    /// The longest wait (`rateLimitWaitSeconds`).
    pub limit_ms: i64,
    /// The first wait for a rate or usage limit that named no reset.
    pub first_ms: i64,
    /// The first wait after a server error.
    pub transient_ms: i64,
}

impl Default for LimitWaits {
    fn default() -> Self {
        Self {
            limit_ms: 60_000,
            first_ms: 2_000,
            transient_ms: 5_000,
        }
    }
}

impl LimitWaits {
    /// The `n`-th guessed wait in a row (from 0) starting at `first`: doubled `n` times, never
    /// past [`LimitWaits::limit_ms`].
    pub fn guess(&self, first: i64, n: u32) -> i64 {
        first
            .max(0)
            .saturating_mul(1_i64 << n.min(30))
            .min(self.limit_ms.max(0))
    }
}

/// How an episode the agent rode out with its own retries ended.
pub const RIDDEN_OUT: &str = "ridden out by the agent";

/// One provider key's limiter. Closed until the reset; then one sheep probes, and once it
/// shows a model response the others go in rounds of [`Limiter::batch`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Limiter {
    /// The provider, as shown to people.
    pub provider: String,
    /// Until when the key is closed (ms).
    pub until: i64,
    /// Whether the reset has passed and sheep are being let go.
    #[serde(default)]
    pub releasing: bool,
    /// Limited sheep, in the order they met the limit: the first to be let go.
    #[serde(default)]
    pub held: VecDeque<AgentId>,
    /// The sheep let go since the reset.
    #[serde(default)]
    pub released: BTreeSet<AgentId>,
    /// The sheep of the round let go last that have not shown a model response yet.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub answering: BTreeSet<AgentId>,
    /// When the round let go last went (ms).
    #[serde(default)]
    pub round_at: i64,
    /// The probe showed a model response: the rest go in rounds.
    #[serde(default)]
    pub probed: bool,
    /// How many go in the next round: doubled each time a whole round answered, halved when
    /// one of a round is refused.
    #[serde(default = "first_batch")]
    pub batch: u32,
    /// Refusals in a row that named no reset: the next guessed wait is doubled this often.
    #[serde(default)]
    pub guesses: u32,
    /// The key's known room: the most of its sheep it was seen serving at once (their runs
    /// going when a reset passed, or when one let go answered), lowered to the sheep still
    /// served when one let go beside them is refused. 0 while unknown: no sheep was being
    /// served at a reset, and the release is the probe and rounds of [`Limiter::batch`].
    #[serde(default, skip_serializing_if = "is_zero")]
    pub room: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

fn first_batch() -> u32 {
    FIRST_BATCH
}

/// A limit an agent rode out with its own retries, as its output showed it: the herd records it
/// as an episode of the task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RiddenOut {
    /// Rate limit, usage limit or server error.
    pub class: ErrorClass,
    /// When its first refusal was seen (ms).
    pub since: i64,
    /// How long the agent waited in all (ms).
    pub waited_ms: i64,
    /// How many refusals it retried.
    pub replies: u32,
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
    /// Whether `until` is Shepherd's guess (the provider named no reset): a probe goes then.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub guessed: bool,
}

impl LimitView {
    /// How a front end says it, times in the reader's own zone:
    /// `rate-limited until 14:05:09 (anthropic)`, `rate-limited, next try at 14:05:09
    /// (anthropic)` when the provider named no reset, `rate-limited, resuming in turn
    /// (anthropic)` once the reset passed, `server error, retrying at 14:05:09 (openai)`.
    pub fn describe(&self) -> String {
        let until = local_clock(self.until);
        match (self.class, self.queued, self.guessed) {
            (ErrorClass::Transient | ErrorClass::Fatal, _, _) => {
                format!("server error, retrying at {until} ({})", self.provider)
            }
            (_, true, _) => format!("rate-limited, resuming in turn ({})", self.provider),
            (_, false, true) => format!("rate-limited, next try at {until} ({})", self.provider),
            (_, false, false) => format!("rate-limited until {until} ({})", self.provider),
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
