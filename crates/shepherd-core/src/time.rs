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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_has_millis_and_z() {
        let ts = from_millis(1_755_163_800_123);
        assert_eq!(iso(ts), "2025-08-14T09:30:00.123Z");
        assert_eq!(parse_iso(&iso(ts)), Some(ts));
    }
}
