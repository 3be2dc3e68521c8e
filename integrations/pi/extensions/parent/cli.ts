/**
 * Running the `shepherd` program from pi.
 *
 * The parent extension owns no herd state: a few requests (agent discovery, approvals, settings,
 * starting the broker, one-call runs) are CLI commands rather than broker methods, so this file
 * finds the binary (`SHEPHERD_BIN`, else `shepherd` on PATH), runs it with `--json` and turns its
 * one JSON document, or its `{error: {code, message}}`, into a value or a `ShepherdError`. A
 * missing binary becomes one clear error that says how to install it.
 */

import { spawn } from "node:child_process";

/** A failure with Shepherd's stable machine code (`approval_required`, `invalid_label`, …). */
export class ShepherdError extends Error {
	readonly code: string;
	readonly returnCode: number;
	constructor(code: string, message: string, returnCode = 1) {
		super(message);
		this.code = code;
		this.returnCode = returnCode;
	}
}

/** The program to run: `$SHEPHERD_BIN`, else `shepherd` from PATH. */
export function shepherdBinary(): string {
	const configured = process.env.SHEPHERD_BIN?.trim();
	return configured ? configured : "shepherd";
}

export function missingBinaryError(binary: string): ShepherdError {
	return new ShepherdError(
		"shepherd_missing",
		`The Shepherd program \`${binary}\` was not found. Install it from the Shepherd repository with ` +
			"`cargo install --locked --path crates/shepherd` (or put a built `shepherd` on PATH), or set SHEPHERD_BIN " +
			"to its full path, then restart pi.",
	);
}

export interface RunOptions {
	cwd: string;
	/** Written to the program's stdin (then closed). */
	input?: string;
	/** Aborting sends SIGINT (the CLI's cancellation). */
	signal?: AbortSignal;
	/** Extra environment. */
	env?: Record<string, string>;
	/** How long the command may take before it is ended (ms; default 60 s). */
	timeoutMs?: number;
}

/** The default deadline of a `shepherd` command run from pi: every command it runs answers in
 * well under this (each waits for its broker at most `SHEPHERD_BROKER_TIMEOUT`, 15 s). */
const DEFAULT_TIMEOUT_MS = 60_000;

/** `shepherd settings --json` for one project. */
export interface SettingsDoc {
	settings: Record<string, unknown>;
	sources?: Record<string, string>;
	activeLayer: "user" | "project";
	userFile?: string;
	projectFile: string;
	projectFileState: "absent" | "dormant" | "active" | string;
}

/** One definition in `shepherd agents --json`. */
export interface AgentListed {
	name: string;
	source: string;
	description: string;
	model?: string;
	thinking?: string;
	tools?: string[];
	filePath?: string;
}

/** `shepherd agents --json`. */
export interface AgentListing {
	scope?: string;
	agents?: AgentListed[];
}

/** `shepherd agents show --json` (the fields read here). */
export interface AgentShown {
	filePath?: string;
	contentHash?: string;
	/** What the definition asks for (absent: the sandbox setting). */
	sandbox?: string;
	/** What it may reach when confined (absent: all). */
	network?: string;
	/** The sandbox a spawn of it runs in, the user's setting being its floor. */
	runsIn?: string;
}

/**
 * Runs `shepherd <args> --json` and returns its JSON document; throws a `ShepherdError`. `T` is
 * the document the command prints (the CLI's `--json` output, not a broker message).
 */
export function runShepherd<T = unknown>(args: string[], options: RunOptions): Promise<T> {
	const binary = shepherdBinary();
	return new Promise<T>((resolve, reject) => {
		let child;
		try {
			child = spawn(binary, [...args, "--json"], {
				cwd: options.cwd,
				env: { ...process.env, ...options.env },
				stdio: ["pipe", "pipe", "pipe"],
			});
		} catch (error) {
			reject(spawnFailure(binary, error as NodeJS.ErrnoException));
			return;
		}
		let stdout = "";
		let stderr = "";
		child.stdout.setEncoding("utf8");
		child.stderr.setEncoding("utf8");
		child.stdout.on("data", (chunk: string) => (stdout += chunk));
		child.stderr.on("data", (chunk: string) => (stderr += chunk));
		child.stdin.on("error", () => {});
		child.stdin.end(options.input ?? "");
		const onAbort = () => child.kill("SIGINT");
		options.signal?.addEventListener("abort", onAbort, { once: true });
		// Every wait has a deadline: a command that does not end in time is ended (SIGTERM,
		// then SIGKILL), and the call fails saying so.
		let timedOut = false;
		const limit = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
		const timer = setTimeout(() => {
			timedOut = true;
			child.kill("SIGTERM");
			setTimeout(() => child.kill("SIGKILL"), 2_000).unref();
		}, limit);
		timer.unref();
		child.on("error", (error: NodeJS.ErrnoException) => {
			options.signal?.removeEventListener("abort", onAbort);
			clearTimeout(timer);
			reject(spawnFailure(binary, error));
		});
		child.on("close", (code: number | null, signal: string | null) => {
			options.signal?.removeEventListener("abort", onAbort);
			clearTimeout(timer);
			if (timedOut) {
				reject(
					new ShepherdError(
						"shepherd_timeout",
						`\`shepherd ${args.join(" ")}\` did not finish within ${Math.round(limit / 1000)} s and was ended`,
					),
				);
				return;
			}
			const doc = lastJson(stdout);
			// A document without `error` is the answer, whatever the exit status (`shepherd run`
			// exits with the first failed task's return code and still reports every task).
			if (doc !== undefined && !(doc && typeof doc === "object" && "error" in doc)) {
				resolve(doc as T);
				return;
			}
			const failed = (doc as { error?: { code?: string; message?: unknown } } | undefined)?.error;
			if (failed && typeof failed.message === "string") {
				reject(new ShepherdError(failed.code ?? "shepherd_error", failed.message, code ?? 1));
				return;
			}
			const why = stderr.trim() || stdout.trim() || (signal ? `killed by ${signal}` : `exit status ${code}`);
			reject(new ShepherdError("shepherd_error", `\`shepherd ${args.join(" ")}\` failed: ${why}`, code ?? 1));
		});
	});
}

function spawnFailure(binary: string, error: NodeJS.ErrnoException): ShepherdError {
	if (error.code === "ENOENT" || error.code === "EACCES") return missingBinaryError(binary);
	return new ShepherdError("shepherd_error", `could not run \`${binary}\`: ${error.message}`);
}

/** The last line of `text` that parses as JSON (the CLI prints exactly one). */
function lastJson(text: string): unknown {
	const lines = text.split("\n").filter((line) => line.trim());
	for (let i = lines.length - 1; i >= 0; i--) {
		try {
			return JSON.parse(lines[i]!);
		} catch {
			// not JSON: keep looking
		}
	}
	return undefined;
}
