//! What a merge lands, read from the herd: the branches a run's isolated tasks left (in its
//! input order), the branch an isolated sheep's worktree left when it was closed (named by its
//! agent id, as every lifecycle call names a sheep: a label is never an id), a branch named
//! outright, and every such branch of a fieldnotes session. Each comes with what lands (the
//! changes preserved on top of the branch at close, else the branch), whose work it is, the
//! first line of its task and how that task ended, its note and that note's session, and the
//! repository and branch it was made from.

use std::path::{Path, PathBuf};

use shepherd_core::error_code::ErrorCode;
use shepherd_core::herd::MergeCandidate;
use shepherd_core::herd::{Herd, Sheep, Task};
use shepherd_core::task::TaskState;
use shepherd_core::worktree::{MadeWorktree, Worktree, WorktreeReport};

use crate::error::{BrokerError, BrokerResult};

/// One branch to land, with the repository it belongs to (absent: the project's).
#[derive(Debug, Clone)]
pub(super) struct Found {
    pub(super) candidate: MergeCandidate,
    pub(super) repo: Option<PathBuf>,
}

fn candidate(report: &WorktreeReport, made: Option<&Worktree>) -> Option<Found> {
    if !report.needs_integrating() {
        return None;
    }
    let (landing, preserved, base_branch) = match report {
        WorktreeReport::Local(local) => (
            local.landing_ref().to_owned(),
            local.preserved.clone(),
            local.base_branch.clone(),
        ),
        WorktreeReport::Remote(remote) => (remote.branch.clone(), None, None),
    };
    Some(Found {
        candidate: MergeCandidate {
            branch: report.branch().to_owned(),
            landing_ref: landing,
            preserved,
            base_branch: base_branch.or_else(|| made.and_then(|w| w.base_branch.clone())),
            ..MergeCandidate::default()
        },
        repo: made.map(|w| w.repo.top.clone()),
    })
}

/// Fills in whose work it is, from its sheep and task.
fn owned(mut found: Found, sheep: Option<&Sheep>, task: Option<&Task>) -> Found {
    let c = &mut found.candidate;
    if let Some(sheep) = sheep {
        c.owner = Some(sheep.display_name());
        c.owner_id = Some(sheep.id.to_string());
        c.owner_label = sheep.label.as_str().to_owned();
    }
    match task {
        Some(task) => {
            c.task = task
                .description
                .lines()
                .map(str::trim)
                .find(|l| !l.is_empty())
                .map(str::to_owned);
            if task.state != TaskState::Completed {
                c.task_status = Some(task.state.as_str().to_owned());
            }
            if let Some(note) = &task.note {
                c.note = Some(note.note_relative.clone());
                c.note_path = Some(note.note.clone());
                c.session_dir = Some(note.session.clone());
            }
        }
        None if sheep.is_some() => c.task_status = Some("given no task".to_owned()),
        None => {}
    }
    found
}

/// The branches `targets` (and `session`) name, in order, each once.
pub(super) fn candidates(
    herd: &Herd,
    targets: &[String],
    session: Option<&str>,
) -> BrokerResult<Vec<Found>> {
    let mut found: Vec<Found> = Vec::new();
    let mut add = |one: Found| {
        if !found
            .iter()
            .any(|c| c.candidate.branch == one.candidate.branch)
        {
            found.push(one);
        }
    };
    for target in targets {
        let target = target.trim();
        if herd.runs.contains_key(target) {
            for one in of_run(herd, target)? {
                add(one);
            }
        } else if let Some(one) = of_branch(herd, target) {
            add(one);
        } else if let Ok(sheep) = herd.sheep_by_text(target) {
            add(of_sheep(herd, sheep)?.ok_or_else(|| {
                BrokerError::new(
                    ErrorCode::NothingToLand,
                    format!(
                        "{} ({}) left no branch with work on it",
                        sheep.display_name(),
                        sheep.id
                    ),
                )
            })?);
        } else if target.starts_with("shepherd/") {
            add(Found {
                candidate: MergeCandidate {
                    branch: target.to_owned(),
                    landing_ref: target.to_owned(),
                    ..MergeCandidate::default()
                },
                repo: None,
            });
        } else {
            return Err(BrokerError::new(
                ErrorCode::UnknownLanding,
                format!(
                    "`{target}` is not a run, a sheep or a branch of this herd: name a run id \
                     (run-…), a sheep's agent id or a branch (shepherd/…)"
                ),
            ));
        }
    }
    if let Some(session) = session {
        for one in of_session(herd, session) {
            add(one);
        }
    }
    Ok(found)
}

