/**
 * The tools the pi extension offers, generated from Shepherd's tool catalogue
 * (crates/shepherd-mcp/src/catalogue.rs), which the MCP server's tools are written from too:
 * each tool's name, description and parameters. Do not edit: run scripts/gen-protocol-types.
 */

import { Type } from "typebox";

/** The parent's tools (extensions/parent/tools.ts). */
export const PARENT_TOOLS = {
	shepherd: {
		name: "shepherd",
		description: "Shepherd's control plane. A shepherd (you) runs a herd of sheep: child coding agents started from agent definitions, each with an opaque agent id. This tool only looks: `agents` lists the definitions you may spawn (exact, case-sensitive names), `herd` lists your sheep with their ids, states and tasks, `prune` forgets sheep whose processes are gone. Starting, tasking, messaging, watching, reading and closing sheep are separate shepherd_* tools. Every delegated task gets a note in the session's fieldnotes (.shepherd/sessions/…, indexed by shepherd.md).",
		parameters: Type.Object({
			action: Type.Unsafe<"herd" | "agents" | "prune">({ type: "string", enum: ["herd", "agents", "prune"], description: "herd | agents | prune" }),
			agentScope: Type.Optional(Type.Unsafe<"user" | "project" | "both">({ type: "string", enum: ["user", "project", "both"], description: "For agents: which definitions to list (default: the agentScope setting)" })),
		}),
	},
	shepherd_spawn: {
		name: "shepherd_spawn",
		description: "Start an idle, persistent sheep from an agent definition. It gets no task yet: hand it one with shepherd_delegate. `agent` is the exact definition name (call shepherd {action: \"agents\"} when unsure). Give every sheep a short label that says what it is for (e.g. \"auth tests\"); the sheep is then shown as `<agent>: <label>`, which must be unique among your sheep. It runs in the project directory unless `cwd` says otherwise, with the definition's model (or yours, when it names none), in a background tab when it is visible; `pane_right` and `pane_down` split your own pane instead. Returns the sheep's agent id: keep it, every other shepherd_* tool takes it.",
		parameters: Type.Object({
			agent: Type.String({ description: "Exact agent definition name (case-sensitive)" }),
			label: Type.String({ description: "Short task-specific label: letters, digits, spaces, _ - . (max 64, no colon)" }),
			placement: Type.Optional(Type.Unsafe<"tab" | "pane_right" | "pane_down" | "workspace">({ type: "string", enum: ["tab", "pane_right", "pane_down", "workspace"], description: "tab (default, background) | pane_right | pane_down | workspace" })),
			cwd: Type.Optional(Type.String({ description: "Working directory (default: the project directory)" })),
			harness: Type.Optional(Type.Unsafe<"pi" | "claude-code" | "codex" | "gemini" | "opencode">({ type: "string", enum: ["pi", "claude-code", "codex", "gemini", "opencode"], description: "Run the definition on this coding agent instead of its own: pi | claude-code | codex | gemini | opencode" })),
			isolate: Type.Optional(Type.Boolean({ description: "Run it in its own git worktree on its own branch; on close a clean worktree is removed, one with work is kept and reported (files, diffstat, commits) for you to integrate or discard" })),
			host: Type.Optional(Type.String({ description: "A host to run it on: one the user defined under `hosts` in their Shepherd settings (default: this machine)" })),
			sandbox: Type.Optional(Type.Unsafe<"off" | "workspace" | "strict">({ type: "string", enum: ["off", "workspace", "strict"], description: "Confine the sheep at least this much: off | workspace (only its working directory writable, the rest of the home directory hidden) | strict (the project outside its working directory hidden too); it only tightens its definition's sandbox and the user's sandbox setting, never loosens them" })),
		}),
	},
	shepherd_delegate: {
		name: "shepherd_delegate",
		description: "Hand a sheep a tracked task and return at once with its task id. The task may take the sheep many turns; it is finished only when the sheep reports it done (completed, blocked or failed), when it passes its timeout, or when you close the sheep. A sheep going idle or ending a turn is not completion. Follow with shepherd_watch on the task id. One open task per sheep; the task text goes to the sheep with the path of its note.",
		parameters: Type.Object({
			target: Type.String({ description: "The sheep's agent id (from shepherd_spawn)" }),
			task: Type.String({ description: "What the sheep should do" }),
			timeout: Type.Optional(Type.Number({ exclusiveMinimum: 0, description: "Minutes before the task times out (default: the timeout setting, 20; fractions allowed)" })),
			maxTurns: Type.Optional(Type.Integer({ minimum: 1, description: "Budget: most model turns the task may take" })),
			maxToolCalls: Type.Optional(Type.Integer({ minimum: 1, description: "Budget: most tool calls the task may make" })),
			maxTokens: Type.Optional(Type.Integer({ minimum: 1, description: "Budget: most tokens (input, output, cache) the task may use" })),
			maxCost: Type.Optional(Type.Number({ exclusiveMinimum: 0, description: "Budget: most cost the task may run up (the model's pricing). Reaching any budget stops the sheep and settles the task blocked, naming the limit" })),
			stall: Type.Optional(Type.Number({ minimum: 0, description: "Stall watchdog for this task: minutes of silence before the sheep is nudged, and again before the task settles blocked; 0 turns it off (default: the stallWatchdog setting, off)" })),
			sessionName: Type.Optional(Type.String({ description: "Put the task's note into the fieldnotes session with this name, creating it or continuing it (default: your own session)" })),
		}),
	},
	shepherd_message: {
		name: "shepherd_message",
		description: "Send a sheep a message. `target` must be the exact agent id from shepherd_spawn: not a definition name like `planner`, not a label, not a pane id. Accepted means queued, not read or answered. With `expectsReply` and the sheep's `taskId`, its task waits for the answer (a tracked question). To answer a sheep's question, pass its message id as `replyTo` and the asking sheep's task id as `taskId`. A plain message never changes a task's state and is not a way to hand over work (use shepherd_delegate).",
		parameters: Type.Object({
			target: Type.String({ description: "The sheep's exact agent id" }),
			message: Type.String({ description: "The message text" }),
			taskId: Type.Optional(Type.String({ description: "The task it concerns (the asker's task when answering)" })),
			threadId: Type.Optional(Type.String({ description: "A conversation thread id of your choice" })),
			replyTo: Type.Optional(Type.String({ description: "The message id you are answering" })),
			expectsReply: Type.Optional(Type.Boolean({ description: "Whether you wait for an answer" })),
			delivery: Type.Optional(Type.Unsafe<"followUp" | "steer">({ type: "string", enum: ["followUp", "steer"], description: "followUp (default: next turn) | steer (this turn)" })),
		}),
	},
	shepherd_prompt: {
		name: "shepherd_prompt",
		description: "Deprecated: prefer shepherd_delegate + shepherd_watch (and shepherd_message for follow-ups). Sends a sheep one prompt as a one-turn task that finishes when the sheep's run settles, with its final text as the result. Returns its prompt id, which is the id of that one-turn task; watch it with shepherd_watch.",
		parameters: Type.Object({
			id: Type.String({ description: "The sheep's agent id" }),
			message: Type.String({ description: "The prompt" }),
			timeout: Type.Optional(Type.Number({ exclusiveMinimum: 0, description: "Minutes before the turn times out" })),
		}),
	},
	shepherd_watch: {
		name: "shepherd_watch",
		description: "Register a watcher for one or more task ids and return at once. When the tasks settle (completed, blocked, failed, cancelled or timed out) you get one completion message with each task's status, summary and note; tasks already settled are reported in this result. Idle sheep, ended turns and waiting tasks are not completions. Agent ids and pane ids are not watch targets.",
		parameters: Type.Object({
			id: Type.Union([Type.String(), Type.Array(Type.String(), { minItems: 1 })], { description: "The task ids to watch (one or more, from shepherd_delegate)" }),
		}),
	},
	shepherd_status: {
		name: "shepherd_status",
		description: "Show one sheep's state (starting, idle, working, done, blocked, failed, exited, closing), its task (state, how long it has waited for a reply, on whom, whether the wait is stale) and the latest messages sent to it with whether each was delivered and read. Given a message id (from shepherd_message) instead, show whether that message was delivered and read. Changes nothing.",
		parameters: Type.Object({
			id: Type.String({ description: "The sheep's agent id, or a message id (shepherd-message-…) for its receipt" }),
		}),
	},
	shepherd_close: {
		name: "shepherd_close",
		description: "Close one of your sheep: its process ends and an open task is cancelled (return code 130). Watching or waiting never closes a sheep; close each one when you no longer need it.",
		parameters: Type.Object({
			id: Type.String({ description: "The sheep's agent id" }),
		}),
	},
	shepherd_resume: {
		name: "shepherd_resume",
		description: "Reopen one of your closed or exited sheep on its own session, under the same agent id and name: its conversation (what it was told, what it did) is intact, so it can pick up where it stopped. Hand it the next task with shepherd_delegate; that task's note links the note it continues. Only pi sheep keep a session to resume.",
		parameters: Type.Object({
			id: Type.String({ description: "The sheep's agent id" }),
		}),
	},
	shepherd_read: {
		name: "shepherd_read",
		description: "Diagnostic: the recent output of a sheep's terminal or log. `name` is its agent id or display name. `source` is recent-unwrapped (default), recent, visible or detection; an idle pane may have no recent output, try visible.",
		parameters: Type.Object({
			name: Type.String({ description: "Agent id or display name" }),
			lines: Type.Optional(Type.Integer({ minimum: 1, description: "How many lines (default 40)" })),
			source: Type.Optional(Type.Unsafe<"visible" | "recent" | "recent-unwrapped" | "detection">({ type: "string", enum: ["visible", "recent", "recent-unwrapped", "detection"], description: "recent-unwrapped (default) | recent | visible | detection" })),
		}),
	},
	shepherd_merge: {
		name: "shepherd_merge",
		description: "Land the work isolated sheep left (a merge queue): the branches of finished runs (by runId, in the run's input order), of closed isolated sheep (by agent id) or named outright (shepherd/…), one by one, into the branch the project had checked out (or `into`). Only branches whose sheep's last task completed land unless `includeFailed`; `only` and `skip` choose among them. Each merge is made in a worktree of its own, never in the project's, and verified before the target moves; `check` runs after each and a failing one leaves the target where it was (or goes to a sheep of `fix`); a conflict stops the queue with its files and hunks, unless `resolve` names an agent whose sheep then resolves and commits it. A second merge into the same branch waits its turn. Answers with each branch: merged at which commit, already landed, conflict, check failed, rejected, skipped. `dryRun` lists what would land and what would conflict, changing nothing; `cancel` (a mergeId) stops a merge under way; `discard` throws the branches away instead.",
		parameters: Type.Object({
			targets: Type.Optional(Type.Union([Type.String(), Type.Array(Type.String(), { minItems: 1 })], { description: "What to land, in order: run ids (run-…), sheep (agent ids), branches (shepherd/…)" })),
			session: Type.Optional(Type.String({ description: "Also every branch of this fieldnotes session not landed yet" })),
			only: Type.Optional(Type.Array(Type.String(), { description: "Of those, land only these (branches or agent ids)" })),
			skip: Type.Optional(Type.Array(Type.String(), { description: "Of those, leave these out (branches or agent ids)" })),
			includeFailed: Type.Optional(Type.Boolean({ description: "Also land branches whose sheep's last task did not complete (each is marked)" })),
			into: Type.Optional(Type.String({ description: "The branch to land into (made when missing; default: the branch the project had checked out when the work began)" })),
			strategy: Type.Optional(Type.Unsafe<"merge" | "squash" | "rebase" | "ff-only">({ type: "string", enum: ["merge", "squash", "rebase", "ff-only"], description: "How each branch lands (default: the mergeStrategy setting, merge)" })),
			check: Type.Optional(Type.String({ description: "A shell command that must pass in the merge worktree after each merge" })),
			checkTimeout: Type.Optional(Type.Number({ exclusiveMinimum: 0, description: "Minutes the check may run (default: the mergeCheckTimeout setting)" })),
			resolve: Type.Optional(Type.String({ description: "An agent definition whose sheep resolves a conflict (without it a conflict stops the queue)" })),
			fix: Type.Optional(Type.String({ description: "An agent definition whose sheep fixes a failing check (the check then runs again)" })),
			fixAttempts: Type.Optional(Type.Integer({ minimum: 1, description: "How many fixers a failing check gets at most (default 2)" })),
			prune: Type.Optional(Type.Boolean({ description: "Delete each branch (and its preserved changes) once it landed" })),
			dryRun: Type.Optional(Type.Boolean({ description: "List what would land, in order, with commits, diffstat and conflicts; change nothing" })),
			cancel: Type.Optional(Type.String({ description: "Cancel this merge (its mergeId) instead; the target stays at its last verified landing" })),
			discard: Type.Optional(Type.Boolean({ description: "Throw the branches away instead (their branches and preserved changes are deleted)" })),
		}),
	},
} as const;

