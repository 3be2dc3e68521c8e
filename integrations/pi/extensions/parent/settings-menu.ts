/**
 * The settings menu behind `/shepherd` and `/shepherd settings`. In pi's terminal it is one
 * inline, searchable list of every setting (settings-list.ts). Where pi has no terminal to draw
 * in (RPC mode) it is built on pi's own `select` dialog, here: picking a yes/no row flips it,
 * picking any other row offers its choices, and the menu reopens with the new values until it
 * is dismissed. Both save through settings-rows.ts.
 */

import type { ExtensionUIContext } from "@mariozechner/pi-coding-agent";
import type { SettingsDoc } from "./cli.ts";
import { openSettingsList } from "./settings-list.ts";
import { loadSettings, menuLines, menuTitle, ROWS, type Row, saveRow, valueText } from "./settings-rows.ts";

/** Opens the menu on `ui` for the project at `cwd`; returns when it is dismissed. */
export async function openSettingsMenu(ui: ExtensionUIContext, cwd: string): Promise<void> {
	if (await openSettingsList(ui, cwd)) return;
	const load = () => loadSettings(cwd);
	let doc = await load();
	for (;;) {
		const lines = menuLines(doc);
		const picked = await ui.select(menuTitle(doc, cwd), lines);
		const row = picked === undefined ? undefined : ROWS[lines.indexOf(picked)];
		if (!row) return;
		try {
			const message = await change(ui, row, doc, cwd);
			if (message) ui.notify(message, "info");
		} catch (error) {
			ui.notify(`shepherd: could not save ${row.key}: ${(error as Error).message}`, "error");
		}
		doc = await load();
	}
}

/** Asks for (or flips to) the row's new value and saves it; returns what to tell the person, if anything changed. */
async function change(ui: ExtensionUIContext, row: Row, doc: SettingsDoc, cwd: string): Promise<string | undefined> {
	const current = valueText(row, doc);
	let value: string;
	if (row.choices) {
		const labels = row.choices.map((c) => c.label);
		const picked = await ui.select(`${row.label} (now ${current})`, labels);
		const choice = row.choices.find((c) => c.label === picked);
		if (!choice) return undefined;
		value = choice.value;
	} else {
		value = doc.settings[row.key] === true ? "false" : "true";
	}
	return saveRow(row, value, doc, cwd);
}
