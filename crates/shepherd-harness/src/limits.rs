//! What the coding agents print when a provider limits them, read into the shared classes.
//!
//! The provider bodies are read by `shepherd_core::limit::classify`; this module adds what the
//! agents say in their own words: a wall-clock reset in the user's time zone ("try again at
//! 6:55 PM", "resets 3pm"), which only a reader of the local clock can turn into an instant.
//! Each adapter's `classify_error` calls these next to where its errors are read.

use jiff::Timestamp;
use jiff::civil::Time;
use jiff::tz::TimeZone;
use shepherd_core::harness::Harness;
use shepherd_core::limit::{Classified, ProviderKey, Reset};

use crate::UserEnv;
use crate::pi::provider_key_vars;
use crate::profile;

/// The next instant, after `now` in `zone`, at the wall-clock time that follows one of
/// `markers` in `text` (`6:55 PM`, `3pm`, `15:30`). The agents say it to the minute, cut
/// short: Codex says "try again at 4:10 AM" at 4:10:44 for a reset seconds ahead. So a named
/// minute still to come is waited for to its start, and one running now, or ended moments ago
/// (the text read late), names no instant at all: the limit is over somewhere in it, and the
/// herd probes on its short, doubling backoff instead of waiting out the minute (up to 60 s
/// late) or, for a minute just gone, the same time tomorrow.
/// How long ago a named minute may have begun and still be read as the limit's own minute
/// (the one running, or one the text was read just after): beyond it, the time is tomorrow's.
const RECENT_MINUTE_SECS: i64 = 5 * 60;

pub(crate) fn clock_reset(
    text: &str,
    markers: &[&str],
    now: Timestamp,
    zone: &TimeZone,
) -> Option<Reset> {
    let lower = text.to_ascii_lowercase();
    let after = markers
        .iter()
        .find_map(|marker| lower.find(marker).map(|at| &lower[at + marker.len()..]))?;
    let after = after.trim_start();
    if let Some((date, rest)) = calendar_date(after) {
        // A reset on another day names it: "try again at Dec 5th, 2026 12:02 AM".
        let at = date
            .to_datetime(wall_clock(rest)?)
            .to_zoned(zone.clone())
            .ok()?;
        return Some(Reset::AtMs(at.timestamp().as_millisecond()));
    }
    let time = wall_clock(after)?;
    let today = now.to_zoned(zone.clone());
    let mut at = today.with().time(time).build().ok()?;
    if at.timestamp() <= now {
        let lately = now
            .checked_sub(jiff::SignedDuration::from_secs(RECENT_MINUTE_SECS))
            .ok()?;
        if at.timestamp() > lately {
            return None;
        }
        at = at.tomorrow().ok()?;
    }
    Some(Reset::AtMs(at.timestamp().as_millisecond()))
}

/// A date at the start of `text` the way Codex names a reset on another day (`dec 5th, 2026 `,
/// lower-cased), and what follows it.
fn calendar_date(text: &str) -> Option<(jiff::civil::Date, &str)> {
    const MONTHS: [&str; 12] = [
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ];
    let (month_name, rest) = text.split_once(' ')?;
    let month = MONTHS.iter().position(|m| month_name.starts_with(m))? + 1;
    let (day, rest) = rest.split_once(',')?;
    let day: i8 = day
        .trim_end_matches(|c: char| c.is_ascii_alphabetic())
        .parse()
        .ok()?;
    let rest = rest.trim_start();
    let year_end = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    let year: i16 = rest[..year_end].parse().ok()?;
    let date = jiff::civil::Date::new(year, i8::try_from(month).ok()?, day).ok()?;
    Some((date, rest[year_end..].trim_start()))
}

/// `6:55 pm`, `6:55pm`, `3pm`, `15:30` at the start of `text`.
fn wall_clock(text: &str) -> Option<Time> {
    let end = text
        .find(|c: char| !(c.is_ascii_digit() || c == ':'))
        .unwrap_or(text.len());
    let (clock, rest) = text.split_at(end);
    let mut parts = clock.split(':');
    let mut hour: i8 = parts.next()?.parse().ok()?;
    let minute: i8 = parts.next().map_or(Some(0), |m| m.parse().ok())?;
    let rest = rest.trim_start();
    if rest.starts_with("pm") && hour < 12 {
        hour += 12;
    } else if rest.starts_with("am") && hour == 12 {
        hour = 0;
    } else if !(rest.starts_with("am") || rest.starts_with("pm") || clock.contains(':')) {
        return None;
    }
    Time::new(hour, minute, 0, 0).ok()
}

/// The shared reading of `error`, with a wall-clock reset after `markers` when it names none
/// other, read in the user's time zone.
pub(crate) fn classify_with_clock(error: &str, markers: &[&str], now: Timestamp) -> Classified {
    let shared = shepherd_core::limit::classify(error);
    if !shared.class.waits() {
        return shared;
    }
    shared.or_reset(clock_reset(error, markers, now, &TimeZone::system()))
}

