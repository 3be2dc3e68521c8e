//! The broker's side of task budgets and the stall watchdog: reading them from a delegation
//! and the settings, and refusing them where the sheep's harness cannot honour them. What they
//! add to a task's note is written with the note (`fieldnotes`). The rules themselves live in
//! the pure herd (`herd::controls`).

use shepherd_core::budget::Budget;
use shepherd_core::error_code::ErrorCode;
use shepherd_core::settings::EffectiveSettings;

use crate::error::{BrokerError, BrokerResult};
use crate::sheep::harness::Controls;

/// The stall watchdog's period for a delegation (ms): the delegation's own (`0` turns it off),
/// else the `stallWatchdog` setting; `None` when it is off.
pub(crate) fn stall_ms(
    given: Option<f64>,
    settings: &EffectiveSettings,
) -> BrokerResult<Option<i64>> {
    match given {
        Some(minutes) if !(minutes.is_finite() && minutes >= 0.0) => Err(BrokerError::new(
            ErrorCode::InvalidStall,
            format!(
                "stall `{minutes}` is not a number of minutes, 0 or more (0 turns the watchdog off)"
            ),
        )),
        Some(0.0) => Ok(None),
        Some(minutes) => Ok(Some(((minutes * 60_000.0).round() as i64).max(1))),
        None => Ok(settings
            .stall_watchdog()
            .map(crate::state::broker::duration_ms)),
    }
}

/// Checks a delegation's budget and refuses any budget — its own or the definition's — for a
/// sheep whose harness does not report usage.
pub(crate) fn check_budget(
    given: Option<&Budget>,
    own: Option<&Budget>,
    harness: Controls,
    who: &str,
) -> BrokerResult<()> {
    if let Some(budget) = given {
        budget
            .check()
            .map_err(|err| BrokerError::new(ErrorCode::InvalidBudget, err.to_string()))?;
    }
    let any = given.or(own).is_some_and(|b| !b.is_empty());
    if any {
        harness.check_budget(who)?;
    }
    Ok(())
}
