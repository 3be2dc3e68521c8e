/**
 * How a pi process knows it was started as a sheep, even when a wrapper between Shepherd and pi
 * (a sandbox, a launcher that starts pi with a clean environment) dropped the variables
 * Shepherd started it with.
 *
 * Shepherd starts every pi sheep with two marks on its command line: its sheep extension
 * (`-e …/shepherd-sheep.ts`) and its own session file (`--session …/<agent id>.jsonl`), and,
 * on this machine, writes the sheep's Shepherd variables (its capability among them) beside that
 * session file, in `<agent id>.env.json`, readable by its user alone. The parent extension
 * stays silent when it sees the first mark; the sheep extension puts back the variables the
 * file holds when its environment lacks them, so the sheep's tools and the commands it runs
 * reach the broker as they would have.
 */

import * as fs from "node:fs";
import * as path from "node:path";

/** The file name of the sheep extension, as Shepherd ships it to every pi sheep. */
const SHEEP_EXTENSION = "shepherd-sheep.ts";

/** The variables without which a sheep cannot reach its broker. */
const CAPABILITY = ["SHEPHERD_SOCKET", "SHEPHERD_AGENT_ID", "SHEPHERD_TOKEN"];

/** Every value given to one of `flags` (`--flag value` or `--flag=value`). */
function flagValues(argv: readonly string[], flags: readonly string[]): string[] {
	const found: string[] = [];
	for (let i = 0; i < argv.length; i++) {
		const word = argv[i];
		const joined = flags.find((flag) => word.startsWith(`${flag}=`));
		if (joined) found.push(word.slice(joined.length + 1));
		else if (flags.includes(word) && i + 1 < argv.length) found.push(argv[++i]);
	}
	return found;
}

/** Whether this pi runs as a sheep: its environment says so, or its command line loads the
 * sheep extension. */
export function startedAsSheep(argv: readonly string[] = process.argv, env: NodeJS.ProcessEnv = process.env): boolean {
	if (env.SHEPHERD_AGENT_ID) return true;
	return flagValues(argv, ["-e", "--extension"]).some((file) => path.basename(file) === SHEEP_EXTENSION);
}

/** The file beside a sheep's session holding the variables Shepherd started it with. */
export function launchEnvFile(argv: readonly string[] = process.argv): string | undefined {
	const session = flagValues(argv, ["--session"]).find((file) => file.endsWith(".jsonl"));
	return session ? `${session.slice(0, -".jsonl".length)}.env.json` : undefined;
}

/**
 * Puts back the Shepherd variables of a sheep whose environment lacks its capability, from the
 * file its launch names; nothing changes outside a sheep, or when the environment is whole.
 * Returns whether anything was put back.
 */
export function restoreSheepEnvironment(argv: readonly string[] = process.argv, env: NodeJS.ProcessEnv = process.env): boolean {
	if (CAPABILITY.every((name) => env[name])) return false;
	if (!startedAsSheep(argv, env)) return false;
	const file = launchEnvFile(argv);
	if (!file) return false;
	let saved: unknown;
	try {
		saved = JSON.parse(fs.readFileSync(file, "utf8"));
	} catch {
		return false;
	}
	if (!saved || typeof saved !== "object") return false;
	let restored = false;
	for (const [name, value] of Object.entries(saved)) {
		if (name.startsWith("SHEPHERD_") && typeof value === "string" && !env[name]) {
			env[name] = value;
			restored = true;
		}
	}
	return restored;
}
