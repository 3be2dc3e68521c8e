/**
 * `shepherd_merge`: the merge queue, carried out by the broker, which lands the branches runs
 * and isolated sheep left, one by one, into a target branch. The tool submits it and waits
 * until it is over (aborting cancels it: the target stays at its last verified landing), then
 * answers with each branch's outcome in the CLI's words; `dryRun` answers what would land and
 * what would conflict, `cancel` cancels a merge under way. Its name, description and
 * parameters are the tool catalogue's.
 */

import type { ExtensionAPI } from "@mariozechner/pi-coding-agent";
import type { MergePreview, MergeView } from "../lib/broker.ts";
import type { BranchLanding, ResolverView } from "../lib/protocol-types.ts";
import { PARENT_TOOLS } from "../lib/tool-catalogue.ts";
import { failure, success } from "./protocol.ts";
import { renderCall, renderResult } from "./render.ts";
import { callerContext, type ParentState } from "./state.ts";

/** The lines of a failing check's output a report shows. */
const CHECK_LINES = 15;

const short = (commit: string): string => commit.slice(0, 10);

/** Where a branch stands, in words (`merged at 3f0c2a91d4`, `check failed (exit 3)`). */
function stateWords(branch: BranchLanding): string {
	if (branch.state === "merged" && branch.commit) return `merged at ${short(branch.commit)}`;
	if (branch.state === "check_failed") return branch.checkStatus ? `check failed (${branch.checkStatus})` : "check failed";
	if (branch.state === "already_landed") return "already landed";
	return branch.state;
}

function sheepLine(lines: string[], role: string, sheep: ResolverView): void {
	const who = sheep.displayName ?? sheep.agentId;
	const note = sheep.note ? ` (note ${sheep.note})` : "";
	lines.push(`  ${role} ${who} (${sheep.agentId}): ${sheep.status ?? "did not settle"}${note}`);
}

/** What the queue did overall, in one line. */
function summary(view: MergeView): string {
	const count = (state: BranchLanding["state"]) => view.branches.filter((b) => b.state === state).length;
	const total = view.branches.length;
	if (view.discard) return `${count("discarded")} of ${total} discarded`;
	const [merged, before] = [count("merged"), count("already_landed")];
	let line =
		merged === 0 && before === 0
			? `nothing landed into ${view.target}`
			: merged === 0
				? `nothing new landed: ${before} of ${total} already in ${view.target}`
				: before === 0
					? `${merged} of ${total} landed into ${view.target}`
					: `${merged} of ${total} landed into ${view.target} (${before} already there)`;
	if (view.cancelled) line = `cancelled (${view.cancelled}): ${line}`;
	else if (!view.finished) line += " so far";
	return line;
}

/**
 * Each branch on a line with where it stands, then what the queue did overall: the words of
 * the CLI and MCP (`shepherd_client::land_words::merge_text`), which this copies.
 */
export function mergeText(view: MergeView): string {
	let head = view.discard ? "Discarding" : `Landing into ${view.target}`;
	if ((view.strategy ?? "merge") !== "merge" && !view.discard) head += ` (strategy: ${view.strategy})`;
	if (view.check) head += ` (check: ${view.check})`;
	const lines = [head];
	if (view.waitingFor && !view.finished) lines.push(`waiting for ${view.waitingFor}, which lands into ${view.target} first`);
	for (const branch of view.branches) {
		const owner = branch.owner ? ` (${branch.owner})` : "";
		const task = branch.taskStatus ? ` [task ${branch.taskStatus}]` : "";
		lines.push(`- ${branch.branch}${owner}${task}: ${stateWords(branch)}${branch.why ? ` — ${branch.why}` : ""}`);
		if (branch.conflict && branch.state === "conflict") {
			lines.push(`  conflicting files: ${branch.conflict.files.join(", ")}`);
			for (const line of branch.conflict.hunks.split("\n").slice(0, 40)) lines.push(`  ${line}`);
		}
		if (branch.resolver) sheepLine(lines, "resolver", branch.resolver);
		for (const fixer of branch.fixers ?? []) sheepLine(lines, "fixer", fixer);
		if (branch.checkOutput && branch.state === "check_failed") {
			for (const line of branch.checkOutput.split("\n").slice(-CHECK_LINES)) lines.push(`  | ${line}`);
		}
	}
	lines.push(summary(view));
	return lines.join("\n");
}

