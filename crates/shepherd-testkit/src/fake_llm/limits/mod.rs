//! Rate-limit mode: the fake model server refuses requests the way a provider does when a
//! credential sends too many at once, too many per window, or has used up its plan.
//!
//! It exists so tests can show how Shepherd rides out provider limits (a sheep that gets a 429
//! waits and goes on; a usage limit is reported with its reset time) without a real provider
//! and without waiting minutes. The limiter sits in the request path before a script step is
//! taken: a refused request consumes no step, is recorded in the request log with
//! [`RecordedRequest::limited`](super::RecordedRequest::limited) set, and is counted per
//! credential with the time it was refused ([`LimitedReply`]), so a benchmark can count the
//! 429s sent after the first one. The replies carry each provider's own body and headers
//! ([`reply`]).
//!
//! A request's credential is its `x-api-key`, `authorization: Bearer …` or `x-goog-api-key`
//! header, or its `key=` query parameter; requests without one share [`ANONYMOUS`](super::ANONYMOUS). The
//! policies ([`Limits`]) apply to each credential separately and combine; the first that
//! refuses decides the reply: a pending usage limit, then the in-flight cap, then the window.

pub(crate) mod reply;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::request::{Api, LimitReason};

/// The rate-limit policies of one server, each applied per credential; all off by default.
///
/// The JSON form (`POST /_limits`, durations in milliseconds):
///
/// ```json
/// {"max_in_flight": 1, "requests": 5, "window_ms": 60000, "retry_after_ms": 2000,
///  "overloaded": false,
///  "usage_limits": [{"count": 1, "credential": "sk-a", "model": "m", "reset_in_ms": 3600000}]}
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    /// A request arriving while this many requests of the same credential are still being
    /// answered (including replies held by `hold` or `delay`) is refused. `0` refuses all.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_in_flight: Option<usize>,
    /// At most this many requests per credential are admitted per [`Limits::window`] (a fixed
    /// window starting at the credential's first admitted request); refused requests do not
    /// count. `0` refuses all.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requests: Option<u32>,
    /// The window of [`Limits::requests`] (default one minute). JSON: `window_ms`.
    #[serde(rename = "window_ms", with = "millis")]
    pub window: Duration,
    /// The wait a rate-limit reply announces (`retry-after` and the providers' reset headers).
    /// Default: what is left of the window, or one second for the in-flight cap. JSON:
    /// `retry_after_ms`.
    #[serde(
        rename = "retry_after_ms",
        with = "optional_millis",
        skip_serializing_if = "Option::is_none"
    )]
    pub retry_after: Option<Duration>,
    /// Refuse with "overloaded" instead of "rate limited": Anthropic's 529 `overloaded_error`,
    /// a 503 for OpenAI and Gemini. Usage limits are not affected.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub overloaded: bool,
    /// Usage-limit replies still to send, first match first ([`UsageLimit`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub usage_limits: Vec<UsageLimit>,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_in_flight: None,
            requests: None,
            window: Duration::from_secs(60),
            retry_after: None,
            overloaded: false,
            usage_limits: Vec::new(),
        }
    }
}

impl Limits {
    /// No limits.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Parses the JSON form.
    ///
    /// # Errors
    /// When the text is not limits (unknown fields are refused, to catch typos).
    pub fn from_json(text: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// Caps the requests of one credential being answered at once.
    #[must_use]
    pub fn with_max_in_flight(mut self, max: usize) -> Self {
        self.max_in_flight = Some(max);
        self
    }

    /// Admits at most `requests` per credential per `window`.
    #[must_use]
    pub fn with_window(mut self, requests: u32, window: Duration) -> Self {
        self.requests = Some(requests);
        self.window = window;
        self
    }

    /// Announces this wait in rate-limit replies.
    #[must_use]
    pub fn with_retry_after(mut self, retry_after: Duration) -> Self {
        self.retry_after = Some(retry_after);
        self
    }

    /// Refuses as "overloaded" rather than "rate limited".
    #[must_use]
    pub fn with_overloaded(mut self) -> Self {
        self.overloaded = true;
        self
    }

    /// Adds a usage limit.
    #[must_use]
    pub fn with_usage_limit(mut self, usage: UsageLimit) -> Self {
        self.usage_limits.push(usage);
        self
    }
}

/// The next [`UsageLimit::count`] matching requests get the provider's usage-limit reply ("you
/// have used your plan; it resets at …"), then the entry is gone and service goes on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UsageLimit {
    /// How many requests get it (default 1).
    #[serde(default = "one")]
    pub count: usize,
    /// Only requests of this credential (any when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credential: Option<String>,
    /// Only requests naming this model or answered from this queue (`default`, `toolless`);
    /// any when absent. JSON: `model` or `queue`.
    #[serde(default, alias = "queue", skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// When the limit resets, from the reply (default one hour). JSON: `reset_in_ms`.
    #[serde(rename = "reset_in_ms", with = "millis", default = "an_hour")]
    pub reset_in: Duration,
}

