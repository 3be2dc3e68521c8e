//! `shepherd mcp --sheep`: the sheep's own tools for an agent that runs as a sheep and speaks
//! MCP — `shepherd_done` (the only way its task finishes), `shepherd_message` (to the
//! shepherd or a herd-mate), `shepherd_inbox` (its task, messages and replies, for hosts
//! nothing can be typed into), `shepherd_herd` (its herd-mates) and `shepherd_status` (its
//! own status, or whether a message was delivered and read). They act with the sheep's own credential from its environment
//! (`SHEPHERD_SOCKET`, `SHEPHERD_AGENT_ID`, `SHEPHERD_TOKEN`), so a sheep can only ever speak
//! for itself. The names, arguments and answers are the pi sheep extension's. Outside a sheep
//! the server still starts (a host configured once for every session must not fail), and each
//! tool answers with a `not_a_sheep` error.

use shepherd_core::error_code::ErrorCode;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::{CallToolResult, Implementation, JsonObject, ProtocolVersion, ServerConfig};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ErrorData, RoleServer, ServerHandler, tool, tool_handler, tool_router};
use serde::Deserialize;
use shepherd_client::wire::Link;
use shepherd_core::envelope::{Envelope, Kind};
use shepherd_core::herd::{InboxItem, Payload};
use shepherd_core::protocol::{
    AckParams, Call, DoneParams, InboxParams, NoParams, Role, StatusParams, calls,
};
use shepherd_core::task::DoneStatus;
use tokio::sync::{Notify, OnceCell};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::args::{self, wait_seconds};
use super::catalogue;
use super::error::ToolError;
use super::feed::{Feed, Level, capabilities};
use super::schema::input;
use super::server::message_params;
use super::text::{self, plural};
use super::waits::{Budget, millis};
use super::words;
use shepherd_client::connect::{SheepCapability, broker_timeout, sheep};

/// What every copy of the sheep server shares.
#[derive(Debug)]
pub(crate) struct SheepShared {
    cap: Option<SheepCapability>,
    bound: Duration,
    pool: Mutex<Vec<Link>>,
    /// The task of the last task envelope shown, so `shepherd_done` names what it settles.
    current_task: Mutex<Option<String>>,
    /// Message id → its task, to catch a reply sent with another task id.
    task_of: Mutex<HashMap<String, String>>,
    feed: OnceCell<()>,
    level: Arc<Level>,
    pub(crate) stop: CancellationToken,
    wake: Arc<Notify>,
}

/// The sheep MCP server.
#[derive(Debug, Clone)]
pub(crate) struct Sheep {
    shared: Arc<SheepShared>,
    tool_router: ToolRouter<Self>,
}

fn answer(action: &str, outcome: Result<String, ToolError>) -> Result<CallToolResult, ErrorData> {
    Ok(match outcome {
        Ok(words) => text::plain(words, false),
        Err(err) => {
            let hint = err
                .hint()
                .map(|h| format!("\nHint: {h}"))
                .unwrap_or_default();
            text::plain(
                format!(
                    "Shepherd {action} failed ({}): {}{hint}",
                    err.code, err.message
                ),
                true,
            )
        }
    })
}

impl Sheep {
    pub(crate) fn new(bound: Duration) -> Self {
        Self {
            shared: Arc::new(SheepShared {
                cap: SheepCapability::from_env().ok(),
                bound,
                pool: Mutex::new(Vec::new()),
                current_task: Mutex::new(None),
                task_of: Mutex::new(HashMap::new()),
                feed: OnceCell::new(),
                level: Arc::new(Level::new()),
                stop: CancellationToken::new(),
                wake: Arc::new(Notify::new()),
            }),
            tool_router: Self::tool_router(),
        }
    }

    fn cap(&self) -> Result<&SheepCapability, ToolError> {
        self.shared.cap.as_ref().ok_or_else(|| {
            ToolError::new(
                ErrorCode::NotASheep,
                "this server runs outside a sheep: SHEPHERD_SOCKET, SHEPHERD_AGENT_ID and SHEPHERD_TOKEN are not set",
            )
        })
    }

