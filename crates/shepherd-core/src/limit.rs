//! Provider limits: what kind of error ended a sheep's turn, when a limit resets, and which
//! account it was charged to.
//!
//! A herd of coding agents on one account meets its provider's limits sooner than one agent
//! does, and a limit is not a failure: the task should wait for the reset and go on. Every
//! harness reads its agent's errors in its own place (`shepherd-harness` per agent, the broker's
//! `pi` module for pi); they all end here, in [`classify`], which sorts an error's text into an
//! [`ErrorClass`] and finds the reset time it names ([`Reset`]). What the herd does with it
//! (hold the key, resume the turn) is `herd::limits`. A [`ProviderKey`] names the account a sheep
//! spends (its provider, endpoint and credential) by a digest, so the secret is never kept.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// What an error that ended a turn means for its task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ErrorClass {
    /// The provider asks the caller to slow down (HTTP 429, `rate_limit_error`,
    /// `rate_limit_exceeded`, `RESOURCE_EXHAUSTED`) or is overloaded (Anthropic's 529
    /// `overloaded_error`, OpenAI's 503 `server_is_overloaded`, which Codex words "Selected
    /// model is at capacity", Gemini's "The model is overloaded"): wait and go on.
    RateLimit,
    /// The account's usage allowance is spent until a reset time: wait for it and go on.
    UsageLimit,
    /// A passing server or network failure (HTTP 5xx, a dropped connection): try again soon.
    Transient,
    /// Anything else (authentication, a bad request): the task fails, the only class that does.
    Fatal,
}

impl ErrorClass {
    /// Whether the task waits instead of failing.
    pub fn waits(self) -> bool {
        !matches!(self, Self::Fatal)
    }

    /// Whether the whole provider key waits (not only the sheep that met it).
    pub fn holds_key(self) -> bool {
        matches!(self, Self::RateLimit | Self::UsageLimit)
    }

    /// `rate limit`, `usage limit`, `server error` or `error`.
    pub fn words(self) -> &'static str {
        match self {
            Self::RateLimit => "rate limit",
            Self::UsageLimit => "usage limit",
            Self::Transient => "server error",
            Self::Fatal => "error",
        }
    }
}

/// When a limit resets, as an error's text says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reset {
    /// After this many milliseconds from when the error was read.
    AfterMs(i64),
    /// At this instant (ms since the epoch).
    AtMs(i64),
}

impl Reset {
    /// The instant it names, for an error read at `now` (ms).
    pub fn at(self, now: i64) -> i64 {
        match self {
            Self::AfterMs(ms) => now.saturating_add(ms.max(0)),
            Self::AtMs(at) => at,
        }
    }
}

/// An error's class and the reset it names, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Classified {
    /// What it means for the task.
    pub class: ErrorClass,
    /// When the limit resets, when the text says.
    pub reset: Option<Reset>,
}

impl Classified {
    /// A fatal error.
    pub const FATAL: Self = Self {
        class: ErrorClass::Fatal,
        reset: None,
    };

    /// The same class with `reset` when this one names none.
    pub fn or_reset(self, reset: Option<Reset>) -> Self {
        Self {
            reset: self.reset.or(reset),
            ..self
        }
    }
}

/// What a sheep reports (or the broker reads) about a limit that ended its turn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LimitSignal {
    /// Rate limit, usage limit or server error (never fatal: a fatal error fails the task).
    pub class: ErrorClass,
    /// When it resets (ms since the epoch), when the error said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reset_at: Option<i64>,
    /// The provider's message.
    pub message: String,
}

/// The account a sheep's model requests are charged to: its provider and a digest of its
/// endpoint and credential. Two sheep with the same key share one limit.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
pub struct ProviderKey(String);

impl ProviderKey {
    /// The key of `provider` reached at `endpoint` with the credential named `credential`
    /// holding `secret`. Only a digest of the three is kept, never the secret.
    pub fn new(provider: &str, endpoint: Option<&str>, credential: Option<(&str, &str)>) -> Self {
        let mut digest = Sha256::new();
        digest.update(endpoint.unwrap_or("").trim_end_matches('/').as_bytes());
        digest.update([0]);
        if let Some((name, secret)) = credential {
            digest.update(name.as_bytes());
            digest.update([0]);
            digest.update(secret.as_bytes());
        }
        let hash = hex::encode(digest.finalize());
        Self(format!("{provider}:{}", &hash[..12]))
    }

