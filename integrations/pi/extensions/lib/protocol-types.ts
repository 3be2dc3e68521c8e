/**
 * The Shepherd broker protocol's types, generated from docs/protocol.schema.json (itself
 * generated from crates/shepherd-core/src/protocol). Do not edit: run scripts/gen-protocol-types.
 */

/**
 * Who a connection speaks for.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "Role".
 */
export type Role = "parent" | "sheep" | "observer" | "supervisor";
/**
 * Which terminal backend sheep run in.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "Backend".
 */
export type Backend = "auto" | "herdr" | "tmux" | "headless";
/**
 * Where a visible sheep goes.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "Placement".
 */
export type Placement = "tab" | "pane_right" | "pane_down" | "workspace";
/**
 * A coding agent Shepherd knows how to run as a sheep.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "Harness".
 */
export type Harness = "pi" | "claude-code" | "codex" | "gemini" | "opencode";
/**
 * A reasoning level pi understands. pi clamps it to what the chosen model supports.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "ThinkingLevel".
 */
export type ThinkingLevel = "off" | "minimal" | "low" | "medium" | "high" | "xhigh" | "max";
/**
 * What a sheep's processes may see and change.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "Sandbox".
 */
export type Sandbox = "off" | "workspace" | "strict";
/**
 * A size in bytes (a string with K, M, G or T is read too).
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "Bytes".
 */
export type Bytes = number;
/**
 * A number of CPUs.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "Cpus".
 */
export type Cpus = number;
/**
 * The opaque id of one sheep.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "AgentId".
 */
export type AgentId = string;
/**
 * Which backend runs a sheep.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "BackendKind".
 */
export type BackendKind = "headless" | "tmux" | "herdr";
/**
 * The opaque id of one delegated task.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "TaskId".
 */
export type TaskId = string;
/**
 * Where a task is in its life.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "TaskState".
 */
export type TaskState =
	"created" | "running" | "waiting" | "completed" | "blocked" | "failed" | "cancelled" | "timed_out";
/**
 * How urgently a message reaches an agent that is busy.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "Delivery".
 */
export type Delivery = "followUp" | "steer";
/**
 * The opaque id of one message.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "MessageId".
 */
export type MessageId = string;
/**
 * A list of ids: one string or an array (JSON-encoded arrays in a string are accepted too).
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "IdList".
 */
export type IdList = string | string[];
/**
 * The opaque id of one durable watcher.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "WatcherId".
 */
export type WatcherId = string;
/**
 * A validated label: trimmed, NFC-normalised, possibly empty (no label).
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "Label".
 */
export type Label = string;
/**
 * `status` result: one sheep when the request named one, else the whole herd.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "StatusResult".
 */
export type StatusResult = SheepStatus | HerdResult | MessageReceipt;
/**
 * What an error that ended a turn means for its task.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "ErrorClass".
 */
export type ErrorClass = "rate_limit" | "usage_limit" | "transient" | "fatal";
/**
 * What runs a sheep: `command`, or the coding agent's harness.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "Runtime".
 */
export type Runtime = "command" | "pi" | "claude-code" | "codex" | "gemini" | "opencode";
/**
 * How a sheep's limits are applied on the machine it runs on.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "Mechanism".
 */
export type Mechanism = "cgroup-v2" | "cgroup-v1" | "rlimits";
/**
 * One resource a sheep's limits bound. Declared once: every list, flag and message names
 * these.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "Resource".
 */
export type Resource = "pids" | "memory" | "cpus" | "disk";
/**
 * `shepherd` (the parent) or a sheep's agent id.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "Participant".
 */
export type Participant = string;
/**
 * Where a message is on its way.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "ReceiptState".
 */
export type ReceiptState = "queued" | "delivered" | "read" | "discarded";
/**
 * How a delegation runs its sheep.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "Mode".
 */
export type Mode = "single" | "parallel" | "chain";
/**
 * Where a task is.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "StepPhase".
 */
export type StepPhase = "queued" | "starting" | "running" | "closing" | "done";
/**
 * How a task of a run ended: its task's state, or `skipped` (a chain stopped before it).
 * Journals keep it by its wire spelling; every task state is one, so a record written while a
 * task was still open reads back too.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "StepStatus".
 */
export type StepStatus =
	"created" | "running" | "waiting" | "completed" | "blocked" | "failed" | "cancelled" | "timed_out" | "skipped";
/**
 * What became of a worktree, here or on a host.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "WorktreeReport".
 */
export type WorktreeReport = RemoteWorktreeReport | LocalWorktreeReport;
/**
 * What `resolve` looks for.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "ResolveKind".
 */
export type ResolveKind = "sheep" | "task";
/**
 * What to read of a sheep's output.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "ReadSource".
 */
export type ReadSource = "visible" | "recent" | "recent-unwrapped" | "detection";
/**
 * One delivered-but-unacknowledged item.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "InboxItem".
 */
export type InboxItem = {
	/**
	 * Position in the herd's global order; acknowledged by number.
	 */
	seq: number;
	/**
	 * When it was queued (ms).
	 */
	at: number;
} & InboxItem1;
export type InboxItem1 =
	| {
			type: "envelope";
			/**
			 * The envelope.
			 */
			envelope: Envelope;
	  }
	| {
			type: "completion";
			/**
			 * The watcher.
			 */
			watcherId: WatcherId;
			/**
			 * One report per settled task, in the watcher's order.
			 */
			completions: TaskReport[];
	  }
	| (StaleWait & {
			type: "stale_wait";
	  })
	| (Notice & {
			type: "notice";
	  });
/**
 * What an envelope carries.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "Kind".
 */
export type Kind = "task" | "message" | "reply" | "reminder";
/**
 * What a sheep may report with `shepherd_done`.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "DoneStatus".
 */
export type DoneStatus = "completed" | "blocked" | "failed";
/**
 * What a notice is about.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "NoticeKind".
 */
export type NoticeKind =
	| "task_done_dropped"
	| "task_done_mismatch"
	| "completion_stalled"
	| "sheep_exited"
	| "auto_closed"
	| "auto_close_failed"
	| "broker_recovered"
	| "stall_nudged"
	| "rate_limited"
	| "fell_back";
/**
 * What a sheep's `report` tells the broker.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "ReportEvent".
 */
export type ReportEvent = "ready" | "agent_start" | "answered" | "turn" | "ridden_out" | "run_settled";
/**
 * How a branch lands on its target.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "Strategy".
 */
export type Strategy = "merge" | "squash" | "rebase" | "ff-only";
/**
 * Where one branch stands.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "BranchState".
 */
export type BranchState =
	| "open"
	| "merging"
	| "checking"
	| "fixing"
	| "merged"
	| "already_landed"
	| "conflict"
	| "check_failed"
	| "rejected"
	| "discarded"
	| "skipped"
	| "refused";
/**
 * The session a change goes to.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "NotesSession".
 */
export type NotesSession =
	| {
			directory: {
				/**
				 * The directory name.
				 */
				directory: string;
			};
	  }
	| {
			parent: {
				/**
				 * The parent identity.
				 */
				parentSession: string;
				/**
				 * The parent's session file, recorded for diagnostics.
				 */
				parentSessionFile?: string | null;
			};
	  }
	| {
			named: {
				/**
				 * The session name.
				 */
				sessionName: string;
			};
	  };
/**
 * One change to a session: what one `shepherd notes` command does.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "NoteChange".
 */
export type NoteChange =
	| {
			reserve: {
				/**
				 * The agent that will write it.
				 */
				agent: string;
				/**
				 * How the delegation runs.
				 */
				mode: Mode;
				/**
				 * The delegated task.
				 */
				task?: string | null;
				/**
				 * The flow group it belongs to.
				 */
				group?: string | null;
				/**
				 * Reserve it already running.
				 */
				start: boolean;
			};
	  }
	| {
			start: {
				/**
				 * The note's file name.
				 */
				note: string;
				/**
				 * Metadata to merge.
				 */
				metadata: {
					[k: string]: unknown | undefined;
				};
			};
	  }
	| {
			finish: {
				/**
				 * The note's file name.
				 */
				note: string;
				/**
				 * A terminal status.
				 */
				status: NoteStatus;
				/**
				 * The final output.
				 */
				output?: string | null;
				/**
				 * What went wrong.
				 */
				error?: string | null;
				/**
				 * Metadata to merge.
				 */
				metadata: {
					[k: string]: unknown | undefined;
				};
			};
	  }
	| {
			link: {
				/**
				 * The URL or absolute path.
				 */
				target: string;
				/**
				 * The link text.
				 */
				title?: string | null;
			};
	  }
	| {
			delete: {
				/**
				 * The note's file name.
				 */
				note: string;
			};
	  }
	| {
			feedback: {
				/**
				 * The note's file name.
				 */
				note: string;
				/**
				 * Who gives it.
				 */
				from: string;
				/**
				 * The feedback.
				 */
				text: string;
			};
	  };
/**
 * Where a note is in its life: `pending` → `running` → one terminal status.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "NoteStatus".
 */
export type NoteStatus = "pending" | "running" | "completed" | "failed" | "timed-out" | "cancelled";
/**
 * A stable error code from the catalogue (docs/errors.md).
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "ErrorCode".
 */
