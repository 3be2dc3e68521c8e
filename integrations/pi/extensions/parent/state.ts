/**
 * What one pi session's Shepherd extension holds: its link to the broker, the latest UI handle,
 * and a cache of display names (`agent: label`) so notifications and rows can name sheep without
 * asking the broker each time. None of it is herd state: the broker owns that, and everything
 * here can be rebuilt from a `herd` request.
 */

import type { ExtensionUIContext } from "@mariozechner/pi-coding-agent";
import type { CallerContext, Method, ParamsArg, Result, SheepStatus } from "../lib/broker.ts";
import { ShepherdError } from "./cli.ts";
import type { ParentLink } from "./link.ts";

export class ParentState {
	link?: ParentLink;
	cwd = process.cwd();
	/** The latest context with a UI, for dialogs, notifications and the widget. */
	ui?: ExtensionUIContext;
	hasUI = false;
	/** agent id → display name. */
	readonly names = new Map<string, string>();
	/** Called whenever the herd may have changed. */
	onHerdChange: () => void = () => {};
	/** Called after the settings were changed from this session (the widget reads `emojiSheep`). */
	onSettingsChange: () => Promise<void> = async () => {};

	/** The broker link; throws when the session has not started (or has ended). */
	requireLink(): ParentLink {
		if (!this.link) {
			throw new ShepherdError("broker_unavailable", "Shepherd is not connected: this pi session has not started yet.");
		}
		return this.link;
	}

	call<M extends Method>(method: M, ...params: ParamsArg<M>): Promise<Result<M>> {
		return this.requireLink().call(method, ...params);
	}

	remember(agentId: string | undefined, displayName: string | undefined): void {
		if (agentId && displayName) this.names.set(agentId, displayName);
	}

	/** A sheep's display name, asking the broker for ids not seen yet. */
	async nameOf(agentId: string): Promise<string> {
		if (agentId === "shepherd" || agentId === "parent") return "Shepherd";
		const known = this.names.get(agentId);
		if (known) return known;
		try {
			const status = await this.call("status", { id: agentId });
			if ("agentId" in status) this.remember(status.agentId, status.displayName);
		} catch {
			// unknown to the broker: show the id
		}
		return this.names.get(agentId) ?? agentId;
	}

	rememberHerd(sheep: SheepStatus[]): void {
		for (const s of sheep ?? []) this.remember(s?.agentId, s?.displayName);
	}
}

/** The caller context the broker uses to pick a terminal and find the caller's pane. */
export function callerContext(): CallerContext {
	const env = (name: string) => {
		const value = process.env[name];
		return value ? value : undefined;
	};
	return {
		inHerdr: env("HERDR_ENV") === "1" ? true : undefined,
		herdrPane: env("HERDR_PANE_ID"),
		herdrWorkspace: env("HERDR_WORKSPACE_ID"),
		herdrSocket: env("HERDR_SOCKET_PATH"),
		tmux: env("TMUX"),
		tmuxPane: env("TMUX_PANE"),
		pid: process.pid,
	};
}

/** The pi this session runs (`node …/cli.js`), so its sheep run the same pi — a user of npx or
 * of a second install gets the same version for the sheep (`SHEPHERD_PI`, when set, wins). */
export function piCommand(): string[] | undefined {
	const entry = process.argv[1];
	return entry ? [process.execPath, entry] : undefined;
}
