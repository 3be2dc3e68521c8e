/**
 * The expanded views (pi's Ctrl+O) of Shepherd's tool results and notifications, for a person
 * who wants the whole story of one row without reading the protocol block written for the
 * model.
 *
 * A tool result expands into two sections: `call` (the arguments as flat `label: value`
 * fields) and `return` (a `status:` line, then only what the call did not already say: no
 * repeated arguments, no return code 0, no note bookkeeping). Long text (a task, a message, a
 * question, output) starts on its own line and ends with a blank line, and is never styled, so
 * a `Status: pending` inside a message does not read as a field. Notifications expand the same
 * way: who sent a message and its ids, then the message; a watcher's completions; a stale
 * wait's facts and what the parent may do about it.
 */

import type { ThemeColor } from "@mariozechner/pi-coding-agent";
import type { InboxItem } from "../lib/broker.ts";

/** Keys whose string values are shown as raw blocks. */
const RAW_KEYS = new Set(["message", "task", "question", "description", "output", "text", "actions", "summary"]);

/** Never shown in `return`: the call itself, bookkeeping, and what the row already says. */
const RETURN_HIDDEN = new Set(["call", "returnValue", "artifactSession", "fieldnote", "action", "code"]);

/** What a watch completion keeps when expanded. */
const COMPLETION_KEYS = [
	"taskId",
	"promptId",
	"agentId",
	"agent",
	"label",
	"status",
	"ok",
	"returnCode",
	"text",
	"error",
	"completedAt",
];

type Theme = { fg: (color: ThemeColor, text: string) => string; bold: (text: string) => string };

