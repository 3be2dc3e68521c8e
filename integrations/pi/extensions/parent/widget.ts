/**
 * The herd widget below pi's editor: one row per sheep that is working or holds an open task,
 * with the time since it was spawned, its state, and for a waiting task how long it has waited,
 * on whom, and whether the wait is stale; a task waiting out a provider limit says until when
 * and which provider (`rate-limited until 14:05:09 (anthropic)`); a working sheep walks (🐑, or `o` with the `emojiSheep`
 * setting off) right to left across a short lane beside its name. The broker pushes the herd each time it changes; a
 * timer only redraws the clocks once a second while a row is shown, asking nothing; with no
 * row the widget is cleared and the timer stops.
 */

import type { ThemeColor } from "@mariozechner/pi-coding-agent";
import type { SheepStatus } from "../lib/broker.ts";
import type { LimitView } from "../lib/protocol-types.ts";
import type { ParentState } from "./state.ts";

const WIDGET_KEY = "shepherd-herd";
const SPINNER = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
const OPEN_TASK = new Set(["created", "running", "waiting"]);
/** Cells the walking sheep crosses before it wraps to the right again. */
const LANE = 8;

/** The lane of a working row at animation step `step`: the sheep one cell further left each step. */
export function walkingSheep(step: number, emoji: boolean): string {
	const at = LANE - 1 - (step % LANE);
	return `${" ".repeat(at)}${emoji ? "🐑" : "o"}${" ".repeat(LANE - 1 - at)}`;
}

function clock(ms: number): string {
	const total = Math.max(0, Math.floor(ms / 1000));
	const m = Math.floor(total / 60);
	const s = total % 60;
	return `${String(m).padStart(2, "0")}:${String(s).padStart(2, "0")}`;
}

/** `HH:MM:SS` of `ms` in local time. */
function localClock(ms: number): string {
	const at = new Date(ms);
	return [at.getHours(), at.getMinutes(), at.getSeconds()].map((n) => String(n).padStart(2, "0")).join(":");
}

/** A provider limit as every front end says it (the CLI's `LimitView::describe`). */
export function limitText(limit: LimitView): string {
	if (limit.class === "transient" || limit.class === "fatal") {
		return `server error, retrying at ${localClock(limit.until)} (${limit.provider})`;
	}
	if (limit.queued) return `rate-limited, resuming in turn (${limit.provider})`;
	return `rate-limited until ${localClock(limit.until)} (${limit.provider})`;
}

/** Whether a sheep belongs in the widget. */
export function isActive(sheep: SheepStatus): boolean {
	return sheep.state === "working" || sheep.state === "starting" || OPEN_TASK.has(sheep.task?.state ?? "");
}

/** The widget's lines for `sheep` at `now` (empty: nothing to show). */
export function widgetLines(
	sheep: SheepStatus[],
	now: number,
	tick: number,
	color?: (name: ThemeColor, text: string) => string,
	emoji = true,
): string[] {
	const paint = color ?? ((_name: ThemeColor, text: string) => text);
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
			const minutes = Math.floor((s.task?.waitingMs ?? 0) / 60_000);
			detail = ` ⏳${minutes}m${s.task?.waitingOn ? ` ←${s.task.waitingOn}` : ""}`;
		}
		const limit = s.task?.rateLimit;
		if (limit && !isWaiting) detail = ` ⏸ ${limitText(limit)}`;
		const state = s.task && OPEN_TASK.has(s.task.state) ? (s.task.stale ? `${s.task.state} (stale)` : s.task.state) : s.state;
		const walk = s.state === "working" && !isWaiting && !limit ? ` ${walkingSheep(tick, emoji)}` : "";
		lines.push(` ${icon} ${clock(now - s.createdAt)}  ${s.displayName}${detail}${walk}  ${paint(s.task?.stale ? "warning" : "dim", state)}`);
	}
	return lines;
}

export class HerdWidget {
	private timer?: ReturnType<typeof setInterval>;
	private shown = "";
	private tick = 0;
	private sheep: SheepStatus[] = [];
	/** When `sheep` arrived: waiting times grow from there between pushes. */
	private receivedAt = 0;
	private fetching = false;
	private again = false;
	private disposed = false;
	/** The `emojiSheep` setting: 🐑 or `o` for a working sheep. */
	emojiSheep = true;

	constructor(private readonly state: ParentState) {}

	/** The herd as the broker pushed it (`undefined`: the broker was stopped, the herd is gone). */
	update(sheep: SheepStatus[] | undefined): void {
		if (this.disposed) return;
		this.sheep = sheep ?? [];
		this.receivedAt = Date.now();
		this.state.rememberHerd(this.sheep);
		this.draw();
	}

	/**
	 * Called when the herd may have changed because of something this session did. With the
	 * broker's herd feed the push brings the change; without it (a broker from an older build)
	 * the herd is fetched once here.
	 */
	async refresh(): Promise<void> {
		const link = this.state.link;
		if (this.disposed || !this.state.hasUI || !link || !link.connected || link.herdFeed) return;
		if (this.fetching) {
			this.again = true;
			return;
		}
		this.fetching = true;
		this.again = false;
		try {
			const result = await this.state.call("herd");
			this.update(result.sheep ?? []);
		} catch {
			// the broker is away: keep what is shown
		} finally {
			this.fetching = false;
			if (this.again) void this.refresh();
		}
	}

	/** Draws the rows; a 1 s timer redraws the clocks locally (no request) while rows are shown. */
	private draw(): void {
		if (this.disposed || !this.state.hasUI || !this.state.ui) return;
		const now = Date.now();
		const elapsed = now - this.receivedAt;
		const sheep = this.sheep.map((s) =>
			s.task?.state === "waiting" ? { ...s, task: { ...s.task, waitingMs: (s.task.waitingMs ?? 0) + elapsed } } : s,
		);
		const theme = this.state.ui.theme;
		const color = theme?.fg ? (name: ThemeColor, text: string) => theme.fg(name, text) : undefined;
		const lines = widgetLines(sheep, now, this.tick++, color, this.emojiSheep);
		this.show(lines);
		if (lines.length && !this.timer) {
			this.timer = setInterval(() => this.draw(), 1000);
			this.timer.unref?.();
		} else if (!lines.length) {
			this.stopTimer();
		}
	}

	private show(lines: string[]): void {
		const key = lines.join("\n");
		if (key === this.shown) return;
		this.shown = key;
		try {
			this.state.ui?.setWidget(WIDGET_KEY, lines.length ? lines : undefined, { placement: "belowEditor" });
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