    /// A key read back from its text (`provider:digest`).
    pub fn parse(text: &str) -> Option<Self> {
        let (provider, digest) = text.split_once(':')?;
        (!provider.is_empty() && !digest.is_empty()).then(|| Self(text.to_owned()))
    }

    /// The provider's name, as shown to people (`anthropic`, `openai`, …).
    pub fn provider(&self) -> &str {
        self.0
            .split_once(':')
            .map_or(&self.0, |(provider, _)| provider)
    }

    /// The whole key.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for ProviderKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Sorts the text of an error that ended a turn (an agent's message, often with the
/// provider's JSON body in it) and finds the reset it names. An error Shepherd does not
/// recognise is fatal, as before limits were known.
pub fn classify(text: &str) -> Classified {
    let lower = text.to_ascii_lowercase();
    let has = |needles: &[&str]| needles.iter().any(|n| lower.contains(n));
    let reset = reset_in(&lower);
    let class = if has(&[
        "usage limit",
        "usage_limit",
        "limit reached|",
        "hour limit reached",
        "weekly limit",
        "daily limit",
        "quota exceeded for quota metric",
        "credit balance is too low",
        "out of extra usage",
        "hit your limit",
    ]) || lower.contains("anthropic-ratelimit-unified-status: rejected")
    {
        ErrorClass::UsageLimit
    } else if has(&[
        "rate_limit",
        "rate limit",
        "ratelimit",
        "too many requests",
        "resource_exhausted",
        "resource has been exhausted",
        "overloaded",
        "at capacity",
        "slow down",
        "quota",
    ]) || status_in(&lower, &[429, 529])
    {
        ErrorClass::RateLimit
    } else if has(&[
        "authentication_error",
        "invalid_api_key",
        "invalid api key",
        "invalid x-api-key",
        "api key not valid",
        "incorrect api key",
        "unauthenticated",
        "unauthorized",
        "permission_denied",
        "permission_error",
        "not logged in",
        "/login",
        "invalid_request_error",
        "bad request",
        "not_found_error",
        "model not found",
    ]) || status_in(&lower, &[400, 401, 402, 403, 404, 413, 422])
    {
        ErrorClass::Fatal
    } else if has(&[
        "internal server error",
        "api_error",
        "bad gateway",
        "service unavailable",
        "gateway timeout",
        "\"unavailable\"",
        "econnreset",
        "econnrefused",
        "etimedout",
        "socket hang up",
        "fetch failed",
        "connection reset",
        "connection refused",
        "connection error",
        "stream disconnected",
        "network error",
        "timed out",
    ]) || status_in(&lower, &[500, 502, 503, 504])
    {
        ErrorClass::Transient
    } else {
        ErrorClass::Fatal
    };
    Classified {
        class,
        reset: if class.waits() { reset } else { None },
    }
}

/// Whether `text` names one of `statuses` as a whole number (not inside a longer one).
fn status_in(text: &str, statuses: &[u16]) -> bool {
    numbers(text).any(|(_, n)| statuses.iter().any(|s| u64::from(*s) == n))
}

/// Every run of ASCII digits in `text` with its byte offset.
fn numbers(text: &str) -> impl Iterator<Item = (usize, u64)> + '_ {
    let bytes = text.as_bytes();
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < bytes.len() {
            if bytes[i].is_ascii_digit() {
                let start = i;
                while i < bytes.len() && bytes[i].is_ascii_digit() {
                    i += 1;
                }
                if let Ok(n) = text[start..i].parse() {
                    return Some((start, n));
                }
            } else {
                i += 1;
            }
        }
        None
    })
}

