/**
 * A connection to a Shepherd broker: JSON lines over a Unix socket.
 *
 * Requests are `{id, method, params}` and get `{id, result}` or `{id, error: {code, message}}`;
 * the broker also pushes `{event, data}` lines (inbox items) on a connection that subscribed.
 * The first request on every connection is `hello`, which fixes the caller's role. When the
 * broker goes away (it restarts after a crash, or idles out), the connection reconnects with
 * backoff, says hello again and re-runs its `onConnect` hook (e.g. to subscribe again); items
 * that were not acknowledged are delivered again, so nothing is lost.
 *
 * Every method's params and result, and every pushed event's data, are typed from the broker's
 * own protocol types (`protocol-types.ts`, generated from docs/protocol.schema.json), so a
 * request the broker would refuse, or a field it does not send, is a type error here.
 *
 * This file has no pi dependency: it is the whole protocol client the pi extensions need.
 */

import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import * as net from "node:net";
import type { Hello as HelloParams, ServerLine, ShepherdProtocol } from "./protocol-types.ts";

export type {
	CallerContext,
	Envelope,
	Harness,
	InboxItem,
	MergeParams,
	MergePreview,
	MergeView,
	Mode,
	Placement,
	ReadSource,
	ReportParams,
	RunStepParams,
	RunReport,
	RunResult,
	RunSubmitParams,
	RunView,
	SheepStatus,
	SpawnResult,
	TaskReport,
	ThinkingLevel,
	WorktreeReport,
} from "./protocol-types.ts";

export const PROTOCOL_VERSION = 2;

/** Every method, with its params and result. */
export type Methods = ShepherdProtocol["methods"];
export type Method = keyof Methods;
export type Params<M extends Method> = Methods[M]["params"];
export type Result<M extends Method> = Methods[M]["result"];
/** A method's params as call arguments: optional when every field is. */
export type ParamsArg<M extends Method> = {} extends Params<M> ? [params?: Params<M>] : [params: Params<M>];
/** Every pushed event, with its data. */
export type Events = ShepherdProtocol["events"];
export type EventName = keyof Events;

/** What a connection says in its `hello` (the protocol version is added). */
export type Hello = Omit<HelloParams, "protocol">;

export class BrokerError extends Error {
	readonly code: string;
	constructor(code: string, message: string) {
		super(message);
		this.code = code;
	}
}

type Pending = { resolve: (value: unknown) => void; reject: (error: Error) => void; timer: NodeJS.Timeout };
type PushHandler<E extends EventName> = (data: Events[E]) => void | Promise<void>;

export interface ConnectionOptions {
	/** Called after every (re)connection and hello, before queued calls run. */
	onConnect?: () => Promise<void>;
	/** Gives up reconnecting after this long without a broker (ms). */
	reconnectFor?: number;
	/**
	 * Called once per reconnection when the broker does not answer, before trying again: the
	 * parent starts a new broker here, which replays its journal and re-adopts the herd.
	 */
	revive?: () => Promise<void>;
	/** How long one request may take (ms). */
	requestTimeout?: number;
}

export class BrokerConnection {
	private socket?: net.Socket;
	private buffer = "";
	private nextId = 1;
	private pending = new Map<number, Pending>();
	private handlers = new Map<string, PushHandler<EventName>[]>();
	private connecting?: Promise<void>;
	private closed = false;

	constructor(
		readonly socketPath: string,
		private readonly hello: Hello,
		private readonly options: ConnectionOptions = {},
	) {}

	/** Registers a handler for pushed events of `event` (e.g. `inbox`). */
	on<E extends EventName>(event: E, handler: PushHandler<E>): void {
		const list = this.handlers.get(event) ?? [];
		list.push(handler as PushHandler<EventName>);
		this.handlers.set(event, list);
	}

	/** Connects (once; later calls wait for the same attempt). */
	connect(): Promise<void> {
		if (this.socket && !this.socket.destroyed) return Promise.resolve();
		if (!this.connecting) {
			this.connecting = this.establish().finally(() => {
				this.connecting = undefined;
			});
		}
		return this.connecting;
	}

	/**
	 * Makes one request; connects first if needed. Every request carries a client request id:
	 * a request that was in flight when the broker went away is sent again, under the same id,
	 * to the broker that replaces it (within the reconnection deadline), and the broker applies
	 * it once and answers it as it did the first time — whether the first copy landed or not.
	 */
	async call<M extends Method>(method: M, ...[params]: ParamsArg<M>): Promise<Result<M>> {
		const requestId = randomUUID();
		const deadline = Date.now() + (this.options.reconnectFor ?? 30_000);
		for (;;) {
			await this.connect();
			try {
				return (await this.send(method, params ?? {}, requestId)) as Result<M>;
			} catch (error) {
				const lost = error instanceof BrokerError && error.code === "broker_disconnected";
				if (!lost || this.closed || Date.now() > deadline) throw error;
			}
		}
	}

