//! Herdr's id shapes, as a real server makes them: workspaces `w1`, tabs `w1:t1` and panes
//! `w1:p1` numbered per workspace in a bijective base 32 over `1-9A-Z` without `I`, `L`, `O`
//! and `U`, with `0` as the 32nd digit — so `w1:p9` is followed by `w1:pA` … `w1:pZ`, `w1:p0`,
//! `w1:p11` — never reused within a server's life, but starting again at `w1:p1` on a fresh
//! session. Terminal ids (`term_661905df528db37`) are unique across restarts.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// The digits, in order.
const DIGITS: &[u8; 32] = b"123456789ABCDEFGHJKMNPQRSTVWXYZ0";

/// `n` (from 1) in Herdr's public numbering.
pub(crate) fn encode(mut n: u64) -> String {
    let mut out = Vec::new();
    while n > 0 {
        let digit = (n - 1) % 32;
        out.push(DIGITS[usize::try_from(digit).unwrap_or(0)]);
        n = (n - 1) / 32;
    }
    out.reverse();
    String::from_utf8(out).unwrap_or_default()
}

/// Counts terminals across every fake in this process, so a restarted fake never repeats one.
static TERMINALS: AtomicU64 = AtomicU64::new(0);

/// A fresh terminal id: a time-based hex number, like Herdr's, plus a process-wide counter.
pub(crate) fn terminal_id() -> String {
    let micros = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_micros());
    let count = TERMINALS.fetch_add(1, Ordering::Relaxed);
    format!("term_{micros:x}{count:x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_run_like_herdrs() {
        let shown: Vec<String> = [1, 9, 10, 31, 32, 33, 53].map(encode).to_vec();
        assert_eq!(shown, ["1", "9", "A", "Z", "0", "11", "1N"]);
        assert_ne!(terminal_id(), terminal_id());
    }
}
