//! Waiting without blocking the host: `shepherd_watch` and `shepherd_inbox` here, and the
//! [`Budget`] every waiting tool (`shepherd_run` too, in [`super::run`](mod@super::run)) keeps to.
//!
//! Hosts time tool calls out (Codex after 60 s by default), so none of these blocks longer
//! than the server's bound (`--max-wait`, 25 s by default) or the call's own `wait`, whichever
//! is shorter. While they wait they send `notifications/progress` every few seconds
//! ([`progress_every`]) when the host gave a progress token, and they end with what settled or
//! arrived, or with a "still running — call … again" result that names exactly what to call.
//! Nothing waits in this process between calls: a watched task keeps its durable watcher in the
//! broker, and a run started here is submitted `detach`ed, so it goes on in the broker when the
//! host restarts this server and ends only when it finishes or is cancelled
//! (`shepherd_run {runId, cancel: true}`).
//!
//! What the model has been told is kept in one place, the parent's inbox in the broker:
//! `shepherd_inbox` reports and acknowledges what arrived since it was last asked (messages,
//! questions, replies, completions of watched tasks, reminders, notices), leaving out
//! completions `shepherd_watch` already reported in this server.

use shepherd_core::error_code::ErrorCode;
use std::time::Duration;

use rmcp::model::{CallToolResult, JsonObject};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, tool, tool_router};
use serde_json::json;
use shepherd_core::herd::{InboxItem, Payload};
use shepherd_core::ids::AgentId;
use shepherd_core::protocol::{
    AckParams, IdList, InboxParams, NoParams, WaitParams, WatchParams, calls,
};
use tokio::time::Instant;

use super::args::{self, wait_seconds};
use super::catalogue;
use super::error::ToolError;
use super::herd::Herd;
use super::schema::input;
use super::server::{Parent, progress_of, respond};
use super::text::{plural, success};
use super::words;

/// How often a waiting call reports progress: every 5 s, or five times per call when the
/// bound is shorter than 25 s.
pub(crate) fn progress_every(bound: Duration) -> Duration {
    (bound / 5).clamp(Duration::from_millis(100), Duration::from_secs(5))
}

/// When a waiting call stops waiting (`until`, leaving time to answer) and the latest any
/// broker request of it may end (`hard`, the bound itself).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Budget {
    pub(crate) started: Instant,
    pub(crate) until: Instant,
    pub(crate) hard: Instant,
    pub(crate) every: Duration,
    pub(crate) wait: f64,
}

impl Budget {
    pub(crate) fn new(started: Instant, bound: Duration, wait: f64) -> Self {
        let margin = (bound / 10).min(Duration::from_millis(500));
        let waited = Duration::from_secs_f64(wait).min(bound.saturating_sub(margin));
        Self {
            started,
            until: started + waited,
            hard: started + bound,
            every: progress_every(bound),
            wait,
        }
    }

    /// The next slice of waiting: up to the next progress report, never past `until`.
    pub(crate) fn slice(&self) -> Duration {
        self.until
            .saturating_duration_since(Instant::now())
            .min(self.every)
    }

    pub(crate) fn over(&self) -> bool {
        Instant::now() >= self.until
    }

    pub(crate) fn elapsed(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }
}

pub(crate) fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

#[tool_router(router = wait_router, vis = "pub(crate)")]
impl Parent {
    #[tool(
        name = "shepherd_watch",
        description = catalogue::WATCH.description,
        input_schema = input(&catalogue::WATCH.mcp_schema())
    )]
    async fn shepherd_watch(
        &self,
        args: JsonObject,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        respond(
            "shepherd_watch",
            "watch",
            &args,
            self.watch(&args, &ctx).await,
        )
    }

    #[tool(
        name = "shepherd_inbox",
        description = catalogue::INBOX.description,
        input_schema = input(&catalogue::INBOX.mcp_schema())
    )]
    async fn shepherd_inbox(
        &self,
        args: JsonObject,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        respond(
            "shepherd_inbox",
            "inbox",
            &args,
            self.inbox(&args, &ctx).await,
        )
    }
}

