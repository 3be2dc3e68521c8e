/**
 * Shepherd for pi: turns a pi session into a shepherd that spawns, tasks, messages, watches and
 * closes child agents (sheep) through its herd's broker.
 *
 * This is the entry point pi loads (`pi install <this package>` or `pi -e …/shepherd.ts`). It
 * wires the pieces in `parent/`: the broker link (identity = pi's session id, project = the
 * session's cwd), the model-facing tools, the `/shepherd` command, pushed notifications, the herd
 * widget and the opt-in `subagent` tool. Every decision about the herd is the broker's; this
 * extension only translates. Loaded inside a sheep (SHEPHERD_AGENT_ID is set, or, should a
 * wrapper have stripped the environment, pi's command line loads the sheep extension), it does
 * nothing: sheep get their own tools from the sheep extension.
 */

import type { ExtensionAPI } from "@mariozechner/pi-coding-agent";
import { startedAsSheep } from "./lib/sheep-launch.ts";
import { runShepherd, type SettingsDoc } from "./parent/cli.ts";
import { registerCommand } from "./parent/command.ts";
import { ParentLink } from "./parent/link.ts";
import { createInboxHandler } from "./parent/notifications.ts";
import { registerMessageRenderers } from "./parent/render.ts";
import { ParentState } from "./parent/state.ts";
import { registerMerge } from "./parent/merge.ts";
import { registerSubagent } from "./parent/subagent.ts";
import { registerTools } from "./parent/tools.ts";
import { HerdWidget } from "./parent/widget.ts";

export default async function shepherd(pi: ExtensionAPI) {
	if (startedAsSheep()) return;

	const state = new ParentState();
	const widget = new HerdWidget(state);
	state.onHerdChange = () => void widget.refresh();
	const onInbox = createInboxHandler(pi, state);

	registerTools(pi, state);
	registerMerge(pi, state);
	registerCommand(pi, state);
	registerMessageRenderers(pi);

	// User-only settings, read once at load: changing them needs a pi restart.
	const settings = await readSettings(process.cwd());
	widget.emojiSheep = settings?.emojiSheep !== false;
	state.onSettingsChange = async () => {
		const now = await readSettings(state.cwd);
		widget.emojiSheep = now?.emojiSheep !== false;
	};
	if (settings?.subagentCompatibility === true) {
		registerSubagent(pi, state, {
			agentScope: settings.agentScope,
			confirmProjectAgents: settings.confirmProjectAgents,
		});
	}

	pi.on("session_start", async (_event, ctx) => {
		state.cwd = ctx.cwd ?? process.cwd();
		if (ctx.hasUI) {
			state.ui = ctx.ui;
			state.hasUI = true;
		}
		const identity = ctx.sessionManager?.getSessionId?.();
		if (!identity) return;
		state.link?.close();
		// pi's session file (none for an in-memory session) is recorded in the herd's fieldnotes
		// session as diagnostic metadata; the identity alone binds the herd.
		const sessionFile = ctx.sessionManager?.getSessionFile?.() || undefined;
		state.link = new ParentLink(
			identity,
			state.cwd,
			onInbox,
			(sheep) => widget.update(sheep),
			typeof sessionFile === "string" ? sessionFile : undefined,
		);
		// Start the broker and subscribe in the background: a resumed session gets its herd's
		// pending completions as soon as the connection is up; a tool call waits for it.
		state.link.start().then(
			() => void widget.refresh(),
			() => {
				// reported by the first tool call or command that needs the broker
			},
		);
	});

	pi.on("session_shutdown", async () => {
		widget.dispose();
		state.link?.close();
		state.link = undefined;
	});
}

/** The user settings this file reads. */
interface LoadSettings {
	emojiSheep?: boolean;
	subagentCompatibility?: boolean;
	agentScope?: string;
	confirmProjectAgents?: boolean;
}

async function readSettings(cwd: string): Promise<LoadSettings | undefined> {
	try {
		const doc = await runShepherd<SettingsDoc>(["settings", "--project", cwd], { cwd });
		return doc?.settings as LoadSettings | undefined;
	} catch {
		return undefined;
	}
}