/// The provider key of a sheep on `harness` with `model` (`provider/id` for pi and opencode),
/// read from the environment it inherits (`user`, with `overrides` on top) and, for a sheep on
/// another machine, its host. Only a digest of the endpoint and credential is kept.
pub fn provider_key(
    harness: Harness,
    model: Option<&str>,
    user: &dyn UserEnv,
    overrides: &[(String, String)],
    host: Option<&str>,
) -> ProviderKey {
    let var = |name: &str| {
        overrides
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .or_else(|| user.var(name).and_then(|v| v.into_string().ok()))
            .filter(|v| !v.is_empty())
    };
    let vars = &profile(harness).provider;
    let provider = match (vars.name, model.and_then(|m| m.split_once('/'))) {
        (None, Some((provider, _))) => provider.to_owned(),
        (None, None) => harness.as_str().to_owned(),
        (Some(provider), _) => provider.to_owned(),
    };
    let credentials = match vars.key_vars {
        [] => provider_key_vars(&provider).unwrap_or_default(),
        named => named,
    };
    let endpoint = vars
        .endpoint_vars
        .iter()
        .find_map(|name| var(name))
        .map(|url| match host {
            Some(host) => format!("{host}|{url}"),
            None => url,
        })
        .or_else(|| host.map(str::to_owned));
    let credential = credentials
        .iter()
        .find_map(|name| var(name).map(|value| (*name, value)));
    ProviderKey::new(
        &provider,
        endpoint.as_deref(),
        credential.as_ref().map(|(n, v)| (*n, v.as_str())),
    )
}

/// The provider `harness` reaches when it has one of its own (`anthropic`, `openai`,
/// `google`); `None` for pi and opencode, whose provider is their model's.
pub fn provider_name(harness: Harness) -> Option<&'static str> {
    profile(harness).provider.name
}