    /// One request of the method table (`C`) on a pooled link, answered before `deadline`.
    async fn send<C: Call>(
        &self,
        params: &C::Params,
        deadline: Instant,
    ) -> Result<C::Result, ToolError> {
        let cap = self.cap()?;
        self.shared.wake.notify_waiters();
        let mut link = self
            .shared
            .pool
            .lock()
            .expect("pool lock")
            .pop()
            .unwrap_or_else(|| sheep(cap, Role::Sheep));
        let outcome = link.send::<C>(params, deadline).await;
        self.shared.pool.lock().expect("pool lock").push(link);
        Ok(outcome?)
    }
}

#[tool_router(vis = "pub(crate)")]
impl Sheep {
    #[tool(
        name = "shepherd_done",
        description = catalogue::SHEEP_DONE.description,
        input_schema = input(&catalogue::SHEEP_DONE.mcp_schema())
    )]
    async fn shepherd_done(&self, args: JsonObject) -> Result<CallToolResult, ErrorData> {
        answer("done", self.done(&args).await)
    }

    #[tool(
        name = "shepherd_message",
        description = catalogue::SHEEP_MESSAGE.description,
        input_schema = input(&catalogue::SHEEP_MESSAGE.mcp_schema())
    )]
    async fn shepherd_message(&self, args: JsonObject) -> Result<CallToolResult, ErrorData> {
        answer("message", self.message(&args).await)
    }

    #[tool(
        name = "shepherd_herd",
        description = catalogue::SHEEP_HERD.description,
        input_schema = input(&catalogue::SHEEP_HERD.mcp_schema())
    )]
    async fn shepherd_herd(&self) -> Result<CallToolResult, ErrorData> {
        answer("herd", self.herd().await)
    }

    #[tool(
        name = "shepherd_status",
        description = catalogue::SHEEP_STATUS.description,
        input_schema = input(&catalogue::SHEEP_STATUS.mcp_schema())
    )]
    async fn shepherd_status(&self, args: JsonObject) -> Result<CallToolResult, ErrorData> {
        answer("status", self.status(&args).await)
    }

    #[tool(
        name = "shepherd_inbox",
        description = catalogue::SHEEP_INBOX.description,
        input_schema = input(&catalogue::SHEEP_INBOX.mcp_schema())
    )]
    async fn shepherd_inbox(&self, args: JsonObject) -> Result<CallToolResult, ErrorData> {
        answer("inbox", self.inbox(&args).await)
    }
}

impl Sheep {
    async fn done(&self, args: &JsonObject) -> Result<String, ToolError> {
        let done: args::Done = args::read("shepherd_done", args, true)?;
        let status: DoneStatus = args::closed("status", Some(done.status), args::DONE_STATUSES)?
            .expect("a status was given");
        let task_id = done
            .task_id
            .or_else(|| self.shared.current_task.lock().expect("task lock").clone());
        let params = DoneParams {
            status,
            summary: done.summary,
            task_id,
        };
        let result = self
            .send::<calls::Done>(&params, Instant::now() + broker_timeout()?)
            .await?;
        let note = if result.supplied_task_id.is_some() {
            " (task id corrected to the delegated task)"
        } else {
            ""
        };
        Ok(format!(
            "Task {} {}{note}.",
            result.task_id,
            result.status.as_str()
        ))
    }

    async fn message(&self, args: &JsonObject) -> Result<String, ToolError> {
        let mut message: args::Message = args::read("shepherd_message", args, true)?;
        if let Some(reply_to) = &message.reply_to {
            let known = self
                .shared
                .task_of
                .lock()
                .expect("task lock")
                .get(reply_to)
                .cloned();
            match (&known, &message.task_id) {
                (Some(known), Some(given)) if known != given => {
                    return Err(ToolError::new(
                        ErrorCode::ReplyTaskMismatch,
                        format!(
                            "Reply {reply_to} belongs to task {known}; use that task id, not {given}."
                        ),
                    ));
                }
                (Some(known), None) => message.task_id = Some(known.clone()),
                _ => {}
            }
        }
        let params = message_params(message)?;
        let result = self
            .send::<calls::Tell>(&params, Instant::now() + broker_timeout()?)
            .await?;
        Ok(format!(
            "Shepherd message accepted for asynchronous delivery ({id}). {changed}shepherd_status {{messageId: \"{id}\"}} shows whether it was delivered and read.",
            changed = words::changed_delivery(&result),
            id = result.message_id
        ))
    }