export type ErrorCode =
	| "invalid_argument"
	| "invalid_arguments"
	| "invalid_environment"
	| "environment"
	| "invalid_identity"
	| "invalid_project"
	| "invalid_wait"
	| "invalid_timeout"
	| "not_a_sheep"
	| "no_note"
	| "not_pi"
	| "pi_unavailable"
	| "pi_failed"
	| "not_a_terminal"
	| "terminal"
	| "mcp"
	| "held_by_broker"
	| "run_failed"
	| "timeout"
	| "cancelled"
	| "broker_unavailable"
	| "broker_unresponsive"
	| "broker_disconnected"
	| "broker_stopping"
	| "broker"
	| "protocol"
	| "protocol_mismatch"
	| "hello_required"
	| "hello_timeout"
	| "invalid_request"
	| "request_too_large"
	| "unknown_method"
	| "unauthenticated"
	| "forbidden"
	| "closed_handle"
	| "unknown_agent"
	| "approval_required"
	| "definition_changed"
	| "depth_exceeded"
	| "max_sheep"
	| "invalid_label"
	| "duplicate_label"
	| "invalid_cwd"
	| "invalid_model"
	| "invalid_harness"
	| "harness_unsupported"
	| "harness_missing"
	| "backend_unavailable"
	| "no_caller_pane"
	| "spawn_failed"
	| "agent_not_ready"
	| "agent_running"
	| "no_session"
	| "resume_unsupported"
	| "not_a_git_repository"
	| "worktree_failed"
	| "nothing_to_land"
	| "unknown_landing"
	| "not_landable_yet"
	| "branch_gone"
	| "dirty_target"
	| "invalid_into"
	| "detached_target"
	| "two_bases"
	| "two_repositories"
	| "invalid_merge_options"
	| "unknown_merge"
	| "unknown_host"
	| "host_unreachable"
	| "sandbox_unavailable"
	| "close_unconfirmed"
	| "no_pane"
	| "read_failed"
	| "registry"
	| "not_found"
	| "invalid_target"
	| "ambiguous_id"
	| "unknown_task"
	| "unknown_message"
	| "invalid_handle"
	| "invalid_task"
	| "too_large"
	| "active_task"
	| "invalid_transition"
	| "task_agent_mismatch"
	| "invalid_reply_to"
	| "reply_task_mismatch"
	| "request_open"
	| "pending_request"
	| "inbox_full"
	| "no_delegated_task"
	| "invalid_run"
	| "unknown_run"
	| "too_many_tasks"
	| "write_conflict"
	| "invalid_budget"
	| "budget_unsupported"
	| "invalid_stall"
	| "invalid_session_name"
	| "invalid_name"
	| "lock_timeout"
	| "malformed"
	| "unsafe_path"
	| "already_final"
	| "not_final"
	| "deleted"
	| "invalid_link"
	| "stale_session"
	| "invalid_note"
	| "fieldnotes"
	| "fieldnotes_timeout"
	| "journal"
	| "journal_stalled"
	| "invalid_setting"
	| "unknown_setting"
	| "wrong_settings_layer"
	| "malformed_file"
	| "io"
	| "internal"
	| "unrecognised";
/**
 * One line from the broker: a response (has `id`) or a push (has `event`).
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "ServerLine".
 */
export type ServerLine =
	| {
			/**
			 * The request's id.
			 */
			id: number;
			/**
			 * Success value.
			 */
			result?: unknown;
			/**
			 * Failure.
			 */
			error?: WireError | null;
	  }
	| {
			/**
			 * The event name.
			 */
			event: string;
			/**
			 * Its data.
			 */
			data?: unknown;
	  };

/**
 * The Shepherd broker protocol, version 2: every method's params and result, every pushed event's data. Generated from crates/shepherd-core/src/protocol by scripts/gen-protocol-types; do not edit.
 */
export interface ShepherdProtocol {
	methods: {
		hello: {
			params: Hello;
			result: HelloResult;
		};
		spawn: {
			params: SpawnParams;
			result: SpawnResult;
		};
		delegate: {
			params: DelegateParams;
			result: DelegateResult;
		};
		message: {
			params: MessageParams;
			result: MessageResult;
		};
		watch: {
			params: WatchParams;
			result: WatchResult;
		};
		wait: {
			params: WaitParams;
			result: WaitResult;
		};
		status: {
			params: StatusParams;
			result: StatusResult;
		};
		close: {
			params: CloseParams;
			result: CloseResult;
		};
		resume: {
			params: ResumeParams;
			result: SpawnResult;
		};
		herd: {
			params: NoParams;
			result: HerdResult;
		};
		resolve: {
			params: ResolveParams;
			result: ResolveResult;
		};
		"herd.subscribe": {
			params: NoParams;
			result: HerdResult;
		};
		"herd.mates": {
			params: NoParams;
			result: HerdMatesResult;
		};
		prune: {
			params: NoParams;
			result: PruneResult;
		};
		read: {
			params: ReadParams;
			result: ReadResult;
		};
		subscribe: {
			params: NoParams;
			result: OkResult;
		};
		inbox: {
			params: InboxParams;
			result: InboxResult;
		};
		ack: {
			params: AckParams;
			result: OkResult;
		};
		tell: {
			params: MessageParams;
			result: MessageResult;
		};
		done: {
			params: DoneParams;
			result: DoneResult;
		};
		report: {
			params: ReportParams;
			result: OkResult;
		};
		"supervisor.started": {
			params: SupervisorStarted;
			result: OkResult;
		};
		"supervisor.exited": {
			params: SupervisorExited;
			result: OkResult;
		};
		"supervisor.output": {
			params: NoParams;
			result: OkResult;
		};
		focus: {
			params: FocusParams;
			result: FocusResult;
		};
		"broker.status": {
			params: NoParams;
			result: BrokerStatus;
		};
		"broker.stop": {
			params: NoParams;
			result: StopResult;
		};
		"run.submit": {
			params: RunSubmitParams;
			result: RunView;
		};
		"run.attach": {
			params: RunIdParams;
			result: RunView;
		};
		"run.cancel": {
			params: RunIdParams;
			result: RunView;
		};
		"merge.submit": {
			params: MergeParams;
			result: MergeView;
		};
		"merge.attach": {
			params: MergeIdParams;
			result: MergeView;
		};
		"merge.cancel": {
			params: MergeIdParams;
			result: MergeView;
		};
		"merge.preview": {
			params: MergeParams;
			result: MergePreview;
		};
		"notes.write": {
			params: NotesWriteParams;
			result: NotesWriteResult;
		};
	};
	events: {
		inbox: InboxResult;
		herd: HerdResult;
		terminate: TerminateData;
		shutdown: null;
		run: RunView;
		merge: MergeView;
	};
}
/**
 * `hello` parameters.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "Hello".
 */
export interface Hello {
	/**
	 * The caller's protocol version.
	 */
	protocol: number;
	/**
	 * The role asked for.
	 */
	role: Role;
	/**
	 * For sheep and supervisors: the sheep's id.
	 */
	agentId?: string | null;
	/**
	 * For sheep and supervisors: the capability token. For the parent and observers: the
	 * herd's key, read from the file beside the socket (`b-<key>.key`).
	 */
	token?: string | null;
	/**
	 * Free-form client name (`cli`, `pi`, …), for diagnostics.
	 */
	client?: string | null;
	/**
	 * For the parent: its own agent session file (pi's `getSessionFile()`), recorded in the
	 * parent-bound fieldnotes session for diagnostics; never part of the herd's identity.
	 */
	sessionFile?: string | null;
	/**
	 * For the parent: the program it speaks for when that is not the connecting process
	 * itself (an MCP host, by the name it gave in the MCP handshake, and its process), so
	 * `shepherd herds` can say who drives a herd.
	 */
	driver?: Driver | null;
}
/**
 * The program a parent connection speaks for.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "Driver".
 */
export interface Driver {
	/**
	 * Its name (an MCP host's `clientInfo.name`: `claude-code`, `codex-mcp-client`, …).
	 */
	name: string;
	/**
	 * Its process, when known.
	 */
	pid?: number | null;
}
/**
 * `hello` result.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "HelloResult".
 */
export interface HelloResult {
	/**
	 * The broker's protocol version.
	 */
	protocol: number;
	/**
	 * The broker's id (stable for its parent and project).
	 */
	brokerId: string;
	/**
	 * The parent identity the broker serves.
	 */
	parentIdentity: string;
	/**
	 * The canonical project root.
	 */
	projectRoot: string;
	/**
	 * The role granted.
	 */
	role: Role;
}
/**
 * `spawn` parameters.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "SpawnParams".
 */
