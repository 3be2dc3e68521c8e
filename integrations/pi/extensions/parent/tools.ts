/**
 * The parent's model-facing tools. Each is a flat object schema, a description and guidelines
 * written for the model, and an `execute` that makes one broker request (or one CLI command) and
 * shapes the answer into the `call:` / `return:` / `details:` block. Nothing here decides
 * anything about the herd: the broker validates, orders and settles; a failure it reports is
 * thrown back so pi shows it as an error.
 */

import type { AgentToolUpdateCallback, ExtensionAPI, ExtensionContext, ToolDefinition } from "@mariozechner/pi-coding-agent";
import { type Static, type TSchema, Type } from "typebox";
import type { TaskReport } from "../lib/broker.ts";
import { failure, normaliseArguments, success, type ToolResult } from "./protocol.ts";
import { isReceipt, messagesText, publicReceipt, receiptText } from "../lib/receipts.ts";
import { HARNESSES, PLACEMENTS, SOURCES, agentsText, herd, herdText, listAgents, publicStatus, sheepStatus, spawnSheep, statusText } from "./ops.ts";
import { taskDelegated } from "./events.ts";
import { renderCall, renderResult } from "./render.ts";
import { callerContext, type ParentState } from "./state.ts";

const StringEnum = <T extends string>(values: T[], description: string) =>
	Type.Unsafe<T>({ type: "string", enum: values, description });


function plural(n: number, one: string): string {
	return `${n} ${one}${n === 1 ? "" : "s"}`;
}

type Run<T extends TSchema> = (
	params: Static<T>,
	signal: AbortSignal | undefined,
	onUpdate: AgentToolUpdateCallback<unknown> | undefined,
	ctx: ExtensionContext,
) => Promise<ToolResult>;

/** Wraps a tool body: the shared normaliser, failures thrown as protocol blocks, widget refresh. */
function tool<T extends TSchema>(
	state: ParentState,
	spec: {
		name: string;
		action: string;
		label: string;
		description: string;
		promptSnippet: string;
		promptGuidelines?: string[];
		parameters: T;
		normalise?: boolean;
		run: Run<T>;
	},
): ToolDefinition<T, unknown> {
	return {
		name: spec.name,
		label: spec.label,
		description: spec.description,
		promptSnippet: spec.promptSnippet,
		promptGuidelines: spec.promptGuidelines,
		parameters: spec.parameters,
		prepareArguments:
			spec.normalise === false ? undefined : (args: unknown) => normaliseArguments(args) as Static<T>,
		async execute(_toolCallId, params, signal, onUpdate, ctx) {
			if (ctx?.hasUI) {
				state.ui = ctx.ui;
				state.hasUI = true;
			}
			try {
				return await spec.run(params, signal, onUpdate, ctx);
			} catch (error) {
				const name = spec.name === "shepherd" ? "shepherd" : spec.name;
				const args: Record<string, unknown> = params ?? {};
				throw failure(name, spec.action === "control" ? String(args.action ?? "shepherd") : spec.action, args, error);
			} finally {
				state.onHerdChange();
			}
		},
		renderCall: (args, theme) => renderCall(spec.name, args, theme, state),
		renderResult: (result, options, theme, context) =>
			renderResult(spec.name, result, options, theme, context),
	};
}

