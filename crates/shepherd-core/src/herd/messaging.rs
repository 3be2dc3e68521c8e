//! Messages, replies and tracked requests (`shepherd_done` and run reports are `done`).
//!
//! The rules are the original extension's (upstream §3.2–§3.11): a message never creates a task;
//! `expectsReply` with a task opens one tracked request on that task (which then waits); a reply
//! naming the request resolves it, and is relayed to the asker when it went elsewhere. A
//! message asked to steer a sheep's turn steers only a sheep that can take one mid-turn (pi);
//! any other gets it as a follow-up, and the sender is told.

use super::Tx;
use super::error::HerdError;
use super::model::{Event, MessageRecord, Payload, Phase, Request};
use crate::envelope::{self, Delivery, Envelope, Kind, SCHEMA_VERSION};
use crate::error_code::ErrorCode;
use crate::harness::{Harness, Runtime};
use crate::ids::{MessageId, Participant, TaskId};
use crate::task::TaskState;

/// A message from the parent or a sheep.
#[derive(Debug, Clone)]
pub struct MessageInput {
    /// A freshly minted id.
    pub message_id: MessageId,
    /// The authenticated sender.
    pub sender: Participant,
    /// The target as the caller wrote it (`shepherd`, `parent` or an agent id).
    pub target: String,
    /// The text.
    pub content: String,
    /// The task it concerns, as the caller wrote it.
    pub task_id: Option<String>,
    /// A caller-chosen thread.
    pub thread_id: Option<String>,
    /// The message it answers, as the caller wrote it.
    pub reply_to: Option<String>,
    /// Whether the sender waits for an answer.
    pub expects_reply: bool,
    /// Follow-up or steer.
    pub delivery: Delivery,
    /// How long an answer may take (ms).
    pub reply_timeout_ms: i64,
}

/// What became of an accepted message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageOutcome {
    /// Its id.
    pub message_id: MessageId,
    /// Who receives it.
    pub target: Participant,
    /// The task it was attributed to.
    pub task_id: Option<TaskId>,
    /// The tracked request it opened.
    pub request_id: Option<MessageId>,
    /// The request it answered.
    pub resolved: Option<MessageId>,
    /// The state of the task it concerns, after delivery.
    pub task_state: Option<TaskState>,
    /// How it is delivered: as asked, or as a follow-up when its target cannot be steered.
    pub delivery: Delivery,
    /// Why it is delivered otherwise than asked, in words for the sender.
    pub delivery_changed: Option<String>,
}

