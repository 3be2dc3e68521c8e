/**
 * Receipts and herd-mates in words, shared by the parent's tools and the sheep extension (and
 * said the same way by `shepherd mcp`, `crates/shepherd/src/commands/mcp/receipts.rs`): whether
 * a message was delivered and read, the latest messages a sheep was sent, and who is in a
 * sheep's herd. Pure functions of the broker's answers; no pi dependency, so the sheep
 * extension ships it beside the protocol client.
 */

import type { HerdMatesResult, MessageReceipt, ReceiptState, SheepStatus } from "./protocol-types.ts";

/** What a receipt state means, for a reader who does not know the words. */
const MEANING: Record<ReceiptState, string> = {
	queued: "not yet fetched by its recipient",
	delivered: "handed to its recipient, not yet acknowledged",
	read: "acknowledged by its recipient",
	discarded: "its recipient was closed before reading it",
};

/** A broker time (ms since the epoch) as an RFC 3339 UTC timestamp. */
function at(ms: number | undefined | null): string | undefined {
	return typeof ms === "number" ? new Date(ms).toISOString() : undefined;
}

/** `Message <id> from <a> to <b> is read (acknowledged by its recipient): sent …, delivered …, read ….` */
export function receiptText(receipt: MessageReceipt): string {
	const times = [
		["sent", at(receipt.sentAt)],
		["delivered", at(receipt.deliveredAt)],
		["read", at(receipt.readAt)],
	]
		.filter(([, time]) => time !== undefined)
		.map(([word, time]) => `${word} ${time}`);
	return (
		`Message ${receipt.messageId} from ${receipt.senderName} to ${receipt.targetName} is ${receipt.state} ` +
		`(${MEANING[receipt.state]}): ${times.join(", ")}.`
	);
}

/** A receipt as a tool returns it. */
export function publicReceipt(receipt: MessageReceipt): Record<string, unknown> {
	const out: Record<string, unknown> = { messageId: receipt.messageId, state: receipt.state };
	out.sender = receipt.sender;
	out.target = receipt.target;
	if (receipt.taskId) out.taskId = receipt.taskId;
	out.sentAt = receipt.sentAt;
	if (receipt.deliveredAt != null) out.deliveredAt = receipt.deliveredAt;
	if (receipt.readAt != null) out.readAt = receipt.readAt;
	return out;
}

/** The lines a sheep's status adds for the messages it was sent, newest first. */
export function messagesText(status: SheepStatus): string {
	const messages = status.messages ?? [];
	if (!messages.length) return "";
	const lines = messages.map((m) => `- ${m.messageId} from ${m.senderName}: ${m.state} "${m.preview}"`);
	return `\nLatest messages sent to it, newest first (queued, delivered, read or discarded):\n${lines.join("\n")}`;
}

/** Whether a `status` answer is a message's receipt. */
export function isReceipt(status: object): status is MessageReceipt {
	return "messageId" in status;
}

/** The herd as a sheep sees it (`herd.mates`), one line per sheep, itself marked. */
export function matesText(result: HerdMatesResult): string {
	const lines = result.mates.map(
		(m) => `- ${m.displayName} (${m.agentId}): ${m.state}, ${m.runtime}${m.isSelf ? " (you)" : ""}`,
	);
	return (
		"Your herd, in spawn order (message a herd-mate by its agent id or display name; the parent is `shepherd`):\n" +
		lines.join("\n")
	);
}
