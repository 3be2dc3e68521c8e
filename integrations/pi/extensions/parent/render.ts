/**
 * How Shepherd's tool calls, results and notifications look in pi's TUI. The model reads the
 * protocol block; a person reads one compact row: the call with ids replaced by display names,
 * and `✓ delegated`, `watching…`, `✗ failed · <error>` and the like; expanded (Ctrl+O), the
 * `call` and `return` sections of `expanded.ts`. Notifications get a short title line and their
 * body (a message: what was said, cut at 160 characters), and expand into their structured
 * fields.
 */

import type { AgentToolResult, ExtensionAPI, Theme, ToolRenderResultOptions } from "@mariozechner/pi-coding-agent";
import { Text } from "@mariozechner/pi-tui";
import { expandedNotification, expandedResult, fieldsOf } from "./expanded.ts";
import type { ParentState } from "./state.ts";

function compact(value: unknown, max = 72): string {
	const text = (typeof value === "string" ? value : JSON.stringify(value ?? "")).replace(/\s+/g, " ").trim();
	return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

function nameFor(state: ParentState, id: unknown): string {
	if (typeof id !== "string") return compact(id);
	return state.names.get(id) ?? id;
}

/** The parts of a call row, first part accented. */
/** A field that is a string, else `fallback`. */
function text(value: unknown, fallback = ""): string {
	return typeof value === "string" ? value : fallback;
}

function callParts(tool: string, call: unknown, state: ParentState): string[] {
	const args = fieldsOf(call);
	switch (tool) {
		case "shepherd":
			return [text(args.action), args.agentScope ? `scope ${text(args.agentScope)}` : ""];
		case "shepherd_spawn":
			return [text(args.agent), text(args.label), text(args.placement)];
		case "shepherd_delegate":
			return [nameFor(state, args.target), compact(args.task), args.timeout ? `timeout ${String(args.timeout)}m` : ""];
		case "shepherd_message":
			return [
				nameFor(state, args.target),
				compact(args.message),
				args.expectsReply ? "expects reply" : "",
				text(args.delivery),
			];
		case "shepherd_prompt":
			return [nameFor(state, args.id), compact(args.message), args.timeout ? `timeout ${String(args.timeout)}m` : ""];
		case "shepherd_watch":
			return [Array.isArray(args.id) ? args.id.join(", ") : String(args.id ?? "")];
		case "shepherd_read":
			return [nameFor(state, args.name), text(args.source), args.lines ? `${String(args.lines)} lines` : ""];
		case "subagent":
			const many = (list: unknown, words: string) => (Array.isArray(list) ? `${list.length}${words}` : "");
			return [text(args.agent) || many(args.tasks, " parallel") || many(args.chain, "-step chain"), compact(args.task ?? "")];
		default:
			return [nameFor(state, args.id)];
	}
}

export function renderCall(tool: string, args: unknown, theme: Theme, state: ParentState): Text {
	const parts = callParts(tool, args, state).filter((part) => part);
	let text = theme.fg("toolTitle", theme.bold(`${tool} `));
	if (parts.length) text += theme.fg("accent", parts[0]!);
	for (const part of parts.slice(1)) text += theme.fg("dim", ` · ${part}`);
	return new Text(text, 0, 0);
}

function summary(tool: string, details: Record<string, unknown>, firstLine: string): string {
	switch (tool) {
		case "shepherd_spawn":
			return "✓ spawned";
		case "shepherd_delegate":
			return "✓ delegated";
		case "shepherd_message":
			return details.targetTaskState === "waiting" ? "waiting…" : "✓ queued";
		case "shepherd_prompt":
			return "✓ prompted";
		case "shepherd_watch":
			return Array.isArray(details.pending) && details.pending.length ? "watching…" : "✓ completed";
		case "shepherd_close":
			return "✓ closed";
		case "shepherd":
			if (Array.isArray(details.sheep)) return `Sheep: ${details.sheep.length}`;
			if (Array.isArray(details.agents)) return `Available agents: ${details.agents.map((a) => text(fieldsOf(a).name)).join(", ")}`;
			return firstLine;
		default:
			return firstLine;
	}
}

export function renderResult(
	tool: string,
	result: AgentToolResult<unknown>,
	options: ToolRenderResultOptions,
	theme: Theme,
	context: { args?: unknown; isError?: boolean } | undefined,
): Text {
	const first = result?.content?.find?.((c) => c?.type === "text");
	const content = first?.type === "text" ? first.text : "";
	if (options?.isPartial) return new Text(theme.fg("warning", tool === "shepherd_spawn" ? "spawning…" : "working…"), 0, 0);
	const details: Record<string, unknown> = { ...fieldsOf(result?.details) };
	// A thrown failure reaches the renderer without its details: the call comes from the row.
	if (!details.call && context?.args) details.call = { name: tool, arguments: context.args };
	const failed = context?.isError || details.error || (typeof details.returnCode === "number" && details.returnCode !== 0);
	const firstLine = content.split("\n")[0] ?? "";
	let row: string;
	const error = details.error ?? firstLine.replace(/^Herd \S+ failed \(return code \d+\): /, "");
	if (failed) {
		row = theme.fg("error", `✗ failed · ${compact(error, 160)}`);
	} else {
		row = theme.fg(summary(tool, details, firstLine).startsWith("✓") ? "success" : "muted", summary(tool, details, firstLine));
	}
	if (options?.expanded) {
		if (failed && !details.error) details.error = error;
		row += `\n\n${expandedResult(tool, details, Boolean(failed), theme)}`;
	}
	return new Text(row, 0, 0);
}

/** Notifications: a title line, then the body (first lines only when collapsed). */
export function registerMessageRenderers(pi: ExtensionAPI): void {
	if (typeof pi.registerMessageRenderer !== "function") return;
	const types = [
		"shepherd.task.completion",
		"shepherd.message.incoming",
		"shepherd.message.reply",
		"shepherd.stale.wait",
		"shepherd.notice",
	];
	for (const type of types) {
		pi.registerMessageRenderer(type, (message, options, theme) => {
			const content = typeof message.content === "string" ? message.content : "";
			const [title, ...rest] = content.split("\n");
			const completions = fieldsOf(message.details).completions;
			const failed = type === "shepherd.task.completion" && Array.isArray(completions) && completions.some((c) => !fieldsOf(c).ok);
			const expanded = options?.expanded ? expandedNotification(type, message.details, content, theme) : undefined;
			if (expanded) return new Text(expanded, 0, 0);
			let text = theme.fg(failed ? "error" : "accent", theme.bold(title ?? ""));
			if (!options?.expanded && (type === "shepherd.message.incoming" || type === "shepherd.message.reply")) {
				// Collapsed, a message is who said what: its ids wait for the expanded view.
				const blank = rest.indexOf("");
				const said = blank >= 0 ? rest.slice(blank + 1).join(" ") : "";
				if (rest.some((line: string) => line.startsWith("Expects reply: yes"))) text += theme.fg("warning", " · expects a reply");
				return new Text(said ? `${text}\n${compact(said, 160)}` : text, 0, 0);
			}
			const body = options?.expanded ? rest : rest.slice(0, 3);
			const shown = options?.expanded ? body : body.map((line: string) => compact(line, 160));
			if (shown.length) text += `\n${shown.join("\n")}`;
			return new Text(text, 0, 0);
		});
	}
}
