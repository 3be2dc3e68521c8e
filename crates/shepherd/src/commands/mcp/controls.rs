//! The controls over MCP, as the pi tools offer them: `shepherd_resume`; the budget and
//! stall-watchdog arguments of `shepherd_delegate` (and the budget of `shepherd_run`); the
//! `isolate` argument of `shepherd_spawn` and the worktree report of `shepherd_close`.
//!
//! A budget is four flat arguments (`maxTurns`, `maxToolCalls`, `maxTokens`, `maxCost`) rather
//! than one object, because the strictest hosts take only flat schemas (see `schema`).

use std::time::Duration;

use rmcp::model::{CallToolResult, JsonObject};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, tool, tool_router};
use serde::Deserialize;
use serde_json::{Value, json};
use shepherd_core::budget::Budget;
use shepherd_core::protocol::{ResumeParams, method};
use tokio::time::Instant;

use super::error::ToolError;
use super::schema::{input, integer, number, object, string};
use super::server::{Parent, respond, to_value};
use super::text::success;
use crate::commands::connect::broker_timeout;
use crate::commands::parent::{caller_context, spawn_wait};

/// The budget arguments, as they come in a call.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct BudgetArgs {
    pub(crate) max_turns: Option<f64>,
    pub(crate) max_tool_calls: Option<f64>,
    pub(crate) max_tokens: Option<f64>,
    pub(crate) max_cost: Option<f64>,
}

/// The schema properties of the budget arguments.
pub(crate) fn budget_properties() -> Vec<(&'static str, Value)> {
    vec![
        (
            "maxTurns",
            integer(1, "Budget: most model turns the task may take"),
        ),
        (
            "maxToolCalls",
            integer(1, "Budget: most tool calls the task may make"),
        ),
        (
            "maxTokens",
            integer(
                1,
                "Budget: most tokens (input, output, cache) the task may use",
            ),
        ),
        (
            "maxCost",
            number("Budget: most cost the task may run up (the model's pricing)"),
        ),
    ]
}

impl BudgetArgs {
    /// The budget these arguments give, if any; a bad value is refused naming it.
    pub(crate) fn budget(&self) -> Result<Option<Budget>, ToolError> {
        let count = |name: &str, value: Option<f64>| match value {
            None => Ok(None),
            Some(n) if n.is_finite() && n >= 1.0 && n.fract() == 0.0 => Ok(Some(n as u64)),
            Some(n) => Err(ToolError::new(
                "invalid_budget",
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
            .map_err(|err| ToolError::new("invalid_budget", err.to_string()))?;
        Ok((!budget.is_empty()).then_some(budget))
    }
}

/// The stall watchdog argument's schema.
pub(crate) fn stall_property() -> (&'static str, Value) {
    (
        "stall",
        number(
            "Stall watchdog for this task: minutes of silence before the sheep is nudged, and again before the task settles blocked; 0 turns it off (default: the stallWatchdog setting, off)",
        ),
    )
}

/// What became of a closed isolated sheep's worktree, in words.
pub(crate) fn worktree_text(report: &Value) -> String {
    let text = |key: &str| report[key].as_str().unwrap_or_default().to_owned();
    if report["kept"] != true {
        return format!(
            "; worktree {} removed (clean, no new commits)",
            text("path")
        );
    }
    let list = |key: &str, separator: &str| {
        report[key]
            .as_array()
            .map(|items| {
                items
                    .iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join(separator)
            })
            .unwrap_or_default()
    };
    format!(
        "; worktree kept at {} on branch {}: {} ({}); files: {}; commits: {}. {}",
        text("path"),
        text("branch"),
        text("reason"),
        text("diffstat"),
        list("files", ", "),
        list("commits", "; "),
        text("integrate")
    )
}

#[derive(Debug, Deserialize)]
struct Resume {
    id: String,
}

#[tool_router(router = controls_router, vis = "pub(crate)")]
impl Parent {
    #[tool(
        name = "shepherd_resume",
        description = "Reopen one of your closed or exited sheep on its own session, under the same agent id and name: its conversation (what it was told, what it did) is intact, so it can pick up where it stopped. Hand it the next task with shepherd_delegate; that task's note links the note it continues. Only pi sheep keep a session to resume.",
        input_schema = input(&object(&[("id", string("The sheep's agent id"))], &["id"]))
    )]
    async fn shepherd_resume(
        &self,
        args: JsonObject,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        respond(
            "shepherd_resume",
            "resume",
            &args,
            self.resume(&args, &ctx).await,
        )
    }
}

impl Parent {
    async fn resume(
        &self,
        args: &JsonObject,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ToolError> {
        let resume: Resume = super::args::read("shepherd_resume", args, false)?;
        let herd = self.herd(&ctx.peer).await?;
        let params = ResumeParams {
            id: resume.id,
            backend: None,
            caller: Some(caller_context()),
        };
        // A resume of an exited sheep closes what is left of it first.
        let deadline = Instant::now() + spawn_wait() + Duration::from_secs(30) + broker_timeout()?;
        let result = herd
            .call(method::RESUME, to_value(&params), deadline)
            .await?;
        herd.remember(result["agentId"].as_str(), result["displayName"].as_str());
        Ok(success(
            "shepherd_resume",
            args,
            &format!(
                "resumed {} on {}",
                result["displayName"].as_str().unwrap_or_default(),
                result["backend"].as_str().unwrap_or_default()
            ),
            &json!({ "id": result["agentId"], "resumes": result["resumes"] }),
            &[
                ("id", Some(result["agentId"].clone())),
                ("displayName", Some(result["displayName"].clone())),
                ("backend", Some(result["backend"].clone())),
                ("resumes", Some(result["resumes"].clone())),
            ],
            &[("id", "agent id")],
        ))
    }
}
