/**
 * The rows of the settings menu — one for every setting `shepherd settings` lists — how each
 * one's value reads, and saving a new one. Every change is saved by `shepherd settings set` (the
 * CLI owns the files, their lock and their validation) into the layer that is active, except the
 * user-only rows, which always go to the user file. Shared by the inline list (settings-list.ts)
 * and the select-dialog menu (settings-menu.ts).
 */

import { relative } from "node:path";

import { runShepherd, type SettingsDoc } from "./cli.ts";

export interface Choice {
	label: string;
	value: string;
}

export interface Row {
	key: string;
	label: string;
	/** Absent: a yes/no setting, flipped when picked. */
	choices?: Choice[];
	userOnly?: boolean;
	/** Shown after a save, when it helps to know when the change applies. */
	note?: (value: unknown) => string | undefined;
}

const minutes = (values: number[]): Choice[] => values.map((n) => ({ label: `${n} min`, value: String(n) }));
const counts = (values: number[]): Choice[] => values.map((n) => ({ label: String(n), value: String(n) }));
const seconds = (values: number[]): Choice[] => values.map((n) => ({ label: `${n} s`, value: String(n) }));

/** The rows in menu order: the original's eleven, then Shepherd's own; one for every setting
 * `shepherd settings` lists (the hosts of remote sheep, a map, are edited in the file). */
export const ROWS: Row[] = [
	{ key: "projectScope", label: "Settings scope", choices: [{ label: "user", value: "user" }, { label: "project", value: "project" }] },
	{
		key: "agentScope",
		label: "Agent scope",
		choices: ["user", "project", "both"].map((value) => ({ label: value, value })),
		note: (value) => (value !== "user" ? "project agents are repository-controlled" : undefined),
	},
	{ key: "includeBundledAgents", label: "Include bundled agents" },
	{ key: "confirmProjectAgents", label: "Confirm project agents", userOnly: true },
	{ key: "subagentCompatibility", label: "Legacy subagent compatibility", userOnly: true, note: () => "restart pi to apply" },
	{ key: "keepOpen", label: "Keep tab open after done" },
	{ key: "stayOpen", label: "Keep agent alive after done" },
	{ key: "fieldnotes", label: "Enable fieldnotes" },
	{ key: "emojiSheep", label: "Use sheep emoji" },
	{ key: "timeout", label: "Default run timeout", choices: minutes([1, 2, 5, 10, 20, 30, 60]) },
	{ key: "staleWaitThreshold", label: "Stale wait reminder", choices: [{ label: "off", value: "off" }, ...minutes([1, 2, 5, 10, 15, 30])] },
	{ key: "backend", label: "Where sheep run", choices: ["auto", "herdr", "tmux", "headless"].map((value) => ({ label: value, value })) },
	{ key: "doneNudges", label: "Forgotten-done reminders", choices: counts([0, 1, 2, 3]) },
	{ key: "maxParallelTasks", label: "Most tasks in one subagent call", choices: counts([1, 2, 4, 8, 16]) },
	{ key: "maxConcurrency", label: "Most subagent tasks at once", choices: counts([1, 2, 4, 8]) },
	{ key: "maxDepth", label: "Deepest nested herd", choices: counts([0, 1, 2, 3]), userOnly: true },
	{ key: "brokerIdleMinutes", label: "Idle broker exits after", choices: minutes([1, 5, 10, 30, 60]) },
	{ key: "maxSheep", label: "Most sheep at once", choices: [{ label: "no limit", value: "0" }, ...counts([1, 2, 4, 8, 16])] },
	{ key: "stallWatchdog", label: "Stall watchdog", choices: [{ label: "off", value: "off" }, ...minutes([5, 10, 15, 30, 60])] },
	{ key: "remoteLinkTimeoutMinutes", label: "Remote host unreachable for", choices: minutes([1, 5, 10, 30, 60]) },
	{
		key: "maxConcurrentTurns",
		label: "Most model turns at once per account",
		choices: [{ label: "no limit", value: "0" }, ...counts([1, 2, 4, 8])],
	},
	{ key: "rateLimitWaitSeconds", label: "Wait on a limit without a reset", choices: seconds([10, 30, 60, 120, 300]) },
	{ key: "holdProviderKeys", label: "Hold a limited account's sheep" },
	{ key: "fallbackAfterMinutes", label: "Fall back after a limit of", choices: minutes([5, 15, 30, 60]) },
	{
		key: "mergeStrategy",
		label: "How a merge lands each branch",
		choices: ["merge", "squash", "rebase", "ff-only"].map((value) => ({ label: value, value })),
	},
	{ key: "mergeCheckTimeout", label: "A merge's check may run for", choices: minutes([5, 10, 30, 60]) },
	{ key: "notifyDesktop", label: "Desktop notification when the herd needs you", userOnly: true },
	{
		key: "notifyWebhook",
		label: "Webhook when the herd needs you",
		// An address is typed with `shepherd settings set notifyWebhook <url>`; here it is only cleared.
		choices: [{ label: "none", value: "off" }],
		userOnly: true,
		note: () => "set an address with: shepherd settings set notifyWebhook <url>",
	},
	{
		key: "notifyWebhookFormat",
		label: "Webhook body",
		choices: ["auto", "json", "slack", "discord", "ntfy"].map((value) => ({ label: value, value })),
		userOnly: true,
	},
	{ key: "notifyWords", label: "Webhook carries the sheep's words", userOnly: true },
	{
		key: "sandbox",
		label: "Confine sheep (sandbox)",
		choices: ["off", "workspace", "strict"].map((value) => ({ label: value, value })),
		userOnly: true,
		note: (value) => (value !== "off" ? "applies to sheep spawned from now on; needs bubblewrap" : undefined),
	},
];