export interface SpawnParams {
	/**
	 * The agent definition's exact name.
	 */
	agent: string;
	/**
	 * A short task-specific label.
	 */
	label?: string | null;
	/**
	 * `auto`, `headless`, `tmux` or `herdr` (default: the setting).
	 */
	backend?: Backend | null;
	/**
	 * Working directory (default: the project root).
	 */
	cwd?: string | null;
	/**
	 * `tab`, `pane_right`, `pane_down` or `workspace` (visible backends).
	 */
	placement?: Placement | null;
	/**
	 * A model override (`provider/id`); refused when the runtime cannot honour it.
	 */
	model?: string | null;
	/**
	 * The coding agent to run the definition on, instead of the definition's own harness.
	 */
	harness?: Harness | null;
	/**
	 * Where the caller runs, so `auto` can pick its terminal and splits find its pane.
	 */
	caller?: CallerContext | null;
	/**
	 * The parent's own model (`provider/id`), inherited by pi sheep whose definition names none.
	 */
	parentModel?: string | null;
	/**
	 * The parent's thinking level, inherited likewise (a level this Shepherd does not know is
	 * dropped, so the sheep runs at its agent's default).
	 */
	parentThinking?: ThinkingLevel | null;
	/**
	 * The command that runs pi for a pi sheep (the parent's own pi, e.g. `[node, …/cli.js]`),
	 * so sheep run the same pi as their parent; `SHEPHERD_PI`, when set, wins.
	 */
	piCommand?: string[] | null;
	/**
	 * The fieldnotes session this sheep's tasks will go to, by its name (created or
	 * continued), as `delegate`'s `sessionName` names it; without it, the parent's own.
	 * Spawn reports the session's directory.
	 */
	sessionName?: string | null;
	/**
	 * Run the sheep in its own git worktree on its own branch; on close, a clean worktree
	 * without new commits is removed, any other is kept and reported.
	 */
	isolate?: boolean;
	/**
	 * Run the sheep on this host, one the user defined under `hosts` in their settings
	 * (default: the agent definition's `host:`, else this machine).
	 */
	host?: string | null;
	/**
	 * Confine the sheep at least this much: `off`, `workspace` or `strict`. It only tightens
	 * what the definition's `sandbox:` and the user's `sandbox` setting give.
	 */
	sandbox?: Sandbox | null;
	/**
	 * The person's own `--sandbox` at the command line, which may also confine the sheep less
	 * than the definition and the setting say (the CLI alone sends it).
	 */
	userSandbox?: Sandbox | null;
	/**
	 * Resource limits: they may only lower what the definition and the settings give (a
	 * sheep's recipe keeps the limits it ran with).
	 */
	limits?: Limits | null;
	/**
	 * Spend this credential instead of the agent's usual one: another account of the same
	 * provider (a `fallback:` entry's `credential:`). Only the variable's name is kept.
	 */
	credential?: Credential | null;
}
/**
 * The terminal a caller runs in, as its environment tells.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "CallerContext".
 */
export interface CallerContext {
	/**
	 * `HERDR_ENV=1`: the caller runs inside Herdr.
	 */
	inHerdr?: boolean;
	/**
	 * `HERDR_PANE_ID`.
	 */
	herdrPane?: string | null;
	/**
	 * `HERDR_WORKSPACE_ID`.
	 */
	herdrWorkspace?: string | null;
	/**
	 * `HERDR_SOCKET_PATH`.
	 */
	herdrSocket?: string | null;
	/**
	 * `$TMUX` (`<socket>,<pid>,<session>`): the caller runs inside tmux.
	 */
	tmux?: string | null;
	/**
	 * `TMUX_PANE`.
	 */
	tmuxPane?: string | null;
	/**
	 * The caller's pid, to find its pane through its parents when a wrapper stripped the
	 * variables above.
	 */
	pid?: number | null;
}
/**
 * The limits a sheep runs with: each one a bound, or `None` for none.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "Limits".
 */
export interface Limits {
	/**
	 * Most processes and threads of its whole tree.
	 */
	pids?: number | null;
	/**
	 * Most memory of its whole tree.
	 */
	memory?: Bytes | null;
	/**
	 * Most CPUs.
	 */
	cpus?: Cpus | null;
	/**
	 * Most disk in each private temporary directory, and the largest file it may write.
	 */
	disk?: Bytes | null;
}
/**
 * A credential a sheep spends instead of its agent's usual one, named by the variables that
 * hold and take it, never by its value.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "Credential".
 */
export interface Credential {
	/**
	 * The herd's environment variable that holds the key (`WORK_ANTHROPIC_KEY`): the name of
	 * the account, as notes and status show it.
	 */
	var: string;
	/**
	 * The variable the agent reads its key from, when not its usual one (a Codex provider's
	 * `env_key`); by default the one of the harness's key variables the herd has set, else
	 * its first (`ANTHROPIC_API_KEY`, `OPENAI_API_KEY`, `GEMINI_API_KEY`, pi's provider's).
	 */
	into?: string | null;
}
/**
 * `spawn` result.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "SpawnResult".
 */
export interface SpawnResult {
	/**
	 * The new sheep's id.
	 */
	agentId: AgentId;
	/**
	 * Its agent definition.
	 */
	agent: string;
	/**
	 * Its label.
	 */
	label: string;
	/**
	 * `<agent>: <label>` or `<agent>`.
	 */
	displayName: string;
	/**
	 * The backend it runs on.
	 */
	backend: BackendKind;
	/**
	 * The fieldnotes session its notes go to, relative to the project: the named one, else the
	 * parent's own; null when fieldnotes are off, or while that session has no note yet (its
	 * first note makes its directory).
	 */
	fieldnote?: string | null;
	/**
	 * Its git worktree (`path`, `branch`, and `host` when on a host), when it runs isolated.
	 */
	worktree?: WorktreePlace | null;
	/**
	 * The host it runs on (absent: this machine).
	 */
	host?: string | null;
	/**
	 * How many times it has been resumed (absent for a new sheep).
	 */
	resumes?: number | null;
}
/**
 * Where a sheep's worktree is: its path and branch, and its host when not this machine.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "WorktreePlace".
 */
export interface WorktreePlace {
	/**
	 * The host it is on (absent: this machine).
	 */
	host?: string | null;
	/**
	 * The worktree's directory.
	 */
	path: string;
	/**
	 * Its branch.
	 */
	branch: string;
}
/**
 * `delegate` parameters.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "DelegateParams".
 */
export interface DelegateParams {
	/**
	 * The sheep's agent id.
	 */
	target: string;
	/**
	 * The task text.
	 */
	task: string;
	/**
	 * Minutes (fractions allowed); default from settings.
	 */
	timeout?: number | null;
	/**
	 * Put the note in this named session (created or continued) instead of the parent's.
	 */
	sessionName?: string | null;
	/**
	 * A one-turn task (the deprecated prompt path): it settles completed with the sheep's final
	 * text when its run settles, instead of on `shepherd_done`.
	 */
	turn?: boolean;
	/**
	 * Limits on the task (over the agent definition's own, key by key).
	 */
	budget?: Budget | null;
	/**
	 * The stall watchdog for this task, in minutes; 0 turns it off (default: the
	 * `stallWatchdog` setting).
	 */
	stall?: number | null;
}
/**
 * Limits on one task. Absent keys do not limit.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "Budget".
 */
export interface Budget {
	/**
	 * Most model turns (one model response and the tool calls in it).
	 */
	turns?: number | null;
	/**
	 * Most tool calls.
	 */
	toolCalls?: number | null;
	/**
	 * Most tokens, input, output and cache together.
	 */
	tokens?: number | null;
	/**
	 * Most cost, in the currency the model's pricing uses (US dollars for the usual providers).
	 */
	cost?: number | null;
}
/**
 * `delegate` result.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "DelegateResult".
 */
export interface DelegateResult {
	/**
	 * The new task's id.
	 */
	taskId: TaskId;
	/**
	 * Its sheep.
	 */
	agentId: AgentId;
	/**
	 * `running`.
	 */
	state: TaskState;
	/**
	 * The note (absolute).
	 */
	note?: string | null;
	/**
	 * The note relative to the project root.
	 */
	noteRelative?: string | null;
	/**
	 * The session directory (absolute).
	 */
	session?: string | null;
	/**
	 * The session directory relative to the project root.
	 */
	sessionRelative?: string | null;
	/**
	 * The session's name.
	 */
	sessionName?: string | null;
	/**
	 * Whether the session existed before.
	 */
	resumed: boolean;
}
/**
 * `message` and `tell` parameters.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "MessageParams".
 */
export interface MessageParams {
	/**
	 * `shepherd`/`parent` or an agent id.
	 */
	target: string;
	/**
	 * The text.
	 */
	message: string;
	/**
	 * The task it concerns.
	 */
	taskId?: string | null;
	/**
	 * A conversation thread.
	 */
	threadId?: string | null;
	/**
	 * The message it answers.
	 */
	replyTo?: string | null;
	/**
	 * Whether the sender waits for an answer.
	 */
	expectsReply?: boolean;
	/**
	 * `followUp` (default) or `steer`.
	 */
	delivery?: Delivery | null;
}
/**
 * `message` and `tell` result.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "MessageResult".
 */
export interface MessageResult {
	/**
	 * Always true: the message is queued.
	 */
	accepted: boolean;
	/**
	 * Its id (answer it with `replyTo`).
	 */
	messageId: MessageId;
	/**
	 * Who receives it.
	 */
	targetId: string;
	/**
	 * How it will be delivered.
	 */
	delivery: Delivery;
	/**
	 * The task it was attributed to.
	 */
	taskId?: TaskId | null;
	/**
	 * The tracked request it opened.
	 */
	requestId?: MessageId | null;
	/**
	 * The task's state after delivery.
	 */
	targetTaskState?: TaskState | null;
	/**
	 * Why it is delivered otherwise than asked: a `steer` to a sheep that cannot be steered
	 * mid-turn goes as a follow-up (`delivery` says which).
	 */
	deliveryChanged?: string | null;
}
/**
 * `watch` parameters.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "WatchParams".
 */
export interface WatchParams {
	/**
	 * Task ids.
	 */
	id: IdList;
}
/**
 * `watch` result.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "WatchResult".
 */
export interface WatchResult {
	/**
	 * The watcher (absent when everything had already settled).
	 */
	watcherId?: WatcherId | null;
	/**
	 * The tasks, in the caller's order.
	 */
	taskIds: TaskId[];
	/**
	 * Tasks already settled.
	 */
	completed: TaskReport[];
	/**
	 * Tasks still open.
	 */
	pending: TaskId[];
}
/**
 * The public view of a task's outcome.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "TaskReport".
 */
