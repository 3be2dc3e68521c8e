//! The parent's tools that answer at once: `shepherd` (agents, herd, prune), `shepherd_spawn`,
//! `shepherd_delegate`, `shepherd_message`, `shepherd_prompt`, `shepherd_status`,
//! `shepherd_close` and `shepherd_read`. Each is one broker request (the agent listing reads
//! the definitions, as `shepherd agents` does) and answers in the pi tools' words; the waiting
//! tools are in [`super::waits`], the server's shared state in [`super::server`].
//!
//! The tools' bodies are beside this router: `herding` (the `shepherd` control tool, spawn,
//! delegate) and `talk` (message, status, close, read).

mod herding;
mod talk;

use std::time::Duration;

use rmcp::model::{CallToolResult, JsonObject};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, tool, tool_router};
use serde_json::Value;

use crate::catalogue;
use crate::schema::input;
use crate::server::{Parent, respond};

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
