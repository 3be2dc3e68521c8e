//! The parent's tools: what a shepherd uses to run its herd, as the catalogue writes them.

use super::{
    ACTIONS, AGENT_ID, Arg, DELIVERY, EXPECTS_REPLY, Front, HARNESS, HOST, INBOX_WAIT, Kind,
    MAX_COST, MAX_TOKENS, MAX_TOOL_CALLS, MAX_TURNS, MESSAGE_TASK, MESSAGE_TEXT, MESSAGE_THREAD,
    PLACEMENTS, PROJECT_CWD, REPLY_TO, SANDBOX, SCOPES, SOURCES, Tool, arg, mcp_only, required,
};

pub const CONTROL: Tool = Tool {
    name: "shepherd",
    fronts: Front::Both,
    description: "Shepherd's control plane. A shepherd (you) runs a herd of sheep: child coding agents started from agent definitions, each with an opaque agent id. This tool only looks: `agents` lists the definitions you may spawn (exact, case-sensitive names), `herd` lists your sheep with their ids, states and tasks, `prune` forgets sheep whose processes are gone. Starting, tasking, messaging, watching, reading and closing sheep are separate shepherd_* tools. Every delegated task gets a note in the session's fieldnotes (.shepherd/sessions/…, indexed by shepherd.md).",
    pi_description: None,
    args: &[
        required("action", Kind::Choice(ACTIONS), "herd | agents | prune"),
        arg(
            "agentScope",
            Kind::Choice(SCOPES),
            "For agents: which definitions to list (default: the agentScope setting)",
        ),
    ],
};

/// `shepherd_spawn`'s description, saying whose model the sheep gets: `$model` follows "with
/// the definition's model".
macro_rules! spawn_description {
    ($model:literal) => {
        concat!("Start an idle, persistent sheep from an agent definition. It gets no task yet: hand it one with shepherd_delegate. `agent` is the exact definition name (call shepherd {action: \"agents\"} when unsure). Give every sheep a short label that says what it is for (e.g. \"auth tests\"); the sheep is then shown as `<agent>: <label>`, which must be unique among your sheep. It runs in the project directory unless `cwd` says otherwise, with the definition's model", $model, ", in a background tab when it is visible; `pane_right` and `pane_down` split your own pane instead. Returns the sheep's agent id: keep it, every other shepherd_* tool takes it.")
    };
}

pub const SPAWN: Tool = Tool {
    name: "shepherd_spawn",
    fronts: Front::Both,
    description: spawn_description!(""),
    // A pi parent's own model stands in for a definition that names none.
    pi_description: Some(spawn_description!(" (or yours, when it names none)")),
    args: &[
        required(
            "agent",
            Kind::String,
            "Exact agent definition name (case-sensitive)",
        ),
        required(
            "label",
            Kind::String,
            "Short task-specific label: letters, digits, spaces, _ - . (max 64, no colon)",
        ),
        arg(
            "placement",
            Kind::Choice(PLACEMENTS),
            "tab (default, background) | pane_right | pane_down | workspace",
        ),
        PROJECT_CWD,
        HARNESS,
        arg(
            "isolate",
            Kind::Boolean,
            "Run it in its own git worktree on its own branch; on close a clean worktree is removed, one with work is kept and reported (files, diffstat, commits) for you to integrate or discard",
        ),
        HOST,
        SANDBOX,
    ],
};

pub const DELEGATE: Tool = Tool {
    name: "shepherd_delegate",
    fronts: Front::Both,
    description: "Hand a sheep a tracked task and return at once with its task id. The task may take the sheep many turns; it is finished only when the sheep reports it done (completed, blocked or failed), when it passes its timeout, or when you close the sheep. A sheep going idle or ending a turn is not completion. Follow with shepherd_watch on the task id. One open task per sheep; the task text goes to the sheep with the path of its note.",
    pi_description: None,
    args: &[
        required(
            "target",
            Kind::String,
            "The sheep's agent id (from shepherd_spawn)",
        ),
        required("task", Kind::String, "What the sheep should do"),
        arg(
            "timeout",
            Kind::Positive,
            "Minutes before the task times out (default: the timeout setting, 20; fractions allowed)",
        ),
        MAX_TURNS,
        MAX_TOOL_CALLS,
        MAX_TOKENS,
        MAX_COST,
        arg(
            "stall",
            Kind::NonNegative,
            "Stall watchdog for this task: minutes of silence before the sheep is nudged, and again before the task settles blocked; 0 turns it off (default: the stallWatchdog setting, off)",
        ),
        arg(
            "sessionName",
            Kind::String,
            "Put the task's note into the fieldnotes session with this name, creating it or continuing it (default: your own session)",
        ),
    ],
};