export interface TaskReport {
	/**
	 * The task.
	 */
	taskId: TaskId;
	/**
	 * Its sheep.
	 */
	agentId: AgentId;
	/**
	 * The sheep's agent definition.
	 */
	agent: string;
	/**
	 * The sheep's label.
	 */
	label: Label;
	/**
	 * `<agent>: <label>` or `<agent>`.
	 */
	displayName: string;
	/**
	 * The task's state (terminal for settled tasks).
	 */
	status: TaskState;
	/**
	 * The return code, once settled.
	 */
	returnCode?: number | null;
	/**
	 * Whether it completed.
	 */
	ok: boolean;
	/**
	 * The done summary.
	 */
	summary?: string | null;
	/**
	 * The result text.
	 */
	text?: string | null;
	/**
	 * The error.
	 */
	error?: string | null;
	/**
	 * The absolute note path.
	 */
	note?: string | null;
	/**
	 * The note path relative to the project root.
	 */
	noteRelative?: string | null;
	/**
	 * When it settled (ms).
	 */
	completedAt?: number | null;
	/**
	 * Model, turns, tool calls, tokens and cost, once the sheep's run reported them.
	 */
	telemetry?: unknown;
}
/**
 * `wait` parameters.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "WaitParams".
 */
export interface WaitParams {
	/**
	 * Task ids.
	 */
	id: IdList;
	/**
	 * How long to wait (ms); 0 answers at once.
	 */
	timeoutMs?: number;
	/**
	 * Also wait (briefly, within the timeout) for a pi sheep's final words after its task
	 * settled, so the reports carry them.
	 */
	waitOutput?: boolean;
}
/**
 * `wait` result.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "WaitResult".
 */
export interface WaitResult {
	/**
	 * Settled tasks, in the caller's order.
	 */
	settled: TaskReport[];
	/**
	 * Tasks still open when the wait ended.
	 */
	pending: TaskId[];
}
/**
 * `status` parameters.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "StatusParams".
 */
export interface StatusParams {
	/**
	 * One agent id, or a message id (`shepherd-message-…`) for that message's receipt;
	 * absent means every sheep.
	 */
	id?: string | null;
}
/**
 * A sheep as `status` and `herd` show it.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "SheepStatus".
 */
export interface SheepStatus {
	/**
	 * Its id.
	 */
	agentId: AgentId;
	/**
	 * Its agent definition.
	 */
	agent: string;
	/**
	 * Its label.
	 */
	label: Label;
	/**
	 * `<agent>: <label>` or `<agent>`.
	 */
	displayName: string;
	/**
	 * Its backend.
	 */
	backend: BackendKind;
	/**
	 * `starting`, `idle`, `working`, `done`, `blocked`, `failed`, `exited`, `closing` or
	 * `closed`.
	 */
	state: string;
	/**
	 * Its working directory.
	 */
	cwd: string;
	/**
	 * When it was spawned (ms).
	 */
	createdAt: number;
	/**
	 * Its open task, or its last one.
	 */
	task?: TaskView | null;
	/**
	 * Why it failed or exited.
	 */
	error?: string | null;
	/**
	 * The sheep program's pid, while it is known.
	 */
	pid?: number | null;
	/**
	 * What runs it: `command`, `pi` or another coding agent's harness.
	 */
	runtime?: Runtime & string;
	/**
	 * The model it runs: the one its last run reported, else the one it was started with.
	 */
	model?: string | null;
	/**
	 * When its current state began (ms): spawned, became ready, started or settled its task,
	 * began or stopped working, ended, began closing; for a waiting task, since it waits.
	 */
	since?: number;
	/**
	 * Its pane (tmux `%N`, Herdr `w1:p3`), on a visible backend.
	 */
	pane?: string | null;
	/**
	 * The window or tab holding its pane.
	 */
	window?: string | null;
	/**
	 * What its runs cost so far, summed over its tasks, where its runtime reports it.
	 */
	usage?: Usage2 | null;
	/**
	 * The last line it printed, as far as the broker knows.
	 */
	lastLine?: string | null;
	/**
	 * Its git worktree (`path`, `branch`, and `host` when on a host), when it runs isolated.
	 */
	worktree?: WorktreePlace | null;
	/**
	 * How many times it was resumed.
	 */
	resumes?: number | null;
	/**
	 * The host it runs on (absent: this machine).
	 */
	host?: string | null;
	/**
	 * The sandbox it runs in (absent: not confined).
	 */
	sandbox?: Sandbox | null;
	/**
	 * The resource limits it runs with (absent: started before limits existed).
	 */
	limits?: Limits | null;
	/**
	 * How its supervisor applies them, and which it could not.
	 */
	limitsBy?: Enforcement | null;
	/**
	 * While its host cannot be reached: since when (ms). Its state is then what it was when
	 * the link went down, not what it is.
	 */
	linkDownSince?: number | null;
	/**
	 * The latest messages sent to it with their receipts, newest first (`status` of one
	 * sheep only).
	 */
	messages?: MessageReceipt[];
}
/**
 * A task as a sheep's status shows it.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "TaskView".
 */
export interface TaskView {
	/**
	 * The task.
	 */
	id: TaskId;
	/**
	 * Its state.
	 */
	state: TaskState;
	/**
	 * How long it has waited for a reply (ms).
	 */
	waitingMs?: number | null;
	/**
	 * The unanswered question.
	 */
	pendingRequest?: MessageId | null;
	/**
	 * Who should answer it (display name, or `shepherd`).
	 */
	waitingOn?: string | null;
	/**
	 * Set once the stale-wait reminder went out for this episode.
	 */
	stale?: boolean;
	/**
	 * The task text's first line.
	 */
	title?: string;
	/**
	 * When it was accepted (ms).
	 */
	createdAt?: number;
	/**
	 * When it was handed to the sheep (ms).
	 */
	startedAt?: number | null;
	/**
	 * The unanswered question's first line.
	 */
	question?: string | null;
	/**
	 * Its note (absolute), when fieldnotes are on.
	 */
	note?: string | null;
	/**
	 * Its limits, when it has any.
	 */
	budget?: Budget | null;
	/**
	 * What its sheep used of them so far.
	 */
	usage?: Usage | null;
	/**
	 * The stall watchdog, when it is on for this task.
	 */
	stall?: StallView | null;
	/**
	 * The provider limit it waits out, while it does.
	 */
	rateLimit?: LimitView | null;
}
/**
 * What a task has used so far.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "Usage".
 */
export interface Usage {
	/**
	 * Model turns.
	 */
	turns?: number;
	/**
	 * Tool calls.
	 */
	toolCalls?: number;
	/**
	 * Tokens, input, output and cache together.
	 */
	tokens?: number;
	/**
	 * Cost.
	 */
	cost?: number;
}
/**
 * The stall watchdog of a task as `status` shows it.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "StallView".
 */
export interface StallView {
	/**
	 * How long a silence may last (ms).
	 */
	afterMs: number;
	/**
	 * How long its sheep has been silent (ms).
	 */
	quietMs: number;
	/**
	 * Whether the one nudge went out.
	 */
	nudged: boolean;
}
/**
 * A task's limit as `status` and `herd` show it.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "LimitView".
 */
export interface LimitView {
	/**
	 * Rate limit, usage limit or server error.
	 */
	class: ErrorClass;
	/**
	 * The provider.
	 */
	provider: string;
	/**
	 * When the wait began (ms).
	 */
	since: number;
	/**
	 * When it is due to end (ms).
	 */
	until: number;
	/**
	 * Whether the reset passed and the sheep waits for its turn to go on.
	 */
	queued: boolean;
	/**
	 * Whether `until` is Shepherd's guess (the provider named no reset): a probe goes then.
	 */
	guessed?: boolean;
}
/**
 * Tokens and cost, as a sheep's runs reported them.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "Usage2".
 */
export interface Usage2 {
	/**
	 * Input tokens (with cache reads and writes).
	 */
	tokensIn: number;
	/**
	 * Output tokens.
	 */
	tokensOut: number;
	/**
	 * Tokens of the open task's turns so far (input, output and cache together, as each turn
	 * reports them); once the task settles, its run's record splits them into the two above.
	 */
	tokens?: number;
	/**
	 * Cost in the provider's currency units (USD for the usual providers).
	 */
	cost: number;
}
/**
 * What the supervisor could apply of a sheep's limits.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "Enforcement".
 */
export interface Enforcement {
	/**
	 * How they are applied.
	 */
	by: Mechanism;
	/**
	 * Limits that could not be applied as asked on that machine (not at all, or only per
	 * process or per user), and why, one line each.
	 */
	unapplied?: Unapplied[];
}
/**
 * A limit the machine could not apply as asked.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "Unapplied".
 */
export interface Unapplied {
	/**
	 * Which.
	 */
	resource: Resource;
	/**
	 * Why (one line).
	 */
	why: string;
}
/**
 * A message's receipt as `status` shows it.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "MessageReceipt".
 */
export interface MessageReceipt {
	/**
	 * The message.
	 */
	messageId: MessageId;
	/**
	 * Who sent it.
	 */
	sender: Participant;
	/**
	 * The sender's display name, or `shepherd`.
	 */
	senderName: string;
	/**
	 * Who it went to.
	 */
	target: Participant;
	/**
	 * The recipient's display name, or `shepherd`.
	 */
	targetName: string;
	/**
	 * The task it concerned.
	 */
	taskId?: TaskId | null;
	/**
	 * Its first line.
	 */
	preview: string;
	/**
	 * Where it is.
	 */
	state: ReceiptState;
	/**
	 * When it was queued (ms).
	 */
	sentAt: number;
	/**
	 * When it was handed to its recipient (ms).
	 */
	deliveredAt?: number | null;
	/**
	 * When its recipient acknowledged it (ms).
	 */
	readAt?: number | null;
}
/**
 * `herd` result, and the data of every pushed `herd` event.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "HerdResult".
 */