	/** Closes for good: no reconnection, pending calls fail. */
	close(): void {
		this.closed = true;
		this.socket?.destroy();
		this.failPending(new BrokerError("broker_disconnected", "the Shepherd connection was closed"));
	}

	/**
	 * The hello with its credential: a parent or observer presents the herd's key, read from
	 * beside the socket (`b-<key>.sock` → `b-<key>.key`, readable by its user alone) each time it
	 * connects; a sheep's hello carries its own token already.
	 */
	private credentialed(): Hello {
		if (this.hello.token || (this.hello.role !== "parent" && this.hello.role !== "observer")) return this.hello;
		try {
			const token = readFileSync(this.socketPath.replace(/\.sock$/, ".key"), "utf8").trim();
			return token ? { ...this.hello, token } : this.hello;
		} catch {
			// No key to read (a sandbox hides it): the broker says what is missing.
			return this.hello;
		}
	}

	private async establish(): Promise<void> {
		const deadline = Date.now() + (this.options.reconnectFor ?? 30_000);
		let backoff = 25;
		let revived = false;
		for (;;) {
			if (this.closed) throw new BrokerError("broker_disconnected", "the Shepherd connection was closed");
			try {
				await this.open();
				await this.send("hello", { protocol: PROTOCOL_VERSION, ...this.credentialed() });
				if (this.options.onConnect) await this.options.onConnect();
				return;
			} catch (error) {
				this.socket?.destroy();
				this.socket = undefined;
				// A broker that dies while we say hello (a listener still accepting in its last
				// moments) is as absent as one that never answered: try again.
				const retryable = ["broker_unavailable", "broker_disconnected"];
				if (error instanceof BrokerError && !retryable.includes(error.code)) throw error;
				if (Date.now() + backoff > deadline) {
					throw new BrokerError(
						"broker_unavailable",
						`no Shepherd broker answers on ${this.socketPath}: ${(error as Error).message}`,
					);
				}
				if (!revived && this.options.revive) {
					revived = true;
					// A failed revival leaves the retries to find a broker some other way.
					await this.options.revive().catch(() => {});
					continue;
				}
				await new Promise((resolve) => setTimeout(resolve, backoff));
				backoff = Math.min(backoff * 2, 500);
			}
		}
	}

	private open(): Promise<void> {
		return new Promise((resolve, reject) => {
			const socket = net.createConnection(this.socketPath);
			socket.setEncoding("utf8");
			socket.once("connect", () => {
				this.socket = socket;
				this.buffer = "";
				resolve();
			});
			// Before the connection exists an error fails this attempt; after, `close` follows it.
			socket.on("error", (error) => reject(new BrokerError("broker_unavailable", error.message)));
			socket.on("data", (chunk: string) => this.receive(chunk));
			socket.on("close", () => {
				if (this.socket !== socket) return;
				this.socket = undefined;
				this.failPending(new BrokerError("broker_disconnected", "the Shepherd broker went away"));
				// Reconnect in the background so pushes resume as soon as a broker is back.
				if (!this.closed) this.connect().catch(() => {});
			});
		});
	}

	private send(method: Method, params: Params<Method> | {}, requestId?: string): Promise<unknown> {
		const socket = this.socket;
		if (!socket) return Promise.reject(new BrokerError("broker_disconnected", "not connected"));
		const id = this.nextId++;
		return new Promise<unknown>((resolve, reject) => {
			const timer = setTimeout(() => {
				this.pending.delete(id);
				reject(new BrokerError("timeout", `the broker did not answer \`${method}\` in time`));
			}, this.options.requestTimeout ?? 120_000);
			this.pending.set(id, { resolve, reject, timer });
			socket.write(`${JSON.stringify({ id, method, params, requestId })}\n`);
		});
	}

	private receive(chunk: string): void {
		this.buffer += chunk;
		let newline = this.buffer.indexOf("\n");
		while (newline >= 0) {
			const line = this.buffer.slice(0, newline);
			this.buffer = this.buffer.slice(newline + 1);
			newline = this.buffer.indexOf("\n");
			if (!line.trim()) continue;
			let message: ServerLine;
			try {
				message = JSON.parse(line);
			} catch {
				continue;
			}
			if ("event" in message) {
				for (const handler of this.handlers.get(message.event) ?? []) {
					// The broker sends each event's data as the schema describes it.
					Promise.resolve(handler(message.data as Events[EventName])).catch(() => {});
				}
				continue;
			}
			const pending = this.pending.get(message.id);
			if (!pending) continue;
			this.pending.delete(message.id);
			clearTimeout(pending.timer);
			if (message.error) pending.reject(new BrokerError(message.error.code, message.error.message));
			else pending.resolve(message.result);
		}
	}

	private failPending(error: Error): void {
		for (const [id, pending] of this.pending) {
			clearTimeout(pending.timer);
			pending.reject(error);
			this.pending.delete(id);
		}
	}
}
