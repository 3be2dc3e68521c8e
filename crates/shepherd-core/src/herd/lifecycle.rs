//! Sheep lifecycle commands: admit, launch, ready, exit, close (a task's life is in `tasks`).

use crate::error_code::ErrorCode;

use super::error::HerdError;
use super::model::{Activity, Event, ExitInfo, Payload, Phase, Sheep, Task};
use super::steps::{settle, settle_with_code};
use super::{Herd, Tx};
use crate::ids::{AgentId, Participant, TaskId};
use crate::task::TaskState;

/// What the broker knows about a sheep it is about to launch.
#[derive(Debug, Clone)]
pub struct NewSheep {
    /// A freshly minted id.
    pub id: AgentId,
    /// The agent definition's name.
    pub agent: String,
    /// The validated label (empty for none).
    pub label: crate::label::Label,
    /// What it is for, when Shepherd makes it for a task (a resolver, a fixer, a fallback).
    pub role: Option<crate::label::Role>,
    /// The backend that will run it.
    pub backend: crate::backend::BackendKind,
    /// What runs it.
    pub runtime: crate::harness::Runtime,
    /// The model it is started with, when its runtime takes one.
    pub model: Option<String>,
    /// Its working directory.
    pub cwd: String,
    /// sha256 (hex) of its capability token.
    pub token_digest: String,
    /// sha256 (hex) of its supervisor's credential.
    pub supervisor_digest: Option<String>,
    /// The client request id of the spawn, when the caller gave one.
    pub request_id: Option<String>,
    /// The most sheep the herd may run at once (`maxSheep`), when limited.
    pub max_sheep: Option<u32>,
    /// The budget its definition sets for each task.
    pub budget: Option<crate::budget::Budget>,
    /// How it is started, for a resume.
    pub recipe: Option<crate::spawn::SpawnParams>,
    /// Its git worktree, when isolated.
    pub worktree: Option<crate::worktree::SheepWorktree>,
    /// The provider account it spends, when known (and keys are held).
    pub provider_key: Option<crate::limit::ProviderKey>,
    /// Its provider as shown to people, with its account when it was given one.
    pub provider: Option<String>,
    /// `maxConcurrentTurns` for its provider key.
    pub turn_cap: Option<u32>,
}

impl Herd {
    /// Refuses a new message or task for `who` when its inbox is full: nothing queued for a
    /// participant is ever dropped, so the sender hears about it instead.
    pub fn check_inbox_room(&self, who: &Participant) -> Result<(), HerdError> {
        let (limit, whose) = match who {
            Participant::Parent => (super::MAX_PARENT_INBOX_ITEMS, "the parent's".to_owned()),
            Participant::Sheep(id) => (super::MAX_INBOX_ITEMS, format!("{id}'s")),
        };
        let held = self.inboxes.get(who).map_or(0, |inbox| inbox.items.len());
        if held >= limit {
            return Err(HerdError::new(
                ErrorCode::InboxFull,
                format!(
                    "{whose} inbox holds {held} unacknowledged items, the most it keeps; nothing \
                     was sent. Let it read its inbox (`shepherd inbox`) first."
                ),
            ));
        }
        Ok(())
    }

    /// The sheep a spawn with client request id `request_id` created.
    pub fn sheep_by_request(&self, request_id: &str) -> Option<&Sheep> {
        self.sheep
            .values()
            .rev()
            .find(|s| s.request_id.as_deref() == Some(request_id))
    }

    /// The task a delegation with client request id `request_id` created.
    pub fn task_by_request(&self, request_id: &str) -> Option<&Task> {
        self.tasks
            .values()
            .rev()
            .find(|t| t.request_id.as_deref() == Some(request_id))
    }

    /// Looks up a sheep by the id text a caller passed.
    pub fn sheep_by_text(&self, text: &str) -> Result<&Sheep, HerdError> {
        AgentId::parse(text)
            .and_then(|id| self.sheep.get(&id))
            .ok_or_else(|| HerdError::unknown_agent_id(text))
    }

    /// Looks up a task by the id text a caller passed.
    pub fn task_by_text(&self, text: &str) -> Result<&Task, HerdError> {
        TaskId::parse(text)
            .and_then(|id| self.tasks.get(&id))
            .ok_or_else(|| HerdError::unknown_task(text))
    }

    /// Refuses a non-empty display name another sheep of the herd still carries.
    pub fn check_unique_display_name(
        &self,
        agent: &str,
        label: &crate::label::Label,
    ) -> Result<(), HerdError> {
        let taken: Vec<String> = self
            .sheep
            .values()
            .filter(|s| s.holds_resources())
            .map(Sheep::display_name)
            .collect();
        crate::label::ensure_unique_display_name(agent, label, taken.iter().map(String::as_str))
            .map(|_| ())
            .map_err(|err| HerdError::new(err.code(), err.to_string()))
    }
}

