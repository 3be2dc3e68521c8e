/**
 * Inbox items the broker pushes to the parent become custom messages in the pi session.
 *
 * The rules: a completion, a question (expectsReply) and a reply steer the current run (they
 * surface between tool rounds) and start a turn when pi is idle; a plain message, a stale-wait
 * reminder and a notice wait for the parent's next turn without starting one. The content the
 * model reads is compact (who, what, the ids needed to answer); the whole item is in `details`.
 * Items are acknowledged only after pi has them, so a crash in between re-delivers them.
 */

import type { ExtensionAPI } from "@mariozechner/pi-coding-agent";
import type { InboxItem } from "../lib/broker.ts";
import { taskSettled } from "./events.ts";
import { clip, completionLine } from "./tools.ts";
import type { ParentState } from "./state.ts";

interface Delivery {
	customType: string;
	content: string;
	steer: boolean;
}

function minutesSeconds(ms: number): string {
	const total = Math.max(0, Math.floor(ms / 1000));
	const m = Math.floor(total / 60);
	const s = total % 60;
	return `${String(m).padStart(2, "0")}:${String(s).padStart(2, "0")}`;
}

async function describe(pi: ExtensionAPI, state: ParentState, item: InboxItem): Promise<Delivery | undefined> {
	switch (item.type) {
		case "completion": {
			const completions = item.completions ?? [];
			for (const c of completions) {
				state.remember(c.agentId, c.displayName);
				taskSettled(pi, state, c);
			}
			const summary = completions.map((c) => `${c.displayName || c.agentId} ${c.status}`).join(", ");
			const plural = completions.length === 1 ? "completion" : "completions";
			const lines = completions.map((c) => `- ${completionLine(c)}`);
			return {
				customType: "shepherd.task.completion",
				content: `shepherd_watcher ${plural}: ${summary}\n${lines.join("\n")}`,
				steer: true,
			};
		}
		case "envelope": {
			const envelope = item.envelope;
			const author = envelope.originSenderId ?? envelope.senderId;
			const name = await state.nameOf(author);
			const isReply = envelope.kind === "reply";
			const ids = [`Message ID: ${envelope.messageId}`];
			if (author && author !== "shepherd") ids.push(`From agent id: ${author}`);
			if (envelope.taskId) ids.push(`Task ID: ${envelope.taskId}`);
			if (envelope.threadId) ids.push(`Thread ID: ${envelope.threadId}`);
			if (envelope.replyTo) ids.push(`Reply to: ${envelope.replyTo}`);
			if (envelope.expectsReply) {
				ids.push(
					`Expects reply: yes (answer with shepherd_message target ${author}, replyTo ${envelope.messageId}` +
						`${envelope.taskId ? `, taskId ${envelope.taskId}` : ""})`,
				);
			}
			return {
				customType: isReply ? "shepherd.message.reply" : "shepherd.message.incoming",
				content: `Shepherd ${isReply ? "reply" : "message"} from ${name}\n${ids.join("\n")}\n\n${envelope.content ?? ""}`,
				steer: isReply || envelope.expectsReply === true,
			};
		}
		case "stale_wait": {
			state.remember(item.agentId, item.displayName);
			const content = [
				`Shepherd stale wait: ${item.displayName} has waited ${minutesSeconds(item.elapsedMs)} for a reply (stale after ${item.thresholdMinutes} min).`,
				`Task: ${item.taskId} (owner ${item.displayName}, agent id ${item.agentId}) - ${clip(item.description ?? "", 200)}`,
				`Question: ${clip(item.question ?? "", 400)}`,
				`Pending request: ${item.requestId} (waiting on ${item.recipientName})`,
				`You may answer on the owner's behalf with shepherd_message {target: "${item.agentId}", taskId: "${item.taskId}", replyTo: "${item.requestId}"}, nudge ${item.recipientName}, or let the reply deadline settle the task blocked.`,
			].join("\n");
			return { customType: "shepherd.stale.wait", content, steer: false };
		}
		case "notice": {
			const who = item.agentId ? ` (${await state.nameOf(item.agentId)})` : "";
			return {
				customType: "shepherd.notice",
				content: `Shepherd notice: ${item.notice}${who}\n${item.text ?? ""}`,
				steer: false,
			};
		}
		default:
			return undefined;
	}
}

/** Hands pushed items to pi in order, then acknowledges them. */
export function createInboxHandler(pi: ExtensionAPI, state: ParentState) {
	const seen = new Set<number>();
	let chain: Promise<void> = Promise.resolve();
	return (items: InboxItem[]): Promise<void> => {
		// One batch at a time, in order, even when pushes arrive close together.
		chain = chain.then(() => deliver(items)).catch(() => {});
		return chain;
	};

	async function deliver(items: InboxItem[]): Promise<void> {
		let last: number | undefined;
		for (const item of items) {
			const seq = Number(item.seq);
			last = seq;
			if (seen.has(seq)) continue;
			const message = await describe(pi, state, item);
			if (message) {
				try {
					pi.sendMessage(
						{ customType: message.customType, content: message.content, display: true, details: item },
						message.steer ? { deliverAs: "steer", triggerTurn: true } : { deliverAs: "followUp", triggerTurn: false },
					);
				} catch {
					// pi refused (e.g. shutting down): leave it unacknowledged so it comes again.
					return;
				}
			}
			seen.add(seq);
		}
		state.onHerdChange();
		if (last !== undefined) {
			try {
				await state.call("ack", { seq: last });
			} catch {
				// the broker re-sends unacknowledged items; `seen` drops the duplicates
			}
		}
	}
}