export interface HerdResult {
	/**
	 * Every sheep that is not closed, in spawn order.
	 */
	sheep: SheepStatus[];
	/**
	 * The broker's clock when the view was taken (ms), so a client can tell how old each
	 * state is without asking again.
	 */
	now?: number | null;
	/**
	 * Settled tasks, newest first (at most [`crate::herd::SETTLED_LISTED`]).
	 */
	settled?: SettledTask[];
	/**
	 * The fieldnotes session the herd's latest note went to.
	 */
	session?: SessionLink | null;
	/**
	 * The runs under way and the latest that ended (at most
	 * [`super::run::ENDED_RUNS_LISTED`] of those), oldest first.
	 */
	runs?: RunLine[];
}
/**
 * A settled task, as the herd lists it under its sheep.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "SettledTask".
 */
export interface SettledTask {
	/**
	 * The task.
	 */
	taskId: TaskId;
	/**
	 * Its sheep.
	 */
	agentId: AgentId;
	/**
	 * The sheep's display name.
	 */
	displayName: string;
	/**
	 * The task text's first line.
	 */
	title: string;
	/**
	 * How it settled.
	 */
	status: TaskState;
	/**
	 * Its return code.
	 */
	returnCode: number;
	/**
	 * The first line of its summary, or of what went wrong.
	 */
	outcome?: string | null;
	/**
	 * When it was handed over (else accepted) (ms).
	 */
	startedAt: number;
	/**
	 * When it settled (ms).
	 */
	completedAt: number;
	/**
	 * Its note (absolute), when fieldnotes are on.
	 */
	note?: string | null;
	/**
	 * The branch its isolated worktree left to land (once its sheep was closed or its run
	 * ended), which `merge.preview` and `merge.submit` take by name.
	 */
	branch?: string | null;
	/**
	 * Where a merge landed that branch, verified: `<target> at <short commit>`.
	 */
	landed?: string | null;
}
/**
 * The fieldnotes session the herd's latest note went to.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "SessionLink".
 */
export interface SessionLink {
	/**
	 * The session's name.
	 */
	name: string;
	/**
	 * Its directory relative to the project root.
	 */
	relative: string;
}
/**
 * A run as the herd view lists it: its steps and whether it is over, without its report.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "RunLine".
 */
export interface RunLine {
	/**
	 * The run.
	 */
	runId: string;
	/**
	 * `single`, `parallel` or `chain`.
	 */
	mode: Mode;
	/**
	 * Each task, in input order.
	 */
	steps: RunStepView[];
	/**
	 * Why it was cancelled, once it was.
	 */
	cancelled?: string | null;
	/**
	 * Whether it is over.
	 */
	finished?: boolean;
}
/**
 * One task of a run as its followers see it.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "RunStepView".
 */
export interface RunStepView {
	/**
	 * The agent.
	 */
	agent: string;
	/**
	 * `queued`, `starting`, `running`, `closing` or `done`.
	 */
	phase: StepPhase;
	/**
	 * Once done: `completed`, `failed`, `blocked`, `timed_out`, `cancelled` or `skipped`.
	 */
	status?: StepStatus | null;
	/**
	 * Its task, once delegated.
	 */
	taskId?: string | null;
	/**
	 * Its sheep, once spawned.
	 */
	agentId?: string | null;
	/**
	 * When it started (ms).
	 */
	startedAt?: number | null;
	/**
	 * When it finished (ms).
	 */
	finishedAt?: number | null;
	/**
	 * The provider limit its task waits out, while it does (`rate-limited until …`).
	 */
	rateLimit?: LimitView | null;
	/**
	 * The fallback its task went on with after a limit, once it did: the fallback's display
	 * name and its provider, with the account when a `credential:` gave it one (`worker
	 * (fallback, claude-code, WORK_ANTHROPIC_KEY): fix-login (anthropic, account
	 * WORK_ANTHROPIC_KEY)`).
	 */
	fellBackTo?: string | null;
	/**
	 * The host its sheep runs on, when not this machine (its own, the run's or its
	 * definition's; a definition's once its sheep is spawned).
	 */
	host?: string | null;
}
/**
 * `close` parameters.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "CloseParams".
 */
export interface CloseParams {
	/**
	 * The agent id.
	 */
	id: string;
	/**
	 * End the sheep but leave its pane open for inspection (visible backends).
	 */
	keepPane?: boolean;
}
/**
 * `close` result.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "CloseResult".
 */
export interface CloseResult {
	/**
	 * The sheep.
	 */
	agentId: AgentId;
	/**
	 * Its display name.
	 */
	displayName: string;
	/**
	 * The task the close cancelled.
	 */
	cancelled?: TaskReport | null;
	/**
	 * What became of an isolated sheep's worktree: removed, or kept with its patch (files,
	 * diffstat, commits) to integrate or discard.
	 */
	worktree?: WorktreeReport | null;
}
/**
 * What became of an isolated remote sheep's worktree: its commits brought home (or not), and
 * its worktree on the host removed (or kept, and why).
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "RemoteWorktreeReport".
 */
export interface RemoteWorktreeReport {
	/**
	 * The host.
	 */
	host: string;
	/**
	 * The worktree on the host.
	 */
	path: string;
	/**
	 * Its branch (here too, once brought home).
	 */
	branch: string;
	/**
	 * The commit it started from.
	 */
	base: string;
	/**
	 * Whether the worktree is still on the host.
	 */
	kept: boolean;
	/**
	 * Why it was kept.
	 */
	reason?: string | null;
	/**
	 * Its commits, `<short hash> <subject>`, oldest first.
	 */
	commits?: string[];
	/**
	 * Whether its commits are on its branch here.
	 */
	broughtHome: boolean;
	/**
	 * How to integrate or discard it.
	 */
	integrate: string;
}
/**
 * What became of a worktree on this machine.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "LocalWorktreeReport".
 */
export interface LocalWorktreeReport {
	/**
	 * The worktree's directory.
	 */
	path: string;
	/**
	 * Its branch.
	 */
	branch: string;
	/**
	 * The commit it started from.
	 */
	base: string;
	/**
	 * Whether it is still there.
	 */
	kept: boolean;
	/**
	 * Why it was kept (absent when it was removed).
	 */
	reason?: string | null;
	/**
	 * Every file changed, added or left untracked, relative to the worktree.
	 */
	files?: string[];
	/**
	 * `git diff --shortstat` against the base, with untracked files counted.
	 */
	diffstat?: string;
	/**
	 * The new commits, `<short hash> <subject>`, oldest first.
	 */
	commits?: string[];
	/**
	 * How to integrate or discard it.
	 */
	integrate?: string;
	/**
	 * The ref its uncommitted changes were committed to when its sheep was closed
	 * (`refs/shepherd/preserved/<owner>`, a commit on top of its branch), so removing the
	 * worktree lost nothing.
	 */
	preserved?: string | null;
	/**
	 * The branch the project had checked out when it was made: where its work lands by
	 * default.
	 */
	baseBranch?: string | null;
}
/**
 * `resume` parameters: reopen a closed or exited sheep on its own session.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "ResumeParams".
 */
export interface ResumeParams {
	/**
	 * The sheep's agent id.
	 */
	id: string;
	/**
	 * `auto`, `headless`, `tmux` or `herdr` (default: where it ran before).
	 */
	backend?: Backend | null;
	/**
	 * Where the caller runs, so a visible sheep finds its terminal.
	 */
	caller?: CallerContext | null;
}
/**
 * Parameters of a method that takes none.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "NoParams".
 */
export interface NoParams {}
/**
 * `resolve` parameters.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "ResolveParams".
 */
export interface ResolveParams {
	/**
	 * Sheep or task.
	 */
	kind: ResolveKind;
	/**
	 * What the person typed.
	 */
	text: string;
}
/**
 * `resolve` result: the full id, or none when nothing in the herd is called that (the caller
 * then sends the text as it is, for the request's own error). Several matches are an
 * `ambiguous_id` error listing them.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "ResolveResult".
 */
export interface ResolveResult {
	/**
	 * The full id.
	 */
	id?: string | null;
}
/**
 * `herd.mates` result: what a sheep may see of its herd.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "HerdMatesResult".
 */
export interface HerdMatesResult {
	/**
	 * The sheep that asked.
	 */
	agentId: AgentId;
	/**
	 * Every sheep of the herd that is not closed, itself included, in spawn order.
	 */
	mates: HerdMate[];
}
/**
 * One sheep as a herd-mate sees it.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "HerdMate".
 */
export interface HerdMate {
	/**
	 * Its id: what `tell` and `shepherd_message` take (its display name works too).
	 */
	agentId: AgentId;
	/**
	 * `<agent>: <label>` or `<agent>`.
	 */
	displayName: string;
	/**
	 * Its agent definition.
	 */
	agent: string;
	/**
	 * Its label.
	 */
	label: Label;
	/**
	 * What runs it: `command`, `pi` or another coding agent's harness.
	 */
	runtime: Runtime;
	/**
	 * `starting`, `idle`, `working`, `done`, `blocked`, `failed`, `exited` or `closing`.
	 */
	state: string;
	/**
	 * When its current state began (ms).
	 */
	since: number;
	/**
	 * Whether this entry is the sheep that asked.
	 */
	isSelf?: boolean;
}
/**
 * `prune` result.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "PruneResult".
 */
