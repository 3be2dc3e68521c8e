//! The herd and its journal: the one way to read the herd and to change it.
//!
//! [`Store::commit`] runs a herd command inside a [`Tx`] while holding the herd's lock, queues
//! the resulting events on the journal in the same critical section (so journal order is apply
//! order), then — outside the lock — wakes whoever the change concerns: inbox readers of the
//! participants that got items, waiters on task settlement and the deadline timer. What else the
//! change calls for — finalising a settled task's note, auto-closing its sheep, pushing a run's
//! new view — it hands as [`Effect`]s to the sink it was built with: the store knows the herd
//! and the journal, not the handlers or the rest of the broker. Callers acknowledge only after
//! [`Store::durable`] for the position they were given.
//!
//! It is one of the broker's services: a handler that only reads or changes the herd takes a
//! `&Store`, not the whole broker.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use shepherd_core::herd::{Event, Herd, Tx};
use shepherd_core::ids::{Participant, TaskId};
use tokio::sync::watch;

use crate::clock::Clock;
use crate::error::{BrokerError, BrokerResult};
use crate::state::journal::Journal;

/// The herd, its journal and who waits on either.
pub(crate) struct Store {
    herd: Mutex<Herd>,
    pub(crate) journal: Journal,
    pub(crate) clock: Arc<dyn Clock>,
    /// Bumped after every commit: wakes settlement waiters and the deadline timer.
    pub(crate) generation: watch::Sender<u64>,
    /// Bumped per participant when an item lands in its inbox.
    inbox_signals: Mutex<HashMap<Participant, watch::Sender<u64>>>,
    /// Carries out what commits ask for (see [`Effect`]).
    effects: EffectSink,
}

/// What a commit asks of the rest of the broker once it is applied and its wake-ups are sent.
///
/// The commit path knows the herd and its journal, not the handlers: it says what has to happen
/// and the runner the broker was started with (`effects::carry_out`) does it, right after the
/// commit and in this order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Effect {
    /// A task settled: its sheep may be closed after a while (`autoclose`).
    AutoClose(TaskId),
    /// A task's note is due to be finalised once the journal holds `pos` (`notes`).
    FinalizeNote { task_id: TaskId, pos: u64 },
    /// A run changed: its followers get its new view (`run`).
    PushRun(String),
}

/// Carries out one [`Effect`] of a commit (the broker's runner, holding the broker weakly).
pub(crate) type EffectSink = Box<dyn Fn(Effect) + Send + Sync>;

/// What a commit produced.
pub(crate) struct Committed<T> {
    pub(crate) value: T,
    pub(crate) pos: u64,
}

impl Store {
    /// A store over a replayed herd, handing what commits ask for to `effects`.
    pub(crate) fn new(
        herd: Herd,
        journal: Journal,
        clock: Arc<dyn Clock>,
        effects: EffectSink,
    ) -> Self {
        Self {
            herd: Mutex::new(herd),
            journal,
            clock,
            generation: watch::Sender::new(0),
            inbox_signals: Mutex::new(HashMap::new()),
            effects,
        }
    }

    /// Reads the herd.
    pub(crate) fn read<T>(&self, f: impl FnOnce(&Herd) -> T) -> T {
        f(&self.herd.lock().expect("herd lock"))
    }

