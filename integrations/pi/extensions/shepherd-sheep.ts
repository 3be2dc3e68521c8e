/**
 * Shepherd's sheep side for pi: loaded into every pi sheep (`pi -e …/shepherd-sheep.ts`).
 *
 * It connects to the herd's broker with the capability Shepherd put in the environment
 * (`SHEPHERD_SOCKET`, `SHEPHERD_AGENT_ID`, `SHEPHERD_TOKEN`; when a wrapper dropped them, from
 * the file beside the sheep's session, lib/sheep-launch.ts), and then:
 * - delivers every envelope the moment it arrives: tasks, replies, questions and reminders start
 *   a turn (`pi.sendUserMessage`, steer or follow-up); plain messages wait for the next turn;
 * - gives the model (in the tool catalogue's words, lib/tool-catalogue.ts) `shepherd_done` (the only way a task finishes), `shepherd_message` (to the
 *   parent or a herd-mate, by id or display name), `shepherd_herd` (its herd-mates) and
 *   `shepherd_status` (whether a message was delivered and read);
 * - reports the run's lifecycle: `ready` once loaded, `agent_start`, each `turn` with what it
 *   used (tool calls, tokens, cost), and `run_settled` with the final text and stop reason when
 *   pi will not continue on its own (`agent_settled` on pi 1.x; on 0.73, `agent_end`), so the
 *   broker can count a task's budget, nudge a forgotten done, fail a task whose run ended in a
 *   provider error, and complete the note with the sheep's last words;
 * - stops the run when the broker answers a turn with `stop` (the task reached its budget and is
 *   settled blocked): at once, and again before the next model request, should the turn's
 *   report still have been on its way when pi went on (pi 0.73 does not wait for it);
 * - puts the agent definition's body in place of pi's default identity sentence, once.
 * Orchestration decisions all live in the broker; this file only translates.
 */

import * as fs from "node:fs";
import type { ExtensionAPI } from "@mariozechner/pi-coding-agent";
import { BrokerConnection, BrokerError, type Envelope, type ReportParams } from "./lib/broker.ts";
import { isReceipt, matesText, messagesText, receiptText } from "./lib/receipts.ts";
import { restoreSheepEnvironment } from "./lib/sheep-launch.ts";
import { SHEEP_TOOLS } from "./lib/tool-catalogue.ts";

/**
 * The parts of a pi message this file reads. Both pi generations send more; the fields are
 * checked before use, since a provider may leave any of them out.
 */
interface PiMessage {
	role?: string;
	content?: unknown;
	usage?: { totalTokens?: unknown; input?: unknown; output?: unknown; cacheRead?: unknown; cacheWrite?: unknown; cost?: { total?: unknown } };
	stopReason?: string;
	errorMessage?: string;
}

/** A message's content parts (none when it has no list of them). */
function parts(message: PiMessage | undefined): { type?: unknown; text?: unknown }[] {
	return Array.isArray(message?.content) ? message.content : [];
}

/** How pi's default prompt introduces pi (0.73, then 1.x): the sentence an agent's body replaces. */
const IDENTITY_STARTS = [
	"You are an expert coding assistant operating inside pi",
	"You are a coding assistant running inside pi",
];
/** How pi's documentation section begins (0.73 says "about pi itself", 1.x "about the harness itself"). */
const DOCS_START = "Pi documentation (read only when the user asks about";

function header(envelope: Envelope): string {
	const author = envelope.originSenderId ?? envelope.senderId;
	const from = author === "shepherd" ? "Shepherd" : author;
	const title =
		envelope.kind === "task"
			? `[Shepherd delegated task from ${from}]`
			: envelope.kind === "reminder"
				? "[Shepherd reminder]"
				: `[Shepherd message from ${from}]`;
	const lines = [title, `Message ID: ${envelope.messageId}`];
	if (envelope.taskId) lines.push(`Task ID: ${envelope.taskId}`);
	if (envelope.threadId) lines.push(`Thread ID: ${envelope.threadId}`);
	if (envelope.replyTo) lines.push(`Reply to: ${envelope.replyTo}`);
	if (envelope.expectsReply) lines.push("Expects reply: yes (answer with shepherd_message and replyTo)");
	return lines.join("\n");
}