/** How a row's current value reads in the menu. */
export function valueText(row: Row, doc: SettingsDoc): string {
	if (row.key === "projectScope") {
		if (doc.activeLayer === "project") return "project";
		return doc.projectFileState === "absent" ? "user" : `user (project file ${doc.projectFileState})`;
	}
	const value = doc.settings[row.key];
	if (!row.choices) return value === true ? "on" : "off";
	if (row.key === "staleWaitThreshold" && typeof value === "number" && value < 1) return "off";
	if (row.key === "stallWatchdog" && value === 0) return "off";
	// A webhook's address may hold its secret: the menu names only its host.
	if (row.key === "notifyWebhook") return typeof value === "string" && value !== "" ? (value.split("/")[2] ?? "set") : "none";
	const choice = row.choices.find((c) => c.value === String(value));
	if (choice) return choice.label;
	const unit = [" min", " s"].find((suffix) => row.choices!.some((c) => c.label.endsWith(suffix)));
	return `${value}${unit ?? ""}`;
}

/** One menu line per row, e.g. `Default run timeout: 20 min`; user-only rows say so while the project layer is active. */
export function menuLines(doc: SettingsDoc): string[] {
	return ROWS.map((row) => {
		const scope = row.userOnly && doc.activeLayer === "project" ? " (user file)" : "";
		return `${row.label}: ${valueText(row, doc)}${scope}`;
	});
}

/** The settings of the project at `cwd`, as `shepherd settings` reads them. */
export function loadSettings(cwd: string): Promise<SettingsDoc> {
	return runShepherd<SettingsDoc>(["settings", "--project", cwd], { cwd });
}

/** The menu's title: where a change is saved. */
export function menuTitle(doc: SettingsDoc, cwd: string): string {
	const where = doc.activeLayer === "project" ? `project file ${relative(cwd, doc.projectFile)}` : "user file";
	return `Shepherd settings (saving to the ${where})`;
}

/** Saves `value` (a choice's value, or `true`/`false`) for `row`; returns what to tell the person. */
export async function saveRow(row: Row, value: string, doc: SettingsDoc, cwd: string): Promise<string> {
	if (row.key === "projectScope") return switchScope(value === "project", doc, cwd);

	const project = doc.activeLayer === "project" && !row.userOnly;
	await runShepherd(["settings", "set", row.key, value, ...(project ? ["--project", cwd] : [])], { cwd });
	const shown = row.choices ? row.choices.find((c) => c.value === value)!.label : value === "true" ? "on" : "off";
	const note = row.note?.(value);
	return `Saved ${row.label}: ${shown} (${project ? "project file" : "user file"})${note ? ` (${note})` : ""}.`;
}

async function switchScope(toProject: boolean, doc: SettingsDoc, cwd: string): Promise<string> {
	if (toProject) {
		if (doc.activeLayer === "project") return "Project settings are already active.";
		await runShepherd(["settings", "set", "projectScope", "true", "--project", cwd], { cwd });
		return doc.projectFileState === "absent"
			? `Config created at ${relative(cwd, doc.projectFile)}; project settings are active for this workspace.`
			: "Project settings activated for this workspace.";
	}
	if (doc.activeLayer !== "project") return "Project settings are already inactive.";
	await runShepherd(["settings", "set", "projectScope", "false", "--project", cwd], { cwd });
	return "Project settings deactivated; user settings are active.";
}