    async fn herd(&self) -> Result<String, ToolError> {
        let deadline = Instant::now() + broker_timeout()?;
        let result = self
            .send::<calls::HerdMates>(&NoParams {}, deadline)
            .await?;
        Ok(super::receipts::mates_text(&result))
    }

    async fn status(&self, args: &JsonObject) -> Result<String, ToolError> {
        let asked: SheepStatus = args::read("shepherd_status", args, true)?;
        let params = StatusParams {
            id: asked.message_id,
        };
        let deadline = Instant::now() + broker_timeout()?;
        let status = self.send::<calls::Status>(&params, deadline).await?;
        Ok(super::receipts::status_answer(&status, words::status_text, words::public_status)?.0)
    }

    async fn inbox(&self, args: &JsonObject) -> Result<String, ToolError> {
        let inbox: args::Inbox = args::read("shepherd_inbox", args, false)?;
        let bound = self.shared.bound.as_secs_f64();
        let wait = wait_seconds(inbox.wait, 0.0, bound)?;
        // The wait ends before the bound, leaving time to answer (as the parent's tools do).
        let budget = Budget::new(Instant::now(), self.shared.bound, wait);
        let waited = budget.until.saturating_duration_since(budget.started);
        let answer = self
            .send::<calls::Inbox>(
                &InboxParams {
                    wait_ms: millis(waited),
                },
                budget.hard,
            )
            .await?;
        let items = answer.items;
        let mut shown = Vec::new();
        for item in &items {
            let Payload::Envelope { envelope } = &item.payload else {
                continue;
            };
            if let Some(task) = &envelope.task_id {
                if envelope.kind == Kind::Task {
                    *self.shared.current_task.lock().expect("task lock") = Some(task.to_string());
                }
                self.shared
                    .task_of
                    .lock()
                    .expect("task lock")
                    .insert(envelope.message_id.to_string(), task.to_string());
            }
            shown.push(envelope_words(envelope));
        }
        if let Some(last) = items.last().map(|item| item.seq) {
            self.send::<calls::Ack>(&AckParams { seq: last }, Instant::now() + broker_timeout()?)
                .await?;
        }
        Ok(if shown.is_empty() {
            "Nothing new since you last asked.".to_owned()
        } else {
            format!(
                "{} since you last asked, oldest first:\n\n{}",
                plural(shown.len(), "new item"),
                shown.join("\n\n")
            )
        })
    }
}

/// An envelope in the words a sheep reads it (the client library's).
fn envelope_words(envelope: &Envelope) -> String {
    shepherd_client::envelope_text::envelope_for_sheep(envelope)
}

/// The sheep's `shepherd_status`: itself, or a message it sent or received.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SheepStatus {
    message_id: Option<String>,
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Sheep {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(capabilities())
            .with_server_info(Implementation::new("shepherd-sheep", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "You are a Shepherd sheep. Your task arrives in shepherd_inbox (and as notifications). Finish it with shepherd_done (completed, blocked or failed, with a summary); ask or report with shepherd_message (to `shepherd` or a herd-mate: shepherd_herd lists them).",
            )
    }

    fn supported_protocol_versions(&self) -> std::borrow::Cow<'static, [ProtocolVersion]> {
        std::borrow::Cow::Borrowed(ProtocolVersion::known_up_to(&ProtocolVersion::V_2025_11_25))
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

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        let Some(cap) = self.shared.cap.clone() else {
            return;
        };
        let shared = self.shared.clone();
        if shared.feed.set(()).is_ok() {
            let feed = Feed {
                link: sheep(&cap, Role::Sheep),
                peer: context.peer,
                level: shared.level.clone(),
                stop: shared.stop.clone(),
                wake: shared.wake.clone(),
                words: Box::new(|item: &InboxItem| match &item.payload {
                    Payload::Envelope { envelope } => Some(envelope_words(envelope)),
                    _ => None,
                }),
                logger: "shepherd",
            };
            tokio::spawn(feed.run());
        }
    }
}