/** Replaces pi's default identity sentence with the agent's own prompt, and optionally drops the
 * section about pi's documentation. Other prompts are left alone. Both pi 0.73's prompt (plain
 * text, the documentation a list of bullets) and pi 1.x's (sections in tags, `<docs>…</docs>`)
 * are understood. */
export function shapeSystemPrompt(prompt: string, body: string | undefined, omitDocs: boolean): string {
	let shaped = prompt;
	if (body?.trim() && IDENTITY_STARTS.some((start) => shaped.startsWith(start)) && !shaped.includes(body.trim())) {
		const sentenceEnd = shaped.indexOf("\n");
		shaped = `${body.trim()}${sentenceEnd >= 0 ? shaped.slice(sentenceEnd) : ""}`;
	}
	if (omitDocs) shaped = withoutDocs(shaped);
	return shaped;
}

/** The prompt without pi's documentation section: the whole `<docs>` block on pi 1.x; on 0.73
 * the heading line and the bullets under it, so what follows (date, working directory) stays. */
function withoutDocs(prompt: string): string {
	const start = prompt.indexOf(DOCS_START);
	if (start < 0) return prompt;
	const open = prompt.lastIndexOf("<docs>", start);
	const close = prompt.indexOf("</docs>", start);
	if (open >= 0 && close >= 0 && prompt.slice(open + "<docs>".length, start).trim() === "") {
		const after = prompt.slice(close + "</docs>".length).replace(/^\n+/, "");
		return prompt.slice(0, open) + after;
	}
	const lines = prompt.slice(start).split("\n");
	let kept = 1;
	while (kept < lines.length && lines[kept].startsWith("- ")) kept++;
	while (kept < lines.length && lines[kept] === "") kept++;
	return prompt.slice(0, start) + lines.slice(kept).join("\n");
}

/** What one turn used, from its assistant message: its tool calls, tokens and cost. */
export function turnUsage(message: PiMessage | undefined): { turns: number; toolCalls: number; tokens: number; cost: number } {
	const usage = message?.usage ?? {};
	const count = (value: unknown) => (typeof value === "number" && Number.isFinite(value) ? value : 0);
	const tokens =
		typeof usage.totalTokens === "number"
			? usage.totalTokens
			: count(usage.input) + count(usage.output) + count(usage.cacheRead) + count(usage.cacheWrite);
	return {
		turns: 1,
		toolCalls: parts(message).filter((part) => part?.type === "toolCall").length,
		tokens: count(tokens),
		cost: count(usage.cost?.total),
	};
}

function lastAssistant(messages: PiMessage[] | undefined): { text: string; stopReason?: string; error?: string } {
	for (let i = (messages?.length ?? 0) - 1; i >= 0; i--) {
		const message = messages![i];
		if (message?.role !== "assistant") continue;
		const text = parts(message)
			.filter((part) => part?.type === "text")
			.map((part) => String(part.text ?? ""))
			.join("\n");
		return { text, stopReason: message.stopReason, error: message.errorMessage };
	}
	return { text: "" };
}