/// A run's branches, in its input order.
fn of_run(herd: &Herd, run_id: &str) -> BrokerResult<Vec<Found>> {
    let run = &herd.runs[run_id];
    let Some(report) = &run.finished else {
        return Err(BrokerError::new(
            ErrorCode::NotLandableYet,
            format!("run {run_id} is still running: land it once it is over"),
        ));
    };
    let mut out = Vec::new();
    for (index, result) in report.results.iter().enumerate() {
        let Some(worktree) = &result.worktree else {
            continue;
        };
        let made = run.steps.get(index).and_then(|s| s.worktree.as_ref());
        let Some(one) = candidate(worktree, made) else {
            continue;
        };
        let sheep = result
            .agent_id
            .as_deref()
            .and_then(shepherd_core::ids::AgentId::parse)
            .and_then(|id| herd.sheep.get(&id));
        let task = result
            .task_id
            .as_deref()
            .and_then(shepherd_core::ids::TaskId::parse)
            .and_then(|id| herd.tasks.get(&id));
        let mut one = owned(one, sheep, task);
        let c = &mut one.candidate;
        if sheep.is_none() {
            c.owner = Some(result.agent.clone());
        }
        // The run's own word for how the task ended (a step never run is `skipped`).
        c.task_status = (!result.completed()).then(|| result.status.as_str().to_owned());
        if c.note.is_none() {
            c.note.clone_from(&result.note_relative);
            c.note_path.clone_from(&result.note);
            c.session_dir = result.note.as_deref().and_then(session_of_note);
        }
        out.push(one);
    }
    Ok(out)
}

/// The session directory (`NNNN-slug`) of the note at `note`.
fn session_of_note(note: &str) -> Option<String> {
    Path::new(note)
        .parent()
        .and_then(Path::file_name)
        .map(|n| n.to_string_lossy().into_owned())
}

/// The branch a closed isolated sheep's worktree left.
fn of_sheep(herd: &Herd, sheep: &Sheep) -> BrokerResult<Option<Found>> {
    let Some(record) = &sheep.worktree else {
        return Ok(None);
    };
    let Some(released) = &record.released else {
        return Err(BrokerError::new(
            ErrorCode::NotLandableYet,
            format!(
                "{} ({}) is still open: close it first (its worktree is released at close)",
                sheep.display_name(),
                sheep.id
            ),
        ));
    };
    let made = match &record.made {
        MadeWorktree::Here(made) => Some(made),
        MadeWorktree::Remote { .. } => None,
    };
    let last_task = herd.tasks.values().rev().find(|t| t.agent_id == sheep.id);
    Ok(candidate(released, made).map(|one| owned(one, Some(sheep), last_task)))
}

/// A branch named outright: found among the herd's runs and sheep when it is one of theirs.
fn of_branch(herd: &Herd, branch: &str) -> Option<Found> {
    let from_runs = herd.runs.keys().filter_map(|id| {
        of_run(herd, id)
            .ok()?
            .into_iter()
            .find(|c| c.candidate.branch == branch)
    });
    let from_sheep = herd
        .sheep
        .values()
        .filter_map(|sheep| of_sheep(herd, sheep).ok().flatten())
        .filter(|c| c.candidate.branch == branch);
    from_runs.chain(from_sheep).next()
}

/// Every branch of session `name`: its runs' (in the order they were made) and its sheep's.
fn of_session(herd: &Herd, name: &str) -> Vec<Found> {
    let mut runs: Vec<_> = herd
        .runs
        .values()
        .filter(|run| {
            run.planned
                .as_ref()
                .is_some_and(|plan| plan.session_name == name)
        })
        .collect();
    runs.sort_by_key(|run| run.created_at);
    let from_runs = runs
        .into_iter()
        .filter_map(|run| of_run(herd, &run.id).ok())
        .flatten();
    let from_sheep = herd.sheep.values().filter_map(|sheep| {
        let last_note = herd
            .tasks
            .values()
            .rev()
            .find(|t| t.agent_id == sheep.id && t.note.is_some())
            .and_then(|t| t.note.as_ref());
        last_note
            .is_some_and(|n| n.session_name == name)
            .then(|| of_sheep(herd, sheep).ok().flatten())
            .flatten()
    });
    from_runs.chain(from_sheep).collect()
}

/// Leaves out what `only`, `skip` and a task that did not complete say, saying why in each
/// left out; `only` and `skip` name branches or agent ids, each of which must be one of the
/// candidates'.
pub(super) fn choose(
    found: &mut [Found],
    only: &[String],
    skip: &[String],
    include_failed: bool,
) -> BrokerResult<()> {
    let names = |c: &MergeCandidate, name: &str| {
        c.branch == name.trim() || c.owner_id.as_deref() == Some(name.trim())
    };
    for (flag, names_given) in [("--only", only), ("--skip", skip)] {
        if let Some(stray) = names_given
            .iter()
            .find(|name| !found.iter().any(|f| names(&f.candidate, name)))
        {
            let listed: Vec<&str> = found.iter().map(|f| f.candidate.branch.as_str()).collect();
            return Err(BrokerError::new(
                ErrorCode::UnknownLanding,
                format!(
                    "{flag} `{stray}` is none of the branches this merge names ({}): name one of \
                     them or its sheep's agent id",
                    listed.join(", ")
                ),
            ));
        }
    }
    for one in found.iter_mut() {
        let c = &mut one.candidate;
        c.left_out = if !only.is_empty() && !only.iter().any(|n| names(c, n)) {
            Some("left out: not named by --only".to_owned())
        } else if skip.iter().any(|n| names(c, n)) {
            Some("left out by --skip".to_owned())
        } else if let (false, Some(status)) = (include_failed, &c.task_status) {
            Some(format!(
                "left out: its task ended {status} (land it with --include-failed)"
            ))
        } else {
            None
        };
    }
    Ok(())
}