export interface PruneResult {
	/**
	 * Records dropped.
	 */
	pruned: number;
	/**
	 * Records kept.
	 */
	remaining: number;
}
/**
 * `read` parameters.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "ReadParams".
 */
export interface ReadParams {
	/**
	 * An agent id, a display name or a pane id.
	 */
	target: string;
	/**
	 * How many lines (default 40).
	 */
	lines?: number | null;
	/**
	 * `visible`, `recent`, `recent-unwrapped` or `detection`.
	 */
	source?: ReadSource | null;
}
/**
 * `read` result.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "ReadResult".
 */
export interface ReadResult {
	/**
	 * The target as resolved.
	 */
	target: string;
	/**
	 * The source read.
	 */
	source: ReadSource;
	/**
	 * Lines asked for.
	 */
	lines: number;
	/**
	 * The text.
	 */
	text: string;
}
/**
 * The answer of requests that only acknowledge (`ack`, `subscribe`, `report`,
 * `supervisor.started`, `supervisor.exited`).
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "OkResult".
 */
export interface OkResult {
	/**
	 * Always true.
	 */
	ok: boolean;
	/**
	 * For `report` of a `turn`: the budget limit the task has reached, when it has; the sheep
	 * must stop.
	 */
	stop?: string | null;
}
/**
 * `inbox` parameters.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "InboxParams".
 */
export interface InboxParams {
	/**
	 * How long to wait for the first item (ms); 0 answers at once.
	 */
	waitMs?: number;
}
/**
 * `inbox` result, and the data of an `inbox` push.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "InboxResult".
 */
export interface InboxResult {
	/**
	 * Unacknowledged items, oldest first.
	 */
	items: InboxItem[];
}
/**
 * One message between participants of a herd.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "Envelope".
 */
export interface Envelope {
	/**
	 * Always [`SCHEMA_VERSION`].
	 */
	schemaVersion: number;
	/**
	 * This envelope's id.
	 */
	messageId: MessageId;
	/**
	 * What it carries.
	 */
	kind: Kind;
	/**
	 * Who sent it (for relayed replies: the relaying participant).
	 */
	senderId: Participant;
	/**
	 * Whose inbox it is in.
	 */
	targetId: Participant;
	/**
	 * The task it concerns.
	 */
	taskId?: TaskId | null;
	/**
	 * A caller-chosen conversation thread.
	 */
	threadId?: string | null;
	/**
	 * The message this one answers.
	 */
	replyTo?: MessageId | null;
	/**
	 * Whether the sender waits for a reply.
	 */
	expectsReply?: boolean;
	/**
	 * When an expected reply is due (ms since the epoch).
	 */
	deadlineAt?: number | null;
	/**
	 * Follow-up or steer.
	 */
	delivery: Delivery;
	/**
	 * The text.
	 */
	content?: string | null;
	/**
	 * A completion status, for envelopes that report one.
	 */
	status?: DoneStatus | null;
	/**
	 * The true author of a relayed reply.
	 */
	originSenderId?: Participant | null;
	/**
	 * For a task with a note: the note's absolute path (also in the content's context block),
	 * so a program can find it without reading the block.
	 */
	note?: string | null;
	/**
	 * When the broker accepted it (ms since the epoch).
	 */
	createdAt: number;
}
/**
 * A stale-wait reminder's facts.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "StaleWait".
 */
export interface StaleWait {
	/**
	 * The waiting task.
	 */
	taskId: TaskId;
	/**
	 * Its sheep.
	 */
	agentId: AgentId;
	/**
	 * Its sheep's display name.
	 */
	displayName: string;
	/**
	 * The task text.
	 */
	description: string;
	/**
	 * Since when it waits (ms).
	 */
	waitingSince: number;
	/**
	 * How long it has waited (ms).
	 */
	elapsedMs: number;
	/**
	 * The unanswered question's id.
	 */
	requestId: MessageId;
	/**
	 * The question.
	 */
	question: string;
	/**
	 * Who should answer.
	 */
	recipient: Participant;
	/**
	 * The recipient's display name (or `shepherd`).
	 */
	recipientName: string;
	/**
	 * The threshold that was crossed (minutes).
	 */
	thresholdMinutes: number;
}
/**
 * A notice for the parent.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "Notice".
 */
export interface Notice {
	/**
	 * What it is about.
	 */
	notice: NoticeKind;
	/**
	 * One human-readable paragraph.
	 */
	text: string;
	/**
	 * The sheep concerned.
	 */
	agentId?: AgentId | null;
	/**
	 * The task concerned.
	 */
	taskId?: TaskId | null;
}
/**
 * `ack` parameters.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "AckParams".
 */
export interface AckParams {
	/**
	 * Acknowledge every item up to and including this sequence number.
	 */
	seq: number;
}
/**
 * `done` parameters.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "DoneParams".
 */
export interface DoneParams {
	/**
	 * Completed, blocked or failed.
	 */
	status: DoneStatus;
	/**
	 * What was done, or why not.
	 */
	summary?: string | null;
	/**
	 * The task (optional: inferred from the sheep's open task).
	 */
	taskId?: string | null;
}
/**
 * `done` result.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "DoneResult".
 */
export interface DoneResult {
	/**
	 * Always true when no error is returned.
	 */
	accepted: boolean;
	/**
	 * The task settled.
	 */
	taskId: TaskId;
	/**
	 * Its state now.
	 */
	status: TaskState;
	/**
	 * Whether the task had already settled (the stored result stands).
	 */
	duplicate?: boolean;
	/**
	 * The task id the sheep named, when it named another one.
	 */
	suppliedTaskId?: string | null;
}
/**
 * `report` parameters.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "ReportParams".
 */
export interface ReportParams {
	/**
	 * What happened.
	 */
	event: ReportEvent;
	/**
	 * For `turn`: what the turn used (its tool calls, tokens and cost; `turns` counts 1).
	 */
	usage?: Usage | null;
	/**
	 * For `run_settled`: pi's stop reason. For `turn`: `error` when the turn's response was a
	 * provider's refusal (no model response, so no sign the provider takes requests again).
	 */
	stopReason?: string | null;
	/**
	 * For `run_settled` ending on a limit: the wait the agent's own last retry announced (ms),
	 * taken as the limit's reset when its error names none.
	 */
	retryAfterMs?: number | null;
	/**
	 * For `ridden_out`: a limit the agent rode out with its own retries.
	 */
	riddenOut?: RiddenOut | null;
	/**
	 * For `run_settled`: the error that ended the run.
	 */
	error?: string | null;
	/**
	 * For `run_settled`: the run's final assistant text.
	 */
	text?: string | null;
	/**
	 * The sheep's session file, when it has one.
	 */
	sessionFile?: string | null;
	/**
	 * For `run_settled` of an agent other than pi: what the task's turns cost, as note
	 * metadata (model, turns, tool calls, tokens, cost, run time, the agent's session and
	 * transcript).
	 */
	telemetry?: unknown;
}
/**
 * A limit an agent rode out with its own retries, as its output showed it: the herd records it
 * as an episode of the task.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "RiddenOut".
 */
export interface RiddenOut {
	/**
	 * Rate limit, usage limit or server error.
	 */
	class: ErrorClass;
	/**
	 * When its first refusal was seen (ms).
	 */
	since: number;
	/**
	 * How long the agent waited in all (ms).
	 */
	waitedMs: number;
	/**
	 * How many refusals it retried.
	 */
	replies: number;
}
/**
 * `supervisor.started` parameters.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "SupervisorStarted".
 */
export interface SupervisorStarted {
	/**
	 * The sheep program's pid (also its process group).
	 */
	pid: number;
	/**
	 * The supervisor's own pid.
	 */
	supervisor_pid: number;
	/**
	 * How the sheep's resource limits are applied, and which could not be.
	 */
	limits?: Enforcement | null;
}
/**
 * `supervisor.exited` parameters.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "SupervisorExited".
 */
export interface SupervisorExited {
	/**
	 * Exit code.
	 */
	code?: number | null;
	/**
	 * Terminating signal.
	 */
	signal?: number | null;
	/**
	 * Why, when the program could not even start.
	 */
	error?: string | null;
	/**
	 * The end of its output.
	 */
	tail?: string;
	/**
	 * The resource whose limit stopped it, when one did.
	 */
	stopped_by?: Resource | null;
}
/**
 * `focus` parameters.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "FocusParams".
 */
export interface FocusParams {
	/**
	 * An agent id.
	 */
	id: string;
	/**
	 * Where the caller runs, so its own terminal client is the one switched.
	 */
	caller?: CallerContext | null;
}
/**
 * `focus` result.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "FocusResult".
 */
export interface FocusResult {
	/**
	 * The sheep.
	 */
	agentId: AgentId;
	/**
	 * Its display name.
	 */
	displayName: string;
	/**
	 * Its backend.
	 */
	backend: BackendKind;
	/**
	 * The pane brought to the front.
	 */
	pane: string;
}
/**
 * `broker.status` result.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "BrokerStatus".
 */
