/**
 * The parent's model-facing tools. Each is a flat object schema, a description and guidelines
 * written for the model, and an `execute` that makes one broker request (or one CLI command) and
 * shapes the answer into the `call:` / `return:` / `details:` block. Nothing here decides
 * anything about the herd: the broker validates, orders and settles; a failure it reports is
 * thrown back so pi shows it as an error.
 */

import type { AgentToolUpdateCallback, ExtensionAPI, ExtensionContext, ToolDefinition } from "@mariozechner/pi-coding-agent";
import type { Static, TSchema } from "typebox";
import { PARENT_TOOLS } from "../lib/tool-catalogue.ts";
import type { TaskReport, WorktreeReport } from "../lib/broker.ts";
import { failure, normaliseArguments, success, type ToolResult } from "./protocol.ts";
import { isReceipt, messagesText, publicReceipt, receiptText } from "../lib/receipts.ts";
import { agentsText, herd, herdText, listAgents, publicStatus, sheepStatus, spawnSheep, statusText } from "./ops.ts";
import { taskDelegated } from "./events.ts";
import { renderCall, renderResult } from "./render.ts";
import { callerContext, type ParentState } from "./state.ts";

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
		/** The tool's name, description and parameters, from the catalogue. */
		entry: { readonly name: string; readonly description: string; readonly parameters: T };
		action: string;
		label: string;
		promptSnippet: string;
		promptGuidelines?: string[];
		normalise?: boolean;
		run: Run<T>;
	},
): ToolDefinition<T, unknown> {
	const { name, description, parameters } = spec.entry;
	return {
		name,
		label: spec.label,
		description,
		promptSnippet: spec.promptSnippet,
		promptGuidelines: spec.promptGuidelines,
		parameters,
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
				const args: Record<string, unknown> = params ?? {};
				throw failure(name, spec.action === "control" ? String(args.action ?? "shepherd") : spec.action, args, error);
			} finally {
				state.onHerdChange();
			}
		},
		renderCall: (args, theme) => renderCall(name, args, theme, state),
		renderResult: (result, options, theme, context) =>
			renderResult(name, result, options, theme, context),
	};
}

/** Registers the parent's tools, each described by the tool catalogue (lib/tool-catalogue.ts). */
export function registerTools(pi: ExtensionAPI, state: ParentState): void {
	pi.registerTool(controlTool(state));
	pi.registerTool(spawnTool(pi, state));
	pi.registerTool(delegateTool(pi, state));
	pi.registerTool(messageTool(state));
	pi.registerTool(promptTool(state));
	pi.registerTool(watchTool(state));
	pi.registerTool(statusTool(state));
	pi.registerTool(closeTool(state));
	pi.registerTool(resumeTool(state));
	pi.registerTool(readTool(state));
}

/** `shepherd`: List agent definitions (agents), your sheep (herd), or forget dead sheep (prune). */
function controlTool(state: ParentState) {
	return tool(state, {
		entry: PARENT_TOOLS.shepherd,
		action: "control",
		label: "Shepherd",
		promptSnippet: "List agent definitions (agents), your sheep (herd), or forget dead sheep (prune)",
		promptGuidelines: [
			"Shepherd workflow: shepherd {action: \"agents\"} to find an exact agent name → shepherd_spawn → shepherd_delegate → shepherd_watch → (shepherd_status / shepherd_read while it works) → shepherd_close when you are done with the sheep.",
			"After shepherd_delegate, call shepherd_watch with the task id and carry on: shepherd_watch never blocks, and the completion arrives later as a message. A sheep that goes idle has not necessarily finished; only its completion says so. Close every sheep you no longer need.",
			"Before assigning or reviewing work, read the session's shepherd.md; each sheep writes only its own note. Guidance for present and future sheep goes in the session's shepherds-note.md, beside shepherd.md and linked from it: every sheep reads it first, and no rewrite of the index touches it.",
		],
		normalise: false,
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
	});
}

