//! A sheep's own tools: finishing its task, messaging, its herd-mates, receipts and its inbox.

use super::{
    DELIVERY, DONE_STATUSES, EXPECTS_REPLY, Front, INBOX_WAIT, Kind, MESSAGE_TASK, MESSAGE_TEXT,
    MESSAGE_THREAD, REPLY_TO, Tool, arg, required,
};

pub const SHEEP_DONE: Tool = Tool {
    name: "shepherd_done",
    fronts: Front::Both,
    description: "Finish your delegated Shepherd task. This is the only signal that a task is done: ending a turn or going idle is not. Call it exactly once, with status completed (the task is done), blocked (you cannot go on without help) or failed, and a short summary of what you did or why not. Your final message after it should be a concise report.",
    pi_description: None,
    args: &[
        required(
            "status",
            Kind::Choice(DONE_STATUSES),
            "completed, blocked or failed",
        ),
        arg("summary", Kind::String, "What was done, or why not"),
        arg(
            "taskId",
            Kind::String,
            "The task id (optional: your current task)",
        ),
    ],
};

pub const SHEEP_MESSAGE: Tool = Tool {
    name: "shepherd_message",
    fronts: Front::Both,
    description: "Send a message to the Shepherd (target `shepherd`) or to a herd-mate (its agent id or display name; shepherd_herd lists them). Use expectsReply to ask a question: your task then waits for the answer, which arrives as a new message (see shepherd_inbox). To answer a question, pass its message id as replyTo. A message never finishes a task; use shepherd_done for that.",
    // A pi sheep has no shepherd_inbox: every message is delivered into its conversation.
    pi_description: Some(
        "Send a message to the Shepherd (target `shepherd`) or to a herd-mate (its agent id or display name; shepherd_herd lists them). Use expectsReply to ask a question: your task then waits for the answer, which arrives as a new message. To answer a question, pass its message id as replyTo. A message never finishes a task; use shepherd_done for that.",
    ),
    args: &[
        required(
            "target",
            Kind::String,
            "`shepherd`, or a herd-mate's agent id or display name",
        ),
        MESSAGE_TEXT,
        MESSAGE_TASK,
        MESSAGE_THREAD,
        REPLY_TO,
        EXPECTS_REPLY,
        DELIVERY,
    ],
};

pub const SHEEP_HERD: Tool = Tool {
    name: "shepherd_herd",
    fronts: Front::Both,
    description: "List your herd: every sheep of it (you included, marked), with its agent id, display name, agent, what runs it and its state. Message a herd-mate with shepherd_message by its agent id or display name; the parent is `shepherd`. Task texts are the parent's and are not shown.",
    pi_description: None,
    args: &[],
};

pub const SHEEP_STATUS: Tool = Tool {
    name: "shepherd_status",
    fronts: Front::Both,
    description: "Whether a message you sent (or received) was delivered and read: pass its messageId, as shepherd_message returned it. Without messageId, your own status and the latest messages sent to you.",
    pi_description: None,
    args: &[arg(
        "messageId",
        Kind::String,
        "A message you sent or received (its id); without it, your own status",
    )],
};

pub const SHEEP_INBOX: Tool = Tool {
    name: "shepherd_inbox",
    fronts: Front::Mcp,
    description: "Your Shepherd inbox: the task delegated to you, messages, questions and replies that arrived since you last asked, oldest first, each once. With `wait`, waits up to that many seconds for something to arrive when nothing has.",
    pi_description: None,
    args: &[INBOX_WAIT],
};
