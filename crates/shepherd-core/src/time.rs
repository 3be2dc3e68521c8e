//! Timestamps as Shepherd writes them.
//!
//! Every timestamp in `session.json`, note frontmatter, envelopes and the journal is an ISO 8601
//! UTC instant with millisecond precision (`2025-08-14T09:30:00.000Z`), the shape the original
//! extension wrote with `Date.toISOString()`, so folders written by either read the same. Core
//! never reads a clock: callers pass a [`Timestamp`] in.

pub use jiff::Timestamp;

/// Formats `ts` as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
pub fn iso(ts: Timestamp) -> String {
    ts.strftime("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}

/// Parses an ISO 8601 instant, as written by [`iso`] or by the original extension.
pub fn parse_iso(text: &str) -> Option<Timestamp> {
    text.parse().ok()
}

/// Milliseconds since the Unix epoch; the unit of every deadline in the protocol.
pub fn millis(ts: Timestamp) -> i64 {
    ts.as_millisecond()
}

/// The instant `ms` milliseconds after the epoch, clamped to the representable range.
pub fn from_millis(ms: i64) -> Timestamp {
    Timestamp::from_millisecond(ms).unwrap_or(if ms < 0 {
        Timestamp::MIN
    } else {
        Timestamp::MAX
    })
}

/// A span for people, in its two largest units: `45s`, `12m 5s`, `3h 5m`, `2d 4h`.
pub fn human_duration_ms(ms: i64) -> String {
    let seconds = ms.max(0) / 1000;
    let (days, hours, minutes, secs) = (
        seconds / 86_400,
        seconds / 3600 % 24,
        seconds / 60 % 60,
        seconds % 60,
    );
    match (days, hours, minutes) {
        (0, 0, 0) => format!("{secs}s"),
        (0, 0, _) => format!("{minutes}m {secs}s"),
        (0, _, _) => format!("{hours}h {minutes}m"),
        _ => format!("{days}d {hours}h"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_read_in_their_two_largest_units() {
        assert_eq!(human_duration_ms(-5), "0s");
        assert_eq!(human_duration_ms(45_999), "45s");
        assert_eq!(human_duration_ms(725_000), "12m 5s");
        assert_eq!(human_duration_ms(11_100_000), "3h 5m");
        assert_eq!(human_duration_ms(187_200_000), "2d 4h");
    }

    #[test]
    fn iso_has_millis_and_z() {
        let ts = from_millis(1_755_163_800_123);
        assert_eq!(iso(ts), "2025-08-14T09:30:00.123Z");
        assert_eq!(parse_iso(&iso(ts)), Some(ts));
    }
}