pub const MESSAGE: Tool = Tool {
    name: "shepherd_message",
    fronts: Front::Both,
    description: "Send a sheep a message. `target` must be the exact agent id from shepherd_spawn: not a definition name like `planner`, not a label, not a pane id. Accepted means queued, not read or answered. With `expectsReply` and the sheep's `taskId`, its task waits for the answer (a tracked question). To answer a sheep's question, pass its message id as `replyTo` and the asking sheep's task id as `taskId`. A plain message never changes a task's state and is not a way to hand over work (use shepherd_delegate).",
    pi_description: None,
    args: &[
        required("target", Kind::String, "The sheep's exact agent id"),
        MESSAGE_TEXT,
        MESSAGE_TASK,
        MESSAGE_THREAD,
        REPLY_TO,
        EXPECTS_REPLY,
        DELIVERY,
    ],
};

pub const PROMPT: Tool = Tool {
    name: "shepherd_prompt",
    fronts: Front::Both,
    description: "Deprecated: prefer shepherd_delegate + shepherd_watch (and shepherd_message for follow-ups). Sends a sheep one prompt as a one-turn task that finishes when the sheep's run settles, with its final text as the result. Returns its prompt id, which is the id of that one-turn task; watch it with shepherd_watch.",
    pi_description: None,
    args: &[
        AGENT_ID,
        required("message", Kind::String, "The prompt"),
        arg(
            "timeout",
            Kind::Positive,
            "Minutes before the turn times out",
        ),
    ],
};

pub const WATCH: Tool = Tool {
    name: "shepherd_watch",
    fronts: Front::Both,
    description: "Wait for tasks to settle (completed, blocked, failed, cancelled or timed out) and report each with its status, summary and note. One call waits at most `wait` seconds (at most the server's bound, 25 s by default) and then answers either with every task settled or with \"still running\", naming exactly the call to make to keep waiting; in between you may do other work. While it waits it sends progress. Idle sheep, ended turns and waiting tasks are not completions; a task waiting on a question from its sheep shows as waiting (answer it: see shepherd_inbox). Agent ids are not watch targets.",
    pi_description: Some(
        "Register a watcher for one or more task ids and return at once. When the tasks settle (completed, blocked, failed, cancelled or timed out) you get one completion message with each task's status, summary and note; tasks already settled are reported in this result. Idle sheep, ended turns and waiting tasks are not completions. Agent ids and pane ids are not watch targets.",
    ),
    args: &[
        required(
            "id",
            Kind::IdOrIds,
            "The task ids to watch (one or more, from shepherd_delegate)",
        ),
        mcp_only(arg(
            "wait",
            Kind::Number,
            "Seconds to wait at most for them to settle in this call (default and maximum: the server's bound, 25 s unless set with --max-wait)",
        )),
    ],
};

pub const STATUS: Tool = Tool {
    name: "shepherd_status",
    fronts: Front::Both,
    description: "Show one sheep's state (starting, idle, working, done, blocked, failed, exited, closing), its task (state, how long it has waited for a reply, on whom, whether the wait is stale) and the latest messages sent to it with whether each was delivered and read. Given a message id (from shepherd_message) instead, show whether that message was delivered and read. Changes nothing.",
    pi_description: None,
    args: &[required(
        "id",
        Kind::String,
        "The sheep's agent id, or a message id (shepherd-message-…) for its receipt",
    )],
};

pub const CLOSE: Tool = Tool {
    name: "shepherd_close",
    fronts: Front::Both,
    description: "Close one of your sheep: its process ends and an open task is cancelled (return code 130). Watching or waiting never closes a sheep; close each one when you no longer need it.",
    pi_description: None,
    args: &[AGENT_ID],
};

