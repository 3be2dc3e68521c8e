//! The tools that wait: `shepherd_watch`, `shepherd_run` and `shepherd_inbox`.
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

use std::time::Duration;

use rmcp::model::{CallToolResult, JsonObject};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, tool, tool_router};
use serde_json::{Value, json};
use shepherd_core::protocol::{RunStepParams, RunSubmitParams, event, method};
use tokio::time::Instant;

use super::args::{self, wait_seconds};
use super::error::ToolError;
use super::herd::{Herd, absolute};
use super::parent::{Parent, progress_of, respond, to_value};
use super::schema::input;
use super::text::{self, plural, success};
use crate::commands::parent::caller_context;

/// How often a waiting call reports progress: every 5 s, or five times per call when the
/// bound is shorter than 25 s.
pub(crate) fn progress_every(bound: Duration) -> Duration {
    (bound / 5).clamp(Duration::from_millis(100), Duration::from_secs(5))
}

/// When a waiting call stops waiting (`until`, leaving time to answer) and the latest any
/// broker request of it may end (`hard`, the bound itself).
#[derive(Debug, Clone, Copy)]
struct Budget {
    started: Instant,
    until: Instant,
    hard: Instant,
    every: Duration,
    wait: f64,
}

impl Budget {
    fn new(started: Instant, bound: Duration, wait: f64) -> Self {
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
    fn slice(&self) -> Duration {
        self.until
            .saturating_duration_since(Instant::now())
            .min(self.every)
    }

    fn over(&self) -> bool {
        Instant::now() >= self.until
    }

    fn elapsed(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

#[tool_router(router = wait_router, vis = "pub(crate)")]
impl Parent {
    #[tool(
        name = "shepherd_watch",
        description = "Wait for tasks to settle (completed, blocked, failed, cancelled or timed out) and report each with its status, summary and note. One call waits at most `wait` seconds (at most the server's bound, 25 s by default) and then answers either with every task settled or with \"still running\", naming exactly the call to make to keep waiting; in between you may do other work. While it waits it sends progress. Idle sheep, ended turns and waiting tasks are not completions; a task waiting on a question from its sheep shows as waiting (answer it: see shepherd_inbox). Agent ids are not watch targets.",
        input_schema = input(&args::watch_schema(25.0))
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
        name = "shepherd_run",
        description = "Run agents and collect their results in one call: exactly one mode, single (`agent` + `task`), parallel (`tasks`: up to 8, 4 at a time, results in input order) or chain (`chain`: steps in order; `{previous}` in a step's task is replaced by the previous step's result; stops at the first step that does not complete). Every task gets a note in a fieldnotes session; pass `sessionName` to continue a session. Each sheep is closed when its task ends. The run goes on in the background: a call waits at most `wait` seconds (at most the server's bound, 25 s by default) and then answers with the results or with \"still running\" and the runId to follow it with (shepherd_run {runId}), or to cancel it (shepherd_run {runId, cancel: true}). For long or interactive work prefer shepherd_spawn + shepherd_delegate.",
        input_schema = input(&args::run_schema(25.0))
    )]
    async fn shepherd_run(
        &self,
        args: JsonObject,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        match self.run(&args, &ctx).await {
            Ok(result) => Ok(result),
            Err(err) => respond("shepherd_run", "run", &args, Err(err)),
        }
    }

    #[tool(
        name = "shepherd_inbox",
        description = "What arrived for you since you last asked: messages, questions (answer them with shepherd_message and replyTo), replies, completions of watched tasks, stale-wait reminders and notices, oldest first. Each item is reported once. With `wait`, waits up to that many seconds (at most the server's bound) for something to arrive when nothing has. Call it between other work when your host does not show Shepherd's notifications.",
        input_schema = input(&args::inbox_schema(25.0))
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
                "invalid_handle",
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
        let mut watcher_id = Value::Null;
        if !fresh.is_empty() {
            match herd
                .call(method::WATCH, json!({ "id": fresh }), budget.hard)
                .await
            {
                Ok(answer) => watcher_id = answer["watcherId"].clone(),
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
            let params = json!({ "id": ids, "timeoutMs": millis(slice), "waitOutput": true });
            result = tokio::select! {
                answer = herd.call(method::WAIT, params, budget.hard) => answer?,
                () = ctx.ct.cancelled() => return Err(ToolError::new("cancelled", "the host cancelled the call")),
            };
            let pending = result["pending"].as_array().map_or(0, Vec::len);
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
        let settled = result["settled"].as_array().cloned().unwrap_or_default();
        let pending: Vec<String> = result["pending"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|id| id.as_str().map(str::to_owned))
            .collect();
        for report in &settled {
            herd.remember(report["agentId"].as_str(), report["displayName"].as_str());
            herd.report(report["taskId"].as_str().unwrap_or_default());
        }
        let lines: Vec<String> = settled
            .iter()
            .map(|r| format!("- {}", text::completion_line(r)))
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
                ("watcherId", Some(watcher_id)),
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
            .call(method::HERD, json!({}), hard)
            .await
            .map(|h| {
                herd.remember_herd(&h);
                h["sheep"].as_array().cloned().unwrap_or_default()
            })
            .unwrap_or_default();
        for id in pending {
            let holder = sheep
                .iter()
                .find(|s| s["task"]["id"].as_str() == Some(id.as_str()));
            let line = match holder {
                Some(s) => {
                    let task = &s["task"];
                    let waiting = task["waitingOn"]
                        .as_str()
                        .map(|on| format!(", waiting on {on}"))
                        .unwrap_or_default();
                    format!(
                        "- {} task {id} {}{waiting}",
                        s["displayName"].as_str().unwrap_or_default(),
                        task["state"].as_str().unwrap_or("running")
                    )
                }
                None => format!("- task {id} still open"),
            };
            out.push('\n');
            out.push_str(&line);
        }
        if let Ok(inbox) = herd.call(method::INBOX, json!({ "waitMs": 0 }), hard).await {
            let unread = fresh_items(herd, &inbox["items"]).len();
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
            let params = json!({ "waitMs": millis(slice) });
            let answer = tokio::select! {
                answer = herd.call(method::INBOX, params, budget.hard) => answer?,
                () = ctx.ct.cancelled() => return Err(ToolError::new("cancelled", "the host cancelled the call")),
            };
            let items = answer["items"].as_array().cloned().unwrap_or_default();
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
        let shown = fresh_items(&herd, &Value::Array(items.clone()));
        let unknown = shown.iter().any(|item| {
            let author = item["envelope"]["originSenderId"]
                .as_str()
                .or_else(|| item["envelope"]["senderId"].as_str())
                .or_else(|| item["agentId"].as_str());
            author.is_some_and(|id| herd.known_name(id) == id && id != "shepherd")
        });
        if unknown && let Ok(all) = herd.call(method::HERD, json!({}), budget.hard).await {
            herd.remember_herd(&all);
        }
        let words: Vec<String> = shown
            .iter()
            .filter_map(|item| text::inbox_item(item, &|id| herd.known_name(id)))
            .collect();
        for item in &shown {
            for report in item["completions"].as_array().into_iter().flatten() {
                herd.report(report["taskId"].as_str().unwrap_or_default());
            }
        }
        // Shown first, acknowledged after: a lost acknowledgement means a repeat, never a loss.
        if let Some(last) = items.last().and_then(|item| item["seq"].as_u64()) {
            herd.call(method::ACK, json!({ "seq": last }), budget.hard)
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

    async fn run(
        &self,
        args: &JsonObject,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ToolError> {
        let started = Instant::now();
        let run: args::Run = args::read("shepherd_run", args, false)?;
        let budget = Budget::new(
            started,
            self.shared.bound,
            wait_seconds(run.wait, self.bound_secs(), self.bound_secs())?,
        );
        let cancel = run.cancel == Some(true);
        let herd = self.herd(&ctx.peer).await?;
        let mut link = herd.link();
        let mut view = match &run.run_id {
            Some(run_id) => {
                if run.agent.is_some()
                    || run.task.is_some()
                    || run.tasks.is_some()
                    || run.chain.is_some()
                {
                    return Err(ToolError::new(
                        "invalid_run",
                        "runId follows a run started earlier: give it alone (with cancel or wait), not with agent, task, tasks or chain",
                    ));
                }
                let id = json!({ "runId": run_id });
                if cancel {
                    link.request(method::RUN_CANCEL, id.clone(), budget.hard)
                        .await?;
                }
                link.request(method::RUN_ATTACH, id, budget.hard).await?
            }
            None if cancel => {
                return Err(ToolError::new(
                    "invalid_run",
                    "cancel needs the runId of the run to cancel",
                ));
            }
            None => {
                let params = submit_params(&herd, run)?;
                link.request(method::RUN_SUBMIT, to_value(&params), budget.hard)
                    .await?
            }
        };
        let run_id = view["runId"].as_str().unwrap_or_default().to_owned();
        let mut following = link.generation();
        let mut report_at = Instant::now();
        while view.get("report").is_none_or(Value::is_null) && !budget.over() {
            if link.generation() != following || !link.is_connected() {
                // A new connection (the broker restarted): follow the run again.
                view = link
                    .request(method::RUN_ATTACH, json!({ "runId": run_id }), budget.hard)
                    .await?;
                following = link.generation();
                continue;
            }
            if Instant::now() >= report_at {
                progress_of(
                    ctx,
                    budget.elapsed(),
                    Some(budget.wait),
                    &run_progress(&view),
                )
                .await;
                report_at += budget.every;
            }
            let slice = budget
                .slice()
                .min(report_at.saturating_duration_since(Instant::now()));
            tokio::select! {
                push = link.next_push() => match push {
                    Ok((name, data)) if name == event::RUN && data["runId"] == json!(run_id) => view = data,
                    Ok(_) => {}
                    Err(_) => link.disconnect(),
                },
                () = tokio::time::sleep(slice) => {}
                () = ctx.ct.cancelled() => break,
            }
        }
        match view.get("report").filter(|r| !r.is_null()) {
            Some(report) => {
                let (words, failed) = text::run_text(report);
                Ok(text::plain(words, failed))
            }
            None => Ok(text::plain(still_running(&view, self.bound_secs()), false)),
        }
    }
}

/// The inbox items not yet told to the model: a completion whose tasks `shepherd_watch`
/// already reported here is left out (the rest of its reports stay).
fn fresh_items(herd: &Herd, items: &Value) -> Vec<Value> {
    items
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|item| {
            if item["type"] != json!("completion") {
                return Some(item.clone());
            }
            let reports: Vec<Value> = item["completions"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|r| !herd.was_reported(r["taskId"].as_str().unwrap_or_default()))
                .cloned()
                .collect();
            (!reports.is_empty()).then(|| {
                let mut item = item.clone();
                item["completions"] = Value::Array(reports);
                item
            })
        })
        .collect()
}

/// The `run.submit` request for a new run: exactly one mode, directories made absolute, and
/// detached, so it outlives this server.
fn submit_params(herd: &Herd, run: args::Run) -> Result<RunSubmitParams, ToolError> {
    let single = run.agent.is_some() || run.task.is_some();
    let modes = [single, run.tasks.is_some(), run.chain.is_some()]
        .iter()
        .filter(|m| **m)
        .count();
    if modes != 1 {
        return Err(ToolError::new(
            "invalid_run",
            "give exactly one of: agent + task (single), tasks (parallel), chain — or runId to follow a run",
        ));
    }
    let base =
        absolute(&herd.project, run.cwd).unwrap_or_else(|| herd.project.display().to_string());
    let step = |s: args::RunStep| RunStepParams {
        agent: s.agent,
        task: s.task,
        cwd: Some(absolute(std::path::Path::new(&base), s.cwd).unwrap_or_else(|| base.clone())),
        isolate: s.isolate == Some(true),
        label: None,
    };
    let (mode, steps) = if single {
        let (Some(agent), Some(task)) = (run.agent, run.task) else {
            return Err(ToolError::new(
                "invalid_run",
                "a single run needs both agent and task",
            ));
        };
        (
            "single",
            vec![step(args::RunStep {
                agent,
                task,
                cwd: None,
                isolate: None,
            })],
        )
    } else if let Some(tasks) = run.tasks {
        ("parallel", tasks.into_iter().map(step).collect())
    } else {
        (
            "chain",
            run.chain
                .unwrap_or_default()
                .into_iter()
                .map(step)
                .collect(),
        )
    };
    Ok(RunSubmitParams {
        mode: mode.to_owned(),
        steps,
        session_name: run.session_name,
        timeout: args::minutes("timeout", run.timeout)?,
        backend: None,
        parent_model: None,
        parent_thinking: None,
        caller: Some(caller_context()),
        detach: true,
    })
}

/// One line of a run's progress: `1 of 3 tasks done; scout running`.
fn run_progress(view: &Value) -> String {
    let steps = view["steps"].as_array().cloned().unwrap_or_default();
    let done = steps.iter().filter(|s| s["phase"] == json!("done")).count();
    let running: Vec<String> = steps
        .iter()
        .filter(|s| s["phase"] != json!("done") && s["phase"] != json!("queued"))
        .map(|s| {
            format!(
                "{} {}",
                s["agent"].as_str().unwrap_or_default(),
                s["phase"].as_str().unwrap_or_default()
            )
        })
        .collect();
    let mut line = format!("{done} of {} done", plural(steps.len(), "task"));
    if !running.is_empty() {
        line.push_str(&format!("; {}", running.join(", ")));
    }
    line
}

/// The "still running" words for a run: what to call, and where each task stands.
fn still_running(view: &Value, bound: f64) -> String {
    let run_id = view["runId"].as_str().unwrap_or_default();
    let follow = json!({ "runId": run_id });
    let cancel = json!({ "runId": run_id, "cancel": true });
    let session = view["sessionName"]
        .as_str()
        .map(|s| format!("; session {s}"))
        .unwrap_or_default();
    let mut out = format!(
        "still running — call shepherd_run {follow} again to keep waiting (each call waits up to {bound} s), or shepherd_run {cancel} to cancel it; the run goes on in the background either way.\nRun {run_id} ({}{session}): {}",
        view["mode"].as_str().unwrap_or_default(),
        run_progress(view)
    );
    for (index, step) in view["steps"].as_array().into_iter().flatten().enumerate() {
        let status = step["status"]
            .as_str()
            .map(|s| format!(" {s}"))
            .unwrap_or_default();
        let task = match (step["taskId"].as_str(), step["agentId"].as_str()) {
            (Some(t), Some(a)) => format!(" (task {t}, sheep {a})"),
            (Some(t), None) => format!(" (task {t})"),
            (None, Some(a)) => format!(" (sheep {a})"),
            (None, None) => String::new(),
        };
        out.push_str(&format!(
            "\n- {}. {}: {}{status}{task}",
            index + 1,
            step["agent"].as_str().unwrap_or_default(),
            step["phase"].as_str().unwrap_or_default()
        ));
    }
    out
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

    #[test]
    fn a_run_still_running_names_the_calls_to_make() {
        let view = json!({"runId": "run-1a2b3c4d", "mode": "chain", "sessionName": "demo",
            "steps": [{"agent": "scout", "phase": "done", "status": "completed"},
                      {"agent": "planner", "phase": "running", "taskId": "t2"}]});
        let text = still_running(&view, 25.0);
        assert!(
            text.starts_with(
                "still running — call shepherd_run {\"runId\":\"run-1a2b3c4d\"} again"
            ),
            "{text}"
        );
        assert!(
            text.contains("shepherd_run {\"runId\":\"run-1a2b3c4d\",\"cancel\":true} to cancel it"),
            "{text}"
        );
        assert!(
            text.contains(
                "Run run-1a2b3c4d (chain; session demo): 1 of 2 tasks done; planner running"
            ),
            "{text}"
        );
        assert!(text.ends_with("- 2. planner: running (task t2)"), "{text}");
    }
}
