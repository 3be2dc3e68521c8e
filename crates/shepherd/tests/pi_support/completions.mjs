// Drives the `/shepherd` command's argument completion outside pi, loading the extension's
// TypeScript the way pi does (jiti, from the pi install given), against a real broker reached
// with the `shepherd` binary in SHEPHERD_BIN. Usage:
//   node completions.mjs <pi install dir> <extension dir> <project dir> <prefix>...
// First spawns a sheep through the command itself (`spawn worker --label alpha`), then prints
// one JSON object: each prefix → the completion values offered (or null).
import { createRequire } from "node:module";
import { join } from "node:path";

const [piDir, extensionDir, project, ...prefixes] = process.argv.slice(2);
const { createJiti } = createRequire(join(piDir, "package.json"))("jiti");
const jiti = createJiti(import.meta.url);
const load = (file) => jiti.import(join(extensionDir, "parent", file));
const { ParentState } = await load("state.ts");
const { ParentLink } = await load("link.ts");
const { registerCommand } = await load("command.ts");

const state = new ParentState();
state.cwd = project;
state.link = new ParentLink("completion-test", project, async () => {});
let command;
registerCommand({ registerCommand: (_name, spec) => (command = spec) }, state);
const said = [];
const ctx = { hasUI: false, ui: { notify: (text) => said.push(text), setStatus: () => {} } };
await command.handler("spawn worker --label alpha", ctx);
if (!said[0]?.startsWith("Spawned")) throw new Error(`spawn failed: ${said.join(" | ")}`);

const offered = {};
for (const prefix of prefixes) {
	const items = await command.getArgumentCompletions(prefix);
	offered[prefix] = items === null ? null : items.map((item) => ({ value: item.value, description: item.description }));
}
state.link.close();
console.log(JSON.stringify(offered));
