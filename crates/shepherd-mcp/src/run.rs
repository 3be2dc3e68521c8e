//! `shepherd_run`: a whole run (single, parallel or chain) carried out by the broker, which
//! spawns, delegates, waits, collects and closes. A new run is submitted detached, so it goes
//! on when the host restarts this server; a call follows it for at most its bound, sending
//! progress, and then answers with the result in the original `subagent` words or with "still
//! running" and the run id to follow it again (`shepherd_run {runId}`) or to cancel it
//! (`shepherd_run {runId, cancel: true}`). A restarted broker is followed again at once.

use rmcp::model::{CallToolResult, JsonObject};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, tool, tool_router};
use serde_json::json;
use shepherd_client::wire::Push;
use shepherd_core::error_code::ErrorCode;
use shepherd_core::fieldnotes::status::Mode;
use shepherd_core::protocol::{RunIdParams, RunStepParams, RunSubmitParams, RunView, calls};
use shepherd_core::run::StepPhase;
use tokio::time::Instant;

use super::args::{self, wait_seconds};
use super::catalogue;
use super::error::ToolError;
use super::herd::{Herd, absolute};
use super::schema::input;
use super::server::{Parent, progress_of, respond};
use super::text::{self, plural};
use super::waits::Budget;
use super::words;
use shepherd_client::connect::caller_context;

#[tool_router(router = run_router, vis = "pub(crate)")]
impl Parent {
    #[tool(
        name = "shepherd_run",
        description = catalogue::RUN.description,
        input_schema = input(&catalogue::RUN.mcp_schema())
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
}

impl Parent {
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
                        ErrorCode::InvalidRun,
                        "runId follows a run started earlier: give it alone (with cancel or wait), not with agent, task, tasks or chain",
                    ));
                }
                let id = RunIdParams {
                    run_id: run_id.clone(),
                };
                if cancel {
                    link.send::<calls::RunCancel>(&id, budget.hard).await?;
                }
                link.send::<calls::RunAttach>(&id, budget.hard).await?
            }
            None if cancel => {
                return Err(ToolError::new(
                    ErrorCode::InvalidRun,
                    "cancel needs the runId of the run to cancel",
                ));
            }
            None => {
                let params = submit_params(&herd, run)?;
                link.send::<calls::RunSubmit>(&params, budget.hard).await?
            }
        };
        let run_id = view.run_id.clone();
        let mut following = link.generation();
        let mut report_at = Instant::now();
        while view.report.is_none() && !budget.over() {
            if link.generation() != following || !link.is_connected() {
                // A new connection (the broker restarted): follow the run again.
                view = link
                    .send::<calls::RunAttach>(
                        &RunIdParams {
                            run_id: run_id.clone(),
                        },
                        budget.hard,
                    )
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
                push = link.next_event() => match push {
                    Ok(Push::Run(pushed)) => {
                        if pushed.run_id == run_id {
                            view = *pushed;
                        }
                    }
                    Ok(_) => {}
                    Err(_) => link.disconnect(),
                },
                () = tokio::time::sleep(slice) => {}
                () = ctx.ct.cancelled() => break,
            }
        }
        match &view.report {
            Some(report) => {
                let (words, failed) = words::run_text(report);
                Ok(text::plain(words, failed))
            }
            None => Ok(text::plain(still_running(&view, self.bound_secs()), false)),
        }
    }
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
            ErrorCode::InvalidRun,
            "give exactly one of: agent + task (single), tasks (parallel), chain — or runId to follow a run",
        ));
    }
    let base =
        absolute(&herd.project, run.cwd).unwrap_or_else(|| herd.project.display().to_string());
    let default_harness = args::harness(run.harness.clone())?;
    let step = |s: args::RunStep| -> Result<RunStepParams, ToolError> {
        Ok(RunStepParams {
            agent: s.agent,
            task: s.task,
            cwd: Some(absolute(std::path::Path::new(&base), s.cwd).unwrap_or_else(|| base.clone())),
            isolate: s.isolate == Some(true),
            label: None,
            harness: args::harness(s.harness)?.or(default_harness),
            host: s.host.or_else(|| run.host.clone()),
            budget: None,
        })
    };
    let (mode, steps) = if single {
        let (Some(agent), Some(task)) = (run.agent, run.task) else {
            return Err(ToolError::new(
                ErrorCode::InvalidRun,
                "a single run needs both agent and task",
            ));
        };
        (
            Mode::Single,
            vec![step(args::RunStep {
                agent,
                task,
                cwd: None,
                isolate: None,
                harness: None,
                host: None,
            })?],
        )
    } else if let Some(tasks) = run.tasks {
        (
            Mode::Parallel,
            tasks.into_iter().map(step).collect::<Result<_, _>>()?,
        )
    } else {
        (
            Mode::Chain,
            run.chain
                .unwrap_or_default()
                .into_iter()
                .map(step)
                .collect::<Result<_, _>>()?,
        )
    };
    Ok(RunSubmitParams {
        mode,
        steps,
        session_name: run.session_name,
        timeout: args::minutes("timeout", run.timeout)?,
        budget: run.budget.budget()?,
        backend: None,
        host: None,
        sandbox: args::sandbox(run.sandbox)?,
        // An agent's argument only tightens: the person's own choice is the CLI's.
        user_sandbox: None,
        parent_model: None,
        parent_thinking: None,
        caller: Some(caller_context()),
        detach: true,
        pi_command: None,
    })
}

