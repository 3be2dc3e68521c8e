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
import { PARENT_TOOLS } from "../lib/tool-catalogue.ts";
import { failure, success } from "./protocol.ts";
import { renderCall, renderResult } from "./render.ts";
import { callerContext, type ParentState } from "./state.ts";

/** Each branch on a line with where it stands, then how many landed (the CLI's words). */
export function mergeText(view: MergeView): string {
	const lines = [`Landing into ${view.target}${view.check ? ` (check: ${view.check})` : ""}`];
	for (const branch of view.branches) {
		const owner = branch.owner ? ` (${branch.owner})` : "";
		const state =
			branch.state === "merged" && branch.commit ? `merged at ${branch.commit.slice(0, 10)}` : branch.state.replace("_", " ");
		lines.push(`- ${branch.branch}${owner}: ${state}${branch.why ? ` — ${branch.why}` : ""}`);
		if (branch.conflict && branch.state === "conflict") {
			lines.push(`  conflicting files: ${branch.conflict.files.join(", ")}`);
			for (const line of branch.conflict.hunks.split("\n").slice(0, 40)) lines.push(`  ${line}`);
		}
		if (branch.resolver) {
			const note = branch.resolver.note ? ` (note ${branch.resolver.note})` : "";
			lines.push(`  resolver ${branch.resolver.agentId}: ${branch.resolver.status ?? "did not settle"}${note}`);
		}
		if (branch.checkOutput) {
			for (const line of branch.checkOutput.split("\n").slice(-15)) lines.push(`  | ${line}`);
		}
	}
	const landed = view.branches.filter((b) => b.state === "merged").length;
	lines.push(`${landed} of ${view.branches.length} landed into ${view.target}`);
	return lines.join("\n");
}

/** What a merge would do, branch by branch (the CLI's `--dry-run` words). */
export function previewText(preview: MergePreview): string {
	const lines = [`Would land into ${preview.target} (strategy: ${preview.strategy})`];
	for (const branch of preview.branches) {
		const owner = branch.owner ? ` (${branch.owner})` : "";
		const lands = branch.lands ? `${(branch.commits ?? []).length} commit(s)` : `left out — ${branch.why ?? ""}`;
		lines.push(`- ${branch.branch}${owner}: ${lands}`);
		const withTarget = branch.conflictsWithTarget ?? [];
		if (withTarget.length > 0) {
			lines.push(`  would conflict with ${preview.target} in ${withTarget.join(", ")}`);
		}
		for (const pair of branch.conflictsWith ?? []) {
			lines.push(`  would conflict with ${pair.branch} in ${pair.files.join(", ")}`);
		}
	}
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
