//! The test sheep's script: what it does with each task and each question.
//!
//! A script is a list of steps separated by `;`, run in order for every delegated task:
//!
//! | step | effect |
//! |---|---|
//! | `done <status> [text]` | `shepherd_done` with completed, blocked or failed |
//! | `ask <target> <text>` | asks (`expectsReply`) and waits for the answer |
//! | `tell <target> <text>` | a plain message |
//! | `sleep <ms>` | waits |
//! | `print <text>` | writes a line to stdout |
//! | `crash <code>` | exits at once with that status |
//! | `answer <text>` | waits for the next question and answers it |
//! | `await` | waits for the next plain message and keeps its text as `{reply}` |
//! | `forget` | ends its turn without done, then waits for the reminder |
//! | `idle` | does nothing more for this task |
//! | `need <VAR>` | fails the task (`done failed <VAR> is not set`) unless the variable is set and not empty, as a sheep whose provider key did not reach it would |
//!
//! In texts and targets, `{task}` is the task's first line, `{reply}` the last answer received
//! and `{id}` the task id. Targets are `shepherd` or an agent id.
//! Questions that arrive are answered with `--on-question reply <text>` or ignored.

use shepherd_core::task::DoneStatus;

/// One step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Settle the task.
    Done {
        /// `completed`, `blocked` or `failed`.
        status: DoneStatus,
        /// The summary template.
        text: String,
    },
    /// Ask and wait for the answer.
    Ask {
        /// Who.
        target: String,
        /// The question template.
        text: String,
    },
    /// Send a plain message.
    Tell {
        /// Who.
        target: String,
        /// The text template.
        text: String,
    },
    /// Wait for the next question and answer it.
    Answer(String),
    /// Wait for the next plain message; its text becomes `{reply}`.
    Await,
    /// Wait this many milliseconds.
    Sleep(u64),
    /// Print a line.
    Print(String),
    /// Exit with this status.
    Crash(i32),
    /// End the turn without done; wait for the reminder.
    Forget,
    /// Stop handling this task.
    Idle,
    /// Fail the task and stop handling it unless this variable is set and not empty.
    Need(String),
}

/// A script that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad test-sheep step `{step}`: {reason}")]
pub struct ScriptError {
    step: String,
    reason: &'static str,
}

/// Parses `step; step; …`.
pub fn parse(script: &str) -> Result<Vec<Step>, ScriptError> {
    script
        .split(';')
        .map(str::trim)
        .filter(|step| !step.is_empty())
        .map(|step| {
            let bad = |reason| ScriptError {
                step: step.to_owned(),
                reason,
            };
            let (word, rest) = step.split_once(' ').unwrap_or((step, ""));
            let rest = rest.trim();
            let (first, tail) = rest.split_once(' ').unwrap_or((rest, ""));
            Ok(match word {
                "done" => Step::Done {
                    status: DoneStatus::parse(first)
                        .ok_or_else(|| bad("status must be completed, blocked or failed"))?,
                    text: tail.trim().to_owned(),
                },
                "ask" if !first.is_empty() => Step::Ask {
                    target: first.to_owned(),
                    text: tail.trim().to_owned(),
                },
                "tell" if !first.is_empty() => Step::Tell {
                    target: first.to_owned(),
                    text: tail.trim().to_owned(),
                },
                "answer" => Step::Answer(rest.to_owned()),
                "sleep" => Step::Sleep(rest.parse().map_err(|_| bad("sleep takes milliseconds"))?),
                "print" => Step::Print(rest.to_owned()),
                "crash" => Step::Crash(
                    rest.parse()
                        .map_err(|_| bad("crash takes an exit status"))?,
                ),
                "forget" => Step::Forget,
                "await" => Step::Await,
                "idle" => Step::Idle,
                "need" if !rest.is_empty() && !rest.contains(' ') => Step::Need(rest.to_owned()),
                "need" => return Err(bad("need takes one variable name")),
                _ => return Err(bad("unknown step")),
            })
        })
        .collect()
}

/// Fills `{task}`, `{reply}` and `{id}` into a template.
pub fn fill(template: &str, task: &str, reply: &str, id: &str) -> String {
    let first_line = task.lines().next().unwrap_or_default();
    template
        .replace("{task}", first_line)
        .replace("{reply}", reply)
        .replace("{id}", id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_step() {
        let steps = parse("print hi; ask shepherd which file?; sleep 5; done completed got {reply}; crash 3; forget; idle; tell x y; await; need API_KEY").unwrap();
        assert_eq!(steps.len(), 10);
        assert_eq!(steps[8], Step::Await);
        assert_eq!(steps[9], Step::Need("API_KEY".into()));
        assert!(parse("need").is_err());
        assert_eq!(
            steps[1],
            Step::Ask {
                target: "shepherd".into(),
                text: "which file?".into()
            }
        );
        assert_eq!(
            steps[3],
            Step::Done {
                status: DoneStatus::Completed,
                text: "got {reply}".into()
            }
        );
        assert!(parse("done maybe").is_err());
        assert!(parse("jump").is_err());
        assert_eq!(
            fill("{task} / {reply} / {id}", "a\nb", "r", "t1"),
            "a / r / t1"
        );
    }
}