/// Admits a new sheep in the `starting` phase.
pub fn admit(tx: &mut Tx<'_>, new: NewSheep) -> Result<(), HerdError> {
    let shown = super::model::shown_agent(&new.agent, new.role, new.runtime, new.recipe.as_ref());
    tx.herd().check_unique_display_name(&shown, &new.label)?;
    tx.herd().check_sheep_room(new.max_sheep)?;
    let sheep = Sheep {
        id: new.id,
        agent: new.agent,
        label: new.label,
        role: new.role,
        backend: new.backend,
        runtime: new.runtime,
        model: new.model,
        cwd: new.cwd,
        token_digest: new.token_digest,
        supervisor_digest: new.supervisor_digest,
        created_at: tx.now(),
        phase: Phase::Starting,
        activity: Activity::Idle,
        working_since: None,
        since: Some(tx.now()),
        active_task: None,
        last_outcome: None,
        exit: None,
        launch: None,
        request_id: new.request_id,
        budget: new.budget.filter(|b| !b.is_empty()),
        recipe: new.recipe,
        worktree: new.worktree,
        resumes: 0,
        continues: None,
        turn_cap: new.turn_cap.filter(|_| new.provider_key.is_some()),
        provider_key: new.provider_key,
        provider: new.provider,
        turn_granted: false,
    };
    tx.emit(Event::SheepCreated {
        sheep: Box::new(sheep),
    });
    Ok(())
}

/// Records where the backend placed a sheep.
pub fn launched(tx: &mut Tx<'_>, agent_id: &AgentId, launch: crate::backend::LaunchRecord) {
    tx.emit(Event::SheepLaunched {
        agent_id: agent_id.clone(),
        launch,
    });
}

/// Marks a starting sheep ready.
pub fn ready(tx: &mut Tx<'_>, agent_id: &AgentId) {
    if tx
        .herd()
        .sheep
        .get(agent_id)
        .is_some_and(|s| s.phase == Phase::Starting)
    {
        tx.emit(Event::SheepReady {
            agent_id: agent_id.clone(),
            at: Some(tx.now()),
        });
    }
}

/// Marks a sheep that never became ready as failed.
pub fn failed_to_start(tx: &mut Tx<'_>, agent_id: &AgentId, exit: ExitInfo) {
    if tx
        .herd()
        .sheep
        .get(agent_id)
        .is_some_and(|s| s.phase == Phase::Starting)
    {
        let at = Some(tx.now());
        tx.emit(Event::SheepFailed {
            agent_id: agent_id.clone(),
            exit,
            at,
        });
    }
}

/// Records that a sheep's process ended. An open task fails with the exit status and the tail
/// of its output; a sheep without a task is reported to the parent.
pub fn exited(tx: &mut Tx<'_>, agent_id: &AgentId, exit: ExitInfo) {
    let Some(sheep) = tx.herd().sheep.get(agent_id) else {
        return;
    };
    if matches!(sheep.phase, Phase::Closed | Phase::Exited | Phase::Failed) {
        return;
    }
    if sheep.phase == Phase::Starting {
        failed_to_start(tx, agent_id, exit);
        return;
    }
    let closing = sheep.phase == Phase::Closing;
    let display = sheep.display_name();
    let active = sheep.active_task.clone();
    if closing {
        // Closed on purpose: that is its own outcome, whatever status or signal the close
        // ended it with, on every backend.
        let at = Some(tx.now());
        tx.emit(Event::SheepExited {
            agent_id: agent_id.clone(),
            exit: ExitInfo {
                reason: Some("closed".into()),
                tail: exit.tail,
                ..ExitInfo::default()
            },
            at,
        });
        return;
    }
    let at = Some(tx.now());
    tx.emit(Event::SheepExited {
        agent_id: agent_id.clone(),
        exit: exit.clone(),
        at,
    });
    let mut error = format!("{display} {} before the task completed.", exit.describe());
    if !exit.tail.is_empty() {
        error.push_str("\n--- last output ---\n");
        error.push_str(&exit.tail);
    }
    match active {
        Some(task_id) => settle_with_code(
            tx,
            &task_id,
            TaskState::Failed,
            exit.return_code(),
            Some(error),
        ),
        None => {
            let text = format!("{display} ({agent_id}) {}.", exit.describe());
            tx.enqueue(
                Participant::Parent,
                Payload::Notice(super::Notice {
                    notice: super::NoticeKind::SheepExited,
                    text,
                    agent_id: Some(agent_id.clone()),
                    task_id: None,
                }),
            );
        }
    }
}

/// Starts closing a sheep: its open task is cancelled (rc 130). Returns false when the sheep
/// is already closed.
pub fn begin_close(tx: &mut Tx<'_>, agent_id: &AgentId) -> bool {
    let Some(sheep) = tx.herd().sheep.get(agent_id) else {
        return false;
    };
    if sheep.phase == Phase::Closed {
        return false;
    }
    if let Some(task_id) = sheep.active_task.clone() {
        settle(
            tx,
            &task_id,
            TaskState::Cancelled,
            None,
            None,
            Some("Agent was closed.".into()),
        );
    }
    if tx
        .herd()
        .sheep
        .get(agent_id)
        .is_some_and(|s| s.phase != Phase::Closing)
    {
        tx.emit(Event::SheepClosing {
            agent_id: agent_id.clone(),
            at: Some(tx.now()),
        });
    }
    true
}

/// Finishes a close once the sheep's processes are confirmed gone.
pub fn closed(tx: &mut Tx<'_>, agent_id: &AgentId) {
    if tx
        .herd()
        .sheep
        .get(agent_id)
        .is_some_and(|s| s.phase != Phase::Closed)
    {
        tx.emit(Event::SheepClosed {
            agent_id: agent_id.clone(),
            at: Some(tx.now()),
        });
    }
}
