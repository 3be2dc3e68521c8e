/**
 * Review-reach events on pi's event bus, for other extensions to subscribe to (a review
 * score writer, a dashboard): when a task goes to a reviewer agent (its name matches
 * `(^|-)review(er)?(-|$)`, as in the original), `pi-shepherd:review-started` says so, and
 * `pi-shepherd:review-complete` carries how it ended — with the model, usage and tool calls
 * when the sheep's run reported them by then. Emitting never fails a tool call.
 */

import type { ExtensionAPI } from "@mariozechner/pi-coding-agent";
import type { TaskReport } from "../lib/broker.ts";
import type { ParentState } from "./state.ts";

const REVIEWER = /(^|-)review(er)?(-|$)/;

/** Tasks handed to reviewers, by task id: what `review-complete` repeats. */
const reviews = new Map<string, { agent: string; task: string; cwd: string }>();

export function isReviewer(agent: string | undefined): boolean {
	return typeof agent === "string" && REVIEWER.test(agent);
}

/** The telemetry a report carries (model, tokens, cost, tool calls), as far as it is an object. */
function telemetryOf(value: unknown): Record<string, unknown> {
	return value !== null && typeof value === "object" ? (value as Record<string, unknown>) : {};
}

function emit(pi: ExtensionAPI, channel: string, data: unknown): void {
	try {
		pi.events?.emit(channel, data);
	} catch {
		// a subscriber's failure is its own
	}
}

/** After a delegation: `review-started` when its sheep is a reviewer. */
export function taskDelegated(pi: ExtensionAPI, state: ParentState, taskId: string, agentId: string, task: string): void {
	const display = state.names.get(agentId) ?? "";
	const agent = display.split(": ")[0];
	if (!isReviewer(agent)) return;
	const review = { agent, task, cwd: state.cwd };
	reviews.set(taskId, review);
	emit(pi, "pi-shepherd:review-started", { taskId, ...review });
}

/** A settled task the parent heard of: `review-complete` when its sheep is a reviewer. */
export function taskSettled(pi: ExtensionAPI, state: ParentState, report: TaskReport): void {
	if (!isReviewer(report.agent)) return;
	const started = reviews.get(report.taskId) ?? { agent: report.agent, task: "", cwd: state.cwd };
	reviews.delete(report.taskId);
	const telemetry = telemetryOf(report.telemetry);
	emit(pi, "pi-shepherd:review-complete", {
		taskId: report.taskId,
		...started,
		ok: report.ok === true,
		returnCode: report.returnCode,
		model: telemetry.model,
		usage: {
			input: telemetry.tokensIn,
			output: telemetry.tokensOut,
			cacheRead: telemetry.tokensCacheRead,
			cacheWrite: telemetry.tokensCacheWrite,
			cost: telemetry.cost,
		},
		toolCalls: telemetry.toolCalls,
	});
}
