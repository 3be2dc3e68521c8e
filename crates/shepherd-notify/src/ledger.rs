//! Which needs to tell now: each episode once, at most a few notifications a minute, and what
//! was told remembered in the herd's state directory so a restarted broker does not tell it
//! again.
//!
//! A need is told when its key is not in the ledger. The ledger keeps a key while its need
//! lasts and forgets it once the need is gone (answered, pruned): keys name episodes, so a gone
//! episode never comes back under the same key. At most [`BURST`] notifications go out in any
//! [`WINDOW`]; when more needs arrive than that leaves room for, the last room goes to one
//! notification that lists the rest, and with no room at all they wait for the window to open
//! (a need that ends meanwhile is never told). The ledger is saved after the sends, so a broker
//! killed between a send and the save tells that need again rather than never.

use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use shepherd_core::herd::needs::Need;

/// Most notifications in one [`WINDOW`].
pub const BURST: usize = 5;
/// The rate limit's window (ms).
pub const WINDOW: i64 = 60_000;
/// The ledger's file name in the herd's state directory.
pub const FILE: &str = "notified.json";
const FORMAT: u32 = 1;

/// What the file holds.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Stored {
    format: u32,
    /// Each told need's key, with when it was told (ms).
    told: BTreeMap<String, i64>,
}

/// What to send now.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// Needs told one by one.
    pub single: Vec<Need>,
    /// Needs folded into one notification.
    pub folded: Vec<Need>,
    /// When to look again for needs held back by the rate limit.
    pub retry_at: Option<i64>,
}

impl Plan {
    /// Whether nothing is to be sent.
    pub fn is_empty(&self) -> bool {
        self.single.is_empty() && self.folded.is_empty()
    }
}

/// The told keys and the recent sends.
#[derive(Debug)]
pub struct Ledger {
    file: PathBuf,
    told: BTreeMap<String, i64>,
    sent: VecDeque<i64>,
}

impl Ledger {
    /// The ledger kept in `state_dir`; a missing or unreadable file starts an empty one (the
    /// worst it costs is a need told again).
    pub fn open(state_dir: &Path) -> Self {
        let file = state_dir.join(FILE);
        let stored = fs_err::read_to_string(&file)
            .ok()
            .and_then(|text| serde_json::from_str::<Stored>(&text).ok())
            .filter(|stored| stored.format == FORMAT)
            .unwrap_or_default();
        Self {
            file,
            told: stored.told,
            sent: VecDeque::new(),
        }
    }

    /// Whether `key` was told.
    pub fn was_told(&self, key: &str) -> bool {
        self.told.contains_key(key)
    }

    /// Decides what of `needs` (everything that needs the person at `now`) to send now, and
    /// records it as told and sent.
    pub fn plan(&mut self, needs: &[Need], now: i64) -> Plan {
        self.told
            .retain(|key, _| needs.iter().any(|n| &n.key == key));
        while self.sent.front().is_some_and(|at| now - at >= WINDOW) {
            self.sent.pop_front();
        }
        let fresh: Vec<Need> = needs
            .iter()
            .filter(|n| !self.told.contains_key(&n.key))
            .cloned()
            .collect();
        if fresh.is_empty() {
            return Plan::default();
        }
        let room = BURST.saturating_sub(self.sent.len());
        let mut plan = Plan::default();
        if room == 0 {
            plan.retry_at = self.sent.front().map(|at| at + WINDOW);
            return plan;
        }
        if fresh.len() <= room {
            plan.single = fresh;
        } else {
            let mut fresh = fresh;
            plan.folded = fresh.split_off(room - 1);
            plan.single = fresh;
        }
        for need in plan.single.iter().chain(&plan.folded) {
            self.told.insert(need.key.clone(), now);
        }
        let sends = plan.single.len() + usize::from(!plan.folded.is_empty());
        self.sent.extend(std::iter::repeat_n(now, sends));
        plan
    }

    /// Writes the told keys (atomically, private to the user).
    ///
    /// # Errors
    /// When the file cannot be written.
    pub fn save(&self) -> std::io::Result<()> {
        let stored = Stored {
            format: FORMAT,
            told: self.told.clone(),
        };
        let text = serde_json::to_vec_pretty(&stored).map_err(std::io::Error::other)?;
        shepherd_fs::write_atomic(&self.file, &text, Some(0o600))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shepherd_core::herd::needs::NeedKind;

    fn need(key: &str) -> Need {
        Need {
            key: key.into(),
            kind: NeedKind::Blocked,
            subject: "worker: a".into(),
            headline: format!("{key} is blocked"),
            words: None,
            page: "/".into(),
            at: 0,
        }
    }

    fn keys(needs: &[Need]) -> Vec<&str> {
        needs.iter().map(|n| n.key.as_str()).collect()
    }

    #[test]
    fn each_episode_is_told_once_even_after_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let mut ledger = Ledger::open(dir.path());
        let now = [need("a"), need("b")];
        assert_eq!(keys(&ledger.plan(&now, 0).single), ["a", "b"]);
        assert!(ledger.plan(&now, 1).is_empty(), "told already");
        ledger.save().unwrap();

        let mut reopened = Ledger::open(dir.path());
        assert!(
            reopened.plan(&now, 2).is_empty(),
            "a restart tells nothing again"
        );
        let later = [need("b"), need("c")];
        assert_eq!(keys(&reopened.plan(&later, 3).single), ["c"]);
        assert!(!reopened.was_told("a"), "a gone need is forgotten");
    }

    #[test]
    fn past_the_burst_the_rest_fold_into_one_and_then_wait_for_the_window() {
        let dir = tempfile::tempdir().unwrap();
        let mut ledger = Ledger::open(dir.path());
        let many: Vec<Need> = (0..8).map(|i| need(&format!("n{i}"))).collect();
        let plan = ledger.plan(&many, 0);
        assert_eq!(keys(&plan.single), ["n0", "n1", "n2", "n3"]);
        assert_eq!(keys(&plan.folded), ["n4", "n5", "n6", "n7"]);

        let mut more = many.clone();
        more.push(need("n8"));
        let held = ledger.plan(&more, 10_000);
        assert!(held.is_empty());
        assert_eq!(
            held.retry_at,
            Some(WINDOW),
            "the window opens a minute after the burst"
        );
        assert_eq!(keys(&ledger.plan(&more, WINDOW).single), ["n8"]);
    }

    #[test]
    fn a_need_that_ends_while_held_is_never_told() {
        let dir = tempfile::tempdir().unwrap();
        let mut ledger = Ledger::open(dir.path());
        let burst: Vec<Need> = (0..BURST).map(|i| need(&format!("n{i}"))).collect();
        assert_eq!(ledger.plan(&burst, 0).single.len(), BURST);
        let mut with_late = burst.clone();
        with_late.push(need("late"));
        assert!(ledger.plan(&with_late, 1).is_empty());
        assert!(
            ledger.plan(&burst, WINDOW).is_empty(),
            "it ended before the window opened"
        );
    }

    #[test]
    fn a_damaged_file_starts_afresh() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(FILE), "{ not json").unwrap();
        let mut ledger = Ledger::open(dir.path());
        assert_eq!(keys(&ledger.plan(&[need("a")], 0).single), ["a"]);
    }
}
