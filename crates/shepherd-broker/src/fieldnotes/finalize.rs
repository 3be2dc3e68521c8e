//! What a settled task's note is finalised with: its status, output and error, and the
//! metadata the herd knows of it (its figures, budget, limit episodes, the note it continues),
//! and, for a task that fell back to another sheep, the first note's last word and its link to
//! the second.

use serde_json::Value;
use shepherd_core::herd::{Herd, NoteLink};
use shepherd_core::ids::TaskId;
use shepherd_notes::{Metadata, NoteStatus};

use super::one_line;

/// What finalising a settled task's note needs.
#[derive(Debug, Clone)]
pub(crate) struct FinalizeJob {
    pub(crate) note: NoteLink,
    pub(super) status: NoteStatus,
    pub(crate) output: Option<String>,
    pub(super) error: Option<String>,
    pub(super) metadata: Metadata,
    /// Whether the sheep's final words (run output) are in it already.
    pub(crate) with_run_output: bool,
}

impl FinalizeJob {
    /// The job for a settled task with a note, if it has one.
    pub(crate) fn for_task(herd: &Herd, task_id: &TaskId) -> Option<Self> {
        let task = herd.tasks.get(task_id)?;
        let note = task.note.clone()?;
        let result = task.result.as_ref()?;
        let status = task
            .state
            .note_status()
            .parse()
            .unwrap_or(NoteStatus::Failed);
        let mut metadata = Metadata::new();
        metadata.insert("taskStatus".into(), Value::from(task.state.as_str()));
        metadata.insert("returnCode".into(), Value::from(result.return_code));
        if let Some(summary) = &result.summary {
            metadata.insert("summary".into(), Value::from(one_line(summary)));
        }
        // Where the sheep ran, when not on this machine.
        if let Some(host) = herd.sheep.get(&task.agent_id).and_then(|s| s.host()) {
            metadata.insert("host".into(), Value::from(host));
        }
        // The sandbox it ran in, when it ran confined.
        if let Some(sandbox) = herd
            .sheep
            .get(&task.agent_id)
            .and_then(|s| s.recipe.as_ref())
            .and_then(|recipe| recipe.sandbox)
            .filter(|sandbox| sandbox.is_on())
        {
            metadata.insert("sandbox".into(), Value::from(sandbox.as_str()));
        }
        // The resource limits it ran with, and how they were applied.
        if let Some(sheep) = herd.sheep.get(&task.agent_id)
            && let Some(limits) = sheep.recipe.as_ref().and_then(|recipe| recipe.limits)
        {
            let by = sheep
                .launch
                .as_ref()
                .and_then(|launch| launch.limits.as_ref())
                .map(|by| format!(" ({by})"))
                .unwrap_or_default();
            metadata.insert("limits".into(), Value::from(format!("{limits}{by}")));
        }
        controls_metadata(task, &mut metadata);
        limits_metadata(task, &mut metadata);
        let started = task.started_at.unwrap_or(task.created_at);
        metadata.insert(
            "durationMs".into(),
            Value::from(result.completed_at - started),
        );
        let output = match &task.output {
            Some(run) => {
                merge_telemetry(&mut metadata, &run.telemetry);
                Some(run.text.clone())
                    .filter(|t| !t.trim().is_empty())
                    .or_else(|| result.text.clone())
            }
            None => result.text.clone(),
        };
        Some(Self {
            note,
            status,
            output,
            error: result.error.clone(),
            metadata,
            with_run_output: task.output.is_some(),
        })
    }

    /// The job for the first note of a task that fell back (it is final from then on): status
    /// `cancelled`, the limit it met, and a link to `next`, the note that goes on with it.
    pub(crate) fn for_fallen_back(herd: &Herd, task_id: &TaskId, next: &NoteLink) -> Option<Self> {
        let task = herd.tasks.get(task_id)?;
        let first = task.fell_back_from.as_ref()?;
        let note = first.note.clone()?;
        let to = herd.sheep.get(&task.agent_id).map_or_else(
            || task.agent_id.to_string(),
            shepherd_core::herd::Sheep::display_name,
        );
        // The account the fallback spends, by the variable that holds its key (never the key).
        let account = herd
            .sheep
            .get(&task.agent_id)
            .and_then(|s| s.provider.clone())
            .filter(|provider| provider.contains(", account "));
        let mut metadata = Metadata::new();
        metadata.insert("taskStatus".into(), Value::from("fell_back"));
        metadata.insert("fellBackTo".into(), Value::from(to.as_str()));
        if let Some(account) = &account {
            metadata.insert("fellBackOn".into(), Value::from(account.as_str()));
        }
        metadata.insert(
            "continuedIn".into(),
            Value::from(next.note_relative.as_str()),
        );
        episodes_metadata(&first.episodes, &mut metadata);
        metadata.insert(
            "durationMs".into(),
            Value::from((first.at - task.created_at).max(0)),
        );
        let to = match &account {
            Some(account) => format!("{to} (on {account})"),
            None => to,
        };
        let error = format!(
            "Handed to {to} at {}: {} is limited until {}, past fallbackAfterMinutes. The task \
             goes on in {}.",
            shepherd_core::time::from_millis(first.at),
            first.provider,
            shepherd_core::time::from_millis(first.until),
            next.note_relative,
        );
        Some(Self {
            note,
            status: NoteStatus::Cancelled,
            output: None,
            error: Some(error),
            metadata,
            with_run_output: true,
        })
    }
}

/// What a task's provider limits add to its note: how many it met, how long it waited in all,
/// and each episode (when, which provider, how long, how it ended). Nothing when it met none.
fn limits_metadata(task: &shepherd_core::herd::Task, metadata: &mut Metadata) {
    episodes_metadata(&task.limit_episodes, metadata);
}

fn episodes_metadata(episodes: &[shepherd_core::herd::LimitEpisode], metadata: &mut Metadata) {
    if episodes.is_empty() {
        return;
    }
    let waited: i64 = episodes.iter().map(|e| e.waited_ms).sum();
    let episodes: Vec<Value> = episodes
        .iter()
        .map(|episode| {
            serde_json::json!({
                "at": shepherd_core::time::from_millis(episode.since).to_string(),
                "class": episode.class,
                "provider": episode.provider,
                "waitedMs": episode.waited_ms,
                "replies": episode.replies,
                "ended": episode.ended,
            })
        })
        .collect();
    metadata.insert("rateLimits".into(), Value::from(episodes.len()));
    metadata.insert("rateLimitWaitMs".into(), Value::from(waited));
    metadata.insert("rateLimitEpisodes".into(), Value::Array(episodes));
}

/// What a task's controls add to its note: its budget, and the note it continues.
fn controls_metadata(task: &shepherd_core::herd::Task, metadata: &mut Metadata) {
    if let Some(budget) = &task.budget {
        metadata.insert(
            "budget".into(),
            serde_json::to_value(budget).unwrap_or(Value::Null),
        );
    }
    if let Some(previous) = &task.continues {
        metadata.insert(
            "continues".into(),
            Value::from(previous.note_relative.as_str()),
        );
    }
    if let Some(first) = &task.fell_back_from {
        metadata.insert(
            "fellBackFrom".into(),
            Value::from(first.display_name.as_str()),
        );
        if let Some(note) = &first.note {
            metadata.insert("continues".into(), Value::from(note.note_relative.as_str()));
        }
    }
}

pub(crate) fn merge_telemetry(metadata: &mut Metadata, telemetry: &Value) {
    if let Some(fields) = telemetry.as_object() {
        for (key, value) in fields {
            metadata.insert(key.clone(), value.clone());
        }
    }
}
