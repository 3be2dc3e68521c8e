/**
 * The operations the tools and the `/shepherd` command share, each one broker request (or one
 * CLI command) plus the words that describe its answer. Spawning is the only one with a step of
 * its own: a project agent that needs approval is confirmed in pi's own dialog, approved through
 * `shepherd agents approve`, and the spawn is asked again.
 */

import type { ExtensionAPI, ExtensionContext } from "@mariozechner/pi-coding-agent";
import type { Harness, Placement, ReadSource, SheepStatus, SpawnResult, ThinkingLevel } from "../lib/broker.ts";
import { type AgentListed, type AgentListing, type AgentShown, runShepherd, ShepherdError } from "./cli.ts";
import { callerContext, piCommand, type ParentState } from "./state.ts";

export interface SpawnRequest {
	agent: string;
	label?: string;
	placement?: Placement;
	cwd?: string;
	model?: string;
	isolate?: boolean;
	harness?: Harness;
	host?: string;
	sandbox?: "off" | "workspace" | "strict";
}

/** Where a visible sheep's pane can go. */
export const PLACEMENTS: Placement[] = ["tab", "pane_right", "pane_down", "workspace"];

/** What of a sheep's output can be read. */
export const SOURCES: ReadSource[] = ["visible", "recent", "recent-unwrapped", "detection"];

/** `value` as a member of `set`, or `undefined` when it is none of them. */
export function member<T extends string>(value: string | undefined, set: readonly T[]): T | undefined {
	return set.find((candidate) => candidate === value);
}

function parentModel(ctx: ExtensionContext): string | undefined {
	const model = ctx?.model;
	return model?.provider && model?.id ? `${model.provider}/${model.id}` : undefined;
}

/** Spawns a sheep; a project agent that needs approval is confirmed first when there is a UI. */
export async function spawnSheep(
	state: ParentState,
	pi: ExtensionAPI,
	ctx: ExtensionContext,
	request: SpawnRequest,
): Promise<SpawnResult> {
	const params = {
		agent: request.agent,
		label: request.label,
		placement: request.placement,
		cwd: request.cwd,
		model: request.model,
		isolate: request.isolate === true ? true : undefined,
		harness: request.harness,
		host: request.host,
		sandbox: request.sandbox,
		caller: callerContext(),
		piCommand: piCommand(),
		...parentChoices(pi, ctx),
	};
	try {
		const result = await state.call("spawn", params);
		state.remember(result?.agentId, result?.displayName);
		return result;
	} catch (error) {
		const code = (error as { code?: string }).code;
		if (code === "unknown_agent") {
			throw new ShepherdError(code, `${(error as Error).message} Call shepherd with action "agents" to list exact names.`);
		}
		if (code !== "approval_required" || !ctx?.hasUI) throw error;
		await confirmProjectAgent(state, ctx, request.agent);
		const result = await state.call("spawn", params);
		state.remember(result?.agentId, result?.displayName);
		return result;
	}
}

/**
 * Asks the person in pi's dialog whether a project-local agent may run, and approves exactly
 * the file that was shown (an edit made since is refused, not approved). Throws
 * `approval_declined` when they say no.
 */
export async function confirmProjectAgent(state: ParentState, ctx: ExtensionContext, agent: string): Promise<void> {
	const shown = await agentFile(state, agent);
	const approved = await ctx.ui.confirm(
		"Run project-local agent?",
		shownText(`Agent: ${agent}\nSource: ${shown.file}\nSandbox: ${shown.sandbox}\nNetwork: ${shown.network}`),
	);
	if (!approved) {
		throw new ShepherdError("approval_declined", `Project agent "${agent}" was not approved, so it was not started.`);
	}
	const hash = shown.hash ? ["--hash", shown.hash] : [];
	await runShepherd(["agents", "approve", agent, ...hash, "--project", state.cwd], { cwd: state.cwd });
}

/** A repository's words as the person may see them: no terminal control characters or
 * bidirectional overrides, which could hide a line of the dialog (line breaks stay). */
export function shownText(text: string): string {
	return text.replace(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g, "");
}

/** The name in an `approval_required` error (`Project agent "name" (file) …`). */
export function agentNeedingApproval(error: unknown): string | undefined {
	if ((error as { code?: string })?.code !== "approval_required") return undefined;
	const match = /Project agent "((?:[^"\\]|\\.)*)"/.exec((error as Error).message ?? "");
	return match ? JSON.parse(`"${match[1]}"`) : undefined;
}

/** The parent's model (`provider/id`) and thinking level, which sheep whose definitions name
 * none inherit. pi's level goes as pi names it: one Shepherd does not know (a newer pi's) is
 * dropped by the broker, and the sheep runs at its default. */
export function parentChoices(pi: ExtensionAPI, ctx: ExtensionContext): { parentModel?: string; parentThinking?: ThinkingLevel } {
	let thinking: string | undefined;
	try {
		thinking = pi.getThinkingLevel?.();
	} catch {
		thinking = undefined;
	}
	return { parentModel: parentModel(ctx), parentThinking: thinking as ThinkingLevel | undefined };
}

