/**
 * What a Shepherd tool returns to the model, and how it fails.
 *
 * Every result's text is one block the model can rely on: a one-line service message, then
 * `call:` (the tool and its arguments), `return:` (the value) and `details:` (everything else,
 * one `key in words: value` line each). Failures are thrown with the same block, so pi marks
 * them as errors while the model still reads the code and return code. This file also holds the
 * argument normalisation that runs before schema validation, so older call shapes still work.
 */

import { HIDDEN_DETAILS as HIDDEN_DETAIL_KEYS } from "../lib/tool-catalogue.ts";
import { ShepherdError } from "./cli.ts";

export interface ToolResult {
	content: { type: "text"; text: string }[];
	details: Record<string, unknown>;
}

const HIDDEN_DETAILS = new Set(HIDDEN_DETAIL_KEYS);

function words(key: string): string {
	return key.replace(/([a-z0-9])([A-Z])/g, "$1 $2").toLowerCase();
}

function indent(text: string, prefix = "    "): string {
	return text
		.split("\n")
		.map((line) => (line ? prefix + line : line))
		.join("\n");
}

function renderValue(value: unknown): string {
	if (typeof value === "string") return value;
	if (Array.isArray(value)) return value.map((item) => (typeof item === "string" ? item : JSON.stringify(item))).join("\n");
	return JSON.stringify(value ?? null);
}

/** The `call:` / `return:` / `details:` block. */
export function protocolText(
	service: string,
	call: { name: string; arguments: Record<string, unknown> },
	returnValue: unknown,
	details: Record<string, unknown>,
	keyNames: Record<string, string> = {},
): string {
	const lines = Object.keys(details)
		.filter((key) => !HIDDEN_DETAILS.has(key) && details[key] !== undefined)
		.sort((a, b) => (a === "returnCode" ? 1 : b === "returnCode" ? -1 : 0))
		.map((key) => {
			const value = details[key];
			const shown = value === null ? "none" : typeof value === "string" ? value : JSON.stringify(value);
			return `    ${keyNames[key] ?? words(key)}: ${shown}`;
		});
	let text = `${service}\n\ncall:\n${indent(`${call.name} ${JSON.stringify(call.arguments)}`)}\n\nreturn:\n${indent(renderValue(returnValue))}`;
	if (lines.length) text += `\n\ndetails:\n${lines.join("\n")}`;
	return text;
}

/** Drops undefined values (and, for spawn, defaults the caller did not choose). */
export function callArguments(args: Record<string, unknown>): Record<string, unknown> {
	const out: Record<string, unknown> = {};
	for (const [key, value] of Object.entries(args ?? {})) {
		if (value !== undefined) out[key] = value;
	}
	return out;
}

/** A successful result. */
export function success(
	toolName: string,
	args: Record<string, unknown>,
	service: string,
	returnValue: unknown,
	extra: Record<string, unknown> = {},
	keyNames: Record<string, string> = {},
): ToolResult {
	const call = { name: toolName, arguments: callArguments(args) };
	const details = { call, ...extra, returnValue, returnCode: 0 };
	return {
		content: [{ type: "text", text: protocolText(service, call, returnValue, details, keyNames) }],
		details,
	};
}

/** A thrown failure carrying the protocol block in its message. */
export class ToolFailure extends Error {
	readonly details: Record<string, unknown>;
	constructor(message: string, details: Record<string, unknown>) {
		super(message);
		this.details = details;
	}
}

export function failure(toolName: string, action: string, args: Record<string, unknown>, error: unknown): ToolFailure {
	const code = (error as { code?: string })?.code ?? "shepherd_error";
	const returnCode =
		error instanceof ShepherdError
			? error.returnCode
			: typeof (error as { returnCode?: unknown })?.returnCode === "number"
				? ((error as { returnCode: number }).returnCode)
				: 1;
	const message = error instanceof Error ? error.message : String(error);
	const call = { name: toolName, arguments: callArguments(args) };
	const returnValue = { code, error: message, returnCode };
	const details = { call, action, code, error: message, returnValue, returnCode };
	const service = `Herd ${action} failed (return code ${returnCode}): ${message}`;
	return new ToolFailure(protocolText(service, call, returnValue, details), details);
}

const DROPPED_KEYS = ["agentScope", "confirmProjectAgents", "omitSystemPrompt", "direction"];

/**
 * Normalises lifecycle tool arguments before validation: a legacy `handle` becomes `id`; keys that
 * settings own are dropped; a JSON array given as a string is parsed; integer strings for
 * `timeout` and `lines` become numbers.
 */
export function normaliseArguments(args: unknown): unknown {
	if (!args || typeof args !== "object" || Array.isArray(args)) return args;
	const input: Record<string, unknown> = { ...(args as Record<string, unknown>) };
	if ("handle" in input) {
		if (input.id === undefined) input.id = handleToId(input.handle);
		delete input.handle;
	}
	for (const key of DROPPED_KEYS) delete input[key];
	if (typeof input.id === "string" && input.id.trim().startsWith("[")) {
		try {
			const parsed = JSON.parse(input.id.trim());
			if (Array.isArray(parsed)) input.id = parsed;
		} catch {
			// not JSON: leave it
		}
	}
	for (const key of ["timeout", "lines"]) {
		const value = input[key];
		if (typeof value === "string" && /^[+-]?\d+$/.test(value.trim())) input[key] = Number(value.trim());
	}
	return input;
}

function handleToId(handle: unknown): unknown {
	if (typeof handle === "string") {
		try {
			return handleToId(JSON.parse(handle));
		} catch {
			return handle;
		}
	}
	if (Array.isArray(handle)) return handle.map((item) => (item && typeof item === "object" && "id" in item ? item.id : item));
	if (handle && typeof handle === "object" && "id" in handle) return (handle as { id: unknown }).id;
	return handle;
}