/// The reset a lower-cased error text names: `retry-after: 2`, `try again in 1m30s`,
/// `"retryDelay":"2s"`, `resets_in_seconds":3`, `resets_at":1733…`, `limit reached|1733…`,
/// `resets at 2026-12-03T18:00:00Z`.
fn reset_in(text: &str) -> Option<Reset> {
    for marker in [
        "resets_in_seconds\":",
        "resets_in_seconds=",
        "retry-after:",
        "retry-after\":",
        "retry_after\":",
        "retry after",
    ] {
        if let Some(at) = text.find(marker)
            && let Some(seconds) = leading_number(&text[at + marker.len()..])
        {
            return Some(Reset::AfterMs(seconds_ms(seconds)));
        }
    }
    for marker in [
        "resets_at\":",
        "limit reached|",
        "ratelimit-unified-reset:",
        "reset\":",
    ] {
        if let Some(at) = text.find(marker)
            && let Some(epoch) = leading_number(&text[at + marker.len()..])
            && epoch > 1_000_000_000.0
        {
            return Some(Reset::AtMs(epoch_ms(epoch)));
        }
    }
    for marker in [
        "try again in",
        "retry in",
        "retrydelay\":\"",
        "retrydelay\": \"",
        "resets in",
        "reset in",
        "please wait",
    ] {
        if let Some(at) = text.find(marker)
            && let Some(ms) = duration_ms(&text[at + marker.len()..])
        {
            return Some(Reset::AfterMs(ms));
        }
    }
    for marker in ["resets at ", "reset at ", "try again at ", "resets "] {
        if let Some(at) = text.find(marker)
            && let Some(instant) = instant_ms(&text[at + marker.len()..])
        {
            return Some(Reset::AtMs(instant));
        }
    }
    None
}

fn seconds_ms(seconds: f64) -> i64 {
    (seconds * 1000.0).ceil() as i64
}

fn epoch_ms(epoch: f64) -> i64 {
    // Seconds, unless it is already milliseconds.
    if epoch > 100_000_000_000.0 {
        epoch as i64
    } else {
        (epoch * 1000.0) as i64
    }
}

/// The number `text` starts with (after spaces and quotes).
fn leading_number(text: &str) -> Option<f64> {
    let text = text.trim_start_matches([' ', '"', '\'']);
    let end = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    text[..end].trim_end_matches('.').parse().ok()
}

/// A duration `text` starts with: `2s`, `2.5s`, `1m30s`, `20ms`, `3 seconds`,
/// `2 days 3 hours 5 minutes`, `1 hour and 5 min`.
fn duration_ms(text: &str) -> Option<i64> {
    let mut rest = text.trim_start();
    let mut total = 0.0_f64;
    let mut any = false;
    loop {
        rest = rest.trim_start_matches([' ', ',']);
        if let Some(after) = rest.strip_prefix("and ") {
            rest = after;
        }
        let end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let Ok(value) = rest[..end].trim_end_matches('.').parse::<f64>() else {
            break;
        };
        let after = rest[end..].trim_start();
        let unit_end = after
            .find(|c: char| !c.is_ascii_alphabetic())
            .unwrap_or(after.len());
        let unit = &after[..unit_end];
        let scale = match unit {
            "ms" | "millisecond" | "milliseconds" => 1.0,
            "s" | "sec" | "secs" | "second" | "seconds" => 1000.0,
            "m" | "min" | "mins" | "minute" | "minutes" => 60_000.0,
            "h" | "hr" | "hrs" | "hour" | "hours" => 3_600_000.0,
            "d" | "day" | "days" => 86_400_000.0,
            _ => break,
        };
        total += value * scale;
        any = true;
        rest = &after[unit_end..];
    }
    any.then(|| total.ceil() as i64)
}