/// One line of a run's progress: `1 of 3 tasks done; scout running`.
fn run_progress(view: &RunView) -> String {
    let steps = &view.steps;
    let done = steps.iter().filter(|s| s.phase == StepPhase::Done).count();
    let running: Vec<String> = steps
        .iter()
        .filter(|s| !matches!(s.phase, StepPhase::Done | StepPhase::Queued))
        .map(|s| format!("{} {}", s.agent, s.phase))
        .collect();
    let mut line = format!("{done} of {} done", plural(steps.len(), "task"));
    if !running.is_empty() {
        line.push_str(&format!("; {}", running.join(", ")));
    }
    line
}

/// The "still running" words for a run: what to call, and where each task stands.
fn still_running(view: &RunView, bound: f64) -> String {
    let run_id = &view.run_id;
    let follow = json!({ "runId": run_id });
    let cancel = json!({ "runId": run_id, "cancel": true });
    let session = view
        .session_name
        .as_ref()
        .map(|s| format!("; session {s}"))
        .unwrap_or_default();
    let mut out = format!(
        "still running — call shepherd_run {follow} again to keep waiting (each call waits up to {bound} s), or shepherd_run {cancel} to cancel it; the run goes on in the background either way.\nRun {run_id} ({}{session}): {}",
        view.mode,
        run_progress(view)
    );
    for (index, step) in view.steps.iter().enumerate() {
        let status = step
            .status
            .as_ref()
            .map(|s| format!(" {s}"))
            .unwrap_or_default();
        let task = match (&step.task_id, &step.agent_id) {
            (Some(t), Some(a)) => format!(" (task {t}, sheep {a})"),
            (Some(t), None) => format!(" (task {t})"),
            (None, Some(a)) => format!(" (sheep {a})"),
            (None, None) => String::new(),
        };
        out.push_str(&format!(
            "\n- {}. {}: {}{status}{task}",
            index + 1,
            step.agent,
            step.phase
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_still_running_names_the_calls_to_make() {
        let view: RunView = serde_json::from_value(
            json!({"runId": "run-1a2b3c4d", "mode": "chain", "sessionName": "demo",
            "steps": [{"agent": "scout", "phase": "done", "status": "completed"},
                      {"agent": "planner", "phase": "running", "taskId": "t2"}]}),
        )
        .expect("a run view");
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