fn one() -> usize {
    1
}

fn an_hour() -> Duration {
    Duration::from_secs(3600)
}

impl UsageLimit {
    /// The next `count` requests of any credential, resetting in `reset_in`.
    #[must_use]
    pub fn next(count: usize, reset_in: Duration) -> Self {
        Self {
            count,
            credential: None,
            model: None,
            reset_in,
        }
    }

    /// Only requests of `credential`.
    #[must_use]
    pub fn for_credential(mut self, credential: impl Into<String>) -> Self {
        self.credential = Some(credential.into());
        self
    }

    /// Only requests naming `model` (or answered from the queue of that name).
    #[must_use]
    pub fn for_model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    fn matches(&self, credential: &str, model: &str, queue: &str) -> bool {
        self.count > 0
            && self.credential.as_deref().is_none_or(|c| c == credential)
            && self
                .model
                .as_deref()
                .is_none_or(|m| m == model || m == queue)
    }
}

/// One refused request, in the order they were refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LimitedReply {
    /// The request's [`RecordedRequest::seq`](super::RecordedRequest::seq).
    pub request: usize,
    /// Its credential.
    pub credential: String,
    /// Its model.
    pub model: String,
    /// Its wire format.
    pub api: Api,
    /// The policy that refused it.
    pub reason: LimitReason,
    /// The HTTP status sent.
    pub status: u16,
    /// The wait announced (a usage limit's reset). JSON: `retry_after_ms`.
    #[serde(rename = "retry_after_ms", with = "millis")]
    pub retry_after: Duration,
    /// When it was refused, since the server started. JSON: `at_ms`.
    #[serde(rename = "at_ms", with = "millis")]
    pub at: Duration,
}

/// Why a request is refused, with what the reply needs to say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refusal {
    pub(crate) reason: LimitReason,
    /// The wait to announce (for a usage limit, the time to its reset).
    pub(crate) retry_after: Duration,
    /// The limit, for the reply's message and headers (0 for a usage limit).
    pub(crate) limit: u64,
    /// What the limit counts: `requests per minute`, `concurrent requests`.
    pub(crate) per: String,
    /// Answer as "overloaded".
    pub(crate) overloaded: bool,
}

/// One credential's fixed window.
#[derive(Debug, Clone, Copy)]
struct Window {
    start: Instant,
    admitted: u32,
}

/// The limiter's state, behind the server's lock.
#[derive(Debug)]
pub(crate) struct Limiter {
    limits: Limits,
    started: Instant,
    in_flight: BTreeMap<String, usize>,
    windows: BTreeMap<String, Window>,
    replies: Vec<LimitedReply>,
}

impl Default for Limiter {
    fn default() -> Self {
        Self {
            limits: Limits::default(),
            started: Instant::now(),
            in_flight: BTreeMap::new(),
            windows: BTreeMap::new(),
            replies: Vec::new(),
        }
    }
}

impl Limiter {
    /// Replaces the policies; the windows start afresh, while the requests in flight and the
    /// record of refusals stay.
    pub(crate) fn set(&mut self, limits: Limits) {
        self.limits = limits;
        self.windows.clear();
    }