/** The project definition's file, content hash and confinement, as shown in the confirmation
 * dialog: the sandbox it runs in (its own ask when that differs) and what it may reach. */
async function agentFile(
	state: ParentState,
	name: string,
): Promise<{ file: string; hash?: string; sandbox: string; network: string }> {
	try {
		const shown = await runShepherd<AgentShown>(["agents", "show", name, "--scope", "project", "--project", state.cwd], {
			cwd: state.cwd,
		});
		const runsIn = shown?.runsIn ?? "unknown";
		const asked = shown?.sandbox && shown.sandbox !== runsIn ? ` (it asks for ${shown.sandbox})` : "";
		return {
			file: shown?.filePath ?? "(unknown file)",
			hash: shown?.contentHash,
			sandbox: `${runsIn}${asked}`,
			network: shown?.network ?? "all",
		};
	} catch {
		return { file: "(unknown file)", sandbox: "unknown", network: "unknown" };
	}
}

/** `shepherd agents --json`: the definitions a spawn accepts. */
export async function listAgents(state: ParentState, scope?: string): Promise<{ scope: string; agents: AgentListed[] }> {
	const args = ["agents", "--project", state.cwd];
	if (scope) args.push("--scope", scope);
	const listing = await runShepherd<AgentListing>(args, { cwd: state.cwd });
	return { scope: listing?.scope ?? scope ?? "user", agents: listing?.agents ?? [] };
}

export function agentsText(listing: { scope: string; agents: AgentListed[] }): string {
	if (!listing.agents.length) {
		return `No agent definitions found in ${listing.scope} scope. Do not guess an agent name; add a definition or choose another scope.`;
	}
	return [
		"Available agent names (copy the name exactly; names are case-sensitive):",
		...listing.agents.map((a) => `${a.name} (${a.source}): ${a.description}`),
	].join("\n");
}

/** The herd: every sheep not closed. */
export async function herd(state: ParentState): Promise<SheepStatus[]> {
	const result = await state.call("herd");
	const sheep = result.sheep ?? [];
	state.rememberHerd(sheep);
	return sheep;
}

/** One sheep's status (remembering its name). */
export async function sheepStatus(state: ParentState, id: string): Promise<SheepStatus> {
	const status = await state.call("status", { id });
	// Naming a sheep answers with that sheep, never the herd.
	if (!("agentId" in status)) throw new ShepherdError("unknown_agent", `No sheep "${id}" in this herd.`);
	state.remember(status.agentId, status.displayName);
	return status;
}

/**
 * A sheep's state in words, with its host: `working`, `working on host box`, or `link down since
 * <time> on host box` while its host cannot be reached (its last known state is then not what it
 * is), as the CLI and MCP say it.
 */
export function stateWords(s: SheepStatus): string {
	const host = s.host ? ` on host ${s.host}` : "";
	if (typeof s.linkDownSince === "number") return `link down since ${new Date(s.linkDownSince).toISOString()}${host}`;
	return `${s.state}${host}`;
}

export function herdText(sheep: SheepStatus[]): string {
	if (!sheep.length) return "No sheep in this herd.";
	return sheep
		.map((s) => {
			let line = `• ${s.displayName} [${stateWords(s)}] id=${s.agentId}`;
			if (s.task) line += ` task ${s.task.id} ${s.task.state}${s.task.stale ? " (stale)" : ""}`;
			if (s.error) line += ` (${s.error})`;
			return line;
		})
		.join("\n");
}

/** The public status of one sheep: state, task, error (no pane ids). */
export function publicStatus(status: SheepStatus): Record<string, unknown> {
	const out: Record<string, unknown> = { id: status.agentId, state: status.state };
	if (status.task) out.task = status.task;
	if (status.error) out.error = status.error;
	if (status.host) out.host = status.host;
	if (typeof status.linkDownSince === "number") out.linkDownSince = status.linkDownSince;
	return out;
}

export function statusText(status: SheepStatus): string {
	const task = status.task ? `; task ${status.task.id} ${status.task.state}` : "";
	const waiting =
		status.task?.state === "waiting" && status.task.waitingOn
			? ` (waiting on ${status.task.waitingOn}${status.task.stale ? ", stale" : ""})`
			: "";
	return `${status.displayName ?? "agent"} ${stateWords(status)}${task}${waiting}.`;
}

/** Resolves a person's target (agent id, display name or definition name) to an agent id. */
export async function resolveTarget(state: ParentState, target: string): Promise<string> {
	const sheep = await herd(state);
	const exact = sheep.find((s) => s.agentId === target || s.displayName === target);
	if (exact) return exact.agentId;
	const byAgent = sheep.filter((s) => s.agent === target);
	if (byAgent.length === 1) return byAgent[0].agentId;
	if (byAgent.length > 1) {
		throw new ShepherdError(
			"invalid_target",
			`Several sheep run "${target}": ${byAgent.map((s) => `${s.displayName} (${s.agentId})`).join(", ")}. Name one.`,
		);
	}
	return target;
}