pub const RESUME: Tool = Tool {
    name: "shepherd_resume",
    fronts: Front::Both,
    description: "Reopen one of your closed or exited sheep on its own session, under the same agent id and name: its conversation (what it was told, what it did) is intact, so it can pick up where it stopped. Hand it the next task with shepherd_delegate; that task's note links the note it continues. Only pi sheep keep a session to resume.",
    pi_description: None,
    args: &[AGENT_ID],
};

pub const READ: Tool = Tool {
    name: "shepherd_read",
    fronts: Front::Both,
    description: "Diagnostic: the recent output of a sheep's terminal or log. `name` is its agent id or display name. `source` is recent-unwrapped (default), recent, visible or detection; an idle pane may have no recent output, try visible.",
    pi_description: None,
    args: &[
        required("name", Kind::String, "Agent id or display name"),
        arg(
            "lines",
            Kind::Integer { minimum: 1 },
            "How many lines (default 40)",
        ),
        arg(
            "source",
            Kind::Choice(SOURCES),
            "recent-unwrapped (default) | recent | visible | detection",
        ),
    ],
};

const RUN_TASK: &[Arg] = &[
    required("agent", Kind::String, "Exact agent definition name"),
    required("task", Kind::String, "The task"),
    arg("cwd", Kind::String, "Working directory for this task"),
    arg("isolate", Kind::Boolean, "Run in its own git worktree"),
    HARNESS,
    HOST,
];

const RUN_STEP: &[Arg] = &[
    required("agent", Kind::String, "Exact agent definition name"),
    required(
        "task",
        Kind::String,
        "The task; {previous} is replaced by the previous step's result",
    ),
    arg("cwd", Kind::String, "Working directory for this step"),
    HARNESS,
    HOST,
];

pub const RUN: Tool = Tool {
    name: "shepherd_run",
    fronts: Front::Mcp,
    description: "Run agents and collect their results in one call: exactly one mode, single (`agent` + `task`), parallel (`tasks`: up to 8, 4 at a time, results in input order) or chain (`chain`: steps in order; `{previous}` in a step's task is replaced by the previous step's result; stops at the first step that does not complete). Every task gets a note in a fieldnotes session; pass `sessionName` to continue a session. Each sheep is closed when its task ends. The run goes on in the background: a call waits at most `wait` seconds (at most the server's bound, 25 s by default) and then answers with the results or with \"still running\" and the runId to follow it with (shepherd_run {runId}), or to cancel it (shepherd_run {runId, cancel: true}). For long or interactive work prefer shepherd_spawn + shepherd_delegate.",
    pi_description: None,
    args: &[
        arg("agent", Kind::String, "Single mode: exact agent name"),
        arg("task", Kind::String, "Single mode: the task"),
        arg("tasks", Kind::Objects(RUN_TASK), "Parallel mode: the tasks"),
        arg(
            "chain",
            Kind::Objects(RUN_STEP),
            "Chain mode: the steps, in order",
        ),
        PROJECT_CWD,
        arg(
            "harness",
            Kind::Harness,
            "Run every task on this coding agent (a task may name its own)",
        ),
        arg(
            "host",
            Kind::String,
            "Run every task's sheep on this host, one the user defined under `hosts` in their Shepherd settings (a task may name its own; default: this machine)",
        ),
        SANDBOX,
        arg(
            "sessionName",
            Kind::String,
            "Create or continue the fieldnotes session with this name",
        ),
        arg(
            "timeout",
            Kind::Number,
            "Minutes each task may take (default: the timeout setting, 20)",
        ),
        arg(
            "runId",
            Kind::String,
            "Follow (or, with cancel, cancel) a run an earlier call started, instead of starting one",
        ),
        arg("cancel", Kind::Boolean, "With runId: cancel that run"),
        arg(
            "wait",
            Kind::Number,
            "Seconds to wait at most for the run in this call (default and maximum: the server's bound, 25 s unless set with --max-wait)",
        ),
        MAX_TURNS,
        MAX_TOOL_CALLS,
        MAX_TOKENS,
        MAX_COST,
    ],
};

