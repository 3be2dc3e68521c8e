//! The processes of a pane's terminal session, read from the process table.
//!
//! Herdr's `pane.close` answers only once every process of the pane's session is gone: it sends
//! HUP, TERM and KILL, waiting up to 250 ms after each, and counts a zombie as alive — and it
//! holds every other request to the server meanwhile. A sheep's children that outlive it are
//! re-parented to init and linger as zombies until init reaps them (1.5–1.8 s was measured), so
//! closing such a pane at once would stall the whole server for ~800 ms. We wait for the
//! leftovers on our side first, where nobody else waits with us.

use std::time::{Duration, Instant};

/// How often the leftovers are looked at again (no event announces that init reaped one).
const RECHECK: Duration = Duration::from_millis(20);

/// Every process (zombies included) in session `leader`, other than the leader itself.
pub(crate) fn others_in(leader: u32) -> Vec<u32> {
    crate::platform::process_ids()
        .into_iter()
        .filter(|pid| {
            *pid != leader && crate::platform::stat(*pid).is_some_and(|s| s.session == leader)
        })
        .collect()
}

/// Waits until session `leader` holds no process but the leader, up to `until`. Returns
/// whether it got there.
pub(crate) fn wait_quiet(leader: u32, until: Instant) -> bool {
    loop {
        if others_in(leader).is_empty() {
            return true;
        }
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        std::thread::sleep(left.min(RECHECK));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_is_quiet_once_its_other_members_are_gone() {
        // `setsid` makes the shell a session leader; its background child is the other member.
        let mut leader = std::process::Command::new("setsid")
            .args(["sh", "-c", "sleep 0.3 & wait; exec sleep 30"])
            .spawn()
            .unwrap();
        let pid = leader.id();
        let until = Instant::now() + Duration::from_secs(10);
        while others_in(pid).is_empty() && Instant::now() < until {
            std::thread::sleep(RECHECK);
        }
        assert_eq!(
            others_in(pid).len(),
            1,
            "the background sleep is in the session"
        );
        assert!(wait_quiet(pid, until));
        assert!(others_in(pid).is_empty());
        leader.kill().unwrap();
        leader.wait().unwrap();
    }
}
