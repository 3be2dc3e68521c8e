/**
 * The `/shepherd` command for people: `agents`, `herd`, `spawn`, `status`, `read`, `settings`
 * and `prune`, with argument completion. It parses the words, makes the same requests as the
 * tools (or runs `shepherd settings`), and shows the answer as a pi notification. With no
 * action, or `settings` alone, it opens the settings menu where pi has a UI (the settings as
 * text otherwise, and always with `settings show`).
 */

import type { ExtensionAPI, ExtensionCommandContext } from "@mariozechner/pi-coding-agent";
import type { AutocompleteItem } from "@mariozechner/pi-tui";
import { runShepherd, type SettingsDoc } from "./cli.ts";
import { openSettingsMenu } from "./settings-menu.ts";
import {
	PLACEMENTS,
	SOURCES,
	agentsText,
	herd,
	herdText,
	listAgents,
	member,
	resolveTarget,
	sheepStatus,
	spawnSheep,
	statusText,
} from "./ops.ts";
import { isReceipt, messagesText, receiptText } from "../lib/receipts.ts";
import type { ParentState } from "./state.ts";

const ACTIONS = ["agents", "herd", "spawn", "status", "read", "settings", "prune"];
const USAGE =
	"Usage: /shepherd agents [user|project|both] | herd | spawn <agent> [--label <text>] [--placement tab|pane_right|pane_down|workspace] " +
	"[--cwd <dir>] [--model <provider/id>] | status <target> | read <target> [--lines <n>] [--source visible|recent|recent-unwrapped|detection] " +
	"| settings [show | <key> <value> [--project]] | prune";

class UsageError extends Error {}

/** Splits on spaces; "double quotes" (JSON-decoded) and 'single quotes' group words. */
export function tokenize(input: string): string[] {
	const tokens: string[] = [];
	const pattern = /"((?:[^"\\]|\\.)*)"|'([^']*)'|(\S+)/g;
	let match: RegExpExecArray | null;
	while ((match = pattern.exec(input))) {
		if (match[1] !== undefined) {
			try {
				tokens.push(JSON.parse(`"${match[1]}"`));
			} catch {
				tokens.push(match[1]);
			}
		} else if (match[2] !== undefined) tokens.push(match[2]);
		else {
			// --flag="a b" style: the quotes were part of the word
			const word = match[3]!;
			const eq = word.match(/^(--[\w-]+)=(?:"(.*)"|'(.*)')$/);
			tokens.push(eq ? `${eq[1]}=${eq[2] ?? eq[3]}` : word);
		}
	}
	return tokens;
}

interface Parsed {
	positional: string[];
	flags: Record<string, string>;
}

function parse(tokens: string[], allowed: Record<string, string[] | null>): Parsed {
	const out: Parsed = { positional: [], flags: {} };
	for (let i = 0; i < tokens.length; i++) {
		const token = tokens[i]!;
		if (!token.startsWith("--")) {
			out.positional.push(token);
			continue;
		}
		let name = token.slice(2);
		let value: string | undefined;
		const eq = name.indexOf("=");
		if (eq >= 0) {
			value = name.slice(eq + 1);
			name = name.slice(0, eq);
		}
		if (!(name in allowed)) throw new UsageError(`Unknown option --${name}.`);
		if (allowed[name]?.length === 0) {
			out.flags[name] = "true";
			continue;
		}
		if (value === undefined) {
			value = tokens[++i];
			if (value === undefined || value.startsWith("--")) throw new UsageError(`Missing value for --${name}.`);
		}
		const choices = allowed[name];
		if (choices && !choices.includes(value)) {
			throw new UsageError(`Invalid value "${value}" for --${name}; use ${choices.join(", ")}.`);
		}
		out.flags[name] = value;
	}
	return out;
}

function integer(value: string | undefined, flag: string): number | undefined {
	if (value === undefined) return undefined;
	if (!/^\d+$/.test(value)) throw new UsageError(`--${flag} must be an integer.`);
	return Number(value);
}

function settingsText(doc: SettingsDoc | undefined): string {
	const settings = doc?.settings ?? {};
	const sources = doc?.sources ?? {};
	const rows = Object.keys(settings).map((key) => `${key}: ${JSON.stringify(settings[key])}${sources[key] && sources[key] !== "default" ? ` (${sources[key]})` : ""}`);
	const where = `Active layer: ${doc?.activeLayer ?? "user"} · user file ${doc?.userFile ?? "?"}${doc?.projectFileState && doc.projectFileState !== "absent" ? ` · project file ${doc.projectFile} (${doc.projectFileState})` : ""}`;
	return [...rows, where, "Change one with /shepherd settings <key> <value> [--project], or in the menu: /shepherd settings."].join("\n");
}

