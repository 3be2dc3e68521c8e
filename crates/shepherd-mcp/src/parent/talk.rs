//! The parent's tools that talk to and about a sheep: `shepherd_message`, `shepherd_status`,
//! `shepherd_close` and `shepherd_read`, each one broker request answered in the pi tools'
//! words.

use std::time::Duration;

use rmcp::RoleServer;
use rmcp::model::{CallToolResult, JsonObject};
use rmcp::service::RequestContext;
use serde_json::json;
use shepherd_core::protocol::{CloseParams, ReadParams, StatusParams, method};
use tokio::time::Instant;

use crate::args;
use crate::error::ToolError;
use crate::herd::to_value;
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

    pub(super) async fn status(
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
            crate::receipts::status_answer(&status, words::status_text, words::public_status);
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
            .map(crate::controls::worktree_text)
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
