//! The budget and stall-watchdog arguments of `shepherd_delegate` (and the budget of
//! `shepherd_run`), as the pi tools offer them. A budget is four flat arguments (`maxTurns`,
//! `maxToolCalls`, `maxTokens`, `maxCost`) rather than one object, because the strictest hosts
//! take only flat schemas (see `schema`).

use serde::Deserialize;
use shepherd_core::budget::Budget;
use shepherd_core::error_code::ErrorCode;

use crate::error::ToolError;

/// The budget arguments, as they come in a call.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct BudgetArgs {
    pub(crate) max_turns: Option<f64>,
    pub(crate) max_tool_calls: Option<f64>,
    pub(crate) max_tokens: Option<f64>,
    pub(crate) max_cost: Option<f64>,
}

impl BudgetArgs {
    /// The budget these arguments give, if any; a bad value is refused naming it.
    pub(crate) fn budget(&self) -> Result<Option<Budget>, ToolError> {
        let count = |name: &str, value: Option<f64>| match value {
            None => Ok(None),
            Some(n) if n.is_finite() && n >= 1.0 && n.fract() == 0.0 => Ok(Some(n as u64)),
            Some(n) => Err(ToolError::new(
                ErrorCode::InvalidBudget,
                format!("{name} `{n}` must be a whole number, 1 or more"),
            )),
        };
        let budget = Budget {
            turns: count("maxTurns", self.max_turns)?,
            tool_calls: count("maxToolCalls", self.max_tool_calls)?,
            tokens: count("maxTokens", self.max_tokens)?,
            cost: self.max_cost,
        };
        budget
            .check()
            .map_err(|err| ToolError::new(ErrorCode::InvalidBudget, err.to_string()))?;
        Ok((!budget.is_empty()).then_some(budget))
    }
}