/// Accepts a message and queues it for its target.
pub fn send(tx: &mut Tx<'_>, input: MessageInput) -> Result<MessageOutcome, HerdError> {
    envelope::check_message(&input.content)
        .map_err(|err| HerdError::new(err.code(), err.to_string()))?;
    let target = resolve_target(tx, &input.sender, &input.target)?;
    let reply_to = input
        .reply_to
        .as_deref()
        .map(parse_message_id)
        .transpose()?;
    let task_id = attribute_task(tx, &input, reply_to.as_ref())?;
    tx.herd().check_inbox_room(&target)?;

    let mut request = None;
    if input.expects_reply {
        request = tracked_request(tx, &input, &target, task_id.as_ref())?;
    }
    let resolves = reply_to
        .as_ref()
        .and_then(|id| tx.herd().requests.get(id))
        .filter(|req| req.target == input.sender || input.sender == Participant::Parent)
        .cloned();

    let (delivery, delivery_changed) = delivery_for(tx, &target, input.delivery);
    let deadline_at = input
        .expects_reply
        .then(|| tx.now().saturating_add(input.reply_timeout_ms));
    let envelope = Envelope {
        schema_version: SCHEMA_VERSION,
        message_id: input.message_id.clone(),
        kind: if reply_to.is_some() {
            Kind::Reply
        } else {
            Kind::Message
        },
        sender_id: input.sender.clone(),
        target_id: target.clone(),
        task_id: task_id.clone(),
        thread_id: input.thread_id.clone(),
        reply_to: reply_to.clone(),
        expects_reply: input.expects_reply,
        deadline_at,
        delivery,
        content: Some(input.content.clone()),
        status: None,
        origin_sender_id: None,
        note: None,
        created_at: tx.now(),
    };

    if let Some(req) = &request {
        tx.emit(Event::RequestOpened {
            request: req.clone(),
        });
    }
    if let Some(req) = &resolves {
        tx.emit(Event::RequestResolved {
            request_id: req.id.clone(),
        });
    }
    tx.emit(Event::MessageRecorded {
        message_id: input.message_id.clone(),
        record: MessageRecord {
            sender: input.sender.clone(),
            target: target.clone(),
            task_id: task_id.clone(),
            receipt: Some(super::model::Receipt::sent(tx.now(), &input.content)),
        },
    });
    if let Some(req) = &resolves
        && req.asker != target
        && req.asker != input.sender
    {
        let mut relay = envelope.clone();
        relay.target_id = req.asker.clone();
        relay.origin_sender_id = Some(input.sender.clone());
        relay.sender_id = Participant::Parent;
        tx.enqueue(req.asker.clone(), Payload::Envelope { envelope: relay });
    }
    tx.enqueue(target.clone(), Payload::Envelope { envelope });
    if let Participant::Sheep(sender) = &input.sender {
        super::steps::touch(tx, sender);
    }
    if let Some(req) = &resolves {
        // Back from waiting: its silence counts from the answer.
        super::steps::touch_task(tx, &req.task_id);
    }

    let task_state = task_id
        .as_ref()
        .and_then(|id| tx.herd().tasks.get(id))
        .map(|t| t.state);
    Ok(MessageOutcome {
        message_id: input.message_id,
        target,
        task_id,
        request_id: request.map(|r| r.id),
        resolved: resolves.map(|r| r.id),
        task_state,
        delivery,
        delivery_changed,
    })
}

/// How a message asked to be delivered as `asked` reaches `target`. Only pi takes a message in
/// the middle of a turn (its sheep extension hands it to pi as a steering message); every
/// other sheep gets it as a follow-up, and the sender is told so rather than left to believe
/// the turn was steered.
fn delivery_for(tx: &Tx<'_>, target: &Participant, asked: Delivery) -> (Delivery, Option<String>) {
    let Participant::Sheep(id) = target else {
        return (asked, None);
    };
    let Some(sheep) = tx.herd().sheep.get(id) else {
        return (asked, None);
    };
    let why = match (asked, sheep.runtime) {
        (Delivery::FollowUp, _) | (Delivery::Steer, Runtime::Agent(Harness::Pi)) => {
            return (asked, None);
        }
        (Delivery::Steer, Runtime::Command) => format!(
            "{} is a command sheep, which cannot be steered: the message waits in its inbox as a \
             follow-up, for the next time it reads it.",
            sheep.display_name()
        ),
        (Delivery::Steer, Runtime::Agent(harness)) => format!(
            "{} runs {}, which cannot be steered mid-turn: the message is delivered as a \
             follow-up, once its current turn ends.",
            sheep.display_name(),
            harness.title()
        ),
    };
    (Delivery::FollowUp, Some(why))
}

fn parse_message_id(text: &str) -> Result<MessageId, HerdError> {
    MessageId::parse(text).ok_or_else(|| {
        HerdError::new(
            ErrorCode::InvalidReplyTo,
            format!("`{text}` is not a message id; replyTo takes the id of the message being answered (shepherd-message-…)."),
        )
    })
}

