//! What needs the person: the moments a herd stops on a human, read off the herd's state so a
//! notifier can tell someone away from the desk, once per moment, across broker restarts too.
//!
//! Each need carries a key naming its episode: a question by its message id, a settled task by
//! its id, a stall by its task and the time of the nudge, a limit by its task and when it began,
//! a stopped merge by its merge, branch and state, a finished run by its id. Reading the same
//! herd again gives the same keys, so a notifier that keeps the keys it told tells each episode
//! once, and a new episode of the same sheep (a second question) has a key of its own.
//!
//! The words a sheep wrote (its question, its error) are kept apart from the headline, which
//! Shepherd writes: whether those words leave the machine is the user's choice.

use crate::herd::{Herd, Sheep};
use crate::ids::{AgentId, Participant};
use crate::land::BranchState;
use crate::task::TaskState;

/// How long a provider limit may hold a task before the person hears of it; a limit whose reset
/// lies this far ahead from its start is told at once.
pub const LASTING_LIMIT_MS: i64 = 5 * 60_000;

/// What kind of moment needs the person.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum NeedKind {
    /// A sheep asked the parent and waits for the answer.
    Question,
    /// A task settled blocked.
    Blocked,
    /// A task failed.
    Failed,
    /// The stall watchdog nudged a silent sheep.
    Stalled,
    /// A provider limit holds a task for long.
    Limited,
    /// A merge stopped on a conflict, a failed check or a rejected result.
    MergeStopped,
    /// A run finished.
    RunFinished,
}

impl NeedKind {
    /// Its spelling in a webhook's body (`question`, `merge_stopped`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Question => "question",
            Self::Blocked => "blocked",
            Self::Failed => "failed",
            Self::Stalled => "stalled",
            Self::Limited => "limited",
            Self::MergeStopped => "merge_stopped",
            Self::RunFinished => "run_finished",
        }
    }
}

/// One moment that needs the person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Need {
    /// Names the episode; the same episode always gives the same key.
    pub key: String,
    /// What kind of moment it is.
    pub kind: NeedKind,
    /// Whom it is about: `<agent>: <label>` of a sheep, `merge <id>`, `run <id>`.
    pub subject: String,
    /// One line in Shepherd's words, with the subject: "worker: api asks you a question".
    pub headline: String,
    /// What the sheep wrote (its question, its error), when there is any.
    pub words: Option<String>,
    /// The board page where it is answered: a path such as `/sheep/<id>`, never a token.
    pub page: String,
    /// When it began (ms).
    pub at: i64,
}

/// Everything in `herd` that needs the person at `now`, oldest first.
pub fn needs(herd: &Herd, now: i64) -> Vec<Need> {
    let mut found = Vec::new();
    questions(herd, &mut found);
    tasks(herd, now, &mut found);
    merges(herd, &mut found);
    runs(herd, &mut found);
    found.sort_by(|a, b| (a.at, &a.key).cmp(&(b.at, &b.key)));
    found
}

/// When the next need appears by time alone (a limit that comes to have lasted), if any.
pub fn next_due(herd: &Herd, now: i64) -> Option<i64> {
    herd.tasks
        .values()
        .filter(|task| !task.state.is_terminal())
        .filter_map(|task| task.limit.as_ref())
        .map(|limit| limit.since.saturating_add(LASTING_LIMIT_MS))
        .filter(|due| *due > now)
        .min()
}

fn subject(herd: &Herd, agent_id: &AgentId) -> String {
    herd.sheep
        .get(agent_id)
        .map_or_else(|| agent_id.to_string(), Sheep::display_name)
}

fn sheep_page(agent_id: &AgentId) -> String {
    format!("/sheep/{agent_id}")
}

fn questions(herd: &Herd, found: &mut Vec<Need>) {
    for request in herd.requests.values() {
        if request.target != Participant::Parent {
            continue;
        }
        let Some(task) = herd.tasks.get(&request.task_id) else {
            continue;
        };
        if task.state != TaskState::Waiting || task.pending_request.as_ref() != Some(&request.id) {
            continue;
        }
        let subject = subject(herd, &task.agent_id);
        found.push(Need {
            key: format!("question:{}", request.id),
            kind: NeedKind::Question,
            headline: format!("{subject} asks you a question"),
            subject,
            words: Some(request.question.clone()),
            page: sheep_page(&task.agent_id),
            at: request.opened_at,
        });
    }
}

