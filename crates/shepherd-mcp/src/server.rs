//! The parent server itself: what every copy of it shares (the herd, opened on the first tool
//! call; the feed that passes the broker's pushes on to the host; the logging level; the
//! bound), its `ServerHandler` answers (capabilities, instructions, protocol versions,
//! `logging/setLevel`), and the small helpers every tool uses — a failure turned into a tool
//! error, progress notifications, protocol parameters as JSON. The tools are in
//! [`super::parent`] (those that answer at once) and [`super::waits`] (those that wait).

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::ToolCallContext;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, JsonObject,
    ProgressNotificationParam, ProtocolVersion, ServerConfig,
};
use rmcp::service::{NotificationContext, Peer, RequestContext};
use rmcp::{ErrorData, RoleServer, ServerHandler, tool_handler};
use shepherd_core::envelope::Delivery;
use shepherd_core::protocol::MessageParams;
use tokio::sync::{Notify, OnceCell};
use tokio_util::sync::CancellationToken;

use super::args;
use super::environment::Notice;
use super::error::ToolError;
use super::feed::{self, Feed, Level, parent_words};
use super::herd::{Choice, Herd};
use super::text;
use shepherd_client::Context;
use shepherd_client::runtime::Found;

/// What every copy of the server shares.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) ctx: Context,
    pub(crate) choice: Choice,
    /// The longest any waiting tool call blocks.
    pub(crate) bound: Duration,
    herd: OnceCell<Arc<Herd>>,
    pub(crate) level: Arc<Level>,
    pub(crate) stop: CancellationToken,
    wake: Arc<Notify>,
    /// What the herd's environment lacks, said once.
    notice: Notice,
}

/// The parent MCP server.
#[derive(Debug, Clone)]
pub(crate) struct Parent {
    pub(crate) shared: Arc<Shared>,
    pub(crate) tool_router: ToolRouter<Self>,
}

/// A tool's outcome as rmcp wants it: a failure is a tool error the model reads.
pub(crate) fn respond(
    tool: &str,
    action: &str,
    args: &JsonObject,
    outcome: Result<CallToolResult, ToolError>,
) -> Result<CallToolResult, ErrorData> {
    Ok(outcome.unwrap_or_else(|err| text::failure(tool, action, args, &err)))
}

impl Parent {
    pub(crate) fn new(ctx: Context, choice: Choice, bound: Duration) -> Self {
        Self {
            shared: Arc::new(Shared {
                ctx,
                choice,
                bound,
                herd: OnceCell::new(),
                level: Arc::new(Level::new()),
                stop: CancellationToken::new(),
                wake: Arc::new(Notify::new()),
                notice: Notice::default(),
            }),
            tool_router: Self::tool_router()
                + Self::wait_router()
                + Self::run_router()
                + Self::merge_router()
                + Self::controls_router(),
        }
    }

    /// The herd, opened on the first call (which also starts the feed).
    pub(crate) async fn herd(&self, peer: &Peer<RoleServer>) -> Result<Arc<Herd>, ToolError> {
        self.shared.wake.notify_waiters();
        let shared = &self.shared;
        shared
            .herd
            .get_or_try_init(|| async {
                let herd = Arc::new(Herd::open(&shared.ctx, &shared.choice, peer).await?);
                // One line on stderr (hosts keep it in their MCP logs): which herd this is, and
                // where its sockets are when that was not in the environment.
                let found = match &shared.ctx.runtime_found {
                    Some((dir, Found::Host { pid })) => format!(
                        " (runtime directory {}, from process {pid}'s environment)",
                        dir.display()
                    ),
                    Some((dir, Found::Login)) => {
                        format!(
                            " (runtime directory {}, the login session's)",
                            dir.display()
                        )
                    }
                    None => String::new(),
                };
                eprintln!(
                    "shepherd mcp: herd {} in {}{found}",
                    herd.identity,
                    herd.project.display()
                );
                let feed = Feed {
                    link: herd.link(),
                    peer: peer.clone(),
                    level: shared.level.clone(),
                    stop: shared.stop.clone(),
                    wake: shared.wake.clone(),
                    words: parent_words(herd.clone()),
                    logger: "shepherd",
                };
                tokio::spawn(feed.run());
                Ok(herd)
            })
            .await
            .cloned()
    }