    /// Applies a command, journals its events and wakes whoever it concerns. Returns the
    /// command's value and the journal position to wait for before acknowledging.
    pub(crate) fn commit<T>(&self, f: impl FnOnce(&mut Tx<'_>) -> T) -> Committed<T> {
        let now = self.clock.now_ms();
        let (value, events, pos) = {
            let mut herd = self.herd.lock().expect("herd lock");
            let mut tx = Tx::new(&mut herd, now);
            let value = f(&mut tx);
            let events = tx.finish();
            let pos = self.journal.append(&events);
            (value, events, pos)
        };
        if !events.is_empty() {
            for effect in self.after_commit(&events, pos) {
                (self.effects)(effect);
            }
        }
        Committed { value, pos }
    }

    /// Like [`Store::commit`] for a fallible command, waiting until the change is durable.
    pub(crate) async fn commit_durable<T>(
        &self,
        f: impl FnOnce(&mut Tx<'_>) -> Result<T, shepherd_core::herd::HerdError>,
    ) -> BrokerResult<T> {
        let Committed { value, pos } = self.commit(f);
        let value = value?;
        self.durable(pos).await?;
        Ok(value)
    }

    /// Waits until the journal holds everything up to `pos`.
    pub(crate) async fn durable(&self, pos: u64) -> BrokerResult<()> {
        self.journal.durable(pos).await.map_err(BrokerError::from)
    }

    /// Waits until everything applied so far is durable.
    pub(crate) async fn durable_now(&self) -> BrokerResult<()> {
        let pos = self.read(|_| self.journal.position());
        self.durable(pos).await
    }

    /// Wakes what the broker itself keeps (inbox readers, the generation's waiters) and returns
    /// what the rest of the broker has to do about `events`, in order.
    fn after_commit(&self, events: &[Event], pos: u64) -> Vec<Effect> {
        {
            let signals = self.inbox_signals.lock().expect("signals lock");
            for event in events {
                if let Event::Enqueued { to, item } = event
                    && let Some(signal) = signals.get(to)
                {
                    signal.send_replace(item.seq);
                }
            }
            // A provider key let a sheep go, or a turn under a cap ended: whoever it held may
            // be handed its inbox now.
            if events.iter().any(ungates) {
                for (who, signal) in signals.iter() {
                    if matches!(who, Participant::Sheep(_)) {
                        signal.send_modify(|_| {});
                    }
                }
            }
        }
        self.generation.send_modify(|g| *g += 1);
        effects_of(
            events,
            pos,
            |task_id| {
                self.read(|herd| {
                    herd.tasks
                        .get(task_id)
                        .is_some_and(|t| t.note.is_some() && !t.finalized)
                })
            },
            |task_id| self.read(|herd| run_of(herd, task_id)),
        )
    }

    /// A receiver that changes whenever `who` gets an inbox item.
    pub(crate) fn inbox_signal(&self, who: &Participant) -> watch::Receiver<u64> {
        self.inbox_signals
            .lock()
            .expect("signals lock")
            .entry(who.clone())
            .or_insert_with(|| watch::Sender::new(0))
            .subscribe()
    }

    /// The current time.
    pub(crate) fn now(&self) -> i64 {
        self.clock.now_ms()
    }
}

/// What `events`, journaled up to `pos`, ask of the rest of the broker, in order: for each
/// settled task an auto-close, and a finalisation when `unfinalized_note` says it has a note
/// that is not final yet; a finalisation for each note attached to a settled task; then a push
/// for each run that changed (once for consecutive changes of the same run), a task of a run
/// (`run_of`) meeting a limit, ending its wait or falling back included, so its progress says
/// rate-limited, or which fallback took it over.
fn effects_of(
    events: &[Event],
    pos: u64,
    unfinalized_note: impl Fn(&TaskId) -> bool,
    run_of: impl Fn(&TaskId) -> Option<String>,
) -> Vec<Effect> {
    let mut settled = Vec::new();
    let mut noted = Vec::new();
    let mut runs: Vec<String> = Vec::new();
    for event in events {
        match event {
            Event::TaskSettled { task_id, .. } => settled.push(task_id),
            Event::NoteAttached { task_id, .. } => noted.push(task_id),
            Event::RunSubmitted { run } => runs.push(run.id.clone()),
            Event::RunPlanned { run_id, .. }
            | Event::RunStepChanged { run_id, .. }
            | Event::RunCancelled { run_id, .. }
            | Event::RunFinished { run_id, .. } => runs.push(run_id.clone()),
            Event::Limited { task_id, .. }
            | Event::LimitEnded { task_id, .. }
            | Event::TaskFellBack { task_id, .. } => {
                runs.extend(run_of(task_id));
            }
            _ => {}
        }
    }
    let mut effects = Vec::new();
    for task_id in settled {
        effects.push(Effect::AutoClose(task_id.clone()));
        if unfinalized_note(task_id) {
            effects.push(Effect::FinalizeNote {
                task_id: task_id.clone(),
                pos,
            });
        }
    }
    for task_id in noted {
        effects.push(Effect::FinalizeNote {
            task_id: task_id.clone(),
            pos,
        });
    }
    runs.dedup();
    effects.extend(runs.into_iter().map(Effect::PushRun));
    effects
}

/// The unfinished run `task_id` is a step of, if any.
fn run_of(herd: &Herd, task_id: &TaskId) -> Option<String> {
    herd.runs
        .values()
        .filter(|run| run.finished.is_none())
        .find(|run| {
            run.steps
                .iter()
                .any(|step| step.task_id.as_deref() == Some(task_id.as_str()))
        })
        .map(|run| run.id.clone())
}

/// Whether `event` may let a sheep held for a provider limit or a turn cap be handed its inbox.
fn ungates(event: &Event) -> bool {
    matches!(
        event,
        Event::LimitReleased { .. }
            | Event::LimitCleared { .. }
            | Event::SheepActivity { .. }
            | Event::SheepExited { .. }
            | Event::SheepClosed { .. }
            | Event::TaskSettled { .. }
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use shepherd_core::herd::{NoteLink, TaskResult};
    use shepherd_core::ids::TaskId;
    use shepherd_core::task::TaskState;

    fn task(n: u32) -> TaskId {
        TaskId::mint("test", &n.to_string())
    }

    fn settled(n: u32) -> Event {
        Event::TaskSettled {
            task_id: task(n),
            result: TaskResult {
                status: TaskState::Completed,
                return_code: 0,
                summary: None,
                text: None,
                error: None,
                completed_at: 1,
            },
        }
    }

    fn run_changed(run_id: &str) -> Event {
        Event::RunCancelled {
            run_id: run_id.to_owned(),
            reason: "test".to_owned(),
        }
    }

    #[test]
    fn a_commit_asks_for_closes_and_notes_first_then_run_pushes_in_order() {
        let note = NoteLink {
            session: String::new(),
            session_name: String::new(),
            session_path: String::new(),
            session_relative: String::new(),
            note: String::new(),
            note_relative: String::new(),
            resumed: false,
        };
        let events = [
            run_changed("run-a"),
            settled(1),
            run_changed("run-a"),
            Event::NoteAttached {
                task_id: task(3),
                note,
            },
            settled(2),
            run_changed("run-b"),
            run_changed("run-a"),
        ];
        let effects = effects_of(&events, 7, |task_id| *task_id == task(2), |_| None);
        assert_eq!(
            effects,
            vec![
                Effect::AutoClose(task(1)),
                Effect::AutoClose(task(2)),
                Effect::FinalizeNote {
                    task_id: task(2),
                    pos: 7
                },
                Effect::FinalizeNote {
                    task_id: task(3),
                    pos: 7
                },
                Effect::PushRun("run-a".to_owned()),
                Effect::PushRun("run-b".to_owned()),
                Effect::PushRun("run-a".to_owned()),
            ]
        );
    }

    /// A run's task that meets a limit, or ends its wait, changes what the run's progress
    /// says (`rate-limited until …`): its followers get the run again.
    #[test]
    fn a_run_s_task_meeting_a_limit_or_ending_its_wait_pushes_the_run() {
        let events = [
            Event::LimitEnded {
                task_id: task(1),
                ended: "resumed".to_owned(),
                at: 5,
            },
            Event::LimitEnded {
                task_id: task(2),
                ended: "resumed".to_owned(),
                at: 5,
            },
        ];
        let run_of = |task_id: &TaskId| (*task_id == task(1)).then(|| "run-a".to_owned());
        assert_eq!(
            effects_of(&events, 3, |_| false, run_of),
            vec![Effect::PushRun("run-a".to_owned())],
            "only the task of a run pushes one"
        );
    }

    #[test]
    fn a_commit_that_changes_nothing_others_watch_asks_for_nothing() {
        let events = [Event::FieldnotesFixed { on: true }];
        assert!(effects_of(&events, 1, |_| true, |_| None).is_empty());
    }
}