/** `shepherd_spawn`: Start a sheep (child agent) from an agent definition; returns its agent id. */
function spawnTool(pi: ExtensionAPI, state: ParentState) {
	return tool(state, {
		entry: PARENT_TOOLS.shepherd_spawn,
		action: "spawn",
		label: "Shepherd: spawn sheep",
		promptSnippet: "Start a sheep (child agent) from an agent definition; returns its agent id",
		promptGuidelines: [
			"shepherd_spawn needs an exact agent name and a short task-specific label; keep the returned agent id, every other shepherd_* tool takes it.",
		],
		async run(params, _signal, onUpdate, ctx) {
			const args = {
				agent: params.agent,
				label: params.label,
				placement: params.placement,
				cwd: params.cwd,
				isolate: params.isolate,
				harness: params.harness,
				host: params.host,
				sandbox: params.sandbox,
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
				sandbox: params.sandbox,
			});
			const returnValue: Record<string, unknown> = { id: result.agentId, agent: result.agent, label: result.label };
			if (result.worktree) returnValue.worktree = result.worktree;
			return success(
				"shepherd_spawn",
				args,
				`shepherd_spawn spawned ${result.displayName}${result.host ? ` on host ${result.host}` : ""}`,
				returnValue,
				{
					id: result.agentId,
					agent: result.agent,
					label: result.label,
					displayName: result.displayName,
					backend: result.backend,
					host: result.host ?? undefined,
					fieldnote: result.fieldnote ?? null,
					worktree: result.worktree ?? undefined,
				},
				{ id: "agent id", fieldnote: "agent fieldnote" },
			);
		},
	});
}

/** `shepherd_delegate`: Give a sheep a tracked task; returns a task id to watch. */
function delegateTool(pi: ExtensionAPI, state: ParentState) {
	return tool(state, {
		entry: PARENT_TOOLS.shepherd_delegate,
		action: "delegate",
		label: "Shepherd: delegate task",
		promptSnippet: "Give a sheep a tracked task; returns a task id to watch",
		promptGuidelines: [
			"After shepherd_delegate, call shepherd_watch with the returned task id; do not poll shepherd_status in a loop.",
		],
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
				sessionName: params.sessionName,
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
				sessionName: params.sessionName,
			});
			const name = await state.nameOf(result.agentId);
			taskDelegated(pi, state, result.taskId, result.agentId, params.task);
			const returnValue = { taskId: result.taskId, agentId: result.agentId, state: result.state };
			// A session the caller named says whether it was new or continued, in the CLI's words.
			const session =
				params.sessionName && result.sessionName
					? ` in session \`${result.sessionName}\` (${result.resumed ? "continued" : "new"})`
					: "";
			return success("shepherd_delegate", args, `Delegated task to ${name}${session}`, returnValue, {
				id: result.taskId,
				taskId: result.taskId,
				agentId: result.agentId,
				state: result.state,
				note: result.noteRelative ?? undefined,
			});
		},
	});
}

/** `shepherd_message`: Message a sheep by agent id; ask with expectsReply, answer with replyTo. */
function messageTool(state: ParentState) {
	return tool(state, {
		entry: PARENT_TOOLS.shepherd_message,
		action: "message",
		label: "Shepherd: message sheep",
		promptSnippet: "Message a sheep by agent id; ask with expectsReply, answer with replyTo",
		promptGuidelines: [
			"shepherd_message targets an exact agent id; to answer a question, use replyTo with the question's message id and the asker's task id.",
		],
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
			// A steer the sheep cannot take mid-turn goes as a follow-up; the model is told.
			const changed = result.deliveryChanged ? `${result.deliveryChanged} ` : "";
			return success("shepherd_message", args, `Message queued to ${name}${taskState}; ${changed}${ask}`, returnValue, {
				id: result.messageId,
				messageId: result.messageId,
				requestId: result.requestId,
				targetTaskState: result.targetTaskState,
				deliveryChanged: result.deliveryChanged,
			});
		},
	});
}

/** `shepherd_prompt`: Deprecated one-turn prompt to a sheep (use shepherd_delegate). */
function promptTool(state: ParentState) {
	return tool(state, {
		entry: PARENT_TOOLS.shepherd_prompt,
		action: "prompt",
		label: "Shepherd: prompt sheep (deprecated)",
		promptSnippet: "Deprecated one-turn prompt to a sheep (use shepherd_delegate)",
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
	});
}

