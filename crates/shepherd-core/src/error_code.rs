//! Every error Shepherd can report, in one catalogue.
//!
//! The broker sends a stable code with each refusal, the CLI prints it with `--json` and picks
//! its exit status from it, the MCP front end hands it to the model, and scripts branch on it.
//! A code that exists only as a string literal somewhere can drift, be misspelt or be missed
//! by the documentation; here each one is a variant with its stable wire string, the exit
//! status a command ends with when it fails that way, what it means, and, where there is
//! something useful to say, a `hint:` line telling the person what to do instead.
//! `docs/errors.md` lists the same table, and a test keeps the two in step.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Exit status of a command line that was malformed (as clap uses for usage errors).
pub const EXIT_USAGE: u8 = 2;
/// Exit status when the broker could not be reached or did not answer in time
/// (`EX_UNAVAILABLE`).
pub const EXIT_UNAVAILABLE: u8 = 69;
/// Exit status of every other failure.
pub const EXIT_FAILURE: u8 = 1;

macro_rules! catalogue {
    ($(
        $(#[doc = $doc:literal])+
        $variant:ident = $code:literal, exit $exit:expr, hint $hint:expr;
    )+) => {
        /// One kind of failure, as every front end reports it.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[non_exhaustive]
        pub enum ErrorCode {
            $( $(#[doc = $doc])+ $variant, )+
        }

        impl ErrorCode {
            /// Every code, in catalogue order.
            pub const ALL: &'static [ErrorCode] = &[$(ErrorCode::$variant),+];

            /// The stable string sent on the wire and printed with `--json`.
            #[must_use]
            pub const fn as_str(self) -> &'static str {
                match self { $(ErrorCode::$variant => $code,)+ }
            }

            /// The exit status of a command that fails this way.
            #[must_use]
            pub const fn exit_status(self) -> u8 {
                match self { $(ErrorCode::$variant => $exit,)+ }
            }

            /// What to do about it, when there is something useful to say.
            #[must_use]
            pub const fn hint(self) -> Option<&'static str> {
                match self { $(ErrorCode::$variant => $hint,)+ }
            }

            /// What the code means (its documentation, one paragraph).
            #[must_use]
            pub fn meaning(self) -> String {
                let lines: &[&str] = match self { $(ErrorCode::$variant => &[$($doc),+],)+ };
                lines.iter().map(|line| line.trim()).collect::<Vec<_>>().join(" ")
            }
        }
    };
}

catalogue! {
    // --- The command line and its environment -------------------------------------------
    /// A command-line argument is malformed or missing.
    InvalidArgument = "invalid_argument", exit EXIT_USAGE, hint None;
    /// An MCP tool was called with arguments it cannot use.
    InvalidArguments = "invalid_arguments", exit EXIT_USAGE, hint Some("Check the tool's argument descriptions and call it again.");
    /// An environment variable Shepherd reads holds a value it cannot use.
    InvalidEnvironment = "invalid_environment", exit EXIT_USAGE, hint None;
    /// The user's directories (home, runtime, state) cannot be worked out.
    Environment = "environment", exit EXIT_FAILURE, hint Some("Set HOME (and XDG_RUNTIME_DIR where the system provides one).");
    /// `--parent-session` is not a usable parent identity.
    InvalidIdentity = "invalid_identity", exit EXIT_USAGE, hint None;
    /// `--project` is not an existing directory.
    InvalidProject = "invalid_project", exit EXIT_USAGE, hint None;
    /// A wait (`--wait`) is not a non-negative number of seconds.
    InvalidWait = "invalid_wait", exit EXIT_USAGE, hint None;
    /// A timeout is not a positive number of seconds.
    InvalidTimeout = "invalid_timeout", exit EXIT_USAGE, hint None;
    /// A command that only works inside a sheep was run elsewhere.
    NotASheep = "not_a_sheep", exit EXIT_FAILURE, hint Some("Sheep commands work inside a sheep started by Shepherd, which puts SHEPHERD_SOCKET, SHEPHERD_AGENT_ID and SHEPHERD_TOKEN in its environment.");
    /// The sheep has no note to show yet.
    NoNote = "no_note", exit EXIT_FAILURE, hint None;
    /// The agent is not a pi agent, so Shepherd does not shape its system prompt.
    NotPi = "not_pi", exit EXIT_FAILURE, hint None;
    /// pi could not be found or started.
    PiUnavailable = "pi_unavailable", exit EXIT_FAILURE, hint Some("Install pi (npm install -g @mariozechner/pi-coding-agent) or point SHEPHERD_PI at it.");
    /// pi ran but did not do what was asked.
    PiFailed = "pi_failed", exit EXIT_FAILURE, hint None;
    /// The dashboard needs a terminal on stdin and stdout.
    NotATerminal = "not_a_terminal", exit EXIT_USAGE, hint Some("Use `shepherd herd --follow` to print the herd as it changes.");
    /// The terminal failed while the dashboard drew or read keys.
    Terminal = "terminal", exit EXIT_FAILURE, hint None;
    /// The MCP server could not be served on this standard input and output.
    Mcp = "mcp", exit EXIT_FAILURE, hint None;
    /// A note belongs to a task a running broker still holds.
    HeldByBroker = "held_by_broker", exit EXIT_FAILURE, hint Some("Finish the task through the broker: the sheep's shepherd done, or close the sheep.");
    /// A `shepherd run` did not finish: its report names the failure.
    RunFailed = "run_failed", exit EXIT_FAILURE, hint None;
    /// The wait ended before what it waited for happened.
    Timeout = "timeout", exit EXIT_FAILURE, hint None;
    /// The operation was cancelled before it finished.
    Cancelled = "cancelled", exit EXIT_FAILURE, hint None;

    // --- Reaching the broker ---------------------------------------------------------------
    /// No broker could be reached or started before the deadline.
    BrokerUnavailable = "broker_unavailable", exit EXIT_UNAVAILABLE, hint Some("`shepherd broker status` says whether a broker runs; when one cannot start, the message above says why.");
    /// The broker did not answer before the deadline (stopped or overloaded).
    BrokerUnresponsive = "broker_unresponsive", exit EXIT_UNAVAILABLE, hint Some("Run the command again; `shepherd broker status` says whether the broker runs (a stopped or overloaded broker answers late).");
    /// The connection to the broker was lost; the request may or may not have been applied.
    BrokerDisconnected = "broker_disconnected", exit EXIT_UNAVAILABLE, hint Some("Run the command again: requests that change state are applied once even when resent.");
    /// The broker is shutting down and takes no new work.
    BrokerStopping = "broker_stopping", exit EXIT_UNAVAILABLE, hint Some("Run the command again once the broker has stopped; the next command starts a new one.");
    /// The broker could not start or run (its socket, lock or state directory).
    Broker = "broker", exit EXIT_FAILURE, hint None;
    /// A broker line could not be understood.
    Protocol = "protocol", exit EXIT_FAILURE, hint Some("Use the same shepherd version for the broker and its clients.");
    /// The client speaks another protocol version than the broker.
    ProtocolMismatch = "protocol_mismatch", exit EXIT_FAILURE, hint Some("Use the shepherd that started the broker, or stop that broker (`shepherd broker stop`, which closes its sheep) so the next command starts the current one.");
    /// A request came before `hello` on a connection.
    HelloRequired = "hello_required", exit EXIT_FAILURE, hint None;
    /// The connection did not say `hello` in time.
    HelloTimeout = "hello_timeout", exit EXIT_FAILURE, hint None;
    /// A request is not valid JSON or its parameters do not parse.
    InvalidRequest = "invalid_request", exit EXIT_FAILURE, hint None;
    /// A request line is larger than the broker accepts.
    RequestTooLarge = "request_too_large", exit EXIT_FAILURE, hint None;
    /// The broker does not know the method.
    UnknownMethod = "unknown_method", exit EXIT_FAILURE, hint Some("Use the same shepherd version for the broker and its clients.");
    /// The capability token does not prove the identity claimed.
    Unauthenticated = "unauthenticated", exit EXIT_FAILURE, hint None;
    /// The identity may not do that in this herd.
    Forbidden = "forbidden", exit EXIT_FAILURE, hint Some("Sheep act for themselves only; parent commands come from the herd's parent.");
    /// A sheep's handle has ended in this herd.
    ClosedHandle = "closed_handle", exit EXIT_FAILURE, hint None;

    // --- Agents and spawning -----------------------------------------------------------------
    /// No agent definition has that name.
    UnknownAgent = "unknown_agent", exit EXIT_FAILURE, hint Some("`shepherd agents` lists the agents this project can use, by their exact names.");
    /// A project agent needs a person's approval before it runs.
    ApprovalRequired = "approval_required", exit EXIT_FAILURE, hint Some("Ask the user to run `shepherd agents approve <name>` in the project.");
    /// A project agent changed since it was approved.
    DefinitionChanged = "definition_changed", exit EXIT_FAILURE, hint Some("Ask the user to review the change and run `shepherd agents approve <name>` again.");
    /// Spawning would nest sheep deeper than the maxDepth setting.
    DepthExceeded = "depth_exceeded", exit EXIT_FAILURE, hint Some("Sheep may start herds of their own only up to the maxDepth setting; do the work yourself or ask your parent.");
    /// The herd already runs as many sheep as the maxSheep setting allows.
    MaxSheep = "max_sheep", exit EXIT_FAILURE, hint Some("Close a sheep you no longer need, then spawn.");
    /// A display name is not valid.
    InvalidLabel = "invalid_label", exit EXIT_USAGE, hint Some("A label is letters, digits, spaces, _ - . (at most 64 characters, no colon).");
    /// Another sheep in the herd already has that display name.
    DuplicateLabel = "duplicate_label", exit EXIT_FAILURE, hint Some("Choose another label, or reuse the sheep that has it.");
    /// The working directory is not an existing directory.
    InvalidCwd = "invalid_cwd", exit EXIT_USAGE, hint None;
    /// A model was given for an agent that does not take one.
    InvalidModel = "invalid_model", exit EXIT_USAGE, hint None;
    /// The harness is not one of the coding agents Shepherd runs, or does not apply to the
    /// definition (a command definition runs its command).
    InvalidHarness = "invalid_harness", exit EXIT_USAGE, hint Some("`shepherd agents` shows each agent's harness; docs/agents.md lists the harnesses.");
    /// The coding agent cannot honour what the definition asks (a tool set, a budget, a resume).
    HarnessUnsupported = "harness_unsupported", exit EXIT_FAILURE, hint None;
    /// The coding agent's program is not installed or not on PATH.
    HarnessMissing = "harness_missing", exit EXIT_FAILURE, hint Some("Install the agent's CLI (docs/agents.md says how) or put it on PATH.");
    /// The chosen backend cannot run here (tmux or Herdr missing, no terminal).
    BackendUnavailable = "backend_unavailable", exit EXIT_FAILURE, hint Some("Choose another backend with --backend (headless always works).");
    /// The caller's own pane could not be found for a placement beside it.
    NoCallerPane = "no_caller_pane", exit EXIT_FAILURE, hint Some("Use the tab or workspace placement, or run from inside the terminal multiplexer.");
    /// The sheep's process could not be started.
    SpawnFailed = "spawn_failed", exit EXIT_FAILURE, hint None;
    /// The sheep did not become ready before the deadline.
    AgentNotReady = "agent_not_ready", exit EXIT_FAILURE, hint None;
    /// The sheep runs; only a closed or exited sheep can be resumed.
    AgentRunning = "agent_running", exit EXIT_FAILURE, hint Some("A running sheep takes its next task with delegate.");
    /// The sheep never wrote an agent session, so there is nothing to resume.
    NoSession = "no_session", exit EXIT_FAILURE, hint Some("Spawn a new sheep instead.");
    /// The sheep's agent cannot be resumed on its own session.
    ResumeUnsupported = "resume_unsupported", exit EXIT_FAILURE, hint Some("Resume needs an agent that keeps a session it can reopen; spawn a new sheep instead.");
    /// Isolation and landing need a git repository with a commit.
    NotAGitRepository = "not_a_git_repository", exit EXIT_FAILURE, hint Some("Work in a git repository with at least one commit (or spawn without isolation).");
    /// A git worktree for an isolated sheep could not be made or removed.
    WorktreeFailed = "worktree_failed", exit EXIT_FAILURE, hint None;
    // --- The merge queue ---------------------------------------------------------------------
    /// A merge names nothing with work on it to land (no target, an empty session, branches
    /// without commits, or every branch left out).
    NothingToLand = "nothing_to_land", exit EXIT_USAGE, hint Some("Name a finished run (run-…), a closed isolated sheep, a shepherd/… branch or --session NAME; a run's report lists its branches.");
    /// A merge names something that is not a run, a sheep (by agent id) or a `shepherd/…`
    /// branch of this herd.
    UnknownLanding = "unknown_landing", exit EXIT_USAGE, hint Some("Name a run id (run-…), a sheep's agent id or a shepherd/… branch; `shepherd status` lists the sheep.");
    /// A merge names a run that is still running, or a sheep that is still open (its branch
    /// comes home when it closes).
    NotLandableYet = "not_landable_yet", exit EXIT_USAGE, hint Some("Land it once the run is over, or close the sheep first.");
    /// A branch a merge names does not exist (any more).
    BranchGone = "branch_gone", exit EXIT_FAILURE, hint Some("It was deleted or landed and pruned; `git branch --list 'shepherd/*'` lists what is left.");
    /// The branch to land into is checked out with uncommitted changes to tracked files.
    DirtyTarget = "dirty_target", exit EXIT_FAILURE, hint Some("Commit or stash your changes first, or land into another branch with --into.");
    /// The branch to land into (`--into`) is not a branch name.
    InvalidInto = "invalid_into", exit EXIT_USAGE, hint Some("--into takes a plain branch name (main, land/today), not refs/heads/…, @ or @{-1}.");
    /// The project has no branch checked out (a detached HEAD), so a merge has nowhere to land
    /// by default.
    DetachedTarget = "detached_target", exit EXIT_USAGE, hint Some("Say where to land with --into BRANCH.");
    /// The branches a merge names were begun from two different branches.
    TwoBases = "two_bases", exit EXIT_USAGE, hint Some("Say where to land them with --into BRANCH, or land each base's separately.");
    /// The branches a merge names belong to two repositories.
    TwoRepositories = "two_repositories", exit EXIT_USAGE, hint Some("Land each repository's branches with a merge of their own.");
    /// A merge's options do not go together (a resolver or fixer with a strategy that makes no
    /// commit of its own, a fix count out of range, discard with landing options).
    InvalidMergeOptions = "invalid_merge_options", exit EXIT_USAGE, hint Some("docs/landing.md says which options go with which strategy.");
    /// No merge of that id in this herd (finished merges are kept for a while, the newest 50).
    UnknownMerge = "unknown_merge", exit EXIT_USAGE, hint Some("Land again with shepherd merge: a branch already landed is not landed twice.");
    /// No host of that name is defined in the user's settings, or its definition is malformed.
    UnknownHost = "unknown_host", exit EXIT_USAGE, hint Some("Define the host under `hosts` in your user settings file; `shepherd hosts` lists the hosts defined (docs/remote.md).");
    /// A remote host could not be reached over SSH, or does not have what a sheep needs there.
    HostUnreachable = "host_unreachable", exit EXIT_UNAVAILABLE, hint Some("`shepherd hosts check <name>` says what is missing on the host.");
    /// A sheep asked to run confined cannot be: bubblewrap is missing or cannot make namespaces.
    SandboxUnavailable = "sandbox_unavailable", exit EXIT_UNAVAILABLE, hint Some("Install bubblewrap (`apt-get install bubblewrap`), or spawn with --sandbox off; `shepherd hosts check` reports it per host.");
    /// Termination of the sheep could not be confirmed.
    CloseUnconfirmed = "close_unconfirmed", exit EXIT_FAILURE, hint Some("Look at the sheep's pane or process yourself; closing again retries.");
    /// The sheep runs headless: it has no window or pane to bring to the front.
    NoPane = "no_pane", exit EXIT_FAILURE, hint Some("Read its output instead (shepherd read), or open it in the dashboard for a live transcript.");
    /// A sheep's screen could not be read.
    ReadFailed = "read_failed", exit EXIT_FAILURE, hint None;
    /// The record of panes Shepherd created could not be read or written.
    Registry = "registry", exit EXIT_FAILURE, hint None;

    // --- Sheep, tasks and messages -----------------------------------------------------------
    /// No sheep, session or note has that id or name.
    NotFound = "not_found", exit EXIT_FAILURE, hint None;
    /// A sheep target is missing or malformed.
    InvalidTarget = "invalid_target", exit EXIT_FAILURE, hint Some("Pass the agent id spawn returned, or the sheep's display name.");
    /// An id prefix or name matches more than one sheep or task.
    AmbiguousId = "ambiguous_id", exit EXIT_FAILURE, hint Some("Give more of the id: the candidates are listed.");
    /// No task has that id in this herd.
    UnknownTask = "unknown_task", exit EXIT_FAILURE, hint Some("Pass task ids from delegate; agent ids are not task ids.");
    /// No message this herd still keeps a receipt for has that id (or the asking sheep neither
    /// sent nor received it).
    UnknownMessage = "unknown_message", exit EXIT_FAILURE, hint Some("Pass the messageId a message or tell returned; receipts are kept for the herd's latest 10000 messages.");
    /// A task handle is missing or malformed.
    InvalidHandle = "invalid_handle", exit EXIT_FAILURE, hint Some("Pass task ids from delegate; agent ids are not task ids.");
    /// A task's text is empty.
    InvalidTask = "invalid_task", exit EXIT_USAGE, hint None;
    /// A task or message is larger than an envelope may carry.
    TooLarge = "too_large", exit EXIT_FAILURE, hint Some("Put the material in a file and pass its path.");
    /// The sheep already holds an open task.
    ActiveTask = "active_task", exit EXIT_FAILURE, hint Some("A sheep holds one task at a time: watch it until it settles, or close the sheep.");
    /// The task cannot move to that state from the one it is in.
    InvalidTransition = "invalid_transition", exit EXIT_FAILURE, hint None;
    /// A task id names another sheep's task.
    TaskAgentMismatch = "task_agent_mismatch", exit EXIT_FAILURE, hint None;
    /// A `replyTo` is not a message id.
    InvalidReplyTo = "invalid_reply_to", exit EXIT_USAGE, hint None;
    /// A reply names another task than the message it answers.
    ReplyTaskMismatch = "reply_task_mismatch", exit EXIT_FAILURE, hint None;
    /// The sheep already waits on an open question for this task.
    RequestOpen = "request_open", exit EXIT_FAILURE, hint Some("Wait for the answer to the open question before asking another.");
    /// The task cannot finish while its question to the parent is unanswered.
    PendingRequest = "pending_request", exit EXIT_FAILURE, hint Some("Wait for the parent's reply, then finish the task.");
    /// An inbox holds as many unacknowledged items as it keeps.
    InboxFull = "inbox_full", exit EXIT_FAILURE, hint None;
    /// `done` came with no open task to complete.
    NoDelegatedTask = "no_delegated_task", exit EXIT_FAILURE, hint None;
    /// A run plan is malformed.
    InvalidRun = "invalid_run", exit EXIT_USAGE, hint Some("See docs/run.md for the plan's fields.");
    /// No run has that id.
    UnknownRun = "unknown_run", exit EXIT_FAILURE, hint Some("Pass the runId a run returned; finished runs are kept only for a while.");
    /// A parallel run has more tasks than the maxParallelTasks setting allows.
    TooManyTasks = "too_many_tasks", exit EXIT_FAILURE, hint Some("Split the run, or raise the maxParallelTasks setting.");
    /// Two parallel tasks would write the same file or directory.
    WriteConflict = "write_conflict", exit EXIT_FAILURE, hint Some("Give each parallel task its own output, or isolate them.");
    /// A budget is not a whole number of 1 or more (maxCost a positive number).
    InvalidBudget = "invalid_budget", exit EXIT_USAGE, hint None;
    /// The sheep's agent does not report the usage a budget counts.
    BudgetUnsupported = "budget_unsupported", exit EXIT_FAILURE, hint Some("Budgets need an agent that reports its usage; spawn one of those, or go without.");
    /// A stall period is not a number of minutes, 0 or more.
    InvalidStall = "invalid_stall", exit EXIT_USAGE, hint None;

    // --- Fieldnotes, settings and files ------------------------------------------------------
    /// A fieldnotes session name is not valid.
    InvalidSessionName = "invalid_session_name", exit EXIT_USAGE, hint None;
    /// A fieldnotes session name or parent identity is not valid.
    InvalidName = "invalid_name", exit EXIT_USAGE, hint None;
    /// Another writer held the fieldnotes lock for longer than the store waits.
    LockTimeout = "lock_timeout", exit EXIT_FAILURE, hint Some("Another Shepherd or pi session is writing the same fieldnotes; run the command again.");
    /// A fieldnotes file (session.json, a note) could not be parsed.
    Malformed = "malformed", exit EXIT_FAILURE, hint None;
    /// A fieldnotes path would leave the project's sessions folder.
    UnsafePath = "unsafe_path", exit EXIT_FAILURE, hint None;
    /// The note is already final and cannot change again.
    AlreadyFinal = "already_final", exit EXIT_FAILURE, hint None;
    /// The note is not final yet, and the operation needs it to be.
    NotFinal = "not_final", exit EXIT_FAILURE, hint None;
    /// The note was deleted; it keeps its number but takes no other change.
    Deleted = "deleted", exit EXIT_FAILURE, hint None;
    /// A link between notes does not point at a note of the session.
    InvalidLink = "invalid_link", exit EXIT_FAILURE, hint None;
    /// The note belongs to another session than the one named.
    StaleSession = "stale_session", exit EXIT_FAILURE, hint None;
    /// A path is not a note of this project's fieldnotes.
    InvalidNote = "invalid_note", exit EXIT_FAILURE, hint None;
    /// The fieldnotes store could not be read or written.
    Fieldnotes = "fieldnotes", exit EXIT_FAILURE, hint None;
    /// A note did not reach its final state before the deadline.
    FieldnotesTimeout = "fieldnotes_timeout", exit EXIT_FAILURE, hint None;
    /// The broker's journal could not be written.
    Journal = "journal", exit EXIT_FAILURE, hint None;
    /// The journal's disk stopped answering; nothing more is acknowledged.
    JournalStalled = "journal_stalled", exit EXIT_FAILURE, hint Some("Check the disk holding the state directory; the broker refuses work until writes succeed.");
    /// A setting has a value it cannot take.
    InvalidSetting = "invalid_setting", exit EXIT_FAILURE, hint None;
    /// No setting has that name.
    UnknownSetting = "unknown_setting", exit EXIT_FAILURE, hint None;
    /// The setting cannot be set in that layer (user-only, or project without a project).
    WrongSettingsLayer = "wrong_settings_layer", exit EXIT_FAILURE, hint None;
    /// A settings or definition file is not what it should be.
    MalformedFile = "malformed_file", exit EXIT_FAILURE, hint None;
    /// A file could not be read or written.
    Io = "io", exit EXIT_FAILURE, hint None;
    /// Something that should not happen did; the message says what.
    Internal = "internal", exit EXIT_FAILURE, hint Some("Please report it with the message and `shepherd --version`.");
    /// A code this version does not know, from a newer broker.
    Unrecognised = "unrecognised", exit EXIT_FAILURE, hint Some("Use the same shepherd version for the broker and its clients.");
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Codes compare with their wire strings, so a test or a script-facing check can name the code
/// as people see it.
impl PartialEq<str> for ErrorCode {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for ErrorCode {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<ErrorCode> for &str {
    fn eq(&self, other: &ErrorCode) -> bool {
        *self == other.as_str()
    }
}

/// A string that is not a code in the catalogue.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not an error code")]
pub struct UnknownErrorCode(pub String);

impl FromStr for ErrorCode {
    type Err = UnknownErrorCode;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .iter()
            .copied()
            .find(|code| code.as_str() == text)
            .ok_or_else(|| UnknownErrorCode(text.to_owned()))
    }
}

impl Serialize for ErrorCode {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// A code from a newer broker reads as [`ErrorCode::Unrecognised`]: the message still says
/// what went wrong, and an older client keeps working.
impl<'de> Deserialize<'de> for ErrorCode {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = std::borrow::Cow::<str>::deserialize(deserializer)?;
        Ok(text.parse().unwrap_or(Self::Unrecognised))
    }
}

/// On the wire a code is one of the catalogue's strings; a client must still accept others
/// (from a newer broker), which is why the schema lists them as known values of a string.
impl schemars::JsonSchema for ErrorCode {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ErrorCode".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let codes: Vec<&str> = ErrorCode::ALL.iter().map(|code| code.as_str()).collect();
        schemars::json_schema!({
            "type": "string",
            "enum": codes,
            "description": "A stable error code from the catalogue (docs/errors.md)."
        })
    }
}

/// The catalogue as the Markdown table `docs/errors.md` holds.
#[must_use]
pub fn markdown_table() -> String {
    let mut out = String::from("| code | exit | meaning | hint |\n|---|---|---|---|\n");
    for code in ErrorCode::ALL {
        out.push_str(&format!(
            "| `{}` | {} | {} | {} |\n",
            code.as_str(),
            code.exit_status(),
            code.meaning(),
            code.hint().unwrap_or("")
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_is_unique_and_reads_back() {
        let mut seen = std::collections::BTreeSet::new();
        for code in ErrorCode::ALL {
            assert!(seen.insert(code.as_str()), "{code} twice");
            assert_eq!(code.as_str().parse::<ErrorCode>(), Ok(*code));
            let json = serde_json::to_string(code).unwrap();
            assert_eq!(serde_json::from_str::<ErrorCode>(&json).unwrap(), *code);
            assert!(!code.meaning().is_empty());
        }
    }

    #[test]
    fn an_unknown_code_reads_as_unrecognised_and_does_not_parse() {
        assert_eq!(
            serde_json::from_str::<ErrorCode>("\"from_the_future\"").unwrap(),
            ErrorCode::Unrecognised
        );
        assert!("from_the_future".parse::<ErrorCode>().is_err());
    }

    #[test]
    fn broker_failures_exit_69_and_usage_errors_2() {
        assert_eq!(ErrorCode::BrokerUnavailable.exit_status(), EXIT_UNAVAILABLE);
        assert_eq!(ErrorCode::InvalidArgument.exit_status(), EXIT_USAGE);
        assert_eq!(ErrorCode::UnknownTask.exit_status(), EXIT_FAILURE);
    }
}

/// An error body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct WireError {
    /// Stable machine code.
    pub code: ErrorCode,
    /// One human line.
    pub message: String,
}