export interface BrokerStatus {
	/**
	 * The broker's id.
	 */
	brokerId: string;
	/**
	 * The parent identity it serves.
	 */
	parentIdentity: string;
	/**
	 * The canonical project root.
	 */
	projectRoot: string;
	/**
	 * Its pid.
	 */
	pid: number;
	/**
	 * Its socket.
	 */
	socket: string;
	/**
	 * Its journal.
	 */
	journal: string;
	/**
	 * When it started (ms).
	 */
	startedAt: number;
	/**
	 * Connected clients.
	 */
	clients: number;
	/**
	 * Sheep still holding processes.
	 */
	liveSheep: number;
	/**
	 * Open tasks.
	 */
	openTasks: number;
	/**
	 * The parents connected now (the asking connection left out): who drives the herd.
	 */
	parents?: ParentConnection[];
	/**
	 * `shepherd notes` changes made through this broker (`notes.write`) since it started.
	 */
	notesWritten?: number;
	/**
	 * The links to hosts it keeps (one SSH master connection each), by host name.
	 */
	links?: HostLinkStatus[];
}
/**
 * One parent connection of a broker.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "ParentConnection".
 */
export interface ParentConnection {
	/**
	 * The client's own name (`cli`, `pi`, `mcp`, `dash`, …).
	 */
	client?: string | null;
	/**
	 * The connecting process, as the kernel reports it.
	 */
	pid?: number | null;
	/**
	 * The program it speaks for (an MCP host), when it said.
	 */
	driver?: Driver | null;
}
/**
 * One host link a broker keeps, as `shepherd hosts` shows it.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "HostLinkStatus".
 */
export interface HostLinkStatus {
	/**
	 * The host's name.
	 */
	host: string;
	/**
	 * Whether its SSH master connection is up and the host's `shepherd` answered.
	 */
	up: boolean;
	/**
	 * Since when it has been down (ms), when it was up before.
	 */
	downSince?: number | null;
	/**
	 * Why the last attempt to connect failed.
	 */
	error?: string | null;
}
/**
 * `broker.stop` result.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "StopResult".
 */
export interface StopResult {
	/**
	 * Always true: the broker is going down.
	 */
	stopping: boolean;
	/**
	 * Sheep closed on the way.
	 */
	closed: number;
	/**
	 * Why each sheep that could not be closed was not.
	 */
	failed: string[];
}
/**
 * `run.submit` parameters.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "RunSubmitParams".
 */
export interface RunSubmitParams {
	/**
	 * `single`, `parallel` or `chain`.
	 */
	mode: Mode;
	/**
	 * The tasks, in input order.
	 */
	steps: RunStepParams[];
	/**
	 * Continue (or create) the fieldnotes session with this exact name.
	 */
	sessionName?: string | null;
	/**
	 * Minutes each task may take (default: the `timeout` setting).
	 */
	timeout?: number | null;
	/**
	 * Limits on each task (over the definition's own, key by key).
	 */
	budget?: Budget | null;
	/**
	 * Where sheep run (default: the `backend` setting).
	 */
	backend?: Backend | null;
	/**
	 * The host every step's sheep runs on unless the step names its own.
	 */
	host?: string | null;
	/**
	 * Confine every step's sheep at least this much (a plan's or a tool's `sandbox`: it only
	 * tightens what the definition and the setting give).
	 */
	sandbox?: Sandbox | null;
	/**
	 * The person's own `--sandbox` at the command line, which may also loosen it (the CLI
	 * alone sends it).
	 */
	userSandbox?: Sandbox | null;
	/**
	 * The parent's model, inherited by pi sheep whose definition names none.
	 */
	parentModel?: string | null;
	/**
	 * The parent's thinking level, inherited likewise (a level this Shepherd does not know is
	 * dropped, so the sheep runs at its agent's default).
	 */
	parentThinking?: ThinkingLevel | null;
	/**
	 * Where the caller runs.
	 */
	caller?: CallerContext | null;
	/**
	 * The command that runs pi for pi sheep (the parent's own pi); `SHEPHERD_PI` wins.
	 */
	piCommand?: string[] | null;
	/**
	 * Keep the run going when no client follows it (otherwise it is cancelled once its
	 * client has been gone for a few seconds).
	 */
	detach?: boolean;
}
/**
 * One task of a run, as submitted.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "RunStepParams".
 */
export interface RunStepParams {
	/**
	 * The agent definition's exact name.
	 */
	agent: string;
	/**
	 * The task (chain steps may use `{previous}`).
	 */
	task: string;
	/**
	 * Its working directory, absolute (default: the project root).
	 */
	cwd?: string | null;
	/**
	 * Run it in its own git worktree.
	 */
	isolate?: boolean;
	/**
	 * A label for its sheep.
	 */
	label?: string | null;
	/**
	 * The coding agent to run it on, instead of the definition's own harness.
	 */
	harness?: Harness | null;
	/**
	 * The host its sheep runs on (a host the user defined; default: the run's, else the
	 * definition's, else this machine).
	 */
	host?: string | null;
	/**
	 * Limits on this task (over the run's and the definition's, key by key).
	 */
	budget?: Budget | null;
}
/**
 * A run as its followers see it: pushed (`run` event) whenever it changes, and the answer to
 * `run.submit` and `run.attach`.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "RunView".
 */
export interface RunView {
	/**
	 * The run.
	 */
	runId: string;
	/**
	 * `single`, `parallel` or `chain`.
	 */
	mode: Mode;
	/**
	 * Whether it goes on without a client.
	 */
	detach?: boolean;
	/**
	 * Its fieldnotes session, once its notes are reserved.
	 */
	sessionName?: string | null;
	/**
	 * The session directory relative to the project root.
	 */
	sessionRelativePath?: string | null;
	/**
	 * Each task, in input order.
	 */
	steps: RunStepView[];
	/**
	 * Why it was cancelled, once it was.
	 */
	cancelled?: string | null;
	/**
	 * The final report (the `shepherd run --json` document), once finished.
	 */
	report?: RunReport | null;
}
/**
 * The report of a finished run.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "RunReport".
 */
export interface RunReport {
	/**
	 * The run.
	 */
	runId: string;
	/**
	 * `single`, `parallel` or `chain`.
	 */
	mode: Mode;
	/**
	 * The fieldnotes session (null when the run wrote no notes).
	 */
	sessionName?: string | null;
	/**
	 * Its directory.
	 */
	sessionPath?: string | null;
	/**
	 * Its directory relative to the project root.
	 */
	sessionRelativePath?: string | null;
	/**
	 * Whether the run continued an existing session.
	 */
	resumed?: boolean;
	/**
	 * Each task's result, in input order.
	 */
	results: RunResult[];
	/**
	 * Tasks that completed.
	 */
	succeeded: number;
	/**
	 * All tasks.
	 */
	total: number;
	/**
	 * For a chain that stopped: which step, and how it ended.
	 */
	stopped?: Stopped | null;
	/**
	 * Whether the run was cancelled (a signal, an explicit cancel, or its client gone).
	 */
	interrupted?: boolean;
	/**
	 * Why it was cancelled.
	 */
	cancelled?: string | null;
	/**
	 * The exit status `shepherd run` gives it: the return code of the first task, in input
	 * order, that did not complete; 0 when all did, 130 when the run was cancelled.
	 */
	exitCode: number;
	/**
	 * Branches with work to land (`shepherd merge`) or discard — a task's commits and the
	 * changes preserved when its sheep closed, a worktree kept, a remote sheep's branch brought
	 * home (absent when none).
	 */
	worktrees?: WorktreeReport[];
	/**
	 * Problems that did not change any result (e.g. a note that could not be finalised).
	 */
	warnings?: string[];
}
/**
 * One task's result.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "RunResult".
 */
export interface RunResult {
	/**
	 * The agent definition.
	 */
	agent: string;
	/**
	 * The host its sheep ran on (absent: this machine).
	 */
	host?: string | null;
	/**
	 * Its sheep, once spawned.
	 */
	agentId?: string | null;
	/**
	 * Its task, once delegated.
	 */
	taskId?: string | null;
	/**
	 * A task state (`completed`, `failed`, `blocked`, `timed_out`, `cancelled`) or `skipped`.
	 */
	status: StepStatus;
	/**
	 * Its return code.
	 */
	returnCode?: number | null;
	/**
	 * The result text, cut at 50 KiB (`fullOutput` then names the file holding all of it).
	 */
	text: string;
	/**
	 * What went wrong, when something did.
	 */
	error?: string | null;
	/**
	 * Its note.
	 */
	note?: string | null;
	/**
	 * Its note relative to the project root.
	 */
	noteRelative?: string | null;
	/**
	 * The file holding the whole text, when it was cut.
	 */
	fullOutput?: string | null;
	/**
	 * What became of its worktree, when it ran isolated.
	 */
	worktree?: WorktreeReport | null;
}
/**
 * Where a chain stopped.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "Stopped".
 */
export interface Stopped {
	/**
	 * 1-based step number.
	 */
	step: number;
	/**
	 * Its agent definition.
	 */
	agent: string;
	/**
	 * How it ended.
	 */
	status: StepStatus;
	/**
	 * `failed (rc 1)`.
	 */
	phrase: string;
}
/**
 * `run.attach` and `run.cancel` parameters.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "RunIdParams".
 */
export interface RunIdParams {
	/**
	 * The run.
	 */
	runId: string;
}
/**
 * `merge.submit` and `merge.preview` parameters.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "MergeParams".
 */