export default function (pi: ExtensionAPI) {
	// A wrapper between Shepherd and pi may have dropped the sheep's variables: the file its
	// launch names gives them back.
	restoreSheepEnvironment();
	const socket = process.env.SHEPHERD_SOCKET;
	const agentId = process.env.SHEPHERD_AGENT_ID;
	const token = process.env.SHEPHERD_TOKEN;
	// `shepherd agents prompt` starts pi as a sheep would be started, with this set: the shaped
	// prompt is written there once pi has built it, and pi ends before any provider call.
	const capture = process.env.SHEPHERD_CAPTURE_SYSTEM_PROMPT;
	if (!capture && (!socket || !agentId || !token)) return;

	let sessionFile: string | undefined;
	let currentTask: string | undefined;
	const taskOf = new Map<string, string>();
	let lastRun: { text: string; stopReason?: string; error?: string } | undefined;
	// Set when the broker answered a turn with `stop`; cleared when a new run starts.
	let stopWanted: string | undefined;
	let turnReported: Promise<void> = Promise.resolve();
	const body = process.env.SHEPHERD_AGENT_PROMPT_FILE
		? safeRead(process.env.SHEPHERD_AGENT_PROMPT_FILE)
		: undefined;
	const omitDocs = process.env.SHEPHERD_OMIT_PI_DOCUMENTATION === "1";

	const broker = new BrokerConnection(
		socket ?? "",
		{ role: "sheep", agentId: agentId ?? "", token: token ?? "", client: "pi-sheep" },
		{
			reconnectFor: 60_000,
			onConnect: async () => {
				await broker.call("subscribe");
			},
		},
	);

	broker.on("inbox", async (data) => {
		const items = data?.items ?? [];
		for (const item of items) {
			if (item.type !== "envelope") continue;
			deliver(item.envelope);
		}
		const last = items[items.length - 1];
		if (last) await broker.call("ack", { seq: last.seq }).catch(() => {});
	});

	function deliver(envelope: Envelope): void {
		if (envelope.kind === "task" && envelope.taskId) currentTask = envelope.taskId;
		if (envelope.taskId) taskOf.set(envelope.messageId, envelope.taskId);
		const text = `${header(envelope)}\n\n${envelope.content ?? ""}`;
		const deliverAs = envelope.delivery === "steer" ? "steer" : "followUp";
		const triggers =
			envelope.kind === "task" || envelope.kind === "reply" || envelope.kind === "reminder" || envelope.expectsReply;
		try {
			if (triggers) {
				pi.sendUserMessage(text, { deliverAs });
			} else {
				pi.sendMessage({ customType: "shepherd.message", content: text, display: true }, { deliverAs, triggerTurn: false });
			}
		} catch (error) {
			// A failed delivery is reported to the parent rather than lost silently.
			broker
				.call("tell", {
					target: "shepherd",
					message: `Could not deliver Shepherd message ${envelope.messageId}: ${(error as Error).message}`,
				})
				.catch(() => {});
		}
	}

	const report = (params: ReportParams) => broker.call("report", params).catch(() => {});

	pi.registerTool({
		...SHEEP_TOOLS.shepherd_done,
		label: "Shepherd: done",
		promptSnippet: "Finish the delegated Shepherd task (completed, blocked or failed) with a summary",
		async execute(_id, params) {
			const taskId = params.taskId ?? currentTask;
			// Naming the task it settles means a redelivered old task can never settle a newer one;
			// a done lost with the broker is resent under its request id and applied once.
			const result = await broker.call("done", { status: params.status, summary: params.summary, taskId });
			const note = result.suppliedTaskId ? " (task id corrected to the delegated task)" : "";
			return {
				content: [{ type: "text", text: `Task ${result.taskId} ${result.status}${note}.` }],
				details: result,
			};
		},
	});

	pi.registerTool({
		...SHEEP_TOOLS.shepherd_message,
		label: "Shepherd: message",
		promptSnippet: "Message the Shepherd or a herd-mate; ask with expectsReply, answer with replyTo",
		async execute(_id, params) {
			const known = params.replyTo ? taskOf.get(params.replyTo) : undefined;
			if (known && params.taskId && params.taskId !== known) {
				throw new BrokerError(
					"reply_task_mismatch",
					`Reply ${params.replyTo} belongs to task ${known}; use that task id, not ${params.taskId}.`,
				);
			}
			const result = await broker.call("tell", {
				target: params.target,
				message: params.message,
				taskId: known ?? params.taskId,
				threadId: params.threadId,
				replyTo: params.replyTo,
				expectsReply: params.expectsReply === true,
				delivery: params.delivery,
			});
			return {
				content: [
					{
						type: "text",
						text:
							`Shepherd message accepted for asynchronous delivery (${result.messageId}). ` +
							(result.deliveryChanged ? `${result.deliveryChanged} ` : "") +
							`shepherd_status {messageId: "${result.messageId}"} shows whether it was delivered and read.`,
					},
				],
				details: result,
			};
		},
	});

	pi.registerTool({
		...SHEEP_TOOLS.shepherd_herd,
		label: "Shepherd: herd",
		promptSnippet: "List your herd-mates (ids, names, states) to message the right one",
		async execute() {
			const result = await broker.call("herd.mates");
			return { content: [{ type: "text", text: matesText(result) }], details: result };
		},
	});

	pi.registerTool({
		...SHEEP_TOOLS.shepherd_status,
		label: "Shepherd: status",
		promptSnippet: "Whether a message you sent was delivered and read",
		async execute(_id, params) {
			const status = await broker.call("status", { id: params.messageId });
			const text = isReceipt(status)
				? receiptText(status)
				: "agentId" in status
					? `${status.displayName} ${status.state}${status.task ? `; task ${status.task.id} ${status.task.state}` : ""}.${messagesText(status)}`
					: "";
			return { content: [{ type: "text", text }], details: status };
		},
	});

	pi.on("session_start", async (_event, ctx) => {
		if (capture) {
			const shaped = shapeSystemPrompt(ctx?.getSystemPrompt?.() ?? "", body, omitDocs);
			fs.writeFileSync(capture, shaped, { mode: 0o600 });
			process.exit(0);
		}
		sessionFile = ctx?.sessionManager?.getSessionFile?.();
		await broker.connect();
		await report({ event: "ready", sessionFile });
	});

	pi.on("before_agent_start", async (event) => {
		const shaped = shapeSystemPrompt(event.systemPrompt ?? "", body, omitDocs);
		return shaped === event.systemPrompt ? undefined : { systemPrompt: shaped };
	});

	pi.on("agent_start", async () => {
		// A new run: whatever stopped the last one is past.
		stopWanted = undefined;
		await report({ event: "agent_start" });
	});

	// The budget: each turn is reported; an answer with `stop` ends the run.
	pi.on("turn_end", async (event, ctx) => {
		const message = event?.message as PiMessage | undefined;
		// A turn whose response was the provider's refusal is said to be one: it shows no model
		// response, so it must not let the sheep held on its provider key go.
		const refused = message?.stopReason === "error" ? { stopReason: "error" } : {};
		turnReported = broker
			.call("report", { event: "turn", usage: turnUsage(message), ...refused })
			.then((answer) => {
				if (typeof answer?.stop === "string") stopWanted = answer.stop;
			})
			.catch(() => {});
		await turnReported;
		if (stopWanted) ctx?.abort?.();
	});
	pi.on("context", async (_event, ctx) => {
		await turnReported;
		if (stopWanted) ctx?.abort?.();
		return undefined;
	});

	pi.on("agent_end", async (event) => {
		lastRun = lastAssistant(event?.messages as PiMessage[] | undefined);
		// pi 1.x says whether it will go on (`willRetry`) and ends a run with `agent_settled`;
		// pi 0.73 has neither, so its `agent_end` is the end of the run.
		if (typeof (event as { willRetry?: unknown })?.willRetry === "boolean") return;
		await settled(false);
	});

	// `agent_settled` is pi 1.x's: the typings this package is checked against (0.73) lack it.
	const onLater = pi.on.bind(pi) as unknown as (
		event: "agent_settled",
		handler: (event: { aborted?: unknown } | undefined) => Promise<void>,
	) => void;
	onLater("agent_settled", async (event) => {
		await settled(event?.aborted === true);
	});

	async function settled(aborted: boolean): Promise<void> {
		const run = lastRun ?? { text: "" };
		lastRun = undefined;
		await report({
			event: "run_settled",
			stopReason: aborted ? "aborted" : run.stopReason,
			error: run.error,
			text: run.text,
			sessionFile,
		});
	}

	pi.on("session_shutdown", async () => {
		broker.close();
	});
}

function safeRead(path: string): string | undefined {
	try {
		return fs.readFileSync(path, "utf8");
	} catch {
		return undefined;
	}
}
