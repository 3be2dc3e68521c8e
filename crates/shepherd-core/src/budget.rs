//! Task budgets: the most turns, tool calls, tokens or cost one delegated task may use.
//!
//! A budget comes from the sheep's agent definition (frontmatter `budget:`), from the
//! delegation, or from a run plan; a later source overrides an earlier one key by key. It only
//! means something for a sheep whose harness reports what each turn used (pi does); the broker
//! refuses it for any other. The herd adds each reported turn to the task's [`Usage`], and the
//! turn that reaches a limit stops the task: it settles `blocked`, and the error names the limit
//! ([`Budget::reached`]).

use std::fmt;

use serde::{Deserialize, Serialize};

/// Limits on one task. Absent keys do not limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Budget {
    /// Most model turns (one model response and the tool calls in it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turns: Option<u64>,
    /// Most tool calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<u64>,
    /// Most tokens, input, output and cache together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u64>,
    /// Most cost, in the currency the model's pricing uses (US dollars for the usual providers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
}

/// What a task has used so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// Model turns.
    #[serde(default)]
    pub turns: u64,
    /// Tool calls.
    #[serde(default)]
    pub tool_calls: u64,
    /// Tokens, input, output and cache together.
    #[serde(default)]
    pub tokens: u64,
    /// Cost.
    #[serde(default)]
    pub cost: f64,
}

impl Usage {
    /// Whether nothing was used yet.
    pub fn is_zero(&self) -> bool {
        *self == Self::default()
    }

    /// Adds one report.
    pub fn add(&mut self, more: &Self) {
        self.turns = self.turns.saturating_add(more.turns);
        self.tool_calls = self.tool_calls.saturating_add(more.tool_calls);
        self.tokens = self.tokens.saturating_add(more.tokens);
        if more.cost.is_finite() && more.cost > 0.0 {
            self.cost += more.cost;
        }
    }
}

/// One kind of limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Limit {
    /// `turns`.
    Turns,
    /// `toolCalls`.
    ToolCalls,
    /// `tokens`.
    Tokens,
    /// `cost`.
    Cost,
}

impl Limit {
    /// The key as budgets spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Turns => "turns",
            Self::ToolCalls => "toolCalls",
            Self::Tokens => "tokens",
            Self::Cost => "cost",
        }
    }

    fn noun(self) -> &'static str {
        match self {
            Self::Turns => "turns",
            Self::ToolCalls => "tool calls",
            Self::Tokens => "tokens",
            Self::Cost => "cost",
        }
    }
}

/// A limit a task reached, with what it used.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reached {
    /// Which limit.
    pub limit: Limit,
    /// The budget's value.
    pub allowed: f64,
    /// What the task used.
    pub used: f64,
}

impl fmt::Display for Reached {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.limit {
            Limit::Cost => write!(
                f,
                "budget reached: cost {:.4} of {:.4} used (budget cost = {})",
                self.used, self.allowed, self.allowed
            ),
            limit => write!(
                f,
                "budget reached: {} of {} {} used (budget {} = {})",
                self.used,
                self.allowed,
                limit.noun(),
                limit.as_str(),
                self.allowed
            ),
        }
    }
}

/// A budget value that is not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid budget {key} `{value}`: expected {expected}",
    expected = if *.key == "cost" { "a positive number" } else { "a whole number, 1 or more" }
)]
pub struct InvalidBudget {
    /// The key.
    pub key: &'static str,
    /// The value as given.
    pub value: String,
}

impl Budget {
    /// Whether no key is set.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// This budget with every key `over` sets replaced by its value.
    pub fn overlay(self, over: Self) -> Self {
        Self {
            turns: over.turns.or(self.turns),
            tool_calls: over.tool_calls.or(self.tool_calls),
            tokens: over.tokens.or(self.tokens),
            cost: over.cost.or(self.cost),
        }
    }

    /// Checks every set key: counts at least 1, cost a positive number.
    pub fn check(&self) -> Result<(), InvalidBudget> {
        let counts = [
            ("turns", self.turns),
            ("toolCalls", self.tool_calls),
            ("tokens", self.tokens),
        ];
        for (key, value) in counts {
            if value == Some(0) {
                return Err(InvalidBudget {
                    key,
                    value: "0".to_owned(),
                });
            }
        }
        if let Some(cost) = self.cost
            && !(cost.is_finite() && cost > 0.0)
        {
            return Err(InvalidBudget {
                key: "cost",
                value: cost.to_string(),
            });
        }
        Ok(())
    }

    /// The first limit `usage` has reached, if any.
    pub fn reached(&self, usage: &Usage) -> Option<Reached> {
        let counts = [
            (Limit::Turns, self.turns, usage.turns),
            (Limit::ToolCalls, self.tool_calls, usage.tool_calls),
            (Limit::Tokens, self.tokens, usage.tokens),
        ];
        for (limit, allowed, used) in counts {
            if let Some(allowed) = allowed
                && used >= allowed
            {
                return Some(Reached {
                    limit,
                    allowed: allowed as f64,
                    used: used as f64,
                });
            }
        }
        self.cost
            .filter(|allowed| usage.cost >= *allowed)
            .map(|allowed| Reached {
                limit: Limit::Cost,
                allowed,
                used: usage.cost,
            })
    }
}

impl fmt::Display for Budget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        if let Some(turns) = self.turns {
            parts.push(format!("turns {turns}"));
        }
        if let Some(calls) = self.tool_calls {
            parts.push(format!("toolCalls {calls}"));
        }
        if let Some(tokens) = self.tokens {
            parts.push(format!("tokens {tokens}"));
        }
        if let Some(cost) = self.cost {
            parts.push(format!("cost {cost}"));
        }
        if parts.is_empty() {
            f.write_str("none")
        } else {
            f.write_str(&parts.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_turn_that_reaches_a_limit_names_it() {
        let budget = Budget {
            turns: Some(2),
            cost: Some(0.5),
            ..Budget::default()
        };
        let mut usage = Usage::default();
        usage.add(&Usage {
            turns: 1,
            tool_calls: 3,
            tokens: 100,
            cost: 0.1,
        });
        assert_eq!(budget.reached(&usage), None);
        usage.add(&Usage {
            turns: 1,
            ..Usage::default()
        });
        let reached = budget.reached(&usage).unwrap();
        assert_eq!(reached.limit, Limit::Turns);
        assert_eq!(
            reached.to_string(),
            "budget reached: 2 of 2 turns used (budget turns = 2)"
        );
        let costly = Usage {
            cost: 0.75,
            ..Usage::default()
        };
        assert_eq!(budget.reached(&costly).unwrap().limit, Limit::Cost);
    }

    #[test]
    fn overlay_replaces_key_by_key_and_check_refuses_zero() {
        let from_definition = Budget {
            turns: Some(10),
            tokens: Some(5000),
            ..Budget::default()
        };
        let on_delegate = Budget {
            turns: Some(2),
            ..Budget::default()
        };
        let merged = from_definition.overlay(on_delegate);
        assert_eq!(merged.turns, Some(2));
        assert_eq!(merged.tokens, Some(5000));
        assert_eq!(merged.to_string(), "turns 2, tokens 5000");
        let zero = Budget {
            tool_calls: Some(0),
            ..Budget::default()
        };
        assert_eq!(
            zero.check().unwrap_err().to_string(),
            "invalid budget toolCalls `0`: expected a whole number, 1 or more"
        );
        let negative = Budget {
            cost: Some(-1.0),
            ..Budget::default()
        };
        assert!(negative.check().is_err());
        assert!(serde_json::from_str::<Budget>(r#"{"turn": 2}"#).is_err());
    }
}
