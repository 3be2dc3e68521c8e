/**
 * The settings menu in pi's terminal: one inline list of every setting under the editor (pi's
 * own `SettingsList`, as the original's menu was), twelve rows at a time. Typing searches the
 * rows' names; Enter (or Space) moves the selected row to its next value and saves it at once;
 * Esc closes the list. The row's setting key, and whether it is saved to the user file whatever
 * the scope, show under the list when it is selected; what was saved shows under that.
 *
 * pi in RPC mode has no terminal to draw in: there `ui.custom` draws nothing, and the caller
 * falls back to the select-dialog menu.
 */

import { type ExtensionUIContext, getSettingsListTheme } from "@mariozechner/pi-coding-agent";
import { type SettingItem, SettingsList } from "@mariozechner/pi-tui";
import type { SettingsDoc } from "./cli.ts";
import { loadSettings, menuTitle, ROWS, type Row, saveRow, valueText } from "./settings-rows.ts";

/** Rows shown at once; the rest scroll, or are found by searching. */
const VISIBLE_ROWS = 12;

/** The values Enter cycles a row through, as the list shows them. */
function values(row: Row): string[] {
	return row.choices ? row.choices.map((choice) => choice.label) : ["on", "off"];
}

/** What `shepherd settings set` takes for the value the list shows as `shown`. */
function valueOf(row: Row, shown: string): string | undefined {
	if (!row.choices) return shown === "on" ? "true" : shown === "off" ? "false" : undefined;
	return row.choices.find((choice) => choice.label === shown)?.value;
}

function item(row: Row, doc: SettingsDoc): SettingItem {
	return {
		id: row.key,
		label: row.label,
		description: row.userOnly ? `${row.key} · saved to the user file whatever the scope` : row.key,
		currentValue: valueText(row, doc),
		values: values(row),
	};
}

/**
 * Shows the list for the project at `cwd` until it is closed. Returns false, having shown
 * nothing, where pi cannot draw one (RPC mode).
 */
export async function openSettingsList(ui: ExtensionUIContext, cwd: string): Promise<boolean> {
	let doc = await loadSettings(cwd);
	let shown = false;
	await ui.custom<void>((tui, theme, _keybindings, done) => {
		shown = true;
		let said = "";
		const list = new SettingsList(
			ROWS.map((row) => item(row, doc)),
			VISIBLE_ROWS,
			getSettingsListTheme(),
			(id, shownValue) => void save(id, shownValue),
			() => done(undefined),
			{ enableSearch: true },
		);
		const save = async (id: string, shownValue: string) => {
			const row = ROWS.find((candidate) => candidate.key === id);
			const value = row && valueOf(row, shownValue);
			if (!row || value === undefined) return;
			try {
				said = await saveRow(row, value, doc, cwd);
			} catch (error) {
				said = `shepherd: could not save ${row.key}: ${(error as Error).message}`;
			}
			// What the files say now, for every row: a change of scope changes them all.
			doc = await loadSettings(cwd).catch(() => doc);
			for (const each of ROWS) list.updateValue(each.key, valueText(each, doc));
			tui.requestRender();
		};
		return {
			render: (width: number) => [
				theme.fg("accent", theme.bold(menuTitle(doc, cwd))),
				...list.render(width),
				...(said ? ["", theme.fg("muted", said)] : []),
			],
			handleInput: (data: string) => {
				list.handleInput(data);
				tui.requestRender();
			},
			invalidate: () => list.invalidate(),
		};
	});
	return shown;
}