export function registerCommand(pi: ExtensionAPI, state: ParentState): void {
	let agentCache: { at: number; names: { name: string; description: string }[] } | undefined;

	async function agentNames(): Promise<{ name: string; description: string }[]> {
		if (agentCache && Date.now() - agentCache.at < 10_000) return agentCache.names;
		try {
			const listing = await listAgents(state);
			agentCache = { at: Date.now(), names: listing.agents.map((a) => ({ name: a.name, description: a.description })) };
		} catch {
			agentCache = { at: Date.now(), names: [] };
		}
		return agentCache.names;
	}

	async function sheepTargets(): Promise<{ value: string; description: string }[]> {
		try {
			const sheep = await herd(state);
			return sheep.map((s) => ({ value: s.agentId, description: `${s.displayName} [${s.state}]` }));
		} catch {
			return [];
		}
	}

	/** What to tell the person, or nothing when the answer was a dialog. */
	async function run(args: string, ctx: ExtensionCommandContext): Promise<{ text: string; level: "info" | "error" } | undefined> {
		const tokens = tokenize(args ?? "");
		const action = tokens.shift() ?? "settings";
		switch (action) {
			case "agents":
			case "list":
			case "sheep": {
				const parsed = parse(tokens, { scope: ["user", "project", "both"], "agent-scope": ["user", "project", "both"] });
				const scopes = [...parsed.positional, parsed.flags.scope, parsed.flags["agent-scope"]].filter(Boolean) as string[];
				if (scopes.length > 1) throw new UsageError("Give at most one scope.");
				if (scopes[0] && !["user", "project", "both"].includes(scopes[0])) {
					throw new UsageError(`Invalid scope "${scopes[0]}"; use user, project or both.`);
				}
				return { text: agentsText(await listAgents(state, scopes[0])), level: "info" };
			}
			case "herd": {
				if (tokens.length) throw new UsageError("herd takes no arguments.");
				return { text: herdText(await herd(state)), level: "info" };
			}
			case "spawn": {
				const parsed = parse(tokens, {
					label: null,
					placement: PLACEMENTS,
					cwd: null,
					model: null,
				});
				const [agent, ...extra] = parsed.positional;
				if (!agent) throw new UsageError("spawn requires an agent name.");
				if (extra.length) throw new UsageError(`Unexpected argument "${extra[0]}".`);
				ctx.ui?.setStatus?.("shepherd", `Starting ${agent}…`);
				try {
					const result = await spawnSheep(state, pi, ctx, {
						agent,
						label: parsed.flags.label,
						placement: member(parsed.flags.placement, PLACEMENTS),
						cwd: parsed.flags.cwd,
						model: parsed.flags.model,
					});
					return { text: `Spawned ${result.displayName} (${result.agentId}) on ${result.backend}.`, level: "info" };
				} finally {
					ctx.ui?.setStatus?.("shepherd", undefined);
				}
			}
			case "status": {
				if (tokens.length !== 1) throw new UsageError("status requires an agent name, an agent id or a message id.");
				if (tokens[0]!.startsWith("shepherd-message-")) {
					const receipt = await state.call("status", { id: tokens[0]! });
					if (isReceipt(receipt)) return { text: receiptText(receipt), level: "info" };
				}
				const id = await resolveTarget(state, tokens[0]!);
				const status = await sheepStatus(state, id);
				const task = status.task ? `\ntask: ${JSON.stringify(status.task)}` : "";
				const error = status.error ? `\nerror: ${status.error}` : "";
				return { text: `${statusText(status)}\nagent id: ${status.agentId}${task}${error}${messagesText(status)}`, level: "info" };
			}
			case "read": {
				const parsed = parse(tokens, { lines: null, source: SOURCES });
				if (parsed.positional.length !== 1) throw new UsageError("read requires a target (agent name, display name or agent id).");
				const id = await resolveTarget(state, parsed.positional[0]!);
				const result = await state.call("read", {
					target: id,
					lines: integer(parsed.flags.lines, "lines"),
					source: member(parsed.flags.source, SOURCES),
				});
				return { text: result.text, level: "info" };
			}
			case "settings": {
				const parsed = parse(tokens, { project: [] });
				if (parsed.positional.length === 0 && ctx?.hasUI && typeof ctx.ui?.select === "function") {
					try {
						await openSettingsMenu(ctx.ui, state.cwd);
					} finally {
						await state.onSettingsChange().catch(() => {});
					}
					return undefined;
				}
				if (parsed.positional.length === 0 || (parsed.positional.length === 1 && parsed.positional[0] === "show")) {
					const doc = await runShepherd<SettingsDoc>(["settings", "--project", state.cwd], { cwd: state.cwd });
					return { text: settingsText(doc), level: "info" };
				}
				if (parsed.positional.length !== 2) throw new UsageError("settings takes show, a key and a value, or nothing.");
				const [key, value] = parsed.positional as [string, string];
				const args = ["settings", "set", key, value];
				if (parsed.flags.project) args.push("--project", state.cwd);
				await runShepherd(args, { cwd: state.cwd });
				await state.onSettingsChange().catch(() => {});
				const note = key === "subagentCompatibility" ? " (restart pi to apply)" : "";
				return { text: `Set ${key} to ${value}${parsed.flags.project ? " in the project file" : ""}${note}.`, level: "info" };
			}
			case "prune": {
				if (tokens.length) throw new UsageError("prune takes no arguments.");
				const result = await state.call("prune");
				return {
					text: result.pruned ? `Removed ${result.pruned} stale sheep record(s); ${result.remaining} remain.` : `No stale sheep records found (${result.remaining} kept).`,
					level: "info",
				};
			}
			default:
				throw new UsageError(`Unknown action "${action}". Try: ${ACTIONS.join(", ")}.`);
		}
	}

	pi.registerCommand("shepherd", {
		description: "Shepherd: (no args) settings menu | agents | herd | spawn <agent> | status <target> | read <target> | settings | prune",
		getArgumentCompletions: async (prefix: string) => {
			const words = prefix.split(/\s+/);
			if (words.length <= 1) {
				const first = words[0] ?? "";
				const items: AutocompleteItem[] = ACTIONS.filter((a) => a.startsWith(first)).map((a) => ({ value: a, label: a }));
				if (first.length >= 3 && "spawn".startsWith(first)) {
					for (const agent of await agentNames()) {
						items.push({ value: `spawn ${agent.name}`, label: `spawn ${agent.name}`, description: agent.description });
					}
				}
				return items.length ? items : null;
			}
			const [action, ...rest] = words;
			const current = rest[rest.length - 1] ?? "";
			const head = `${words.slice(0, -1).join(" ")} `;
			let candidates: { value: string; description?: string }[] = [];
			if (action === "spawn" && rest.length === 1) {
				candidates = (await agentNames()).map((a) => ({ value: a.name, description: a.description }));
			} else if ((action === "status" || action === "read") && rest.length === 1) {
				candidates = await sheepTargets();
			} else if (action === "agents" && rest.length === 1) {
				candidates = ["user", "project", "both"].map((value) => ({ value }));
			} else if (action === "settings" && rest.length === 1) {
				try {
					const doc = await runShepherd<SettingsDoc>(["settings", "--project", state.cwd], { cwd: state.cwd });
					candidates = [{ value: "show", description: "every setting as text" }, ...Object.keys(doc?.settings ?? {}).map((value) => ({ value, description: JSON.stringify(doc.settings[value]) }))];
				} catch {
					candidates = [];
				}
			} else if (action === "spawn" && rest.length > 1) {
				candidates = ["--label", "--placement", "--cwd", "--model"].map((value) => ({ value }));
			} else if (action === "read" && rest.length > 1) {
				candidates = ["--lines", "--source"].map((value) => ({ value }));
			}
			const items = candidates
				.filter((c) => c.value.startsWith(current))
				.map((c) => ({ value: head + c.value, label: c.value, description: c.description }));
			return items.length ? items : null;
		},
		handler: async (args: string, ctx: ExtensionCommandContext) => {
			if (ctx?.hasUI) {
				state.ui = ctx.ui;
				state.hasUI = true;
			}
			try {
				const answer = await run(args, ctx);
				if (answer) ctx.ui?.notify?.(answer.text, answer.level);
			} catch (error) {
				const message = error instanceof UsageError ? `${error.message}\n${USAGE}` : (error as Error).message;
				ctx.ui?.notify?.(`shepherd: ${message}`, error instanceof UsageError ? "warning" : "error");
			} finally {
				state.onHerdChange();
			}
		},
	});
}
