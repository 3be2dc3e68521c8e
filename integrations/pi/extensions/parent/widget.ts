/**
 * The herd widget below pi's editor: one row per sheep that is working or holds an open task,
 * with the time since it was spawned, its state, and for a waiting task how long it has waited,
 * on whom, and whether the wait is stale. It is refreshed when the herd may have changed (a
 * push, a Shepherd tool call) and every second while a row is shown; with no row it is cleared
 * and the timer stops.
 */

import type { ParentState } from "./state.ts";

const WIDGET_KEY = "shepherd-herd";
const SPINNER = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
const OPEN_TASK = new Set(["created", "running", "waiting"]);

function clock(ms: number): string {
	const total = Math.max(0, Math.floor(ms / 1000));
	const m = Math.floor(total / 60);
	const s = total % 60;
	return `${String(m).padStart(2, "0")}:${String(s).padStart(2, "0")}`;
}

/** Whether a sheep belongs in the widget. */
export function isActive(sheep: any): boolean {
	return sheep.state === "working" || sheep.state === "starting" || OPEN_TASK.has(sheep.task?.state);
}

/** The widget's lines for `sheep` at `now` (empty: nothing to show). */
export function widgetLines(sheep: any[], now: number, tick: number, color?: (name: string, text: string) => string): string[] {
	const paint = color ?? ((_name: string, text: string) => text);
	const rows = sheep.filter(isActive);
	if (!rows.length) return [];
	const working = rows.filter((s) => s.state === "working").length;
	const waiting = rows.filter((s) => s.task?.state === "waiting").length;
	const info = [working ? `${working} working` : "", waiting ? `${waiting} waiting` : ""].filter(Boolean).join(" · ");
	const lines = [paint("accent", `─ shepherd ─ ${info || `${rows.length} active`}`)];
	for (const s of rows) {
		const isWaiting = s.task?.state === "waiting";
		const icon = isWaiting ? paint("warning", "…") : s.state === "working" ? paint("accent", SPINNER[tick % SPINNER.length]!) : "○";
		let detail = "";
		if (isWaiting) {
			const minutes = Math.floor((s.task.waitingMs ?? 0) / 60_000);
			detail = ` ⏳${minutes}m${s.task.waitingOn ? ` ←${s.task.waitingOn}` : ""}`;
		}
		const state = s.task && OPEN_TASK.has(s.task.state) ? (s.task.stale ? `${s.task.state} (stale)` : s.task.state) : s.state;
		lines.push(` ${icon} ${clock(now - s.createdAt)}  ${s.displayName}${detail}  ${paint(s.task?.stale ? "warning" : "dim", state)}`);
	}
	return lines;
}

export class HerdWidget {
	private timer?: ReturnType<typeof setInterval>;
	private shown = "";
	private tick = 0;
	private refreshing = false;
	private again = false;
	private disposed = false;

	constructor(private readonly state: ParentState) {}

	/** Fetches the herd and redraws; keeps the 1 s timer running only while rows are shown. */
	async refresh(): Promise<void> {
		if (this.disposed || !this.state.hasUI || !this.state.ui || !this.state.link) return;
		if (this.refreshing) {
			// A change during a refresh is drawn right after it, not lost until the next tick.
			this.again = true;
			return;
		}
		if (!this.state.link.connected) {
			// The broker was stopped on purpose: its herd is gone, and a refresh must not start
			// a new broker (the next request the model or you make does).
			this.show([]);
			this.stopTimer();
			return;
		}
		this.refreshing = true;
		this.again = false;
		try {
			const result = await this.state.call("herd");
			const sheep: any[] = result?.sheep ?? [];
			this.state.rememberHerd(sheep);
			const theme = this.state.ui.theme;
			const color = theme?.fg ? (name: string, text: string) => theme.fg(name, text) : undefined;
			const lines = widgetLines(sheep, Date.now(), this.tick++, color);
			if (this.disposed) return;
			this.show(lines);
			if (lines.length && !this.timer) {
				this.timer = setInterval(() => void this.refresh(), 1000);
				this.timer.unref?.();
			} else if (!lines.length) {
				this.stopTimer();
			}
		} catch {
			// the broker is away: keep what is shown, try again on the next change
		} finally {
			this.refreshing = false;
			if (this.again) void this.refresh();
		}
	}

	private show(lines: string[]): void {
		const key = lines.join("\n");
		if (key === this.shown) return;
		this.shown = key;
		try {
			this.state.ui.setWidget(WIDGET_KEY, lines.length ? lines : undefined, { placement: "belowEditor" });
		} catch {
			// a UI without widgets
		}
	}

	private stopTimer(): void {
		if (this.timer) clearInterval(this.timer);
		this.timer = undefined;
	}

	dispose(): void {
		this.disposed = true;
		this.stopTimer();
	}
}