/// An RFC 3339 instant `text` starts with.
fn instant_ms(text: &str) -> Option<i64> {
    let token: String = text
        .trim_start()
        .chars()
        .take_while(|c| !c.is_whitespace() && !matches!(c, '"' | ',' | ')' | ']'))
        .collect();
    let token = token.trim_end_matches('.');
    token
        .to_ascii_uppercase()
        .parse::<jiff::Timestamp>()
        .ok()
        .map(jiff::Timestamp::as_millisecond)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_764_780_000_000;

    fn class(text: &str) -> ErrorClass {
        classify(text).class
    }

    fn reset_at(text: &str) -> Option<i64> {
        classify(text).reset.map(|r| r.at(NOW))
    }

    #[test]
    fn provider_rate_limit_bodies_are_rate_limits() {
        for text in [
            r#"429 {"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}"#,
            r#"API Error: 529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
            r#"{"error":{"message":"Rate limit reached for requests. Please try again in 2s.","type":"requests","param":null,"code":"rate_limit_exceeded"}}"#,
            r#"[API Error: {"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED"}}]"#,
            "exceeded retry limit, last status: 429 Too Many Requests",
            r#"{"error":{"message":"The server is overloaded or not ready yet.","type":"server_error","param":null,"code":"server_is_overloaded"}}"#,
            "Selected model is at capacity. Please try a different model.",
            r#"[API Error: {"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}]"#,
        ] {
            assert_eq!(class(text), ErrorClass::RateLimit, "{text}");
        }
    }

    #[test]
    fn usage_limits_are_told_from_rate_limits() {
        for text in [
            "Claude AI usage limit reached|1764783600",
            "You've hit your usage limit. Upgrade to Pro or try again in 3 seconds.",
            r#"{"error":{"type":"usage_limit_reached","message":"The usage limit has been reached","resets_in_seconds":3}}"#,
            "5-hour limit reached ∙ resets 3pm",
        ] {
            assert_eq!(class(text), ErrorClass::UsageLimit, "{text}");
        }
    }

    #[test]
    fn authentication_and_bad_requests_are_fatal() {
        for text in [
            r#"401 {"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#,
            r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}"#,
            r#"{"error":{"code":401,"message":"API key not valid","status":"UNAUTHENTICATED"}}"#,
            "Not logged in · Please run /login",
            "400 the fake model refuses this request",
            "the model refuses",
        ] {
            assert_eq!(class(text), ErrorClass::Fatal, "{text}");
        }
    }

    #[test]
    fn server_errors_are_transient() {
        for text in [
            "500 Internal server error",
            r#"API Error: 503 {"error":{"code":503,"status":"UNAVAILABLE"}}"#,
            "stream disconnected before completion: connection reset",
            "fetch failed",
        ] {
            assert_eq!(class(text), ErrorClass::Transient, "{text}");
        }
    }

    #[test]
    fn numbers_inside_others_are_not_statuses() {
        assert_eq!(class("request 14290 refused"), ErrorClass::Fatal);
        assert_eq!(class("id 5290: something odd"), ErrorClass::Fatal);
    }

    #[test]
    fn resets_are_read_in_every_form_the_agents_print() {
        assert_eq!(reset_at("429 retry-after: 2"), Some(NOW + 2000));
        assert_eq!(
            reset_at("Rate limit reached. Please try again in 1m30s."),
            Some(NOW + 90_000)
        );
        assert_eq!(reset_at("rate limit, try again in 20ms"), Some(NOW + 20));
        assert_eq!(
            reset_at("You've hit your usage limit, try again in 2 days 3 hours 5 minutes"),
            Some(NOW + 2 * 86_400_000 + 3 * 3_600_000 + 5 * 60_000)
        );
        assert_eq!(
            reset_at(r#"RESOURCE_EXHAUSTED "retryDelay":"2.5s""#),
            Some(NOW + 2500)
        );
        assert_eq!(
            reset_at(r#"usage_limit_reached","resets_in_seconds":3}"#),
            Some(NOW + 3000)
        );
        assert_eq!(
            reset_at("Claude AI usage limit reached|1764783600"),
            Some(1_764_783_600_000)
        );
        assert_eq!(
            reset_at("usage limit reached; resets at 2026-12-03T18:00:00Z"),
            Some(
                "2026-12-03T18:00:00Z"
                    .parse::<jiff::Timestamp>()
                    .unwrap()
                    .as_millisecond()
            )
        );
        assert_eq!(reset_at("429 Too Many Requests"), None);
    }

    #[test]
    fn a_fatal_error_names_no_reset() {
        assert_eq!(classify("401 unauthorized, retry after 3").reset, None);
    }

    #[test]
    fn provider_keys_keep_no_secret_and_tell_accounts_apart() {
        let a = ProviderKey::new(
            "anthropic",
            Some("http://127.0.0.1:4000/"),
            Some(("ANTHROPIC_API_KEY", "sk-secret-1")),
        );
        let same = ProviderKey::new(
            "anthropic",
            Some("http://127.0.0.1:4000"),
            Some(("ANTHROPIC_API_KEY", "sk-secret-1")),
        );
        let other = ProviderKey::new(
            "anthropic",
            Some("http://127.0.0.1:4000"),
            Some(("ANTHROPIC_API_KEY", "sk-secret-2")),
        );
        assert_eq!(a, same);
        assert_ne!(a, other);
        assert!(!a.as_str().contains("secret"));
        assert_eq!(a.provider(), "anthropic");
        assert_eq!(ProviderKey::parse(a.as_str()), Some(a));
    }
}
