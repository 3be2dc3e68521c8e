//! The parent's tools that talk to and about a sheep: `shepherd_message`, `shepherd_status`,
//! `shepherd_close` and `shepherd_read`, each one broker request answered in the pi tools'
//! words.

use std::time::Duration;

use rmcp::RoleServer;
use rmcp::model::{CallToolResult, JsonObject};
use rmcp::service::RequestContext;
use serde_json::{Map, Value, json};
use shepherd_core::protocol::{CloseParams, ReadParams, StatusParams, StatusResult, calls};
use tokio::time::Instant;

use crate::args;
use crate::error::ToolError;
use crate::server::{Parent, message_params};
use crate::text::success;
use crate::words;
use shepherd_client::connect::broker_timeout;

/// How long a close may take: the sheep's grace, the backend's confirmation, a pi sheep's
/// last words (as `shepherd close` allows).
const CLOSE_WAIT: Duration = Duration::from_secs(30);

impl Parent {
    pub(super) async fn message(
        &self,
        args: &JsonObject,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ToolError> {
        let message: args::Message = args::read("shepherd_message", args, false)?;
        let params = message_params(message)?;
        let herd = self.herd(&ctx.peer).await?;
        let result = herd.quick::<calls::Message>(&params).await?;
        let name = herd.name_of(&result.target_id).await;
        let state = result
            .target_task_state
            .map(|s| format!(" (task {})", s.as_str()))
            .unwrap_or_default();
        let mut returned = Map::new();
        returned.insert("messageId".into(), json!(result.message_id));
        returned.insert("accepted".into(), json!(result.accepted));
        returned.insert("delivery".into(), json!("queued"));
        returned.insert("targetId".into(), json!(result.target_id));
        if let Some(request) = &result.request_id {
            returned.insert("requestId".into(), json!(request));
        }
        Ok(success(
            "shepherd_message",
            args,
            &format!(
                "Message queued to {name}{state}; {}shepherd_status {{id: \"{}\"}} shows whether it was delivered and read",
                words::changed_delivery(&result),
                result.message_id
            ),
            &Value::Object(returned),
            &[
                ("id", Some(json!(result.message_id))),
                ("messageId", Some(json!(result.message_id))),
                ("requestId", result.request_id.as_ref().map(|r| json!(r))),
                (
                    "targetTaskState",
                    result.target_task_state.map(|s| json!(s)),
                ),
                (
                    "deliveryChanged",
                    result.delivery_changed.as_ref().map(|d| json!(d)),
                ),
            ],
            &[],
        ))
    }

    pub(super) async fn status(
        &self,
        args: &JsonObject,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ToolError> {
        let id: args::AgentId = args::read("shepherd_status", args, false)?;
        let herd = self.herd(&ctx.peer).await?;
        let params = StatusParams { id: Some(id.id) };
        let status = herd.quick::<calls::Status>(&params).await?;
        if let StatusResult::One(sheep) = &status {
            herd.remember(sheep.agent_id.as_str(), &sheep.display_name);
        }
        let (text, shown) =
            crate::receipts::status_answer(&status, words::status_text, words::public_status)?;
        Ok(success(
            "shepherd_status",
            args,
            &text,
            &shown,
            &[("status", Some(shown.clone()))],
            &[],
        ))
    }

    pub(super) async fn close(
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
        let result = herd.send::<calls::Close>(&params, deadline).await?;
        let cancelled_text = result
            .cancelled
            .as_ref()
            .map(|c| format!(" (task {} cancelled)", c.task_id))
            .unwrap_or_default();
        let worktree_text = result
            .worktree
            .as_ref()
            .map(crate::controls::worktree_text)
            .unwrap_or_default();
        let worktree = result.worktree.as_ref().map(|w| json!(w));
        let mut returned = Map::new();
        returned.insert("id".into(), json!(result.agent_id));
        if let Some(worktree) = &worktree {
            returned.insert("worktree".into(), worktree.clone());
        }
        Ok(success(
            "shepherd_close",
            args,
            &format!(
                "closed {}{cancelled_text}{worktree_text}",
                result.display_name
            ),
            &Value::Object(returned),
            &[
                ("id", Some(json!(result.agent_id))),
                ("cancelled", result.cancelled.as_ref().map(|c| json!(c))),
                ("worktree", worktree),
            ],
            &[],
        ))
    }

    pub(super) async fn read(
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
        let result = herd.quick::<calls::Read>(&params).await?;
        Ok(success(
            "shepherd_read",
            args,
            &result.text,
            &json!(result.text),
            &[
                ("target", Some(json!(result.target))),
                ("lines", Some(json!(result.lines))),
                ("source", Some(json!(result.source))),
            ],
            &[],
        ))
    }
}
