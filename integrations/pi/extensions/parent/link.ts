/**
 * The parent's line to its herd's broker.
 *
 * A pi session is one herd: its identity is pi's session id and its project is the session's
 * cwd, so a resumed session reaches the same broker and gets its sheep back. On session start
 * this asks `shepherd broker ensure` for the socket (starting the broker when none runs),
 * connects as the parent and subscribes, so inbox items are pushed the moment they are durable
 * and the herd view each time it changes (for the widget); a reconnection subscribes again and
 * the broker re-sends what was not acknowledged. When the broker crashes the connection starts
 * a new one at once with `broker ensure` (which replays the journal and re-adopts the herd), so
 * completions keep arriving while pi sits idle. A broker stopped on purpose says so first; then
 * the link lets it go, and the next request starts one.
 */

import {
	BrokerConnection,
	BrokerError,
	type InboxItem,
	type Method,
	type ParamsArg,
	type Result,
	type MergeParams,
	type MergePreview,
	type MergeView,
	type RunReport,
	type RunSubmitParams,
	type RunView,
	type SheepStatus,
} from "../lib/broker.ts";
import { runShepherd, ShepherdError } from "./cli.ts";

export type InboxHandler = (items: InboxItem[]) => Promise<void> | void;
/** The herd's sheep as the broker pushed them; `undefined` when the broker was stopped. */
export type HerdHandler = (sheep: SheepStatus[] | undefined) => void;

/** A merge this session submitted and waits for: its finished view settles `done`. */
interface FollowedMerge {
	done: (view: MergeView) => void;
}

/** A run this session submitted and waits for: its report settles `done`. */
interface FollowedRun {
	done: (report: RunReport) => void;
	onView?: (view: RunView) => void;
}

export class ParentLink {
	readonly identity: string;
	readonly project: string;
	private connection?: BrokerConnection;
	/** Runs submitted from this session that have not finished, by run id. */
	private readonly runs = new Map<string, FollowedRun>();
	/** Merges submitted from this session that are not over, by merge id. */
	private readonly merges = new Map<string, FollowedMerge>();
	private starting?: Promise<BrokerConnection>;
	private closed = false;
	/** Whether the broker pushes herd views (a broker from an older build does not). */
	herdFeed = false;

	constructor(
		identity: string,
		project: string,
		private readonly onInbox: InboxHandler,
		private readonly onHerd: HerdHandler = () => {},
		/** The pi session file, recorded in the herd's fieldnotes session for diagnostics. */
		private readonly sessionFile?: string,
	) {
		this.identity = identity;
		this.project = project;
	}

	/** Ensures the broker and connects (once; later calls share the attempt). */
	start(): Promise<BrokerConnection> {
		if (this.connection) return Promise.resolve(this.connection);
		if (!this.starting) {
			this.starting = this.open().finally(() => {
				this.starting = undefined;
			});
		}
		return this.starting;
	}

	private ensure(): Promise<{ socket: string }> {
		return runShepherd<{ socket: string }>(
			["broker", "ensure", "--parent-session", this.identity, "--project", this.project],
			{ cwd: this.project },
		);
	}

	private async open(): Promise<BrokerConnection> {
		const ensured = await this.ensure();
		if (this.closed) throw new ShepherdError("broker_disconnected", "the pi session has ended");
		const connection: BrokerConnection = new BrokerConnection(
			ensured.socket,
			{ role: "parent", client: "pi", ...(this.sessionFile ? { sessionFile: this.sessionFile } : {}) },
			{
				reconnectFor: 10_000,
				onConnect: async () => {
					await connection.call("subscribe");
					// A new connection (the broker restarted): follow this session's runs again.
					for (const runId of this.runs.keys()) {
						const view = await connection.call("run.attach", { runId }).catch(() => undefined);
						if (view) this.runView(view);
					}
					for (const mergeId of this.merges.keys()) {
						const view = await connection.call("merge.attach", { mergeId }).catch(() => undefined);
						if (view) this.mergeView(view);
					}
					try {
						const herd = await connection.call("herd.subscribe");
						this.herdFeed = true;
						this.onHerd(Array.isArray(herd.sheep) ? herd.sheep : []);
					} catch (error) {
						// A broker from an older build: the widget asks for the herd on changes instead.
						if (error instanceof BrokerError && error.code === "unknown_method") this.herdFeed = false;
						else throw error;
					}
				},
				revive: async () => {
					if (!this.closed) await this.ensure();
				},
			},
		);
		connection.on("shutdown", () => {
			// Stopped on purpose (`shepherd broker stop`, or idle): do not bring it straight back.
			connection.close();
			if (this.connection === connection) this.connection = undefined;
			this.onHerd(undefined);
		});
		connection.on("run", (data) => this.runView(data));
		connection.on("merge", (data) => this.mergeView(data));
		connection.on("herd", (data) => {
			if (Array.isArray(data?.sheep)) this.onHerd(data.sheep);
		});
		connection.on("inbox", async (data) => {
			const items = Array.isArray(data?.items) ? data.items : [];
			if (items.length) await this.onInbox(items);
		});
		await connection.connect();
		this.connection?.close();
		this.connection = connection;
		return connection;
	}