export interface MergeParams {
	/**
	 * What to land, in order: run ids (`run-…`: the run's branches in its input order), sheep
	 * (agent ids: the branch each one's worktree left) and branch names (`shepherd/…`).
	 */
	targets?: string[];
	/**
	 * Every branch of this fieldnotes session not landed yet, after the targets.
	 */
	session?: string | null;
	/**
	 * Of those, only these (branches or agent ids).
	 */
	only?: string[];
	/**
	 * Of those, all but these (branches or agent ids).
	 */
	skip?: string[];
	/**
	 * Also land branches whose sheep's last task did not complete (each is marked).
	 */
	includeFailed?: boolean;
	/**
	 * The branch to land into (made from the branches' base branch when missing); default:
	 * the branch the project had checked out when their work began.
	 */
	into?: string | null;
	/**
	 * How each branch lands (default: the `mergeStrategy` setting).
	 */
	strategy?: Strategy | null;
	/**
	 * A shell command that must pass in the merge worktree after each merge.
	 */
	check?: string | null;
	/**
	 * Minutes the check may run (default: the `mergeCheckTimeout` setting).
	 */
	checkTimeout?: number | null;
	/**
	 * An agent definition whose sheep resolves a conflict; without it a conflict stops the
	 * queue.
	 */
	resolve?: string | null;
	/**
	 * An agent definition whose sheep fixes what makes the check fail; without it a failing
	 * check leaves the branch unlanded.
	 */
	fix?: string | null;
	/**
	 * How many fixers a failing check gets at most (default 2).
	 */
	fixAttempts?: number | null;
	/**
	 * Delete each landed branch and its preserved changes once it landed.
	 */
	prune?: boolean;
	/**
	 * Discard the branches instead of landing them (their branches and preserved changes go).
	 */
	discard?: boolean;
	/**
	 * The caller's terminal, for a resolver or fixer in a pane.
	 */
	caller?: CallerContext | null;
	/**
	 * `merge.preview` only: each branch's patch as well (at most
	 * [`preview::PATCH_LIMIT`] bytes of it), for a page that shows the diff.
	 */
	patch?: boolean;
}
/**
 * A merge as its followers see it: pushed (`merge` event) whenever it changes, and the answer
 * to `merge.submit`, `merge.attach` and `merge.cancel`.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "MergeView".
 */
export interface MergeView {
	/**
	 * The merge.
	 */
	mergeId: string;
	/**
	 * The branch it lands into.
	 */
	target: string;
	/**
	 * How each branch lands.
	 */
	strategy?: Strategy & string;
	/**
	 * Whether it throws the branches away instead.
	 */
	discard?: boolean;
	/**
	 * The check that gates each step, when there is one.
	 */
	check?: string | null;
	/**
	 * Each branch, in order.
	 */
	branches: BranchLanding[];
	/**
	 * The merge landing into the same branch that this one waits for, while it does.
	 */
	waitingFor?: string | null;
	/**
	 * Why it was cancelled, once it was.
	 */
	cancelled?: string | null;
	/**
	 * Whether it is over.
	 */
	finished?: boolean;
	/**
	 * Once over: 0 when every branch landed (or was discarded), 1 when a check failed, 2 when
	 * a conflict was not resolved, a result was rejected or a step was refused, 130 when it
	 * was cancelled.
	 */
	exitCode?: number | null;
}
/**
 * One branch of a merge.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "BranchLanding".
 */
export interface BranchLanding {
	/**
	 * The branch.
	 */
	branch: string;
	/**
	 * What is merged: the branch, or the changes preserved on top of it at close.
	 */
	landingRef: string;
	/**
	 * The sheep whose work it is (display name), when known.
	 */
	owner?: string | null;
	/**
	 * That sheep's note, relative to the project, when known.
	 */
	note?: string | null;
	/**
	 * How that sheep's last task ended, when it did not complete (it lands only with
	 * `includeFailed`).
	 */
	taskStatus?: string | null;
	/**
	 * Where it stands.
	 */
	state: BranchState;
	/**
	 * The target's commit that landed it.
	 */
	commit?: string | null;
	/**
	 * Its conflict, when its merge had one.
	 */
	conflict?: ConflictView | null;
	/**
	 * How the check ended when it failed (`exit 3`, `stopped after 30 s`).
	 */
	checkStatus?: string | null;
	/**
	 * The end of the check's output, when the check failed.
	 */
	checkOutput?: string | null;
	/**
	 * The sheep that resolved (or tried to resolve) its conflict.
	 */
	resolver?: ResolverView | null;
	/**
	 * The sheep that tried to fix its failing check, in turn.
	 */
	fixers?: ResolverView[];
	/**
	 * Why it did not land, or how it was found landed, in one line.
	 */
	why?: string | null;
}
/**
 * A merge that stopped on conflicts: the files and the conflicting hunks.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "ConflictView".
 */
export interface ConflictView {
	/**
	 * The files with conflicts, relative to the repository.
	 */
	files: string[];
	/**
	 * The conflicting hunks (`git diff` of the unmerged files), cut at 8 KiB.
	 */
	hunks: string;
}
/**
 * A sheep the queue handed a branch's step to: a resolver (a conflict) or a fixer (a failing
 * check).
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "ResolverView".
 */
export interface ResolverView {
	/**
	 * Its agent id.
	 */
	agentId: string;
	/**
	 * Its display name (`claude-resolver (resolver): fix-login`).
	 */
	displayName?: string | null;
	/**
	 * Its task.
	 */
	taskId?: string | null;
	/**
	 * How its task ended (`completed`, `blocked`, …), once it did.
	 */
	status?: string | null;
	/**
	 * What it said.
	 */
	summary?: string | null;
	/**
	 * Its note, relative to the project.
	 */
	note?: string | null;
}
/**
 * `merge.attach` and `merge.cancel` parameters.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "MergeIdParams".
 */
export interface MergeIdParams {
	/**
	 * The merge.
	 */
	mergeId: string;
}
/**
 * A merge as it would go.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "MergePreview".
 */
export interface MergePreview {
	/**
	 * The branch it would land into.
	 */
	target: string;
	/**
	 * Whether that branch would be made (from `from`).
	 */
	createdFrom?: string | null;
	/**
	 * How each branch would land.
	 */
	strategy: Strategy;
	/**
	 * The check that would gate each step.
	 */
	check?: string | null;
	/**
	 * Each branch, in order.
	 */
	branches: BranchPreview[];
}
/**
 * One branch as the merge would take it.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "BranchPreview".
 */
export interface BranchPreview {
	/**
	 * The branch.
	 */
	branch: string;
	/**
	 * What would be merged: the branch, or the changes preserved on top of it.
	 */
	landingRef: string;
	/**
	 * Whose work it is (display name).
	 */
	owner?: string | null;
	/**
	 * How its sheep's last task ended, when it did not complete.
	 */
	taskStatus?: string | null;
	/**
	 * Whether the merge would try it (it is not left out).
	 */
	lands: boolean;
	/**
	 * Why it would not be tried, or how it stands (already landed at …).
	 */
	why?: string | null;
	/**
	 * Its commits the target does not hold, oldest first.
	 */
	commits?: CommitLine[];
	/**
	 * `git diff --stat` of what it would bring.
	 */
	diffstat?: string;
	/**
	 * The files it conflicts in with the target as the queue would find it.
	 */
	conflicts?: string[];
	/**
	 * The files it conflicts in with the target as it is now (before the queue lands
	 * anything).
	 */
	conflictsWithTarget?: string[];
	/**
	 * The branches before it in the queue it conflicts with.
	 */
	conflictsWith?: PairConflict[];
	/**
	 * What it would bring as a patch (`git diff` from where it forked), when the preview was
	 * asked for it; cut at [`PATCH_LIMIT`] bytes, on a line's end.
	 */
	patch?: string | null;
	/**
	 * Whether `patch` was cut short.
	 */
	patchCut?: boolean;
}
/**
 * One commit of a branch.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "CommitLine".
 */
export interface CommitLine {
	/**
	 * Its id.
	 */
	commit: string;
	/**
	 * Its subject.
	 */
	subject: string;
}
/**
 * A branch landed earlier in the same queue that one conflicts with.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "PairConflict".
 */
export interface PairConflict {
	/**
	 * The other branch.
	 */
	branch: string;
	/**
	 * The files both change in ways that conflict.
	 */
	files: string[];
}
/**
 * Parameters of `notes.write`.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "NotesWriteParams".
 */
export interface NotesWriteParams {
	/**
	 * Where the change goes.
	 */
	session: NotesSession;
	/**
	 * The change.
	 */
	change: NoteChange;
}
/**
 * What `notes.write` did, once it is durable.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "NotesWriteResult".
 */
export interface NotesWriteResult {
	/**
	 * The session's directory name.
	 */
	directory: string;
	/**
	 * The session's name.
	 */
	sessionName: string;
	/**
	 * Whether an existing session was continued (`false`: created by this change).
	 */
	resumed: boolean;
	/**
	 * The note the change made or changed, as committed.
	 */
	note?: unknown;
	/**
	 * The related link a `link` change attached.
	 */
	related?: unknown;
}
/**
 * The data of a `terminate` push (broker → supervisor).
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "TerminateData".
 */
export interface TerminateData {
	/**
	 * How long the program has after SIGTERM before SIGKILL (ms).
	 */
	graceMs: number;
}
/**
 * One request line.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "Request".
 */
export interface Request {
	/**
	 * Echoed in the response.
	 */
	id: number;
	/**
	 * The method name.
	 */
	method: string;
	/**
	 * Method parameters (an object; absent means `{}`).
	 */
	params?: unknown;
	/**
	 * A client-chosen id for a request that changes state. A request resent with the same id
	 * (after a lost answer or a broker restart) is applied once and answered as the first time.
	 */
	requestId?: string | null;
}
/**
 * An error body.
 *
 * This interface was referenced by `ShepherdProtocol`'s JSON-Schema
 * via the `definition` "WireError".
 */
export interface WireError {
	/**
	 * Stable machine code.
	 */
	code: ErrorCode;
	/**
	 * One human line.
	 */
	message: string;
}