/**
 * A dry run: each branch in order, its commits and diffstat, and what it would conflict with
 * (the CLI's `--dry-run` words, `shepherd_client::land_words::preview_text`, which this copies).
 */
export function previewText(preview: MergePreview): string {
	const from = preview.createdFrom ? `, made from ${preview.createdFrom}` : "";
	let head = `Would land into ${preview.target}${from} (strategy: ${preview.strategy})`;
	if (preview.check) head += ` (check: ${preview.check})`;
	const lines = [head];
	let conflicting = 0;
	preview.branches.forEach((branch, index) => {
		const owner = branch.owner ? ` (${branch.owner})` : "";
		const task = branch.taskStatus ? ` [task ${branch.taskStatus}]` : "";
		const what = branch.lands ? `${(branch.commits ?? []).length} commit(s)` : "not landed";
		lines.push(`${index + 1}. ${branch.branch}${owner}${task}: ${what}${branch.why ? ` — ${branch.why}` : ""}`);
		for (const commit of branch.commits ?? []) lines.push(`   ${short(commit.commit)} ${commit.subject}`);
		if (branch.lands) {
			for (const line of (branch.diffstat ?? "").split("\n").filter((l) => l !== "")) lines.push(`   ${line.trimEnd()}`);
		}
		const conflicts = branch.conflicts ?? [];
		if (conflicts.length > 0) {
			conflicting += 1;
			const withTarget = branch.conflictsWithTarget ?? [];
			const pairs = (branch.conflictsWith ?? []).map((pair) => `${pair.branch} (${pair.files.join(", ")})`);
			if (withTarget.length > 0) pairs.unshift(`${preview.target} (${withTarget.join(", ")})`);
			lines.push(`   would conflict in ${conflicts.join(", ")}${pairs.length > 0 ? ` — with ${pairs.join(" and ")}` : ""}`);
		}
	});
	const landing = preview.branches.filter((b) => b.lands).length;
	lines.push(`${landing} of ${preview.branches.length} would be tried, ${conflicting} would conflict; nothing was changed`);
	return lines.join("\n");
}

export function registerMerge(pi: ExtensionAPI, state: ParentState): void {
	const entry = PARENT_TOOLS.shepherd_merge;
	pi.registerTool({
		name: entry.name,
		label: "Shepherd: land branches",
		description: entry.description,
		promptSnippet: "Land isolated sheep's branches into the project's branch, with a check",
		parameters: entry.parameters,
		async execute(_toolCallId, params, signal) {
			const args: Record<string, unknown> = { ...params };
			const targets = params.targets === undefined ? [] : Array.isArray(params.targets) ? params.targets : [params.targets];
			try {
				const link = state.requireLink();
				const request = {
					targets,
					session: params.session,
					only: params.only,
					skip: params.skip,
					includeFailed: params.includeFailed === true ? true : undefined,
					into: params.into,
					strategy: params.strategy,
					check: params.check,
					checkTimeout: params.checkTimeout,
					resolve: params.resolve,
					fix: params.fix,
					fixAttempts: params.fixAttempts,
					prune: params.prune === true ? true : undefined,
					discard: params.discard === true ? true : undefined,
					caller: callerContext(),
				};
				if (params.dryRun === true) {
					const preview = await link.previewMerge(request);
					return success("shepherd_merge", args, previewText(preview), {}, { preview });
				}
				const view =
					typeof params.cancel === "string" ? await link.cancelMerge(params.cancel) : await link.merge(request, signal);
				const result = success("shepherd_merge", args, mergeText(view), { mergeId: view.mergeId, exitCode: view.exitCode }, { merge: view });
				return { ...result, details: { ...result.details, failed: (view.exitCode ?? 2) !== 0 } };
			} catch (error) {
				throw failure("shepherd_merge", "merge", args, error);
			}
		},
		renderCall: (args, theme) => renderCall("shepherd_merge", args, theme, state),
		renderResult: (result, options, theme, context) => renderResult("shepherd_merge", result, options, theme, context),
	});

	pi.on("tool_result", (event) => {
		const details = event.details as { failed?: unknown } | undefined;
		if (event.toolName === "shepherd_merge" && details?.failed === true) return { isError: true };
		return undefined;
	});
}
