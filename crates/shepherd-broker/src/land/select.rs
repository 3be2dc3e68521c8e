//! What a merge lands, read from the herd: the branches a run's isolated tasks left (in its
//! input order), the branch an isolated sheep's worktree left when it was closed, a branch
//! named outright, and every such branch of a fieldnotes session. Each comes with what lands
//! (the changes preserved on top of the branch at close, else the branch), whose work it is,
//! its note, and the repository and branch it was made from.

use std::path::PathBuf;

use shepherd_core::error_code::ErrorCode;
use shepherd_core::herd::Herd;
use shepherd_core::worktree::{MadeWorktree, Worktree, WorktreeReport};

use crate::error::{BrokerError, BrokerResult};

/// One branch to land.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Candidate {
    pub(crate) branch: String,
    /// What is merged.
    pub(crate) landing_ref: String,
    /// The changes preserved at close, when there are some (discarding deletes them too).
    pub(crate) preserved: Option<String>,
    /// Whose work it is (display name).
    pub(crate) owner: Option<String>,
    /// Its note, relative to the project.
    pub(crate) note: Option<String>,
    /// Its note, as a path: the session whose Branches section lists it.
    pub(crate) note_path: Option<PathBuf>,
    /// The repository it belongs to (absent: the project's).
    pub(crate) repo: Option<PathBuf>,
    /// The branch the project had checked out when its work began.
    pub(crate) base_branch: Option<String>,
    /// The fieldnotes session its note is in.
    pub(crate) session: Option<String>,
}

impl Candidate {
    fn of(report: &WorktreeReport, made: Option<&Worktree>) -> Option<Self> {
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
        Some(Self {
            branch: report.branch().to_owned(),
            landing_ref: landing,
            preserved,
            owner: None,
            note: None,
            note_path: None,
            repo: made.map(|w| w.repo.top.clone()),
            base_branch: base_branch.or_else(|| made.and_then(|w| w.base_branch.clone())),
            session: None,
        })
    }
}

/// The branches `targets` (and `session`) name, in order, each once.
pub(crate) fn candidates(
    herd: &Herd,
    targets: &[String],
    session: Option<&str>,
) -> BrokerResult<Vec<Candidate>> {
    let mut found: Vec<Candidate> = Vec::new();
    let mut add = |candidate: Candidate| {
        if !found.iter().any(|c| c.branch == candidate.branch) {
            found.push(candidate);
        }
    };
    for target in targets {
        let target = target.trim();
        if herd.runs.contains_key(target) {
            for candidate in of_run(herd, target)? {
                add(candidate);
            }
        } else if let Some(candidate) = of_branch(herd, target) {
            add(candidate);
        } else if let Some(sheep) = herd.sheep_by_text(target).ok().or_else(|| {
            // The newest sheep of that name: display names are reused once a sheep is closed.
            herd.sheep
                .values()
                .rev()
                .find(|s| s.display_name() == target)
        }) {
            add(of_sheep(herd, &sheep.id)?.ok_or_else(|| {
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
            add(Candidate {
                branch: target.to_owned(),
                landing_ref: target.to_owned(),
                preserved: None,
                owner: None,
                note: None,
                note_path: None,
                repo: None,
                base_branch: None,
                session: None,
            });
        } else {
            return Err(BrokerError::new(
                ErrorCode::NothingToLand,
                format!(
                    "`{target}` is not a run, a sheep or a branch of this herd: name a run id \
                     (run-…), a sheep (agent id or display name) or a branch (shepherd/…)"
                ),
            ));
        }
    }
    if let Some(session) = session {
        for candidate in of_session(herd, session) {
            add(candidate);
        }
    }
    Ok(found)
}

/// A run's branches, in its input order.
fn of_run(herd: &Herd, run_id: &str) -> BrokerResult<Vec<Candidate>> {
    let run = &herd.runs[run_id];
    let Some(report) = &run.finished else {
        return Err(BrokerError::new(
            ErrorCode::NothingToLand,
            format!("run {run_id} is still running: land it once it is over"),
        ));
    };
    let session = run.planned.as_ref().map(|p| p.session_name.clone());
    let mut out = Vec::new();
    for (index, result) in report.results.iter().enumerate() {
        let Some(worktree) = &result.worktree else {
            continue;
        };
        let made = run.steps.get(index).and_then(|s| s.worktree.as_ref());
        if let Some(mut candidate) = Candidate::of(worktree, made) {
            candidate.owner = result
                .agent_id
                .as_deref()
                .and_then(shepherd_core::ids::AgentId::parse)
                .and_then(|id| herd.sheep.get(&id))
                .map_or_else(|| Some(result.agent.clone()), |s| Some(s.display_name()));
            candidate.note.clone_from(&result.note_relative);
            candidate.note_path = result.note.as_ref().map(PathBuf::from);
            candidate.session = session.clone().filter(|s| !s.is_empty());
            out.push(candidate);
        }
    }
    Ok(out)
}

/// The branch a closed isolated sheep's worktree left.
fn of_sheep(herd: &Herd, id: &shepherd_core::ids::AgentId) -> BrokerResult<Option<Candidate>> {
    let sheep = &herd.sheep[id];
    let Some(record) = &sheep.worktree else {
        return Ok(None);
    };
    let Some(released) = &record.released else {
        return Err(BrokerError::new(
            ErrorCode::NothingToLand,
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
    let last_note = herd
        .tasks
        .values()
        .rev()
        .find(|t| &t.agent_id == id && t.note.is_some())
        .and_then(|t| t.note.as_ref());
    Ok(Candidate::of(released, made).map(|mut candidate| {
        candidate.owner = Some(sheep.display_name());
        candidate.note = last_note.map(|n| n.note_relative.clone());
        candidate.note_path = last_note.map(|n| PathBuf::from(&n.note));
        candidate.session = last_note.map(|n| n.session_name.clone());
        candidate
    }))
}

/// A branch named outright: found among the herd's runs and sheep when it is one of theirs.
fn of_branch(herd: &Herd, branch: &str) -> Option<Candidate> {
    let from_runs = herd.runs.keys().filter_map(|id| {
        of_run(herd, id)
            .ok()?
            .into_iter()
            .find(|c| c.branch == branch)
    });
    let from_sheep = herd
        .sheep
        .keys()
        .filter_map(|id| of_sheep(herd, id).ok().flatten())
        .filter(|c| c.branch == branch);
    from_runs.chain(from_sheep).next()
}

/// Every branch of session `name`: its runs' (in the order they were made) and its sheep's.
fn of_session(herd: &Herd, name: &str) -> Vec<Candidate> {
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
    let from_sheep = herd
        .sheep
        .keys()
        .filter_map(|id| of_sheep(herd, id).ok().flatten())
        .filter(|c| c.session.as_deref() == Some(name));
    from_runs.chain(from_sheep).collect()
}
