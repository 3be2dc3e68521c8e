//! The parent's tools that answer at once: `shepherd` (agents, herd, prune), `shepherd_spawn`,
//! `shepherd_delegate`, `shepherd_message`, `shepherd_prompt`, `shepherd_status`,
//! `shepherd_close` and `shepherd_read`. Each is one broker request (the agent listing reads
//! the definitions, as `shepherd agents` does) and answers in the pi tools' words; the waiting
//! tools are in [`super::waits`], the server's shared state in [`super::server`].

use shepherd_core::error_code::ErrorCode;
use std::time::Duration;

use rmcp::model::{CallToolResult, JsonObject};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, tool, tool_router};
use serde_json::{Value, json};
use shepherd_config::{discover_agents, load_settings};
use shepherd_core::agent_def::AgentScope;
use shepherd_core::protocol::{
    CloseParams, DelegateParams, ReadParams, SpawnParams, StatusParams, method,
};
use tokio::time::Instant;

use super::args::{self, one_of};
use super::catalogue;
use super::error::ToolError;
use super::herd::absolute;
use super::herd::to_value;
use super::schema::input;
use super::server::{Parent, message_params, progress, respond};
use super::text::{plural, success};
use super::words;
use shepherd_client::connect::broker_timeout;
use shepherd_client::connect::caller_context;

/// How long a close may take: the sheep's grace, the backend's confirmation, a pi sheep's
/// last words (as `shepherd close` allows).
const CLOSE_WAIT: Duration = Duration::from_secs(30);

/// How long a spawn may wait for its sheep to start: the broker's start-up limit and the time
/// to clean up a sheep that did not (as `shepherd spawn` allows).
pub(crate) fn spawn_wait() -> Duration {
    let startup = std::env::var("SHEPHERD_STARTUP_LIMIT_MS")
        .ok()
        .and_then(|ms| ms.parse().ok())
        .map_or(Duration::from_secs(30), Duration::from_millis);
    startup + Duration::from_secs(15)
}

#[tool_router(vis = "pub(crate)")]
impl Parent {
    #[tool(
        name = "shepherd",
        description = catalogue::CONTROL.description,
        input_schema = input(&catalogue::CONTROL.mcp_schema())
    )]
    async fn shepherd(
        &self,
        args: JsonObject,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let action = args
            .get("action")
            .and_then(Value::as_str)
            .unwrap_or("shepherd")
            .to_owned();
        respond("shepherd", &action, &args, self.control(&args, &ctx).await)
    }

    #[tool(
        name = "shepherd_spawn",
        description = catalogue::SPAWN.description,
        input_schema = input(&catalogue::SPAWN.mcp_schema())
    )]
    async fn shepherd_spawn(
        &self,
        args: JsonObject,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        respond(
            "shepherd_spawn",
            "spawn",
            &args,
            self.spawn(&args, &ctx).await,
        )
    }

    #[tool(
        name = "shepherd_delegate",
        description = catalogue::DELEGATE.description,
        input_schema = input(&catalogue::DELEGATE.mcp_schema())
    )]
    async fn shepherd_delegate(
        &self,
        args: JsonObject,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        respond(
            "shepherd_delegate",
            "delegate",
            &args,
            self.delegate(&args, &ctx, false).await,
        )
    }

    #[tool(
        name = "shepherd_message",
        description = catalogue::MESSAGE.description,
        input_schema = input(&catalogue::MESSAGE.mcp_schema())
    )]
    async fn shepherd_message(
        &self,
        args: JsonObject,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        respond(
            "shepherd_message",
            "message",
            &args,
            self.message(&args, &ctx).await,
        )
    }

    #[tool(
        name = "shepherd_prompt",
        description = catalogue::PROMPT.description,
        input_schema = input(&catalogue::PROMPT.mcp_schema())
    )]
    async fn shepherd_prompt(
        &self,
        args: JsonObject,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        respond(
            "shepherd_prompt",
            "prompt",
            &args,
            self.delegate(&args, &ctx, true).await,
        )
    }

    #[tool(
        name = "shepherd_status",
        description = catalogue::STATUS.description,
        input_schema = input(&catalogue::STATUS.mcp_schema())
    )]
    async fn shepherd_status(
        &self,
        args: JsonObject,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        respond(
            "shepherd_status",
            "status",
            &args,
            self.status(&args, &ctx).await,
        )
    }

    #[tool(
        name = "shepherd_close",
        description = catalogue::CLOSE.description,
        input_schema = input(&catalogue::CLOSE.mcp_schema())
    )]
    async fn shepherd_close(
        &self,
        args: JsonObject,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        respond(
            "shepherd_close",
            "close",
            &args,
            self.close(&args, &ctx).await,
        )
    }

    #[tool(
        name = "shepherd_read",
        description = catalogue::READ.description,
        input_schema = input(&catalogue::READ.mcp_schema())
    )]
    async fn shepherd_read(
        &self,
        args: JsonObject,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        respond("shepherd_read", "read", &args, self.read(&args, &ctx).await)
    }
}