export function registerTools(pi: ExtensionAPI, state: ParentState): void {
	pi.registerTool(
		tool(state, {
			name: "shepherd",
			action: "control",
			label: "Shepherd",
			description:
				"Shepherd's control plane. A shepherd (you) runs a herd of sheep: child coding agents started from agent " +
				"definitions, each with an opaque agent id. This tool only looks: `agents` lists the definitions you may " +
				"spawn (exact, case-sensitive names), `herd` lists your sheep with their ids, states and tasks, `prune` " +
				"forgets sheep whose processes are gone. Starting, tasking, messaging, watching, reading and closing sheep " +
				"are separate shepherd_* tools. Every delegated task gets a note in the session's fieldnotes " +
				"(.shepherd/sessions/…, indexed by shepherd.md).",
			promptSnippet: "List agent definitions (agents), your sheep (herd), or forget dead sheep (prune)",
			promptGuidelines: [
				"Shepherd workflow: shepherd {action: \"agents\"} to find an exact agent name → shepherd_spawn → shepherd_delegate → shepherd_watch → (shepherd_status / shepherd_read while it works) → shepherd_close when you are done with the sheep.",
				"After shepherd_delegate, call shepherd_watch with the task id and carry on: shepherd_watch never blocks, and the completion arrives later as a message. A sheep that goes idle has not necessarily finished; only its completion says so. Close every sheep you no longer need.",
				"Before assigning or reviewing work, read the session's shepherd.md; each sheep writes only its own note. Guidance for present and future sheep goes at the end of shepherd.md, under \"## Shepherd's note\": Shepherd keeps that section whenever it rewrites the index.",
			],
			normalise: false,
			parameters: Type.Object({
				action: StringEnum(["herd", "agents", "prune"], "herd | agents | prune"),
				agentScope: Type.Optional(
					StringEnum(["user", "project", "both"], "For agents: which definitions to list (default: the agentScope setting)"),
				),
			}),
			async run(params) {
				const args = { action: params.action, agentScope: params.agentScope };
				switch (params.action) {
					case "agents": {
						const listing = await listAgents(state, params.agentScope);
						const agents = listing.agents.map((a) => ({
							name: a.name,
							source: a.source,
							description: a.description,
							model: a.model,
							thinking: a.thinking,
							tools: a.tools,
							filePath: a.filePath,
						}));
						return success("shepherd", args, agentsText(listing), agents.map((a) => a.name), {
							scope: listing.scope,
							agents,
						});
					}
					case "herd": {
						const sheep = await herd(state);
						return success("shepherd", args, herdText(sheep), sheep.map((s) => s.agentId), { sheep });
					}
					case "prune": {
						const result = await state.call("prune");
						const text =
							result.pruned === 0
								? `No stale sheep records found (${result.remaining} kept).`
								: `Removed ${plural(result.pruned, "stale sheep record")}; ${result.remaining} remain.`;
						return success("shepherd", args, text, result, { pruned: result.pruned, remaining: result.remaining });
					}
					default:
						throw new Error(`Unknown shepherd action: ${params.action}`);
				}
			},
		}),
	);

	pi.registerTool(
		tool(state, {
			name: "shepherd_spawn",
			action: "spawn",
			label: "Shepherd: spawn sheep",
			description:
				"Start an idle, persistent sheep from an agent definition. It gets no task yet: hand it one with " +
				"shepherd_delegate. `agent` is the exact definition name (call shepherd {action: \"agents\"} when unsure). " +
				"Give every sheep a short label that says what it is for (e.g. \"auth tests\"); the sheep is then shown as " +
				"`<agent>: <label>`, which must be unique among your sheep. It runs in the project directory unless `cwd` " +
				"says otherwise, with the definition's model (or yours), in a background tab when it is visible; " +
				"`pane_right` and `pane_down` split your own pane instead. Returns the sheep's agent id.",
			promptSnippet: "Start a sheep (child agent) from an agent definition; returns its agent id",
			promptGuidelines: [
				"shepherd_spawn needs an exact agent name and a short task-specific label; keep the returned agent id, every other shepherd_* tool takes it.",
			],
			parameters: Type.Object({
				agent: Type.String({ description: "Exact agent definition name (case-sensitive)" }),
				label: Type.String({
					description: "Short task-specific label: letters, digits, spaces, _ - . (max 64, no colon)",
				}),
				placement: Type.Optional(StringEnum(PLACEMENTS, "tab (default, background) | pane_right | pane_down | workspace")),
				cwd: Type.Optional(Type.String({ description: "Working directory (default: the project directory)" })),
				isolate: Type.Optional(
					Type.Boolean({
						description:
							"Run it in its own git worktree on its own branch; on close a clean worktree is removed, one with work is kept and reported (files, diffstat, commits) for you to integrate or discard",
					}),
				),
				harness: Type.Optional(
					StringEnum(HARNESSES, "The coding agent to run the definition on instead of its own: pi | claude-code | codex | gemini | opencode"),
				),
				host: Type.Optional(
					Type.String({
						description:
							"A host to run it on: one the user defined under `hosts` in their Shepherd settings (default: this machine)",
					}),
				),
			}),
			async run(params, _signal, onUpdate, ctx) {
				const args = {
					agent: params.agent,
					label: params.label,
					placement: params.placement,
					cwd: params.cwd,
					isolate: params.isolate,
					harness: params.harness,
					host: params.host,
				};
				onUpdate?.({
					content: [{ type: "text", text: `Spawning ${params.agent}…` }],
					details: { agent: params.agent, label: params.label, placement: params.placement },
				});
				const result = await spawnSheep(state, pi, ctx, {
					agent: params.agent,
					label: params.label,
					placement: params.placement,
					cwd: params.cwd,
					isolate: params.isolate,
					harness: params.harness,
					host: params.host,
				});
				const returnValue: Record<string, unknown> = { id: result.agentId, agent: result.agent, label: result.label };
				if (result.worktree) returnValue.worktree = result.worktree;
				return success(
					"shepherd_spawn",
					args,
					`shepherd_spawn spawned ${result.displayName}`,
					returnValue,
					{
						id: result.agentId,
						agent: result.agent,
						label: result.label,
						displayName: result.displayName,
						backend: result.backend,
						fieldnote: result.fieldnote ?? null,
						worktree: result.worktree ?? undefined,
					},
					{ id: "agent id", fieldnote: "agent fieldnote" },
				);
			},
		}),
	);

	pi.registerTool(
		tool(state, {
			name: "shepherd_delegate",
			action: "delegate",
			label: "Shepherd: delegate task",
			description:
				"Hand a sheep a tracked task and return at once with its task id. The task may take the sheep many turns; " +
				"it is finished only when the sheep reports it done (completed, blocked or failed), when it passes its " +
				"timeout, or when you close the sheep. A sheep going idle or ending a turn is not completion. Follow with " +
				"shepherd_watch on the task id. One open task per sheep; the task text goes to the sheep with the path " +
				"of its note.",
			promptSnippet: "Give a sheep a tracked task; returns a task id to watch",
			promptGuidelines: [
				"After shepherd_delegate, call shepherd_watch with the returned task id; do not poll shepherd_status in a loop.",
			],
			parameters: Type.Object({
				target: Type.String({ description: "The sheep's agent id (from shepherd_spawn)" }),
				task: Type.String({ description: "What the sheep should do" }),
				timeout: Type.Optional(
					Type.Number({
						description: "Minutes before the task times out (default: the timeout setting, 20; fractions allowed)",
						exclusiveMinimum: 0,
					}),
				),
				maxTurns: Type.Optional(Type.Integer({ minimum: 1, description: "Budget: most model turns the task may take" })),
				maxToolCalls: Type.Optional(Type.Integer({ minimum: 1, description: "Budget: most tool calls the task may make" })),
				maxTokens: Type.Optional(
					Type.Integer({ minimum: 1, description: "Budget: most tokens (input, output, cache) the task may use" }),
				),
				maxCost: Type.Optional(
					Type.Number({
						exclusiveMinimum: 0,
						description:
							"Budget: most cost the task may run up (the model's pricing). Reaching any budget stops the sheep and settles the task blocked, naming the limit",
					}),
				),
				stall: Type.Optional(
					Type.Number({
						minimum: 0,
						description:
							"Stall watchdog for this task: minutes of silence before the sheep is nudged, and again before the task settles blocked; 0 turns it off (default: the stallWatchdog setting, off)",
					}),
				),
			}),
			async run(params) {
				const args = {
					target: params.target,
					task: params.task,
					timeout: params.timeout,
					maxTurns: params.maxTurns,
					maxToolCalls: params.maxToolCalls,
					maxTokens: params.maxTokens,
					maxCost: params.maxCost,
					stall: params.stall,
				};
				const budget = {
					turns: params.maxTurns,
					toolCalls: params.maxToolCalls,
					tokens: params.maxTokens,
					cost: params.maxCost,
				};
				const budgeted = Object.values(budget).some((value) => value !== undefined);
				if (params.timeout !== undefined && !(Number.isFinite(params.timeout) && params.timeout > 0)) {
					throw Object.assign(new Error("Delegated task timeout must be a positive number of minutes."), {
						code: "invalid_timeout",
					});
				}
				const result = await state.call("delegate", {
					target: params.target,
					task: params.task,
					timeout: params.timeout,
					budget: budgeted ? budget : undefined,
					stall: params.stall,
				});
				const name = await state.nameOf(result.agentId);
				taskDelegated(pi, state, result.taskId, result.agentId, params.task);
				const returnValue = { taskId: result.taskId, agentId: result.agentId, state: result.state };
				return success("shepherd_delegate", args, `Delegated task to ${name}`, returnValue, {
					id: result.taskId,
					taskId: result.taskId,
					agentId: result.agentId,
					state: result.state,
					note: result.noteRelative ?? undefined,
				});
			},
		}),
	);

	pi.registerTool(
		tool(state, {
			name: "shepherd_message",
			action: "message",
			label: "Shepherd: message sheep",
			description:
				"Send a sheep a message. `target` must be the exact agent id from shepherd_spawn: not a definition name " +
				"like `planner`, not a label, not a pane id. Accepted means queued, not read or answered. With " +
				"`expectsReply` and the sheep's `taskId`, its task waits for the answer (a tracked question). To answer a " +
				"sheep's question, pass its message id as `replyTo` and the asking sheep's task id as `taskId`. A plain " +
				"message never changes a task's state and is not a way to hand over work (use shepherd_delegate).",
			promptSnippet: "Message a sheep by agent id; ask with expectsReply, answer with replyTo",
			promptGuidelines: [
				"shepherd_message targets an exact agent id; to answer a question, use replyTo with the question's message id and the asker's task id.",
			],
			parameters: Type.Object({
				target: Type.String({ description: "The sheep's exact agent id" }),
				message: Type.String({ description: "The message text" }),
				taskId: Type.Optional(Type.String({ description: "The task it concerns (the asker's task when answering)" })),
				threadId: Type.Optional(Type.String({ description: "A conversation thread id of your choice" })),
				replyTo: Type.Optional(Type.String({ description: "The message id you are answering" })),
				expectsReply: Type.Optional(Type.Boolean({ description: "Whether you wait for an answer" })),
				delivery: Type.Optional(StringEnum(["followUp", "steer"], "followUp (default: next turn) | steer (this turn)")),
			}),
			async run(params) {
				const args = { ...params };
				const result = await state.call("message", {
					target: params.target,
					message: params.message,
					taskId: params.taskId,
					threadId: params.threadId,
					replyTo: params.replyTo,
					expectsReply: params.expectsReply === true,
					delivery: params.delivery,
				});
				const name = await state.nameOf(result.targetId);
				const taskState = result.targetTaskState ? ` (task ${result.targetTaskState})` : "";
				const returnValue: Record<string, unknown> = {
					messageId: result.messageId,
					accepted: result.accepted,
					delivery: "queued",
					targetId: result.targetId,
				};
				if (result.requestId) returnValue.requestId = result.requestId;
				const ask = `shepherd_status {id: "${result.messageId}"} shows whether it was delivered and read`;
				return success("shepherd_message", args, `Message queued to ${name}${taskState}; ${ask}`, returnValue, {
					id: result.messageId,
					messageId: result.messageId,
					requestId: result.requestId,
					targetTaskState: result.targetTaskState,
				});
			},
		}),
	);

	pi.registerTool(
		tool(state, {
			name: "shepherd_prompt",
			action: "prompt",
			label: "Shepherd: prompt sheep (deprecated)",
			description:
				"Deprecated: prefer shepherd_delegate + shepherd_watch (and shepherd_message for follow-ups). Sends a sheep " +
				"one prompt as a one-turn task that finishes when the sheep's run settles, with its final text as the " +
				"result. Returns its prompt id, which is the id of that one-turn task; watch it with shepherd_watch.",
			promptSnippet: "Deprecated one-turn prompt to a sheep (use shepherd_delegate)",
			parameters: Type.Object({
				id: Type.String({ description: "The sheep's agent id" }),
				message: Type.String({ description: "The prompt" }),
				timeout: Type.Optional(Type.Number({ description: "Minutes before the turn times out", exclusiveMinimum: 0 })),
			}),
			async run(params) {
				const args = { id: params.id, message: params.message, timeout: params.timeout };
				const result = await state.call("delegate", {
					target: params.id,
					task: params.message,
					timeout: params.timeout,
					turn: true,
				});
				const name = await state.nameOf(result.agentId);
				// A prompt is a one-turn task: its prompt id is that task's id, so shepherd_watch,
				// shepherd_status and the completion all name it the same way.
				return success("shepherd_prompt", args, `Prompted ${name} (prompt id ${result.taskId})`, {
					id: result.taskId,
					promptId: result.taskId,
				}, {
					id: result.taskId,
					promptId: result.taskId,
					taskId: result.taskId,
					agentId: result.agentId,
					note: result.noteRelative ?? undefined,
				});
			},
		}),
	);

	pi.registerTool(
		tool(state, {
			name: "shepherd_watch",
			action: "watch",
			label: "Shepherd: watch tasks",
			description:
				"Register a watcher for one or more task ids and return at once. When the tasks settle (completed, " +
				"blocked, failed, cancelled or timed out) you get one completion message with each task's status, " +
				"summary and note; tasks already settled are reported in this result. Idle sheep, ended turns and waiting " +
				"tasks are not completions. Agent ids and pane ids are not watch targets.",
			promptSnippet: "Be told when tasks settle (non-blocking); pass task ids",
			parameters: Type.Object({
				id: Type.Union([Type.String(), Type.Array(Type.String(), { minItems: 1 })], {
					description: "A task id, or a list of task ids",
				}),
			}),
			async run(params) {
				const args = { id: params.id };
				const result = await state.call("watch", { id: params.id });
				for (const report of result.completed ?? []) state.remember(report.agentId, report.displayName);
				const pending: string[] = result.pending ?? [];
				const completed = result.completed ?? [];
				let text =
					pending.length > 0
						? `watching ${plural(pending.length, "task")} asynchronously`
						: "watch registered; all tasks were already settled";
				if (completed.length) {
					text += `\n${completed.map((r) => `- ${completionLine(r)}`).join("\n")}`;
				}
				return success("shepherd_watch", args, text, result, {
					watcherId: result.watcherId ?? null,
					taskIds: result.taskIds,
					pending,
					completed,
				});
			},
		}),
	);

	pi.registerTool(
		tool(state, {
			name: "shepherd_status",
			action: "status",
			label: "Shepherd: sheep status",
			description:
				"Show one sheep's state (starting, idle, working, done, blocked, failed, exited, closing), its task (state, " +
				"how long it has waited for a reply, on whom, whether the wait is stale) and the latest messages sent to it " +
				"with whether each was delivered and read. Given a message id (from shepherd_message) instead, show whether " +
				"that message was delivered and read. Changes nothing.",
			promptSnippet: "One sheep's state, task and message receipts, or one message's receipt (read-only)",
			parameters: Type.Object({
				id: Type.String({ description: "The sheep's agent id, or a message id (shepherd-message-…) for its receipt" }),
			}),
			async run(params) {
				const args = { id: params.id };
				if (params.id.startsWith("shepherd-message-")) {
					const receipt = await state.call("status", { id: params.id });
					if (isReceipt(receipt)) {
						const shown = publicReceipt(receipt);
						return success("shepherd_status", args, receiptText(receipt), shown, { status: shown });
					}
				}
				const status = await sheepStatus(state, params.id);
				const shown = publicStatus(status);
				if (status.messages?.length) shown.messages = status.messages.map(publicReceipt);
				return success("shepherd_status", args, statusText(status) + messagesText(status), shown, { status: shown });
			},
		}),
	);

	pi.registerTool(
		tool(state, {
			name: "shepherd_close",
			action: "close",
			label: "Shepherd: close sheep",
			description:
				"Close one of your sheep: its process ends and an open task is cancelled (return code 130). Watching or " +
				"waiting never closes a sheep; close each one when you no longer need it.",
			promptSnippet: "Close a sheep (cancels its open task)",
			parameters: Type.Object({
				id: Type.String({ description: "The sheep's agent id" }),
			}),
			async run(params) {
				const args = { id: params.id };
				const result = await state.call("close", { id: params.id });
				const cancelled = result.cancelled ? ` (task ${result.cancelled.taskId} cancelled)` : "";
				const returnValue: Record<string, unknown> = { id: result.agentId };
				if (result.worktree) returnValue.worktree = result.worktree;
				return success(
					"shepherd_close",
					args,
					`closed ${result.displayName}${cancelled}${worktreeText(result.worktree)}`,
					returnValue,
					{
						id: result.agentId,
						cancelled: result.cancelled ?? undefined,
						worktree: result.worktree ?? undefined,
					},
				);
			},
		}),
	);

	pi.registerTool(
		tool(state, {
			name: "shepherd_resume",
			action: "resume",
			label: "Shepherd: resume sheep",
			description:
				"Reopen one of your closed or exited sheep on its own session, under the same agent id and name: its " +
				"conversation (what it was told, what it did) is intact, so it can pick up where it stopped. Hand it the " +
				"next task with shepherd_delegate; that task's note links the note it continues. Only pi sheep keep a " +
				"session to resume.",
			promptSnippet: "Reopen a closed or exited sheep on its own session (same id, context intact)",
			parameters: Type.Object({
				id: Type.String({ description: "The sheep's agent id" }),
			}),
			async run(params) {
				const args = { id: params.id };
				const result = await state.call("resume", { id: params.id, caller: callerContext() });
				state.remember(result.agentId, result.displayName);
				return success(
					"shepherd_resume",
					args,
					`resumed ${result.displayName} on ${result.backend}`,
					{ id: result.agentId, resumes: result.resumes },
					{ id: result.agentId, displayName: result.displayName, backend: result.backend, resumes: result.resumes },
				);
			},
		}),
	);

	pi.registerTool(
		tool(state, {
			name: "shepherd_read",
			action: "read",
			label: "Shepherd: read sheep output",
			description:
				"Diagnostic: the recent output of a sheep's terminal or log. `name` is its agent id or display name. " +
				"`source` is recent-unwrapped (default), recent, visible or detection; an idle pane may have no recent " +
				"output, try visible.",
			promptSnippet: "Read a sheep's recent terminal output (diagnostic)",
			parameters: Type.Object({
				name: Type.String({ description: "Agent id or display name" }),
				lines: Type.Optional(Type.Integer({ description: "How many lines (default 40)", minimum: 1 })),
				source: Type.Optional(StringEnum(SOURCES, "recent-unwrapped (default) | recent | visible | detection")),
			}),
			async run(params) {
				const args = { name: params.name, lines: params.lines, source: params.source };
				const result = await state.call("read", { target: params.name, lines: params.lines, source: params.source });
				// The output goes in once, as the answer; the return block names what was read.
				const read = { target: result.target, lines: result.lines, source: result.source };
				return success("shepherd_read", args, result.text, read, read);
			},
		}),
	);
}

