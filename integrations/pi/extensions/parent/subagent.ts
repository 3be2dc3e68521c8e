/**
 * The opt-in `subagent` tool: the original's blocking single / parallel / chain facade, for
 * people whose prompts and habits expect it. It is registered only when the user setting
 * `subagentCompatibility` is on (read once when pi loads). One call submits the run to the
 * broker (`run.submit`), which spawns, delegates, waits, collects and closes, and waits for its
 * report; aborting the tool call cancels the run in the broker. The result text is the
 * original's: the last text for single and chain, `Parallel: X/Y succeeded` with one section per
 * task for parallel; failed runs are errors.
 */

import type { ExtensionAPI } from "@mariozechner/pi-coding-agent";
import { type Static, Type } from "typebox";
import type { Harness, Mode, RunReport, RunResult, RunStepParams, RunSubmitParams } from "../lib/broker.ts";
import * as path from "node:path";
import { ShepherdError } from "./cli.ts";
import { HARNESSES } from "../lib/tool-catalogue.ts";
import { agentNeedingApproval, confirmProjectAgent, parentChoices } from "./ops.ts";
import { callerContext, piCommand } from "./state.ts";
import { renderCall, renderResult } from "./render.ts";
import type { ParentState } from "./state.ts";

const HarnessParam = Type.Optional(
	Type.Unsafe<Harness>({
		type: "string",
		enum: [...HARNESSES],
		description: `The coding agent to run this definition on instead of its own: ${HARNESSES.join(" | ")}`,
	}),
);

const HostParam = Type.Optional(
	Type.String({
		description: "A host to run this task's sheep on: one the user defined under `hosts` in their Shepherd settings (default: this machine)",
	}),
);

const Task = Type.Object({
	agent: Type.String({ description: "Exact agent definition name" }),
	task: Type.String({ description: "The task" }),
	cwd: Type.Optional(Type.String({ description: "Working directory for this task" })),
	isolate: Type.Optional(Type.Boolean({ description: "Run in its own git worktree" })),
	harness: HarnessParam,
	host: HostParam,
});

const Step = Type.Object({
	agent: Type.String({ description: "Exact agent definition name" }),
	task: Type.String({ description: "The task; {previous} is replaced by the previous step's result" }),
	cwd: Type.Optional(Type.String({ description: "Working directory for this step" })),
	harness: HarnessParam,
	host: HostParam,
});

const Params = Type.Object({
	agent: Type.Optional(Type.String({ description: "Single mode: exact agent name" })),
	task: Type.Optional(Type.String({ description: "Single mode: the task" })),
	tasks: Type.Optional(Type.Array(Task, { description: "Parallel mode: the tasks" })),
	chain: Type.Optional(Type.Array(Step, { description: "Chain mode: the steps, in order" })),
	cwd: Type.Optional(Type.String({ description: "Working directory (default: the project directory)" })),
	sessionName: Type.Optional(Type.String({ description: "Create or continue the fieldnotes session with this name" })),
	agentScope: Type.Optional(Type.String({ description: "Must match the agentScope setting when given" })),
	confirmProjectAgents: Type.Optional(Type.Boolean({ description: "Must match the confirmProjectAgents setting when given" })),
});
export type SubagentParams = Static<typeof Params>;

/**
 * The tool's arguments as a `run.submit` request: exactly one mode, working directories made
 * absolute (a task's against the run's, the run's against the project). Everything else — the
 * agents, the limits, `{previous}` — the broker checks.
 */
export function runParams(params: SubagentParams, project: string): RunSubmitParams {
	const single = params.agent !== undefined || params.task !== undefined;
	const modes = [single, params.tasks !== undefined, params.chain !== undefined].filter(Boolean).length;
	if (modes !== 1) {
		throw new ShepherdError(
			"invalid_run",
			"give exactly one of: agent + task (single), tasks (parallel), chain",
		);
	}
	const base = params.cwd ? path.resolve(project, params.cwd) : project;
	// A single run missing its agent or task is sent as it is: the broker refuses it, naming the
	// missing field.
	const step = (s: { agent?: string; task?: string; cwd?: string; isolate?: boolean; harness?: Harness; host?: string }): RunStepParams => ({
		agent: s.agent as string,
		task: s.task as string,
		cwd: s.cwd ? path.resolve(base, s.cwd) : base,
		isolate: s.isolate === true ? true : undefined,
		harness: s.harness,
		host: s.host,
	});
	const [mode, steps]: [Mode, RunStepParams[]] = single
		? ["single", [step({ agent: params.agent, task: params.task })]]
		: params.tasks !== undefined
			? ["parallel", params.tasks.map(step)]
			: ["chain", (params.chain ?? []).map(step)];
	return { mode, steps, sessionName: params.sessionName, caller: callerContext(), piCommand: piCommand() };
}