impl Parent {
    async fn watch(
        &self,
        args: &JsonObject,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ToolError> {
        let started = Instant::now();
        let bound = self.shared.bound;
        let watch: args::Watch = args::read("shepherd_watch", args, false)?;
        let ids = watch.id.into_vec();
        if ids.is_empty() {
            return Err(ToolError::new(
                ErrorCode::InvalidHandle,
                "Pass at least one task id to watch.",
            ));
        }
        let budget = Budget::new(
            started,
            bound,
            wait_seconds(watch.wait, self.bound_secs(), self.bound_secs())?,
        );
        let herd = self.herd(&ctx.peer).await?;
        // A durable watcher, once per task: completions then also reach the inbox (and the
        // host, as notifications) whoever asks next.
        let fresh = herd.unwatched(&ids);
        let mut watcher_id = None;
        if !fresh.is_empty() {
            match herd
                .send::<calls::Watch>(
                    &WatchParams {
                        id: IdList::Many(fresh.clone()),
                    },
                    budget.hard,
                )
                .await
            {
                Ok(answer) => watcher_id = answer.watcher_id,
                Err(err) => {
                    herd.unwatch(&fresh);
                    return Err(err);
                }
            }
        }
        let total = ids.len();
        let mut result;
        // The first look answers at once; then a progress report before each slice of waiting.
        let mut slice = Duration::ZERO;
        loop {
            let params = WaitParams {
                id: IdList::Many(ids.clone()),
                timeout_ms: millis(slice),
                wait_output: true,
            };
            result = tokio::select! {
                answer = herd.send::<calls::Wait>(&params, budget.hard) => answer?,
                () = ctx.ct.cancelled() => return Err(ToolError::new(ErrorCode::Cancelled, "the host cancelled the call")),
            };
            let pending = result.pending.len();
            if pending == 0 || budget.over() {
                break;
            }
            let message = format!(
                "{} of {total} settled; waiting for {}",
                total - pending,
                plural(pending, "task")
            );
            progress_of(ctx, budget.elapsed(), Some(budget.wait), &message).await;
            slice = budget.slice();
        }
        let settled = result.settled;
        let pending: Vec<String> = result.pending.iter().map(ToString::to_string).collect();
        for report in &settled {
            herd.remember(report.agent_id.as_str(), &report.display_name);
            herd.report(report.task_id.as_str());
        }
        let lines: Vec<String> = settled
            .iter()
            .map(|r| format!("- {}", words::completion_line(r)))
            .collect();
        let service = if pending.is_empty() {
            let mut service = format!("all {} settled", plural(total, "watched task"));
            for line in &lines {
                service.push('\n');
                service.push_str(line);
            }
            service
        } else {
            self.still_watching(&herd, &pending, &lines, total, budget.hard)
                .await
        };
        let returned = json!({ "watcherId": watcher_id, "taskIds": ids, "completed": settled, "pending": pending });
        Ok(success(
            "shepherd_watch",
            args,
            &service,
            &returned,
            &[
                ("watcherId", Some(json!(watcher_id))),
                ("taskIds", Some(json!(ids))),
                ("pending", Some(json!(pending))),
                ("completed", Some(json!(settled))),
            ],
            &[],
        ))
    }

    /// The "still running" words: what to call, what settled, where each open task stands,
    /// and whether something waits in the inbox.
    async fn still_watching(
        &self,
        herd: &Herd,
        pending: &[String],
        settled: &[String],
        total: usize,
        hard: Instant,
    ) -> String {
        let mut out = format!(
            "still running — call shepherd_watch {} again to keep waiting (each call waits up to {} s); {} of {total} settled so far",
            json!({ "id": pending }),
            self.bound_secs(),
            total - pending.len()
        );
        for line in settled {
            out.push('\n');
            out.push_str(line);
        }
        let sheep = herd
            .send::<calls::Herd>(&NoParams {}, hard)
            .await
            .map(|h| {
                herd.remember_herd(&h);
                h.sheep
            })
            .unwrap_or_default();
        for id in pending {
            let holder = sheep.iter().find_map(|s| {
                s.task
                    .as_ref()
                    .filter(|task| task.id.as_str() == id)
                    .map(|task| (s, task))
            });
            let line = match holder {
                Some((s, task)) => {
                    let waiting = task
                        .waiting_on
                        .as_ref()
                        .map(|on| format!(", waiting on {on}"))
                        .unwrap_or_default();
                    format!(
                        "- {} task {id} {}{waiting}",
                        s.display_name,
                        task.state.as_str()
                    )
                }
                None => format!("- task {id} still open"),
            };
            out.push('\n');
            out.push_str(&line);
        }
        let now = InboxParams { wait_ms: 0 };
        if let Ok(inbox) = herd.send::<calls::Inbox>(&now, hard).await {
            let unread = fresh_items(herd, &inbox.items).len();
            if unread > 0 {
                out.push_str(&format!(
                    "\n{} waiting for you (messages, questions or completions): call shepherd_inbox.",
                    plural(unread, "inbox item")
                ));
            }
        }
        out
    }

    async fn inbox(
        &self,
        args: &JsonObject,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ToolError> {
        let started = Instant::now();
        let inbox: args::Inbox = args::read("shepherd_inbox", args, false)?;
        let budget = Budget::new(
            started,
            self.shared.bound,
            wait_seconds(inbox.wait, 0.0, self.bound_secs())?,
        );
        let herd = self.herd(&ctx.peer).await?;
        let mut slice = Duration::ZERO;
        let items = loop {
            let params = InboxParams {
                wait_ms: millis(slice),
            };
            let answer = tokio::select! {
                answer = herd.send::<calls::Inbox>(&params, budget.hard) => answer?,
                () = ctx.ct.cancelled() => return Err(ToolError::new(ErrorCode::Cancelled, "the host cancelled the call")),
            };
            let items = answer.items;
            if !items.is_empty() || budget.over() {
                break items;
            }
            progress_of(
                ctx,
                budget.elapsed(),
                Some(budget.wait),
                "waiting for something to arrive",
            )
            .await;
            slice = budget.slice();
        };
        let shown = fresh_items(&herd, &items);
        let unknown = shown.iter().any(|item| {
            author_of(item).is_some_and(|id| herd.known_name(id) == id && id != "shepherd")
        });
        if unknown && let Ok(all) = herd.send::<calls::Herd>(&NoParams {}, budget.hard).await {
            herd.remember_herd(&all);
        }
        let words: Vec<String> = shown
            .iter()
            .filter_map(|item| words::inbox_item(item, &|id| herd.known_name(id)))
            .collect();
        for item in &shown {
            if let Payload::Completion { completions, .. } = &item.payload {
                for report in completions {
                    herd.report(report.task_id.as_str());
                }
            }
        }
        // Shown first, acknowledged after: a lost acknowledgement means a repeat, never a loss.
        if let Some(last) = items.last().map(|item| item.seq) {
            herd.send::<calls::Ack>(&AckParams { seq: last }, budget.hard)
                .await?;
        }
        let service = if words.is_empty() {
            "Nothing new since you last asked.".to_owned()
        } else {
            format!(
                "{} since you last asked, oldest first:",
                plural(words.len(), "new item")
            )
        };
        Ok(success(
            "shepherd_inbox",
            args,
            &service,
            &json!(words.join("\n\n")),
            &[("items", Some(json!(words.len())))],
            &[],
        ))
    }
}

/// The inbox items not yet told to the model: a completion whose tasks `shepherd_watch`
/// already reported here is left out (the rest of its reports stay).
fn fresh_items(herd: &Herd, items: &[InboxItem]) -> Vec<InboxItem> {
    items
        .iter()
        .filter_map(|item| {
            let Payload::Completion {
                watcher_id,
                completions,
            } = &item.payload
            else {
                return Some(item.clone());
            };
            let reports: Vec<_> = completions
                .iter()
                .filter(|r| !herd.was_reported(r.task_id.as_str()))
                .cloned()
                .collect();
            (!reports.is_empty()).then(|| InboxItem {
                seq: item.seq,
                at: item.at,
                payload: Payload::Completion {
                    watcher_id: watcher_id.clone(),
                    completions: reports,
                },
            })
        })
        .collect()
}

/// Who an item is from or about: a message's author, else the sheep a reminder or notice
/// names.
fn author_of(item: &InboxItem) -> Option<&str> {
    match &item.payload {
        Payload::Envelope { envelope } => Some(envelope.author().as_str()),
        Payload::StaleWait(wait) => Some(wait.agent_id.as_str()),
        Payload::Notice(notice) => notice.agent_id.as_ref().map(AgentId::as_str),
        Payload::Completion { .. } => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_comes_every_five_seconds_or_five_times_per_call() {
        assert_eq!(
            progress_every(Duration::from_secs(25)),
            Duration::from_secs(5)
        );
        assert_eq!(
            progress_every(Duration::from_secs(60)),
            Duration::from_secs(5)
        );
        assert_eq!(
            progress_every(Duration::from_secs(2)),
            Duration::from_millis(400)
        );
        assert_eq!(
            progress_every(Duration::from_millis(100)),
            Duration::from_millis(100)
        );
    }
}
