//! The parent's tools that change the herd: the `shepherd` control tool (agents, herd,
//! prune), `shepherd_spawn` and `shepherd_delegate`, each one broker request answered in the
//! pi tools' words.

use shepherd_core::error_code::ErrorCode;

use rmcp::RoleServer;
use rmcp::model::{CallToolResult, JsonObject};
use rmcp::service::RequestContext;
use serde_json::{Map, Value, json};
use shepherd_config::{DiscoveryWarning, discover_agents, load_settings};
use shepherd_core::agent_def::AgentScope;
use shepherd_core::protocol::{DelegateParams, NoParams, SpawnParams, calls};
use tokio::time::Instant;

use crate::args;
use crate::catalogue::ControlAction;
use crate::error::ToolError;
use crate::herd::absolute;
use crate::server::{Parent, progress};
use crate::text::{plural, success};
use crate::words;
use shepherd_client::connect::broker_timeout;
use shepherd_client::connect::caller_context;

impl Parent {
    pub(super) async fn control(
        &self,
        args: &JsonObject,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ToolError> {
        let control: args::Control = args::read("shepherd", args, true)?;
        let action: ControlAction = args::closed("action", Some(control.action), args::ACTIONS)?
            .expect("an action was given");
        let scope: Option<AgentScope> =
            args::closed("agentScope", control.agent_scope, args::SCOPES)?;
        let shown =
            json!({ "action": action.as_str(), "agentScope": scope.map(AgentScope::as_str) });
        let shown = shown.as_object().expect("an object");
        let herd = self.herd(&ctx.peer).await?;
        match action {
            ControlAction::Agents => {
                let settings = load_settings(&self.shared.ctx.dirs, &herd.project);
                let scope = scope.unwrap_or(settings.settings.agent_scope);
                let discovery = discover_agents(
                    &self.shared.ctx.dirs,
                    &herd.project,
                    scope,
                    settings.settings.include_bundled_agents,
                );
                // What the model needs to choose an agent, not the whole definition.
                let agents: Vec<Value> = discovery
                    .agents
                    .iter()
                    .map(|def| {
                        json!({
                            "name": def.name, "source": def.source,
                            "description": def.description, "model": def.model,
                            "thinking": def.thinking, "tools": def.tools,
                            "filePath": def.file_path.to_string_lossy(),
                        })
                    })
                    .collect();
                // Files that define no agent, with why: a spawn of such a name is refused and
                // tells the model to look here.
                let skipped: Vec<&DiscoveryWarning> = discovery
                    .warnings
                    .iter()
                    .filter(|warning| warning.skipped)
                    .collect();
                let scope = discovery.scope.to_string();
                let names: Vec<&str> = discovery.agents.iter().map(|a| a.name.as_str()).collect();
                Ok(success(
                    "shepherd",
                    shown,
                    &words::agents_text(&scope, &discovery.agents, &skipped),
                    &json!(names),
                    &[
                        ("scope", Some(json!(scope))),
                        ("agents", Some(json!(agents))),
                        ("skipped", (!skipped.is_empty()).then(|| json!(skipped))),
                    ],
                    &[],
                ))
            }
            ControlAction::Herd => {
                let result = herd.quick::<calls::Herd>(&NoParams {}).await?;
                herd.remember_herd(&result);
                let sheep = result.sheep;
                let ids: Vec<&str> = sheep.iter().map(|s| s.agent_id.as_str()).collect();
                Ok(success(
                    "shepherd",
                    shown,
                    &words::herd_text(&sheep),
                    &json!(ids),
                    &[("sheep", Some(json!(sheep)))],
                    &[],
                ))
            }
            ControlAction::Prune => {
                let result = herd.quick::<calls::Prune>(&NoParams {}).await?;
                let (pruned, remaining) = (result.pruned, result.remaining);
                let service = if pruned == 0 {
                    format!("No stale sheep records found ({remaining} kept).")
                } else {
                    format!(
                        "Removed {}; {remaining} remain.",
                        plural(pruned, "stale sheep record")
                    )
                };
                Ok(success(
                    "shepherd",
                    shown,
                    &service,
                    &json!(result),
                    &[
                        ("pruned", Some(json!(pruned))),
                        ("remaining", Some(json!(remaining))),
                    ],
                    &[],
                ))
            }
        }
    }

    pub(super) async fn spawn(
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
            // An agent's argument only tightens: the person's own choice is the CLI's.
            user_sandbox: None,
            limits: None,
            credential: None,
        };
        progress(ctx, 0.0, &format!("Spawning {}…", spawn.agent)).await;
        let deadline = Instant::now() + super::spawn_wait() + broker_timeout()?;
        let result = herd
            .send::<calls::Spawn>(&params, deadline)
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
        herd.remember(result.agent_id.as_str(), &result.display_name);
        let worktree = result.worktree.as_ref().map(|w| json!(w));
        let mut returned = Map::new();
        returned.insert("id".into(), json!(result.agent_id));
        returned.insert("agent".into(), json!(result.agent));
        returned.insert("label".into(), json!(result.label));
        if let Some(worktree) = &worktree {
            returned.insert("worktree".into(), worktree.clone());
        }
        Ok(success(
            "shepherd_spawn",
            args,
            &format!(
                "shepherd_spawn spawned {}{}",
                result.display_name,
                result
                    .host
                    .as_ref()
                    .map(|host| format!(" on host {host}"))
                    .unwrap_or_default()
            ),
            &Value::Object(returned),
            &[
                ("id", Some(json!(result.agent_id))),
                ("agent", Some(json!(result.agent))),
                ("label", Some(json!(result.label))),
                ("displayName", Some(json!(result.display_name))),
                ("backend", Some(json!(result.backend))),
                ("host", result.host.as_ref().map(|host| json!(host))),
                ("fieldnote", Some(json!(result.fieldnote))),
                ("worktree", worktree),
            ],
            &[("id", "agent id"), ("fieldnote", "agent fieldnote")],
        ))
    }

    /// `shepherd_delegate`, or with `turn` the deprecated `shepherd_prompt`.
    pub(super) async fn delegate(
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
        let result = herd.quick::<calls::Delegate>(&params).await?;
        let name = herd.name_of(result.agent_id.as_str()).await;
        let note = result.note_relative.as_ref().map(|n| json!(n));
        let task = json!(result.task_id);
        let agent_id = json!(result.agent_id);
        if turn {
            // A prompt is a one-turn task: its prompt id is that task's id.
            return Ok(success(
                tool,
                args,
                &format!("Prompted {name} (prompt id {})", result.task_id),
                &json!({ "id": task, "promptId": task }),
                &[
                    ("id", Some(task.clone())),
                    ("promptId", Some(task.clone())),
                    ("taskId", Some(task)),
                    ("agentId", Some(agent_id)),
                    ("note", note),
                ],
                &[],
            ));
        }
        let state = json!(result.state);
        Ok(success(
            tool,
            args,
            &format!(
                "Delegated task to {name}{}",
                match (&result.session_name, &session_name) {
                    (Some(name), Some(_)) =>
                        shepherd_client::session_words::named_session(name, result.resumed),
                    _ => String::new(),
                }
            ),
            &json!({ "taskId": task, "agentId": agent_id, "state": state }),
            &[
                ("id", Some(task.clone())),
                ("taskId", Some(task)),
                ("agentId", Some(agent_id)),
                ("state", Some(state)),
                ("note", note),
            ],
            &[],
        ))
    }
}