impl Parent {
    async fn control(
        &self,
        args: &JsonObject,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ToolError> {
        let control: args::Control = args::read("shepherd", args, true)?;
        let action = one_of("action", Some(control.action), args::ACTIONS)?.unwrap_or_default();
        let scope = one_of("agentScope", control.agent_scope, args::SCOPES)?;
        let shown = json!({ "action": action, "agentScope": scope });
        let shown = shown.as_object().expect("an object");
        let herd = self.herd(&ctx.peer).await?;
        match action.as_str() {
            "agents" => {
                let settings = load_settings(&self.shared.ctx.dirs, &herd.project);
                let scope = match scope.as_deref() {
                    Some("user") => AgentScope::User,
                    Some("project") => AgentScope::Project,
                    Some(_) => AgentScope::Both,
                    None => settings.settings.agent_scope,
                };
                let discovery = discover_agents(
                    &self.shared.ctx.dirs,
                    &herd.project,
                    scope,
                    settings.settings.include_bundled_agents,
                );
                let agents: Vec<Value> = discovery
                    .agents
                    .iter()
                    .map(|def| {
                        let full = serde_json::to_value(def).unwrap_or_default();
                        json!({
                            "name": full["name"], "source": full["source"],
                            "description": full["description"], "model": full["model"],
                            "thinking": full["thinking"], "tools": full["tools"],
                            "filePath": full["filePath"],
                        })
                    })
                    .collect();
                let scope = discovery.scope.to_string();
                let names: Vec<Value> = agents.iter().map(|a| a["name"].clone()).collect();
                Ok(success(
                    "shepherd",
                    shown,
                    &words::agents_text(&scope, &agents),
                    &Value::Array(names),
                    &[
                        ("scope", Some(json!(scope))),
                        ("agents", Some(json!(agents))),
                    ],
                    &[],
                ))
            }
            "herd" => {
                let result = herd.quick(method::HERD, json!({})).await?;
                herd.remember_herd(&result);
                let sheep = result["sheep"].as_array().cloned().unwrap_or_default();
                let ids: Vec<Value> = sheep.iter().map(|s| s["agentId"].clone()).collect();
                Ok(success(
                    "shepherd",
                    shown,
                    &words::herd_text(&sheep),
                    &Value::Array(ids),
                    &[("sheep", Some(json!(sheep)))],
                    &[],
                ))
            }
            _ => {
                let result = herd.quick(method::PRUNE, json!({})).await?;
                let pruned = result["pruned"].as_u64().unwrap_or(0);
                let remaining = result["remaining"].as_u64().unwrap_or(0);
                let service = if pruned == 0 {
                    format!("No stale sheep records found ({remaining} kept).")
                } else {
                    format!(
                        "Removed {}; {remaining} remain.",
                        plural(
                            usize::try_from(pruned).unwrap_or(usize::MAX),
                            "stale sheep record"
                        )
                    )
                };
                Ok(success(
                    "shepherd",
                    shown,
                    &service,
                    &result,
                    &[
                        ("pruned", Some(json!(pruned))),
                        ("remaining", Some(json!(remaining))),
                    ],
                    &[],
                ))
            }
        }
    }

    async fn spawn(
        &self,
        args: &JsonObject,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ToolError> {
        let spawn: args::Spawn = args::read("shepherd_spawn", args, false)?;
        let placement = args::closed("placement", spawn.placement, args::PLACEMENTS)?;
        let harness = args::harness(spawn.harness)?;
        let herd = self.herd(&ctx.peer).await?;
        let params = SpawnParams {
            agent: spawn.agent.clone(),
            label: Some(spawn.label),
            backend: None,
            cwd: absolute(&herd.project, spawn.cwd),
            placement,
            model: None,
            harness,
            caller: Some(caller_context()),
            parent_model: None,
            parent_thinking: None,
            session_name: None,
            // An MCP host is not pi: pi sheep run `SHEPHERD_PI`, else the `pi` on PATH.
            pi_command: None,
            isolate: spawn.isolate == Some(true),
            host: spawn.host.clone(),
            sandbox: args::sandbox(spawn.sandbox.clone())?,
        };
        progress(ctx, 0.0, &format!("Spawning {}…", spawn.agent)).await;
        let deadline = Instant::now() + spawn_wait() + broker_timeout()?;
        let result = herd
            .call(method::SPAWN, to_value(&params), deadline)
            .await
            .map_err(|err| match err.code {
                ErrorCode::UnknownAgent => ToolError::new(
                    err.code,
                    format!(
                        "{} Call shepherd with action \"agents\" to list exact names.",
                        err.message
                    ),
                ),
                _ => err,
            })?;
        herd.remember(result["agentId"].as_str(), result["displayName"].as_str());
        let mut returned =
            json!({ "id": result["agentId"], "agent": result["agent"], "label": result["label"] });
        let worktree = result.get("worktree").filter(|w| w.is_object()).cloned();
        if let Some(worktree) = &worktree {
            returned["worktree"] = worktree.clone();
        }
        Ok(success(
            "shepherd_spawn",
            args,
            &format!(
                "shepherd_spawn spawned {}{}",
                result["displayName"].as_str().unwrap_or_default(),
                result["host"]
                    .as_str()
                    .map(|host| format!(" on host {host}"))
                    .unwrap_or_default()
            ),
            &returned,
            &[
                ("id", Some(result["agentId"].clone())),
                ("agent", Some(result["agent"].clone())),
                ("label", Some(result["label"].clone())),
                ("displayName", Some(result["displayName"].clone())),
                ("backend", Some(result["backend"].clone())),
                ("host", result.get("host").cloned()),
                ("fieldnote", Some(result["fieldnote"].clone())),
                ("worktree", worktree),
            ],
            &[("id", "agent id"), ("fieldnote", "agent fieldnote")],
        ))
    }

    /// `shepherd_delegate`, or with `turn` the deprecated `shepherd_prompt`.
    async fn delegate(
        &self,
        args: &JsonObject,
        ctx: &RequestContext<RoleServer>,
        turn: bool,
    ) -> Result<CallToolResult, ToolError> {
        let (tool, target, task, timeout, budget, stall, session_name) = if turn {
            let prompt: args::Prompt = args::read("shepherd_prompt", args, false)?;
            (
                "shepherd_prompt",
                prompt.id,
                prompt.message,
                prompt.timeout,
                None,
                None,
                None,
            )
        } else {
            let delegate: args::Delegate = args::read("shepherd_delegate", args, false)?;
            let budget = delegate.budget.budget()?;
            (
                "shepherd_delegate",
                delegate.target,
                delegate.task,
                delegate.timeout,
                budget,
                delegate.stall,
                delegate.session_name,
            )
        };
        let timeout = args::minutes("timeout", timeout).map_err(|err| {
            if turn {
                err
            } else {
                ToolError::new(
                    err.code,
                    "Delegated task timeout must be a positive number of minutes.",
                )
            }
        })?;
        let herd = self.herd(&ctx.peer).await?;
        let params = DelegateParams {
            target,
            task,
            timeout,
            session_name: session_name.clone(),
            turn,
            budget,
            stall,
        };
        let result = herd.quick(method::DELEGATE, to_value(&params)).await?;
        let name = herd
            .name_of(result["agentId"].as_str().unwrap_or_default())
            .await;
        let note = result["noteRelative"].as_str().map(|n| json!(n));
        if turn {
            // A prompt is a one-turn task: its prompt id is that task's id.
            let task = &result["taskId"];
            return Ok(success(
                tool,
                args,
                &format!(
                    "Prompted {name} (prompt id {})",
                    task.as_str().unwrap_or("?")
                ),
                &json!({ "id": task, "promptId": task }),
                &[
                    ("id", Some(task.clone())),
                    ("promptId", Some(task.clone())),
                    ("taskId", Some(task.clone())),
                    ("agentId", Some(result["agentId"].clone())),
                    ("note", note),
                ],
                &[],
            ));
        }
        Ok(success(
            tool,
            args,
            &format!(
                "Delegated task to {name}{}",
                match (result["sessionName"].as_str(), &session_name) {
                    (Some(name), Some(_)) => shepherd_client::session_words::named_session(
                        name,
                        result["resumed"] == true
                    ),
                    _ => String::new(),
                }
            ),
            &json!({ "taskId": result["taskId"], "agentId": result["agentId"], "state": result["state"] }),
            &[
                ("id", Some(result["taskId"].clone())),
                ("taskId", Some(result["taskId"].clone())),
                ("agentId", Some(result["agentId"].clone())),
                ("state", Some(result["state"].clone())),
                ("note", note),
            ],
            &[],
        ))
    }

    async fn message(
        &self,
        args: &JsonObject,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ToolError> {
        let message: args::Message = args::read("shepherd_message", args, false)?;
        let params = message_params(message)?;
        let herd = self.herd(&ctx.peer).await?;
        let result = herd.quick(method::MESSAGE, to_value(&params)).await?;
        let name = herd
            .name_of(result["targetId"].as_str().unwrap_or_default())
            .await;
        let state = result["targetTaskState"]
            .as_str()
            .map(|s| format!(" (task {s})"))
            .unwrap_or_default();
        let mut returned = json!({
            "messageId": result["messageId"], "accepted": result["accepted"],
            "delivery": "queued", "targetId": result["targetId"],
        });
        if let Some(request) = result.get("requestId").filter(|r| !r.is_null()) {
            returned["requestId"] = request.clone();
        }
        Ok(success(
            "shepherd_message",
            args,
            &format!(
                "Message queued to {name}{state}; {}shepherd_status {{id: \"{}\"}} shows whether it was delivered and read",
                words::changed_delivery(&result),
                result["messageId"].as_str().unwrap_or_default()
            ),
            &returned,
            &[
                ("id", Some(result["messageId"].clone())),
                ("messageId", Some(result["messageId"].clone())),
                ("requestId", result.get("requestId").cloned()),
                ("targetTaskState", result.get("targetTaskState").cloned()),
                ("deliveryChanged", result.get("deliveryChanged").cloned()),
            ],
            &[],
        ))
    }

    async fn status(
        &self,
        args: &JsonObject,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ToolError> {
        let id: args::AgentId = args::read("shepherd_status", args, false)?;
        let herd = self.herd(&ctx.peer).await?;
        let params = StatusParams { id: Some(id.id) };
        let status = herd.quick(method::STATUS, to_value(&params)).await?;
        herd.remember(status["agentId"].as_str(), status["displayName"].as_str());
        let (text, shown) =
            super::receipts::status_answer(&status, words::status_text, words::public_status);
        Ok(success(
            "shepherd_status",
            args,
            &text,
            &shown,
            &[("status", Some(shown.clone()))],
            &[],
        ))
    }

    async fn close(
        &self,
        args: &JsonObject,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ToolError> {
        let id: args::AgentId = args::read("shepherd_close", args, false)?;
        let herd = self.herd(&ctx.peer).await?;
        let params = CloseParams {
            id: id.id,
            keep_pane: false,
        };
        let deadline = Instant::now() + CLOSE_WAIT + broker_timeout()?;
        let result = herd
            .call(method::CLOSE, to_value(&params), deadline)
            .await?;
        let cancelled = result.get("cancelled").filter(|c| c.is_object()).cloned();
        let cancelled_text = cancelled
            .as_ref()
            .and_then(|c| c["taskId"].as_str())
            .map(|t| format!(" (task {t} cancelled)"))
            .unwrap_or_default();
        let worktree = result.get("worktree").filter(|w| w.is_object()).cloned();
        let worktree_text = worktree
            .as_ref()
            .and_then(|w| serde_json::from_value(w.clone()).ok())
            .as_ref()
            .map(super::controls::worktree_text)
            .unwrap_or_default();
        let mut returned = json!({ "id": result["agentId"] });
        if let Some(worktree) = &worktree {
            returned["worktree"] = worktree.clone();
        }
        Ok(success(
            "shepherd_close",
            args,
            &format!(
                "closed {}{cancelled_text}{worktree_text}",
                result["displayName"].as_str().unwrap_or_default()
            ),
            &returned,
            &[
                ("id", Some(result["agentId"].clone())),
                ("cancelled", cancelled),
                ("worktree", worktree),
            ],
            &[],
        ))
    }

    async fn read(
        &self,
        args: &JsonObject,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ToolError> {
        let read: args::Read = args::read("shepherd_read", args, false)?;
        let source = args::closed("source", read.source, args::SOURCES)?;
        let lines = match read.lines {
            None => None,
            Some(n)
                if n.is_finite() && n >= 1.0 && n.fract() == 0.0 && n <= f64::from(u32::MAX) =>
            {
                Some(n as u32)
            }
            Some(n) => {
                return Err(ToolError::arguments(format!(
                    "lines `{n}` must be a whole number of at least 1"
                )));
            }
        };
        let herd = self.herd(&ctx.peer).await?;
        let params = ReadParams {
            target: read.name,
            lines,
            source,
        };
        let result = herd.quick(method::READ, to_value(&params)).await?;
        let text = result["text"].as_str().unwrap_or_default().to_owned();
        Ok(success(
            "shepherd_read",
            args,
            &text,
            &json!(text),
            &[
                ("target", Some(result["target"].clone())),
                ("lines", Some(result["lines"].clone())),
                ("source", Some(result["source"].clone())),
            ],
            &[],
        ))
    }
}
