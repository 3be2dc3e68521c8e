//! Finalising the notes of tasks that never reached a sheep — a chain step after the chain
//! stopped, a task cancelled while it waited for a slot, a task whose sheep failed to start —
//! so no note `plan` reserved is left `pending` for ever. The broker does the writing
//! (`release`); a note whose task started is left to the broker's own settlement.

use std::time::Duration;

use shepherd_core::protocol::{ReleaseParams, ReleaseResult, ReleasedNote, method};

use crate::commands::connect::{self, Target};

/// Longest the broker may take to finalise them.
const RELEASE_DEADLINE: Duration = Duration::from_secs(60);

/// One planned note whose task never started: its path, the run's status for the task
/// (`failed` stays failed; `skipped` and `cancelled` become cancelled) and why.
#[derive(Debug, Clone)]
pub(super) struct Unlaunched {
    pub(super) note: String,
    pub(super) status: String,
    pub(super) reason: String,
}

/// Asks the broker to finalise every note in `unlaunched`. Returns one warning per failure.
pub(super) async fn release_all(target: &Target, unlaunched: Vec<Unlaunched>) -> Vec<String> {
    if unlaunched.is_empty() {
        return Vec::new();
    }
    let params = ReleaseParams {
        notes: unlaunched
            .into_iter()
            .map(|u| ReleasedNote {
                note: u.note,
                status: if u.status == "failed" {
                    "failed".to_owned()
                } else {
                    "cancelled".to_owned()
                },
                reason: u.reason,
            })
            .collect(),
    };
    let released = async {
        let mut client =
            connect::parent(target, connect::deadline_after(RELEASE_DEADLINE)?).await?;
        let result: ReleaseResult = client
            .call(method::RELEASE, &params, RELEASE_DEADLINE)
            .await?;
        Ok::<_, crate::error::CliError>(result)
    };
    match tokio::time::timeout(RELEASE_DEADLINE, released).await {
        Ok(Ok(_)) => Vec::new(),
        Ok(Err(err)) => vec![format!("unstarted notes could not be finalised: {err}")],
        Err(_) => vec!["unstarted notes were not finalised within 60 s".to_owned()],
    }
}