/** A sheep's own tools (extensions/shepherd-sheep.ts). */
export const SHEEP_TOOLS = {
	shepherd_done: {
		name: "shepherd_done",
		description: "Finish your delegated Shepherd task. This is the only signal that a task is done: ending a turn or going idle is not. Call it exactly once, with status completed (the task is done), blocked (you cannot go on without help) or failed, and a short summary of what you did or why not. Your final message after it should be a concise report.",
		parameters: Type.Object({
			status: Type.Unsafe<"completed" | "blocked" | "failed">({ type: "string", enum: ["completed", "blocked", "failed"], description: "completed, blocked or failed" }),
			summary: Type.Optional(Type.String({ description: "What was done, or why not" })),
			taskId: Type.Optional(Type.String({ description: "The task id (optional: your current task)" })),
		}),
	},
	shepherd_message: {
		name: "shepherd_message",
		description: "Send a message to the Shepherd (target `shepherd`) or to a herd-mate (its agent id or display name; shepherd_herd lists them). Use expectsReply to ask a question: your task then waits for the answer, which arrives as a new message. To answer a question, pass its message id as replyTo. A message never finishes a task; use shepherd_done for that.",
		parameters: Type.Object({
			target: Type.String({ description: "`shepherd`, or a herd-mate's agent id or display name" }),
			message: Type.String({ description: "The message text" }),
			taskId: Type.Optional(Type.String({ description: "The task it concerns (the asker's task when answering)" })),
			threadId: Type.Optional(Type.String({ description: "A conversation thread id of your choice" })),
			replyTo: Type.Optional(Type.String({ description: "The message id you are answering" })),
			expectsReply: Type.Optional(Type.Boolean({ description: "Whether you wait for an answer" })),
			delivery: Type.Optional(Type.Unsafe<"followUp" | "steer">({ type: "string", enum: ["followUp", "steer"], description: "followUp (default: next turn) | steer (this turn)" })),
		}),
	},
	shepherd_herd: {
		name: "shepherd_herd",
		description: "List your herd: every sheep of it (you included, marked), with its agent id, display name, agent, what runs it and its state. Message a herd-mate with shepherd_message by its agent id or display name; the parent is `shepherd`. Task texts are the parent's and are not shown.",
		parameters: Type.Object({}),
	},
	shepherd_status: {
		name: "shepherd_status",
		description: "Whether a message you sent (or received) was delivered and read: pass its messageId, as shepherd_message returned it. Without messageId, your own status and the latest messages sent to you.",
		parameters: Type.Object({
			messageId: Type.Optional(Type.String({ description: "A message you sent or received (its id); without it, your own status" })),
		}),
	},
} as const;

/** Detail keys a parent tool's result never shows: the call and the return value have their
 * own sections, and lists the service line already spells out. */
export const HIDDEN_DETAILS: readonly string[] = ["call", "agent", "label", "model", "status", "artifactSession", "returnValue", "result", "agents", "sheep", "completed"];

/** The coding agents a sheep can run on: every harness, in its wire spelling. */
export const HARNESSES = ["pi", "claude-code", "codex", "gemini", "opencode"] as const;
