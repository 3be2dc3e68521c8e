//! What the dashboard's keys do to the herd: each is one broker request (focus, read, message,
//! delegate, close), made on a connection of its own in a task of its own, so a close that
//! takes seconds never holds up the feed or another key. The answer comes back to the loop as
//! an [`Outcome`].

use std::time::Duration;

use shepherd_core::protocol::{
    Call, CloseParams, DelegateParams, FocusParams, MessageParams, ReadParams, calls,
};
use tokio::sync::mpsc::UnboundedSender;

use super::ui::ReadKind;
use shepherd_client::CliError;
use shepherd_client::connect::{Target, deadline_after, parent};

/// How long a close may take (the sheep's grace to end and the backend's confirmation).
const CLOSE_WAIT: Duration = Duration::from_secs(30);

/// How many lines a reader shows at most.
const READ_LINES: u32 = 2000;

/// A request for the broker, with the sheep's name for what is said about it.
#[derive(Debug, Clone)]
pub(crate) enum Request {
    Focus,
    Read {
        kind: ReadKind,
        headless: bool,
    },
    Message {
        text: String,
        reply_to: Option<String>,
    },
    Delegate {
        text: String,
    },
    Close,
}

/// What came of a request.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// It was done; a line saying what.
    Done(String),
    /// It was refused or failed; the reason.
    Failed(String),
    /// A sheep's output, for its reader.
    Text {
        agent_id: String,
        kind: ReadKind,
        text: String,
    },
}

/// Sends `request` about sheep `agent_id` (shown as `name`) to `target`'s broker, in the
/// background; the outcome goes to `done`.
pub(crate) fn perform(
    target: Target,
    agent_id: String,
    name: String,
    request: Request,
    done: UnboundedSender<Outcome>,
) {
    tokio::spawn(async move {
        let outcome = match run(&target, &agent_id, &name, request).await {
            Ok(outcome) => outcome,
            Err(err) => Outcome::Failed(format!("{name}: {}", err.message)),
        };
        let _closed = done.send(outcome);
    });
}

async fn run(
    target: &Target,
    agent_id: &str,
    name: &str,
    request: Request,
) -> Result<Outcome, CliError> {
    Ok(match request {
        Request::Focus => {
            let result = call::<calls::Focus>(
                target,
                &FocusParams {
                    id: agent_id.to_owned(),
                    caller: Some(shepherd_client::connect::caller_context()),
                },
                Duration::ZERO,
            )
            .await?;
            Outcome::Done(format!(
                "{} is in front ({} {})",
                result.display_name, result.backend, result.pane
            ))
        }
        Request::Read { kind, headless } => {
            let source = match kind {
                ReadKind::Screen if !headless => Some(shepherd_core::backend::ReadSource::Visible),
                _ => None,
            };
            let result = call::<calls::Read>(
                target,
                &ReadParams {
                    target: agent_id.to_owned(),
                    lines: Some(READ_LINES),
                    source,
                },
                Duration::ZERO,
            )
            .await?;
            Outcome::Text {
                agent_id: agent_id.to_owned(),
                kind,
                text: result.text,
            }
        }
        Request::Message { text, reply_to } => {
            let answer = reply_to.is_some();
            let _sent = call::<calls::Message>(
                target,
                &MessageParams {
                    target: agent_id.to_owned(),
                    message: text,
                    reply_to,
                    ..MessageParams::default()
                },
                Duration::ZERO,
            )
            .await?;
            if answer {
                Outcome::Done(format!("answered {name}"))
            } else {
                Outcome::Done(format!("message sent to {name}"))
            }
        }
        Request::Delegate { text } => {
            let result = call::<calls::Delegate>(
                target,
                &DelegateParams {
                    target: agent_id.to_owned(),
                    task: text,
                    ..DelegateParams::default()
                },
                Duration::ZERO,
            )
            .await?;
            let note = result
                .note_relative
                .map(|note| format!("; note {note}"))
                .unwrap_or_default();
            Outcome::Done(format!("task handed to {name}{note}"))
        }
        Request::Close => {
            let result = call::<calls::Close>(
                target,
                &CloseParams {
                    id: agent_id.to_owned(),
                    keep_pane: false,
                },
                CLOSE_WAIT,
            )
            .await?;
            let cancelled = if result.cancelled.is_some() {
                "; its task was cancelled"
            } else {
                ""
            };
            Outcome::Done(format!("closed {}{cancelled}", result.display_name))
        }
    })
}

/// One parent request; `wait` is how long the request itself may take beyond the broker
/// timeout.
async fn call<C: Call>(
    target: &Target,
    params: &C::Params,
    wait: Duration,
) -> Result<C::Result, CliError> {
    let mut link = parent(target, deadline_after(Duration::ZERO)?).await?;
    Ok(link.send::<C>(params, deadline_after(wait)?).await?)
}