	/** Whether a broker connection is held (none after an orderly stop, until the next request). */
	get connected(): boolean {
		return this.connection !== undefined;
	}

	/** One broker request. */
	async call<M extends Method>(method: M, ...params: ParamsArg<M>): Promise<Result<M>> {
		const connection = await this.start();
		try {
			return await connection.call(method, ...params);
		} catch (error) {
			// Only a request that never reached a broker is retried (nothing can have happened).
			if (!(error instanceof BrokerError) || error.code !== "broker_unavailable" || this.closed) throw error;
			connection.close();
			if (this.connection === connection) this.connection = undefined;
			const fresh = await this.start();
			return fresh.call(method, ...params);
		}
	}

	/**
	 * Submits a run to the broker and waits for its report (the `shepherd run --json` document).
	 * The broker carries the run out; this only follows it. Aborting cancels the run in the
	 * broker, which closes its sheep, and the report still comes back.
	 */
	async run(params: RunSubmitParams, signal?: AbortSignal, onView?: (view: RunView) => void): Promise<RunReport> {
		const view = await this.call("run.submit", params);
		const runId: string = view.runId;
		const report = new Promise<RunReport>((resolve) => this.runs.set(runId, { done: resolve, onView }));
		this.runView(view);
		const cancel = () => {
			this.call("run.cancel", { runId }).catch(() => {});
		};
		signal?.addEventListener("abort", cancel, { once: true });
		if (signal?.aborted) cancel();
		try {
			return await report;
		} finally {
			signal?.removeEventListener("abort", cancel);
			this.runs.delete(runId);
		}
	}

	/**
	 * Submits a merge to the broker and waits until it is over. The broker carries it out; an
	 * abort cancels it (`merge.cancel`: the target stays at its last verified landing) and
	 * answers with the merge as the cancel left it.
	 */
	async merge(params: MergeParams, signal?: AbortSignal): Promise<MergeView> {
		const view = await this.call("merge.submit", params);
		if (view.finished) return view;
		const finished = new Promise<MergeView>((resolve) => this.merges.set(view.mergeId, { done: resolve }));
		const aborted = new Promise<MergeView>((resolve) => {
			signal?.addEventListener(
				"abort",
				() => {
					this.call("merge.cancel", { mergeId: view.mergeId }).then(resolve, () => resolve(view));
				},
				{ once: true },
			);
		});
		try {
			return await Promise.race([finished, aborted]);
		} finally {
			this.merges.delete(view.mergeId);
		}
	}

	/** Cancels a merge under way; the merge as the cancel left it. */
	async cancelMerge(mergeId: string): Promise<MergeView> {
		return await this.call("merge.cancel", { mergeId });
	}

	/** What a merge would land and what would conflict, changing nothing. */
	async previewMerge(params: MergeParams): Promise<MergePreview> {
		return await this.call("merge.preview", params);
	}

	private mergeView(view: MergeView): void {
		if (view?.finished) this.merges.get(view.mergeId)?.done(view);
	}

	private runView(view: RunView): void {
		const followed = this.runs.get(view?.runId);
		if (!followed) return;
		followed.onView?.(view);
		if (view?.report) followed.done(view.report);
	}

	/** Closes the connection; the broker and the herd keep running. */
	close(): void {
		this.closed = true;
		this.connection?.close();
		this.connection = undefined;
	}
}