fn resolve_target(tx: &Tx<'_>, sender: &Participant, text: &str) -> Result<Participant, HerdError> {
    let target = Participant::parse(text).ok_or_else(|| {
        HerdError::new(
            ErrorCode::InvalidTarget,
            format!(
                "`{text}` is not a valid target. Use `shepherd` (or `parent`) for the parent, or the \
                 exact agent id returned by spawn (shepherd-agent-…); agent names, labels, pane ids \
                 and placeholders are not accepted."
            ),
        )
    })?;
    match (&target, sender) {
        (Participant::Parent, Participant::Parent) => Err(HerdError::new(
            ErrorCode::InvalidTarget,
            "The parent cannot message itself; target a sheep by its agent id.",
        )),
        (Participant::Sheep(id), _) if Participant::Sheep(id.clone()) == *sender => {
            Err(HerdError::new(
                ErrorCode::InvalidTarget,
                "A sheep cannot message itself; target `shepherd` or a herd-mate's agent id.",
            ))
        }
        (Participant::Sheep(id), _) => {
            let sheep = tx
                .herd()
                .sheep
                .get(id)
                .ok_or_else(|| HerdError::unknown_agent_id(text))?;
            match sheep.phase {
                Phase::Starting | Phase::Ready => Ok(target),
                Phase::Exited | Phase::Failed => Err(HerdError::closed(
                    &sheep.display_name(),
                    id.as_str(),
                    "has exited",
                )),
                Phase::Closing | Phase::Closed => Err(HerdError::closed(
                    &sheep.display_name(),
                    id.as_str(),
                    "is closed",
                )),
            }
        }
        (Participant::Parent, Participant::Sheep(_)) => Ok(target),
    }
}

/// Which task a message concerns: the task of the message it answers, else the one named,
/// else (for a sheep) the sender's own open task.
fn attribute_task(
    tx: &Tx<'_>,
    input: &MessageInput,
    reply_to: Option<&MessageId>,
) -> Result<Option<TaskId>, HerdError> {
    let named = match input.task_id.as_deref() {
        Some(text) => Some(tx.herd().task_by_text(text)?.id.clone()),
        None => None,
    };
    let answered = reply_to
        .and_then(|id| tx.herd().messages.get(id))
        .and_then(|record| record.task_id.clone());
    if let (Some(answered), Some(named)) = (&answered, &named)
        && answered != named
        && input.sender != Participant::Parent
    {
        return Err(HerdError::new(
            ErrorCode::ReplyTaskMismatch,
            format!(
                "Reply to {} belongs to task {answered}; use that task id, not {named}.",
                reply_to.map(MessageId::as_str).unwrap_or_default()
            ),
        ));
    }
    // A sheep's message concerns its open task, or else its most recent one (a late word
    // after settlement still says which task it was about).
    Ok(answered.or(named).or_else(|| match &input.sender {
        Participant::Sheep(id) => tx
            .herd()
            .sheep
            .get(id)
            .and_then(|s| s.active_task.clone())
            .or_else(|| {
                tx.herd()
                    .tasks
                    .values()
                    .rev()
                    .find(|t| &t.agent_id == id)
                    .map(|t| t.id.clone())
            }),
        Participant::Parent => None,
    }))
}

/// The tracked request an `expectsReply` message opens, if it is tracked: the parent's questions
/// are tracked on the target's task it names; a sheep's questions on its own open task.
fn tracked_request(
    tx: &Tx<'_>,
    input: &MessageInput,
    target: &Participant,
    task_id: Option<&TaskId>,
) -> Result<Option<Request>, HerdError> {
    let task = match &input.sender {
        Participant::Parent => {
            let Some(task_id) = task_id else {
                return Ok(None);
            };
            let task = &tx.herd().tasks[task_id];
            if Some(&task.agent_id) != target.agent_id() {
                return Err(HerdError::new(
                    ErrorCode::TaskAgentMismatch,
                    format!(
                        "Task {task_id} belongs to {}, not to {target}; a tracked question goes to the task's own sheep.",
                        task.agent_id
                    ),
                ));
            }
            task
        }
        Participant::Sheep(sender) => {
            let own = tx
                .herd()
                .sheep
                .get(sender)
                .and_then(|s| s.active_task.clone());
            let Some(own) = own else { return Ok(None) };
            &tx.herd().tasks[&own]
        }
    };
    if task.state.is_terminal() {
        return Ok(None);
    }
    if let Some(pending) = &task.pending_request {
        return Err(HerdError::new(
            ErrorCode::RequestOpen,
            format!(
                "Task {} already waits for a reply to {pending}; one tracked question per task.",
                task.id
            ),
        ));
    }
    Ok(Some(Request {
        id: input.message_id.clone(),
        task_id: task.id.clone(),
        asker: input.sender.clone(),
        target: target.clone(),
        question: input.content.clone(),
        opened_at: tx.now(),
        deadline_at: tx.now().saturating_add(input.reply_timeout_ms),
    }))
}
