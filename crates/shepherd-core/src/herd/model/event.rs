//! The events a herd is changed by: what the broker journals and a replay applies again.

use serde::{Deserialize, Serialize};

use super::limit::{LimitEpisode, TaskLimit};
use super::mail::{InboxItem, MessageRecord, Request, StoredReply};
use super::merge::{Advance, Landed, Merge};
use super::run::Run;
use super::{Activity, ExitInfo, NoteLink, Sheep, Task, TaskOutput, TaskResult, Watcher};
use crate::ids::{AgentId, MessageId, Participant, TaskId, WatcherId};

/// Every change a herd can undergo. The broker journals these; [`crate::herd::Herd::apply`]
/// replays them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "event")]
pub enum Event {
    /// A sheep was admitted and is being launched.
    SheepCreated {
        /// The new sheep.
        sheep: Box<Sheep>,
    },
    /// The backend placed it (pids, pane id, log file).
    SheepLaunched {
        /// The sheep.
        agent_id: AgentId,
        /// Backend facts.
        launch: crate::backend::LaunchRecord,
    },
    /// Its program is confirmed running.
    SheepReady {
        /// The sheep.
        agent_id: AgentId,
        /// When (ms); absent in journals written before it was recorded.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        at: Option<i64>,
    },
    /// It reported what it is doing.
    SheepActivity {
        /// The sheep.
        agent_id: AgentId,
        /// Working or idle.
        activity: Activity,
        /// When (ms); absent in journals written before it was recorded.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        at: Option<i64>,
    },
    /// It never became ready.
    SheepFailed {
        /// The sheep.
        agent_id: AgentId,
        /// Why.
        exit: ExitInfo,
        /// When (ms); absent in journals written before it was recorded.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        at: Option<i64>,
    },
    /// Its process ended.
    SheepExited {
        /// The sheep.
        agent_id: AgentId,
        /// How.
        exit: ExitInfo,
        /// When (ms); absent in journals written before it was recorded.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        at: Option<i64>,
    },
    /// A close began.
    SheepClosing {
        /// The sheep.
        agent_id: AgentId,
        /// When (ms); absent in journals written before it was recorded.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        at: Option<i64>,
    },
    /// The close finished; its processes are gone.
    SheepClosed {
        /// The sheep.
        agent_id: AgentId,
        /// When (ms); absent in journals written before it was recorded.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        at: Option<i64>,
    },
    /// A task was accepted.
    TaskCreated {
        /// The task.
        task: Box<Task>,
    },
    /// A task was handed to its sheep.
    TaskStarted {
        /// The task.
        task_id: TaskId,
        /// Its note.
        note: Option<NoteLink>,
        /// When (ms); absent in journals written before it was recorded.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        at: Option<i64>,
    },
    /// A tracked request opened; its task waits.
    RequestOpened {
        /// The request.
        request: Request,
    },
    /// A tracked request was answered.
    RequestResolved {
        /// The request.
        request_id: MessageId,
    },
    /// A task settled (first settlement wins).
    TaskSettled {
        /// The task.
        task_id: TaskId,
        /// How.
        result: TaskResult,
    },
    /// Where the sheep's session file stood when a task started.
    TaskCursor {
        /// The task.
        task_id: TaskId,
        /// Bytes into the session file.
        cursor: u64,
    },
    /// A sheep's run settled with final words for a task.
    TaskOutput {
        /// The task.
        task_id: TaskId,
        /// The output.
        output: TaskOutput,
    },
    /// A settled task's note was finalised.
    TaskFinalized {
        /// The task.
        task_id: TaskId,
    },
    /// A message's routing facts were recorded.
    MessageRecorded {
        /// The message.
        message_id: MessageId,
        /// Its routing.
        record: MessageRecord,
    },
    /// An item was queued for a participant.
    Enqueued {
        /// The recipient.
        to: Participant,
        /// The item.
        item: InboxItem,
    },
    /// A participant acknowledged its items up to `seq`.
    Acked {
        /// Who.
        who: Participant,
        /// Up to and including this sequence number.
        seq: u64,
        /// When (ms), so the messages among them are marked read; absent in journals written
        /// before receipts were kept.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        at: Option<i64>,
    },
    /// A participant's items up to a sequence number were handed to it (fetched or pushed):
    /// the messages among them are marked delivered.
    Delivered {
        /// Who.
        who: Participant,
        /// Up to and including this sequence number.
        seq: u64,
        /// When (ms).
        at: i64,
    },
    /// A durable watcher was registered.
    WatcherAdded {
        /// The watcher.
        watcher: Watcher,
    },
    /// Some of a watcher's tasks were reported.
    WatcherDelivered {
        /// The watcher.
        watcher_id: WatcherId,
        /// The tasks reported.
        task_ids: Vec<TaskId>,
    },
    /// A waiting task's stale reminder went out.
    StaleNotified {
        /// The task.
        task_id: TaskId,
    },
    /// A forgotten-done reminder went to a task's sheep.
    Nudged {
        /// The task.
        task_id: TaskId,
    },
    /// The parent was told a task's sheep stalled.
    Escalated {
        /// The task.
        task_id: TaskId,
    },
    /// A state-changing request was answered (kept for resends of the same request id).
    Replied {
        /// The client request id.
        request_id: String,
        /// The answer.
        reply: StoredReply,
    },
    /// A note reserved for a task that settled before it was handed over (its sheep died in
    /// between): the note is the task's, and is finalised with it.
    NoteAttached {
        /// The task.
        task_id: TaskId,
        /// Its note.
        note: NoteLink,
    },
    /// The herd's fieldnotes setting was fixed for its life.
    FieldnotesFixed {
        /// Whether it writes notes.
        on: bool,
    },
    /// A run was accepted.
    RunSubmitted {
        /// The run.
        run: Box<Run>,
    },
    /// A run's notes were reserved.
    RunPlanned {
        /// The run.
        run_id: String,
        /// Its session and notes.
        plan: crate::run::RunPlan,
    },
    /// One of a run's tasks moved on.
    RunStepChanged {
        /// The run.
        run_id: String,
        /// The task's position in the run.
        index: usize,
        /// Its new state.
        step: Box<crate::run::StepState>,
    },
    /// A run was cancelled.
    RunCancelled {
        /// The run.
        run_id: String,
        /// Why.
        reason: String,
    },
    /// A run finished.
    RunFinished {
        /// The run.
        run_id: String,
        /// Its final report.
        report: Box<crate::run::RunReport>,
    },
    /// A task that was accepted but never reached its sheep was withdrawn (its note could not
    /// be reserved): it leaves no trace, as if it had been refused.
    TaskWithdrawn {
        /// The task.
        task_id: TaskId,
    },
    /// A closed or exited sheep is started again on its own session (a resume).
    SheepReopened {
        /// The sheep.
        agent_id: AgentId,
        /// The backend it runs on now.
        backend: crate::backend::BackendKind,
        /// sha256 (hex) of its new capability token.
        token_digest: String,
        /// sha256 (hex) of its new supervisor's credential.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        supervisor_digest: Option<String>,
        /// The client request id of the resume.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        request_id: Option<String>,
        /// Its last note, which its next task continues.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        continues: Option<NoteLink>,
        /// When (ms); absent in journals written before it was recorded.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        at: Option<i64>,
    },
    /// An isolated sheep's worktree was released (removed, or kept with a report).
    WorktreeReleased {
        /// The sheep.
        agent_id: AgentId,
        /// What became of it.
        report: Box<crate::worktree::WorktreeReport>,
    },
    /// A sheep reported what one turn of its task used.
    TaskUsage {
        /// The task.
        task_id: TaskId,
        /// That turn's usage.
        usage: crate::budget::Usage,
    },
    /// A task's sheep showed activity (recorded only for tasks under the stall watchdog).
    TaskActive {
        /// The task.
        task_id: TaskId,
        /// When (ms).
        at: i64,
    },
    /// The stall watchdog nudged a task's silent sheep.
    StallNudged {
        /// The task.
        task_id: TaskId,
        /// When (ms).
        at: i64,
    },
    /// A sheep's run ended on a provider limit (or a server error) with its task open: the
    /// task waits, and the sheep's provider key closes until the reset.
    Limited {
        /// The sheep.
        agent_id: AgentId,
        /// Its open task.
        task_id: TaskId,
        /// The limit.
        limit: TaskLimit,
    },
    /// A closed key's reset passed: its sheep are let go one at a time.
    LimitOpened {
        /// The key.
        key: crate::limit::ProviderKey,
        /// When (ms).
        at: i64,
    },
    /// One sheep on a key was let go after its reset.
    LimitReleased {
        /// The key.
        key: crate::limit::ProviderKey,
        /// The sheep.
        agent_id: AgentId,
        /// When (ms).
        at: i64,
    },
    /// The sheep let go last showed a model response (written by earlier versions, which let
    /// one go at a time; now [`Event::LimitAnswered`]).
    LimitProbed {
        /// The key.
        key: crate::limit::ProviderKey,
        /// When (ms).
        at: i64,
    },
    /// A sheep let go after a reset showed a model response.
    LimitAnswered {
        /// The key.
        key: crate::limit::ProviderKey,
        /// The sheep.
        agent_id: AgentId,
        /// When (ms).
        at: i64,
    },
    /// A task that had been refused showed a model response: what it waited is over.
    LimitOver {
        /// The task.
        task_id: TaskId,
    },
    /// A limit the task's agent rode out with its own retries, as its output showed it.
    LimitRiddenOut {
        /// The task.
        task_id: TaskId,
        /// The episode, as its note records it.
        episode: LimitEpisode,
    },
    /// Every sheep on a key was let go: the key is open.
    LimitCleared {
        /// The key.
        key: crate::limit::ProviderKey,
        /// When (ms).
        at: i64,
    },
    /// A task's wait ended (resumed, or the task settled during it).
    LimitEnded {
        /// The task.
        task_id: TaskId,
        /// `resumed`, or the state the task settled in.
        ended: String,
        /// When (ms).
        at: i64,
    },
    /// A sheep under a turn cap was handed a turn.
    TurnGranted {
        /// The sheep.
        agent_id: AgentId,
    },
    /// A merge was accepted.
    MergeSubmitted {
        /// The merge.
        merge: Box<Merge>,
    },
    /// A merge read (or made) its target: the tip it starts from.
    MergeStarted {
        /// The merge.
        merge_id: String,
        /// The target's tip.
        tip: String,
    },
    /// Where one branch of a merge stands now.
    MergeBranch {
        /// The merge.
        merge_id: String,
        /// The branch's position in the merge.
        index: usize,
        /// Where it stands.
        landing: Box<crate::land::BranchLanding>,
    },
    /// A merge is about to move its target (written ahead of the move).
    MergeAdvancing {
        /// The merge.
        merge_id: String,
        /// The move.
        advance: Advance,
    },
    /// A branch landed into a target, verified.
    BranchLanded {
        /// The landing.
        landed: Landed,
    },
    /// A merge was cancelled.
    MergeCancelled {
        /// The merge.
        merge_id: String,
        /// Why.
        reason: String,
    },
    /// A merge is over: its worktree is gone and its check ended.
    MergeFinished {
        /// The merge.
        merge_id: String,
    },
    /// A task waiting on a lasting limit went to a fresh sheep of its agent's fallback: it is
    /// `created` again there.
    TaskFellBack {
        /// The task.
        task_id: TaskId,
        /// The sheep that had it.
        from: AgentId,
        /// The sheep that takes it over.
        to: AgentId,
        /// The provider that was limited.
        provider: String,
        /// Until when (ms).
        until: i64,
        /// When (ms).
        at: i64,
    },
}