    /// The policies, with the usage-limit replies still to send.
    pub(crate) fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Admits a request (it is then in flight until [`Limiter::finished`]) or refuses it.
    pub(crate) fn admit(
        &mut self,
        credential: &str,
        model: &str,
        queue: &str,
        now: Instant,
    ) -> Result<(), Refusal> {
        let limits = &mut self.limits;
        if let Some(index) = limits
            .usage_limits
            .iter()
            .position(|usage| usage.matches(credential, model, queue))
        {
            let usage = &mut limits.usage_limits[index];
            usage.count -= 1;
            let reset_in = usage.reset_in;
            if usage.count == 0 {
                limits.usage_limits.remove(index);
            }
            return Err(Refusal {
                reason: LimitReason::UsageLimit,
                retry_after: reset_in,
                limit: 0,
                per: "requests per day".to_owned(),
                overloaded: false,
            });
        }
        let refuse = |reason, natural, limit, per: String| Refusal {
            reason,
            retry_after: limits.retry_after.unwrap_or(natural),
            limit,
            per,
            overloaded: limits.overloaded,
        };
        let in_flight = self.in_flight.get(credential).copied().unwrap_or(0);
        if let Some(max) = limits.max_in_flight
            && in_flight >= max
        {
            let limit = u64::try_from(max).unwrap_or(u64::MAX);
            return Err(refuse(
                LimitReason::InFlight,
                Duration::from_secs(1),
                limit,
                "concurrent requests".to_owned(),
            ));
        }
        if let Some(requests) = limits.requests {
            let window = self.windows.entry(credential.to_owned()).or_insert(Window {
                start: now,
                admitted: 0,
            });
            if now.saturating_duration_since(window.start) >= limits.window {
                *window = Window {
                    start: now,
                    admitted: 0,
                };
            }
            if window.admitted >= requests {
                let left = (window.start + limits.window).saturating_duration_since(now);
                return Err(refuse(
                    LimitReason::Window,
                    left,
                    u64::from(requests),
                    format!("requests per {}", describe(limits.window)),
                ));
            }
            window.admitted += 1;
        }
        *self.in_flight.entry(credential.to_owned()).or_default() += 1;
        Ok(())
    }

    /// An admitted request of `credential` has been answered.
    pub(crate) fn finished(&mut self, credential: &str) {
        if let Some(count) = self.in_flight.get_mut(credential) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                self.in_flight.remove(credential);
            }
        }
    }

    /// How long after the server started `now` is.
    pub(crate) fn elapsed(&self, now: Instant) -> Duration {
        now.saturating_duration_since(self.started)
    }

    /// Records a refusal.
    pub(crate) fn record(&mut self, reply: LimitedReply) {
        self.replies.push(reply);
    }

    /// Every refusal so far.
    pub(crate) fn replies(&self) -> &[LimitedReply] {
        &self.replies
    }

    /// Refusals per credential.
    pub(crate) fn counts(&self) -> BTreeMap<String, usize> {
        let mut counts = BTreeMap::new();
        for reply in &self.replies {
            *counts.entry(reply.credential.clone()).or_default() += 1;
        }
        counts
    }
}

/// A window as a rate-limit message says it: `minute`, `hour`, `30s`, `250ms`.
fn describe(window: Duration) -> String {
    match window.as_millis() {
        60_000 => "minute".to_owned(),
        3_600_000 => "hour".to_owned(),
        86_400_000 => "day".to_owned(),
        ms if ms % 1000 == 0 => format!("{}s", ms / 1000),
        ms => format!("{ms}ms"),
    }
}

/// A duration as whole milliseconds.
pub(crate) fn as_millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// Serde for a [`Duration`] as whole milliseconds.
mod millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(
        duration: &Duration,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        serializer.serialize_u64(super::as_millis(*duration))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Duration, D::Error> {
        u64::deserialize(deserializer).map(Duration::from_millis)
    }
}

/// Serde for an optional [`Duration`] as whole milliseconds.
mod optional_millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    #[expect(
        clippy::ref_option,
        reason = "serde's `with` passes a reference to the field"
    )]
    pub(super) fn serialize<S: Serializer>(
        duration: &Option<Duration>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match duration {
            Some(duration) => serializer.serialize_some(&super::as_millis(*duration)),
            None => serializer.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<Duration>, D::Error> {
        Option::<u64>::deserialize(deserializer).map(|ms| ms.map(Duration::from_millis))
    }
}
