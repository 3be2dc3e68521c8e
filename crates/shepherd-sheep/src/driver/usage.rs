//! What a headless turn uses, reported to the broker response by response.
//!
//! A task's budget counts another agent's model responses, tool calls, tokens and cost the way
//! it counts pi's turns: each finished response is one `turn` report with what it added, and
//! the broker answers `stop` once the task has reached its budget (it has then settled the
//! task `blocked`, naming the limit), and the driver ends the agent's run. A response counts as
//! finished when the next one begins, or when the run ends; tokens and cost that an agent
//! reports only at the end of its run count in the last response. The run's first response is
//! also told as soon as it shows (`answered`), for a provider key that lets its held sheep go
//! one round after another once each round has answered.

use shepherd_core::budget::Usage;
use shepherd_harness::Turn;

use super::Driver;

/// How much of a turn the broker has been told about.
#[derive(Debug, Default)]
pub(super) struct UsageReports {
    /// Whether the run's first response was reported as it showed.
    answered: bool,
    responses: u64,
    tool_calls: u64,
    tokens: u64,
    cost: f64,
}

impl UsageReports {
    /// Reports the responses of `turn` that are finished: all but the one in flight, or all of
    /// them once the run has ended. Returns the limit the task reached, when the broker says to
    /// stop.
    pub(super) async fn report(
        &mut self,
        driver: &mut Driver,
        turn: &Turn,
        run_ended: bool,
    ) -> Option<String> {
        if !self.answered && turn.responses > 0 {
            // Told at once, not when the next response begins: a key letting its sheep go
            // after a limit waits for this answer before it lets the next ones go.
            self.answered = true;
            driver.report_answered().await;
        }
        let finished = if run_ended {
            turn.responses
        } else {
            turn.responses.saturating_sub(1)
        };
        while self.responses < finished {
            let usage = self.take(turn);
            if let Some(limit) = driver.report_usage(usage).await {
                return Some(limit);
            }
        }
        None
    }

    /// The next response's usage: what the turn added since the last report.
    fn take(&mut self, turn: &Turn) -> Usage {
        let tokens = turn.tokens_in + turn.tokens_out + turn.cache_read + turn.cache_write;
        let cost = turn.cost.unwrap_or(0.0);
        let usage = Usage {
            turns: 1,
            tool_calls: turn.tool_calls.saturating_sub(self.tool_calls),
            tokens: tokens.saturating_sub(self.tokens),
            cost: (cost - self.cost).max(0.0),
        };
        self.responses += 1;
        self.tool_calls = turn.tool_calls;
        self.tokens = tokens;
        self.cost = cost;
        usage
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_response_reports_what_it_added() {
        let mut reports = UsageReports::default();
        let mut turn = Turn::default();
        turn.responses = 1;
        turn.tool_calls = 2;
        turn.tokens_in = 100;
        turn.tokens_out = 10;
        let first = reports.take(&turn);
        assert_eq!((first.turns, first.tool_calls, first.tokens), (1, 2, 110));
        turn.responses = 2;
        turn.tool_calls = 3;
        turn.tokens_out = 30;
        turn.cost = Some(0.5);
        let second = reports.take(&turn);
        assert_eq!(
            (second.turns, second.tool_calls, second.tokens, second.cost),
            (1, 1, 20, 0.5)
        );
    }
}