/** One settled task in words: `worker: fix completed (rc 0): summary. Note: …`. */
export function completionLine(report: TaskReport): string {
	const rc = typeof report.returnCode === "number" ? ` (rc ${report.returnCode})` : "";
	const said = report.ok ? (report.summary ?? report.text) : (report.error ?? report.summary ?? report.text);
	const text = said ? `: ${clip(String(said), 600)}` : "";
	const note = report.noteRelative ? ` Note: ${report.noteRelative}` : "";
	return `${report.displayName || report.agentId} task ${report.taskId} ${report.status}${rc}${text}${note}`;
}

/** What became of a closed isolated sheep's worktree, in words. */
export function worktreeText(worktree: unknown): string {
	if (!worktree || typeof worktree !== "object") return "";
	// The broker's worktree report (an open object in the protocol): where it is, and, when it
	// was kept, its patch and how to integrate it.
	const report = worktree as {
		path?: string;
		branch?: string;
		kept?: boolean;
		reason?: string;
		files?: unknown;
		commits?: unknown;
		diffstat?: string;
		integrate?: string;
	};
	if (report.kept !== true) return `; worktree ${report.path} removed (clean, no new commits)`;
	const files = Array.isArray(report.files) && report.files.length ? `; files: ${report.files.join(", ")}` : "";
	const commits = Array.isArray(report.commits) && report.commits.length ? `; commits: ${report.commits.join("; ")}` : "";
	const stat = report.diffstat ? ` (${report.diffstat})` : "";
	return `; worktree kept at ${report.path} on branch ${report.branch}: ${report.reason}${stat}${files}${commits}. ${report.integrate ?? "Integrate or discard it."}`;
}

export function clip(text: string, max: number): string {
	const flat = text.trim();
	return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}