/** The text the model reads for a finished run (`shepherd run --json`'s document). */
export function subagentText(run: RunReport): { text: string; failed: boolean } {
	const results = run.results;
	const failed = run.interrupted === true || results.length === 0 || results.some((r) => r.status !== "completed");
	let text: string;
	// A text cut at 50 KiB already ends with the path of the file holding all of it.
	const body = (r: RunResult | undefined) => r?.text || r?.error || "(no output)";
	if (run.mode === "parallel") {
		const ok = results.filter((r) => r.status === "completed").length;
		const sections = results.map((r) => `### [${r.agent}] ${r.status}\n\n${body(r)}`);
		text = [`Parallel: ${ok}/${results.length} succeeded`, ...sections].join("\n\n");
	} else {
		text = body(results[results.length - 1]);
		if (run.stopped) {
			text += `\n\nChain stopped at step ${run.stopped.step} (${run.stopped.agent}): ${run.stopped.status}.`;
		}
	}
	if (run.interrupted) text += run.cancelled ? `\n\nThe run was cancelled. Why: ${run.cancelled}.` : "\n\nThe run was cancelled.";
	// Every branch with work on it: what `shepherd merge` (or shepherd_merge) lands.
	const branches = (run.worktrees ?? []).map((w) => {
		let said = w.branch;
		if ("host" in w) {
			said += ` (from host ${w.host})`;
			if (w.kept) said += ` (worktree kept there at ${w.path}: ${w.reason ?? "kept"})`;
		} else {
			if (w.preserved) said += ` (uncommitted changes preserved on ${w.preserved})`;
			if (w.kept) said += ` (worktree kept at ${w.path}: ${w.reason ?? "kept"})`;
		}
		return said;
	});
	if (branches.length) {
		text += `\n\nBranches to land (shepherd merge ${run.runId}), or to integrate or discard yourself: ${branches.join(", ")}`;
	}
	if (run.sessionName) {
		const continued = run.resumed ? " (continued)" : "";
		text += `\n\nSession: ${run.sessionName} (${run.sessionRelativePath ?? run.sessionPath})${continued}`;
	}
	return { text, failed };
}

export function registerSubagent(pi: ExtensionAPI, state: ParentState, trusted: { agentScope?: string; confirmProjectAgents?: boolean }): void {
	pi.registerTool({
		name: "subagent",
		label: "Subagent (Shepherd)",
		description:
			"Run agents and wait for their results (blocking). Exactly one mode: single (`agent` + `task`), parallel " +
			"(`tasks`: up to 8, 4 at a time, results in input order) or chain (`chain`: steps in order; `{previous}` in a " +
			"step's task is replaced by the previous step's result; stops at the first step that does not complete). " +
			"Every task gets a note in a fieldnotes session; pass `sessionName` to continue a session. Each sheep is " +
			"closed when its task ends. For long or interactive work prefer shepherd_spawn + shepherd_delegate.",
		promptSnippet: "Run an agent (or several, in parallel or a chain) and wait for the result",
		parameters: Params,
		async execute(_toolCallId, params, signal, onUpdate, ctx) {
			for (const key of ["agentScope", "confirmProjectAgents"] as const) {
				if (params[key] !== undefined && params[key] !== trusted[key]) {
					throw new Error(`${key} is controlled by trusted Shepherd settings; omit it (the setting is ${JSON.stringify(trusted[key])}).`);
				}
			}
			const link = state.requireLink();
			// Sheep whose definitions name no model or thinking level get the session's, as
			// spawned sheep do.
			const submitted = { ...runParams(params, link.project), ...parentChoices(pi, ctx) };
			onUpdate?.({ content: [{ type: "text", text: "Running…" }], details: {} });
			let run: RunReport;
			for (const confirmed = new Set<string>(); ; ) {
				try {
					run = await link.run(submitted, signal);
					break;
				} catch (error) {
					// A project agent is confirmed in pi's dialog, as for a spawn, then the run
					// is submitted again (nothing ran: a refused run changes nothing).
					const agent = agentNeedingApproval(error);
					if (!agent || confirmed.has(agent) || !ctx?.hasUI) throw error;
					confirmed.add(agent);
					await confirmProjectAgent(state, ctx, agent);
				}
			}
			const { text, failed } = subagentText(run);
			return {
				content: [{ type: "text", text }],
				details: { ...run, compatibility: "shepherd", failed },
			};
		},
		renderCall: (args, theme) => renderCall("subagent", args, theme, state),
		renderResult: (result, options, theme, context) => renderResult("subagent", result, options, theme, context),
	});

	pi.on("tool_result", (event) => {
		const details = event.details as { failed?: unknown } | undefined;
		if (event.toolName === "subagent" && details?.failed === true) return { isError: true };
		return undefined;
	});
}