pub const INBOX: Tool = Tool {
    name: "shepherd_inbox",
    fronts: Front::Mcp,
    description: "What arrived for you since you last asked: messages, questions (answer them with shepherd_message and replyTo), replies, completions of watched tasks, stale-wait reminders and notices, oldest first. Each item is reported once. With `wait`, waits up to that many seconds (at most the server's bound) for something to arrive when nothing has. Call it between other work when your host does not show Shepherd's notifications.",
    pi_description: None,
    args: &[INBOX_WAIT],
};

pub const MERGE: Tool = Tool {
    name: "shepherd_merge",
    fronts: Front::Both,
    description: "Land the work isolated sheep left (a merge queue): the branches of finished runs (by runId, in the run's input order), of closed isolated sheep (by agent id) or named outright (shepherd/…), one by one, into the branch the project had checked out (or `into`). Only branches whose sheep's last task completed land unless `includeFailed`; `only` and `skip` choose among them. Each merge is made in a worktree of its own, never in the project's, and verified before the target moves; `check` runs after each and a failing one leaves the target where it was (or goes to a sheep of `fix`); a conflict stops the queue with its files and hunks, unless `resolve` names an agent whose sheep then resolves and commits it. A second merge into the same branch waits its turn. Answers with each branch: merged at which commit, already landed, conflict, check failed, rejected, skipped. `dryRun` lists what would land and what would conflict, changing nothing; `cancel` (a mergeId) stops a merge under way; `discard` throws the branches away instead.",
    pi_description: None,
    args: &[
        arg(
            "targets",
            Kind::IdOrIds,
            "What to land, in order: run ids (run-…), sheep (agent ids), branches (shepherd/…)",
        ),
        arg(
            "session",
            Kind::String,
            "Also every branch of this fieldnotes session not landed yet",
        ),
        arg(
            "only",
            Kind::Strings,
            "Of those, land only these (branches or agent ids)",
        ),
        arg(
            "skip",
            Kind::Strings,
            "Of those, leave these out (branches or agent ids)",
        ),
        arg(
            "includeFailed",
            Kind::Boolean,
            "Also land branches whose sheep's last task did not complete (each is marked)",
        ),
        arg(
            "into",
            Kind::String,
            "The branch to land into (made when missing; default: the branch the project had checked out when the work began)",
        ),
        arg(
            "strategy",
            Kind::Choice(&["merge", "squash", "rebase", "ff-only"]),
            "How each branch lands (default: the mergeStrategy setting, merge)",
        ),
        arg(
            "check",
            Kind::String,
            "A shell command that must pass in the merge worktree after each merge",
        ),
        arg(
            "checkTimeout",
            Kind::Positive,
            "Minutes the check may run (default: the mergeCheckTimeout setting)",
        ),
        arg(
            "resolve",
            Kind::String,
            "An agent definition whose sheep resolves a conflict (without it a conflict stops the queue)",
        ),
        arg(
            "fix",
            Kind::String,
            "An agent definition whose sheep fixes a failing check (the check then runs again)",
        ),
        arg(
            "fixAttempts",
            Kind::Integer { minimum: 1 },
            "How many fixers a failing check gets at most (default 2)",
        ),
        arg(
            "prune",
            Kind::Boolean,
            "Delete each branch (and its preserved changes) once it landed",
        ),
        arg(
            "dryRun",
            Kind::Boolean,
            "List what would land, in order, with commits, diffstat and conflicts; change nothing",
        ),
        arg(
            "cancel",
            Kind::String,
            "Cancel this merge (its mergeId) instead; the target stays at its last verified landing",
        ),
        arg(
            "discard",
            Kind::Boolean,
            "Throw the branches away instead (their branches and preserved changes are deleted)",
        ),
        mcp_only(arg(
            "mergeId",
            Kind::String,
            "Follow a merge an earlier call started, instead of starting one",
        )),
        mcp_only(arg(
            "wait",
            Kind::Number,
            "Seconds to wait at most for the merge in this call (default and maximum: the server's bound, 25 s unless set with --max-wait)",
        )),
    ],
};