/** `shepherd_watch`: Be told when tasks settle (non-blocking); pass task ids. */
function watchTool(state: ParentState) {
	return tool(state, {
		entry: PARENT_TOOLS.shepherd_watch,
		action: "watch",
		label: "Shepherd: watch tasks",
		promptSnippet: "Be told when tasks settle (non-blocking); pass task ids",
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
	});
}

/** `shepherd_status`: One sheep's state, task and message receipts, or one message's receipt (read-only). */
function statusTool(state: ParentState) {
	return tool(state, {
		entry: PARENT_TOOLS.shepherd_status,
		action: "status",
		label: "Shepherd: sheep status",
		promptSnippet: "One sheep's state, task and message receipts, or one message's receipt (read-only)",
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
	});
}

/** `shepherd_close`: Close a sheep (cancels its open task). */
function closeTool(state: ParentState) {
	return tool(state, {
		entry: PARENT_TOOLS.shepherd_close,
		action: "close",
		label: "Shepherd: close sheep",
		promptSnippet: "Close a sheep (cancels its open task)",
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
	});
}

/** `shepherd_resume`: Reopen a closed or exited sheep on its own session (same id, context intact). */
function resumeTool(state: ParentState) {
	return tool(state, {
		entry: PARENT_TOOLS.shepherd_resume,
		action: "resume",
		label: "Shepherd: resume sheep",
		promptSnippet: "Reopen a closed or exited sheep on its own session (same id, context intact)",
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
	});
}

/** `shepherd_read`: Read a sheep's recent terminal output (diagnostic). */
function readTool(state: ParentState) {
	return tool(state, {
		entry: PARENT_TOOLS.shepherd_read,
		action: "read",
		label: "Shepherd: read sheep output",
		promptSnippet: "Read a sheep's recent terminal output (diagnostic)",
		async run(params) {
			const args = { name: params.name, lines: params.lines, source: params.source };
			const result = await state.call("read", { target: params.name, lines: params.lines, source: params.source });
			// The output goes in once, as the answer; the return block names what was read.
			const read = { target: result.target, lines: result.lines, source: result.source };
			return success("shepherd_read", args, result.text, read, read);
		},
	});
}

/** One settled task in words: `worker: fix completed (rc 0): summary. Note: …`. */
export function completionLine(report: TaskReport): string {
	const rc = typeof report.returnCode === "number" ? ` (rc ${report.returnCode})` : "";
	const said = report.ok ? (report.summary ?? report.text) : (report.error ?? report.summary ?? report.text);
	const text = said ? `: ${clip(String(said), 600)}` : "";
	const note = report.noteRelative ? ` Note: ${report.noteRelative}` : "";
	return `${report.displayName || report.agentId} task ${report.taskId} ${report.status}${rc}${text}${note}`;
}

/** What became of a closed isolated sheep's worktree, in words (the CLI's and MCP's words). */
export function worktreeText(report: WorktreeReport | null | undefined): string {
	if (!report) return "";
	if ("host" in report) {
		const place = report.kept
			? `; worktree kept on host ${report.host} at ${report.path} on branch ${report.branch}: ${report.reason ?? ""}`
			: `; worktree on host ${report.host} removed: ${report.path}`;
		const commits = report.commits ?? [];
		if (commits.length === 0 && !report.kept) return `${place} (clean, no new commits)`;
		const home = report.broughtHome ? `; ${commits.length} brought home on branch ${report.branch}` : "";
		return `${place}${home}; commits: ${commits.join("; ")}. ${report.integrate}`;
	}
	if (!report.kept && report.commits === undefined && report.files === undefined) {
		return `; worktree ${report.path} removed (clean, no new commits)`;
	}
	const files = report.files?.length ? `; files: ${report.files.join(", ")}` : "";
	const commits = report.commits?.length ? `; commits: ${report.commits.join("; ")}` : "";
	const stat = report.diffstat ? ` (${report.diffstat})` : "";
	const preserved = report.preserved ? `; uncommitted changes preserved on ${report.preserved}` : "";
	const place = report.kept
		? `; worktree kept at ${report.path} on branch ${report.branch}: ${report.reason}`
		: `; worktree ${report.path} removed, its work stays on branch ${report.branch}`;
	return `${place}${stat}${preserved}${files}${commits}. ${report.integrate ?? "Land it with shepherd merge, or discard it."}`;
}

export function clip(text: string, max: number): string {
	const flat = text.trim();
	return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}