/** A value as an object's fields (none when it is not an object). */
export function fieldsOf(value: unknown): Record<string, unknown> {
	return value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

function words(key: string): string {
	return key.replace(/([a-z0-9])([A-Z])/g, "$1 $2").toLowerCase();
}

function scalar(value: unknown): string {
	if (value === null) return "null";
	if (typeof value === "boolean") return value ? "yes" : "no";
	if (typeof value === "string") return value;
	return JSON.stringify(value);
}

/** `label: value` lines for every field of `value`, nested objects and lists indented. */
function fields(value: Record<string, unknown>, theme: Theme, indent = "  "): string[] {
	const lines: string[] = [];
	for (const [key, item] of Object.entries(value)) {
		if (item === undefined) continue;
		const label = theme.fg("accent", `${words(key)}:`);
		if (typeof item === "string" && (RAW_KEYS.has(key) || item.includes("\n"))) {
			lines.push(`${indent}${label}`);
			for (const line of item.split("\n")) lines.push(`${indent}  ${line}`);
			lines.push("");
		} else if (Array.isArray(item) && item.length === 0) {
			lines.push(`${indent}${label} none`);
		} else if (Array.isArray(item)) {
			lines.push(`${indent}${label}`);
			for (const element of item) {
				if (element && typeof element === "object") {
					const nested = fields(element as Record<string, unknown>, theme, `${indent}    `);
					lines.push(`${indent}  - ${(nested[0] ?? "").trimStart()}`, ...nested.slice(1));
				} else {
					lines.push(`${indent}  - ${scalar(element)}`);
				}
			}
		} else if (item && typeof item === "object") {
			lines.push(`${indent}${label}`, ...fields(item as Record<string, unknown>, theme, `${indent}  `));
		} else {
			lines.push(`${indent}${label} ${scalar(item)}`);
		}
	}
	while (lines.length && lines[lines.length - 1] === "") lines.pop();
	return lines;
}

function pick(value: unknown, keys: string[]): Record<string, unknown> {
	const from = fieldsOf(value);
	const out: Record<string, unknown> = {};
	for (const key of keys) if (from[key] !== undefined) out[key] = from[key];
	return out;
}

/** The `status:` a result expands with. */
function resultStatus(tool: string, details: Record<string, unknown>, failed: boolean): string {
	if (failed) return "failed";
	switch (tool) {
		case "shepherd_spawn":
			return "spawned";
		case "shepherd_delegate":
			return "delegated";
		case "shepherd_message":
			return "queued";
		case "shepherd_prompt":
			return "prompted";
		case "shepherd_watch":
			return Array.isArray(details.pending) && details.pending.length ? "watching…" : "completed";
		case "shepherd_status":
			const status = fieldsOf(details.status);
			return String(status.state ?? status.agentState ?? "unknown");
		case "shepherd_close":
			return "closed";
		case "shepherd_read":
			return "output";
		default:
			return "ok";
	}
}

/** What `return` shows: the result's details minus what the call and the row already say. */
function returnFields(tool: string, details: Record<string, unknown>): Record<string, unknown> {
	const args = fieldsOf(fieldsOf(details.call).arguments);
	const out: Record<string, unknown> = {};
	for (const [key, value] of Object.entries(details)) {
		if (value === undefined || RETURN_HIDDEN.has(key)) continue;
		if (key === "returnCode" && value === 0) continue;
		if (key in args && JSON.stringify(args[key]) === JSON.stringify(value)) continue;
		if (tool === "shepherd_status" && key === "status" && value && typeof value === "object") {
			const { state: _state, ...rest } = value as Record<string, unknown>;
			Object.assign(out, rest);
			continue;
		}
		if (key === "completions" && Array.isArray(value)) {
			out.completions = value.map((c) => pick(c, COMPLETION_KEYS));
			continue;
		}
		if (key === "sheep" && Array.isArray(value)) {
			// The herd keyed by agent id (the parent is `shepherd`); panes and paths are noise here.
			out.agents = value.map((s) => ({
				agentId: fieldsOf(s).agentId,
				...pick(s, ["agent", "label", "state", "focused"]),
			}));
			continue;
		}
		out[key] = value;
	}
	// `id` repeats the task or agent id shown under its own name.
	if (out.id !== undefined && (out.id === out.taskId || out.id === out.agentId)) delete out.id;
	return out;
}

/** The expanded body of a tool result (after the collapsed row and a blank line). */
export function expandedResult(tool: string, details: Record<string, unknown>, failed: boolean, theme: Theme): string {
	const args = fieldsOf(fieldsOf(details.call).arguments);
	const sections: string[] = [];
	if (Object.keys(args).length) sections.push([theme.bold("call"), ...fields(args, theme)].join("\n"));
	const status = `  ${theme.fg("accent", "status:")} ${resultStatus(tool, details, failed)}`;
	const rest = fields(returnFields(tool, details), theme);
	sections.push([theme.bold("return"), status, ...rest].join("\n"));
	return sections.join("\n\n");
}

/** The expanded body of a notification, from the inbox item it carries in `details`. */
export function expandedNotification(type: string, details: unknown, content: string, theme: Theme): string | undefined {
	// The notification carries the inbox item it was made from.
	const item = details as Partial<InboxItem> | undefined;
	const title = (text: string) => theme.fg("accent", theme.bold(text));
	switch (type) {
		case "shepherd.message.incoming":
		case "shepherd.message.reply": {
			const envelope = item && "envelope" in item ? item.envelope : undefined;
			if (!envelope) return undefined;
			const head = content.split("\n")[0] ?? "";
			const ids = fields(pick(envelope, ["messageId", "taskId", "threadId", "replyTo", "expectsReply"]), theme);
			return [title(head), ...ids, "", theme.bold("message:"), envelope.content ?? ""].join("\n");
		}
		case "shepherd.task.completion": {
			const completions = (item && "completions" in item ? item.completions : undefined) ?? [];
			const taskIds = completions.map((c) => c.taskId);
			const body = fields(
				{
					watcherId: item && "watcherId" in item ? item.watcherId : undefined,
					taskIds,
					completions: completions.map((c) => pick(c, COMPLETION_KEYS)),
				},
				theme,
			);
			return [title("Shepherd watcher"), ...body].join("\n");
		}
		case "shepherd.stale.wait": {
			if (!item || !("question" in item)) return undefined;
			const body = fields(
				{
					waiting: `${item.displayName} for ${Math.round((item.elapsedMs ?? 0) / 60000)} min (stale after ${item.thresholdMinutes} min)`,
					taskId: item.taskId,
					owner: `${item.displayName} (${item.agentId})`,
					description: item.description,
					question: item.question,
					pendingRequest: `${item.requestId} (waiting on ${item.recipientName})`,
					actions: [
						`answer on the owner's behalf: shepherd_message target ${item.agentId}, taskId ${item.taskId}, replyTo ${item.requestId}`,
						`nudge ${item.recipientName}`,
						"or let the reply deadline settle the task blocked",
					].join("\n"),
				},
				theme,
			);
			return [title("Shepherd stale wait"), ...body].join("\n");
		}
		default:
			return undefined;
	}
}