/// The variable a sheep on `harness` running `model` (`provider/id` for pi and opencode) reads
/// its provider's key from: the one of its variables the user has set, else the first. `None`
/// when it cannot be told (opencode or pi on a provider Shepherd does not know, or no model).
pub fn key_var(harness: Harness, model: Option<&str>, user: &dyn UserEnv) -> Option<&'static str> {
    let vars = match profile(harness).provider.key_vars {
        [] => {
            let (provider, _) = model?.split_once('/')?;
            provider_key_vars(provider)?
        }
        named => named,
    };
    vars.iter()
        .copied()
        .find(|name| user.var(name).is_some_and(|v| !v.is_empty()))
        .or_else(|| vars.first().copied())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str, now: &str) -> Option<String> {
        let now: Timestamp = now.parse().unwrap();
        clock_reset(text, &["try again at ", "resets "], now, &TimeZone::UTC).map(|r| match r {
            Reset::AtMs(ms) => Timestamp::from_millisecond(ms).unwrap().to_string(),
            Reset::AfterMs(ms) => format!("+{ms}"),
        })
    }

    #[test]
    fn a_reset_on_another_day_is_read_with_its_date() {
        assert_eq!(
            at(
                "or try again at Dec 5th, 2026 12:02 AM.",
                "2026-12-04T22:02:00Z"
            )
            .as_deref(),
            Some("2026-12-05T00:02:00Z")
        );
        assert_eq!(
            at(
                "or try again at Jan 1st, 2027 3:15 PM.",
                "2026-12-31T10:00:00Z"
            )
            .as_deref(),
            Some("2027-01-01T15:15:00Z")
        );
    }

    #[test]
    fn a_wall_clock_reset_is_the_next_such_time() {
        assert_eq!(
            at("or try again at 6:55 PM.", "2026-12-03T18:40:00Z").as_deref(),
            Some("2026-12-03T18:55:00Z")
        );
        assert_eq!(
            at("5-hour limit reached ∙ resets 3pm", "2026-12-03T18:40:00Z").as_deref(),
            Some("2026-12-04T15:00:00Z")
        );
        assert_eq!(
            at("try again at 12:05 am", "2026-12-03T18:40:00Z").as_deref(),
            Some("2026-12-04T00:05:00Z")
        );
        assert_eq!(
            at("or try again at 4:10 AM.", "2026-12-03T04:09:50Z").as_deref(),
            Some("2026-12-03T04:10:00Z"),
            "a minute to come is waited for to its start"
        );
        assert_eq!(
            at("or try again at 4:10 AM.", "2026-12-03T04:10:44Z"),
            None,
            "the limit ends somewhere in the minute that is running: probe, do not wait it out"
        );
        assert_eq!(
            at("or try again at 4:10 AM.", "2026-12-03T04:11:00Z"),
            None,
            "a minute just gone was read late, not named for tomorrow"
        );
        assert_eq!(
            at("or try again at 4:10 AM.", "2026-12-03T04:16:00Z").as_deref(),
            Some("2026-12-04T04:10:00Z")
        );
        assert_eq!(at("try again at noon", "2026-12-03T18:40:00Z"), None);
        assert_eq!(at("resets 3 things", "2026-12-03T18:40:00Z"), None);
    }

    use shepherd_core::limit::ErrorClass;

    /// What each agent printed when the fake provider answered 429, a usage limit, 529/503,
    /// 500 and 401 with its retries off (Claude Code 2.1.197, Codex 0.171.0, Gemini CLI 0.61.0,
    /// opencode 1.18.33, as the driver reads them).
    const SEEN: &[(Harness, &str, ErrorClass, Option<i64>)] = &[
        (
            Harness::ClaudeCode,
            "API Error: Request rejected (429) · Number of request tokens has exceeded your per-minute rate limit",
            ErrorClass::RateLimit,
            None,
        ),
        (
            Harness::ClaudeCode,
            "API Error: 529 Overloaded. This is a server-side issue, usually temporary — try again in a moment. If it persists, check your inference gateway (127.0.0.1:41231).",
            ErrorClass::RateLimit,
            None,
        ),
        (
            Harness::ClaudeCode,
            "API Error: 500 Internal server error. This is a server-side issue, usually temporary — try again in a moment. If it persists, check your inference gateway (127.0.0.1:41231).",
            ErrorClass::Transient,
            None,
        ),
        (
            Harness::ClaudeCode,
            "Invalid API key · Fix external API key",
            ErrorClass::Fatal,
            None,
        ),
        (
            Harness::ClaudeCode,
            "Claude AI usage limit reached|1764788400",
            ErrorClass::UsageLimit,
            Some(1_764_788_400_000),
        ),
        (
            Harness::Codex,
            "exceeded retry limit, last status: 429 Too Many Requests",
            ErrorClass::RateLimit,
            None,
        ),
        (
            Harness::Codex,
            "You\u{2019}ve hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro), visit https://chatgpt.com/settings/usage to purchase more credits or try again at 6:55 PM.",
            ErrorClass::UsageLimit,
            None,
        ),
        (
            Harness::Codex,
            "unexpected status 401 Unauthorized: Incorrect API key provided, url: http://127.0.0.1:40111/v1/responses",
            ErrorClass::Fatal,
            None,
        ),
        (
            Harness::Codex,
            "We\u{2019}re currently experiencing high demand, which may cause temporary errors.",
            ErrorClass::Transient,
            None,
        ),
        (
            Harness::Gemini,
            "[API Error: Resource has been exhausted (e.g. check quota).\nSuggested retry after 2s.]\nPlease wait and try again later. To increase your limits, request a quota increase through AI Studio, or switch to another /auth method",
            ErrorClass::RateLimit,
            Some(2_000),
        ),
        (
            Harness::Gemini,
            "[API Error: You have exhausted your daily quota on this model.]\nPlease wait and try again later. To increase your limits, request a quota increase through AI Studio, or switch to another /auth method",
            ErrorClass::UsageLimit,
            None,
        ),
        (
            Harness::Gemini,
            r#"[API Error: {"error":{"code":401,"message":"API key not valid","status":"UNAUTHENTICATED"}}]"#,
            ErrorClass::Fatal,
            None,
        ),
        (
            Harness::Gemini,
            r#"[API Error: {"error":{"code":500,"message":"Internal error encountered.","status":"INTERNAL"}}]"#,
            ErrorClass::Transient,
            None,
        ),
        (
            Harness::Gemini,
            "[API Error: The model is overloaded. Please try again later.]",
            ErrorClass::RateLimit,
            None,
        ),
        (
            Harness::Opencode,
            "429 Rate limit reached for requests. Please try again in 2s.",
            ErrorClass::RateLimit,
            Some(2_000),
        ),
        (
            Harness::Opencode,
            "429 The usage limit has been reached",
            ErrorClass::UsageLimit,
            None,
        ),
        (
            Harness::Opencode,
            "401 Incorrect API key provided",
            ErrorClass::Fatal,
            None,
        ),
        (
            Harness::Opencode,
            "500 The server had an error while processing your request. Sorry about that!",
            ErrorClass::Transient,
            None,
        ),
    ];

    #[test]
    fn each_agent_s_own_error_words_are_classified() {
        let now: Timestamp = "2026-12-03T18:40:00Z".parse().unwrap();
        for (harness, text, class, reset) in SEEN {
            let adapter = crate::adapter(*harness).unwrap();
            let seen = adapter.classify_error(text, now);
            assert_eq!(seen.class, *class, "{harness}: {text}");
            if let Some(reset) = reset {
                let at = seen.reset.map(|r| r.at(now.as_millisecond()));
                let want = if *reset > 1_000_000_000 {
                    *reset
                } else {
                    now.as_millisecond() + reset
                };
                assert_eq!(at, Some(want), "{harness}: {text}");
            }
        }
        // Codex's usage limit resets at a time of day, in the user's zone: some time ahead.
        let codex = crate::adapter(Harness::Codex).unwrap();
        let reset = codex
            .classify_error(SEEN[6].1, now)
            .reset
            .map(|r| r.at(now.as_millisecond()));
        assert!(
            reset.is_some_and(
                |at| at > now.as_millisecond() && at <= now.as_millisecond() + 86_400_000
            ),
            "{reset:?}"
        );
    }
}