fn tasks(herd: &Herd, now: i64, found: &mut Vec<Need>) {
    for task in herd.tasks.values() {
        // Most tasks need nobody: their sheep's name is only made for those that do.
        let named = || (subject(herd, &task.agent_id), sheep_page(&task.agent_id));
        match task.state {
            TaskState::Blocked | TaskState::Failed => {
                let (subject, page) = named();
                let result = task.result.as_ref();
                let (kind, word) = if task.state == TaskState::Blocked {
                    (NeedKind::Blocked, "is blocked")
                } else {
                    (NeedKind::Failed, "failed its task")
                };
                found.push(Need {
                    key: format!("settled:{}", task.id),
                    kind,
                    headline: format!("{subject} {word}"),
                    subject,
                    words: result.and_then(|r| r.error.clone().or_else(|| r.summary.clone())),
                    page,
                    at: result.map_or(task.created_at, |r| r.completed_at),
                });
            }
            TaskState::Running | TaskState::Waiting
                if task.stall.is_some_and(|s| s.nudged_at.is_some()) || task.limit.is_some() =>
            {
                let (subject, page) = named();
                if let Some(nudged) = task.stall.and_then(|stall| stall.nudged_at) {
                    found.push(Need {
                        key: format!("stall:{}:{nudged}", task.id),
                        kind: NeedKind::Stalled,
                        headline: format!("{subject} went silent and was nudged"),
                        subject: subject.clone(),
                        words: None,
                        page: page.clone(),
                        at: nudged,
                    });
                }
                if let Some(limit) = &task.limit {
                    let lasting = limit.until.saturating_sub(limit.since) >= LASTING_LIMIT_MS
                        || now.saturating_sub(limit.since) >= LASTING_LIMIT_MS;
                    if lasting {
                        found.push(Need {
                            key: format!("limit:{}:{}", task.id, limit.since),
                            kind: NeedKind::Limited,
                            headline: format!(
                                "{subject} waits on {}'s limit for {}",
                                limit.provider,
                                minutes(limit.until.saturating_sub(now).max(0))
                            ),
                            subject,
                            words: Some(limit.message.clone()).filter(|m| !m.is_empty()),
                            page,
                            at: limit.since,
                        });
                    }
                }
            }
            _ => {}
        }
    }
}

fn merges(herd: &Herd, found: &mut Vec<Need>) {
    for merge in herd.merges.values() {
        for branch in &merge.view.branches {
            let what = match branch.state {
                BranchState::Conflict => "conflicts",
                BranchState::CheckFailed => "failed its check",
                BranchState::Rejected => "was rejected",
                _ => continue,
            };
            let subject = format!("merge {}", merge.id);
            found.push(Need {
                key: format!(
                    "merge:{}:{}:{}",
                    merge.id,
                    branch.branch,
                    branch.state.as_str()
                ),
                kind: NeedKind::MergeStopped,
                headline: format!("{subject}: {} {what}", branch.branch),
                subject,
                words: branch.check_output.clone(),
                page: "/".to_owned(),
                at: merge.created_at,
            });
        }
    }
}

fn runs(herd: &Herd, found: &mut Vec<Need>) {
    for run in herd.runs.values() {
        let Some(report) = &run.finished else {
            continue;
        };
        let subject = format!("run {}", run.id);
        found.push(Need {
            key: format!("run:{}", run.id),
            kind: NeedKind::RunFinished,
            headline: format!(
                "{subject} finished: {} of {} succeeded",
                report.succeeded, report.total
            ),
            subject,
            words: None,
            page: "/".to_owned(),
            at: run.created_at,
        });
    }
}

/// "3 min", "2 h 5 min".
fn minutes(ms: i64) -> String {
    let minutes = (ms + 59_999) / 60_000;
    if minutes < 60 {
        format!("{minutes} min")
    } else {
        format!("{} h {} min", minutes / 60, minutes % 60)
    }
}

#[cfg(test)]
#[path = "needs_tests.rs"]
mod tests;