    /// The herd, when a tool call has opened it.
    pub(crate) fn opened(&self) -> Option<Arc<Herd>> {
        self.shared.herd.get().cloned()
    }

    /// The waiting tools' bound in seconds, for their descriptions.
    pub(crate) fn bound_secs(&self) -> f64 {
        self.shared.bound.as_secs_f64()
    }
}

/// The broker's `message` parameters from the tool's arguments.
pub(crate) fn message_params(message: args::Message) -> Result<MessageParams, ToolError> {
    let delivery: Option<Delivery> = args::closed("delivery", message.delivery, args::DELIVERIES)?;
    Ok(MessageParams {
        target: message.target,
        message: message.message,
        task_id: message.task_id,
        thread_id: message.thread_id,
        reply_to: message.reply_to,
        expects_reply: message.expects_reply == Some(true),
        delivery,
    })
}

/// Sends `notifications/progress` when the host gave a progress token.
pub(crate) async fn progress(ctx: &RequestContext<RoleServer>, done: f64, message: &str) {
    progress_of(ctx, done, None, message).await;
}

/// Progress with a total.
pub(crate) async fn progress_of(
    ctx: &RequestContext<RoleServer>,
    done: f64,
    total: Option<f64>,
    message: &str,
) {
    let Some(token) = ctx.meta.get_progress_token() else {
        return;
    };
    let mut param = ProgressNotificationParam::new(token, done).with_message(message);
    if let Some(total) = total {
        param = param.with_total(total);
    }
    if let Err(err) = ctx.peer.notify_progress(param).await {
        tracing::debug!("notifications/progress not sent: {err}");
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Parent {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(feed::capabilities())
            .with_server_info(Implementation::new("shepherd", env!("CARGO_PKG_VERSION")))
            .with_instructions(format!(
                "Shepherd runs child coding agents (sheep) for you. Workflow: shepherd {{action: \"agents\"}} to find an exact agent name → shepherd_spawn → shepherd_delegate → shepherd_watch (waits up to {} s per call; call it again while it says \"still running\", or do other work meanwhile) → shepherd_close when you no longer need the sheep. shepherd_run does spawn, delegate, wait and close in one call. Call shepherd_inbox between other work to see messages, questions and completions. A sheep going idle is not completion; only a settled task is. Before assigning or reviewing work, read the session's shepherd.md; each sheep writes only its own note. Guidance for present and future sheep goes in the session's shepherds-note.md, beside shepherd.md and linked from it: every sheep reads it first, and no rewrite of the index touches it.",
                self.bound_secs()
            ))
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        let shared = &self.shared;
        shared
            .notice
            .announce(&shared.ctx, &shared.choice, &context.peer, &shared.level)
            .await;
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let peer = context.peer.clone();
        let call = ToolCallContext::new(self, request, context);
        let mut response = self.tool_router.call(call).await?;
        if let CallToolResponse::Complete(result) = &mut response {
            let shared = &self.shared;
            shared
                .notice
                .append_once(&shared.ctx, &shared.choice, &peer, result)
                .await;
        }
        Ok(response)
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(ProtocolVersion::known_up_to(&ProtocolVersion::V_2025_11_25))
    }

    #[allow(deprecated, reason = "logging/setLevel is what 2025 hosts send")]
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.shared.level.set(request.level);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn message_arguments_become_the_brokers_message() {
        let message: args::Message = args::read(
            "shepherd_message",
            json!({"target": "a", "message": "m", "delivery": "steer", "expectsReply": true})
                .as_object()
                .unwrap(),
            false,
        )
        .unwrap();
        let params = message_params(message).unwrap();
        assert_eq!(params.delivery, Some(Delivery::Steer));
        assert!(params.expects_reply);
    }
}
