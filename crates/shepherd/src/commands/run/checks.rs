//! Everything a run can refuse, checked before anything launches: nesting depth, task limits,
//! session name, backend, labels, agent definitions, chain rules, isolation and parallel write
//! conflicts. A refused run changes nothing — no broker request, no note, no worktree.

use std::path::{Path, PathBuf};

use shepherd_core::agent_def::AgentDef;
use shepherd_core::settings::{Backend, EffectiveSettings};

use super::conflict;
use super::plan::{Mode, RunPlan};
use super::worktree::{self, Repo};
use crate::error::CliError;

/// A run that passed every check.
#[derive(Debug, Clone)]
pub(super) struct CheckedRun {
    pub(super) mode: Mode,
    pub(super) steps: Vec<CheckedStep>,
    pub(super) max_concurrency: usize,
    pub(super) timeout_minutes: f64,
}

/// One checked task.
#[derive(Debug, Clone)]
pub(super) struct CheckedStep {
    pub(super) agent: String,
    pub(super) task: String,
    pub(super) cwd: PathBuf,
    pub(super) label: Option<String>,
    /// Set when the task runs in its own worktree of this repository.
    pub(super) repo: Option<Repo>,
}

/// Refuses a run nested deeper than `maxDepth` allows (`depth` is this process's
/// `SHEPHERD_DEPTH`: 0 for a person, 1 inside a sheep, …).
pub(super) fn depth(depth: u32, max_depth: u32) -> Result<(), CliError> {
    if depth.saturating_add(1) > max_depth {
        return Err(CliError::new(
            "depth_exceeded",
            format!(
                "shepherd run is nested {depth} deep (SHEPHERD_DEPTH={depth}) and maxDepth is {max_depth}; \
                 a sheep at this depth may not start sheep of its own"
            ),
        ));
    }
    Ok(())
}

/// Checks `plan` against the settings and the agent definitions `resolve` finds.
pub(super) fn check(
    plan: &RunPlan,
    settings: &EffectiveSettings,
    home: &Path,
    resolve: impl Fn(&str) -> Result<AgentDef, CliError>,
) -> Result<CheckedRun, CliError> {
    let count = plan.steps.len();
    let max_tasks = settings.max_parallel_tasks as usize;
    if plan.mode == Mode::Parallel && count > max_tasks {
        return Err(CliError::new(
            "too_many_tasks",
            format!(
                "Too many parallel tasks ({count}). Max is {max_tasks} (setting maxParallelTasks)."
            ),
        ));
    }
    if let Some(name) = &plan.session_name {
        shepherd_core::slug::validate_session_name(name)
            .map_err(|err| CliError::new("invalid_session_name", err.to_string()).with_exit(2))?;
    }
    if let Some(backend) = &plan.backend
        && !Backend::ALL.iter().any(|b| b.as_str() == backend)
    {
        return Err(CliError::new(
            "invalid_backend",
            format!("backend `{backend}` is not one of auto, herdr, tmux, headless"),
        )
        .with_exit(2));
    }
    check_labels(plan)?;
    let mut defs = Vec::with_capacity(count);
    for step in &plan.steps {
        defs.push(resolve(&step.agent)?);
    }
    if plan.mode == Mode::Chain {
        if let Some(first) = plan.steps.first()
            && first.task.contains("{previous}")
        {
            return Err(CliError::new(
                "invalid_run",
                "chain step 1 uses {previous}, but there is no previous step",
            )
            .with_exit(2));
        }
        if let Some(number) = plan.steps.iter().position(|s| s.isolate) {
            return Err(CliError::new(
                "invalid_run",
                format!(
                    "chain step {} asks for isolate; chain steps share one directory so each sees the previous step's work \
                     (isolate single or parallel tasks instead)",
                    number + 1
                ),
            )
            .with_exit(2));
        }
    }
    let mut steps = Vec::with_capacity(count);
    for (index, step) in plan.steps.iter().enumerate() {
        let repo = if step.isolate {
            Some(worktree::probe(&step.cwd, index + 1)?)
        } else {
            None
        };
        steps.push(CheckedStep {
            agent: step.agent.clone(),
            task: step.task.clone(),
            cwd: step.cwd.clone(),
            label: step.label.clone(),
            repo,
        });
    }
    if plan.mode == Mode::Parallel {
        check_conflicts(&steps, &defs, home)?;
    }
    Ok(CheckedRun {
        mode: plan.mode,
        steps,
        max_concurrency: settings.max_concurrency.max(1) as usize,
        timeout_minutes: plan.timeout_minutes.unwrap_or(settings.timeout_minutes),
    })
}

fn check_labels(plan: &RunPlan) -> Result<(), CliError> {
    let mut seen: Vec<(&str, String)> = Vec::new();
    for (index, step) in plan.steps.iter().enumerate() {
        let Some(label) = &step.label else { continue };
        let label = shepherd_core::label::validate_label(label)
            .map_err(|err| CliError::new(err.code(), err.to_string()).with_exit(2))?;
        if label.is_empty() || plan.mode != Mode::Parallel {
            continue;
        }
        let key = (step.agent.as_str(), label.as_str().to_owned());
        if seen.contains(&key) {
            return Err(CliError::new(
                "duplicate_label",
                format!(
                    "parallel task {} would be a second `{}: {}`; give each parallel task of one agent its own label",
                    index + 1,
                    step.agent,
                    label
                ),
            ));
        }
        seen.push(key);
    }
    Ok(())
}

/// Whether a sheep of `def` may write files: a command agent always may; a pi agent unless its
/// tool allowlist leaves out write, edit and bash.
pub(super) fn is_writer(def: &AgentDef) -> bool {
    if def.command.is_some() {
        return true;
    }
    match &def.tools {
        None => true,
        Some(tools) => tools.iter().any(|tool| {
            let tool = tool.trim().to_lowercase();
            matches!(tool.as_str(), "write" | "edit" | "bash")
        }),
    }
}

/// Refuses two parallel writers (not isolated) whose tasks claim the same file or directory.
fn check_conflicts(steps: &[CheckedStep], defs: &[AgentDef], home: &Path) -> Result<(), CliError> {
    let mut claims: Vec<(usize, String, PathBuf)> = Vec::new();
    for (index, (step, def)) in steps.iter().zip(defs).enumerate() {
        if step.repo.is_some() || !is_writer(def) {
            continue;
        }
        for written in conflict::write_targets(&step.task) {
            let path = conflict::canonical_claim(&written, &step.cwd, home);
            if let Some((other, other_text, claimed)) = claims
                .iter()
                .find(|(other, _, claimed)| *other != index && conflict::overlaps(claimed, &path))
            {
                let what = if other_text == &written {
                    format!("`{written}`")
                } else {
                    format!("`{other_text}` and `{written}`")
                };
                return Err(CliError::new(
                    "write_conflict",
                    format!(
                        "parallel tasks {} ({}) and {} ({}) would both write {what} ({}); \
                         isolate one of them (isolate: true, or --isolate), run them as a chain, or give them separate files",
                        other + 1,
                        steps[*other].agent,
                        index + 1,
                        step.agent,
                        claimed.display(),
                    ),
                ));
            }
            claims.push((index, written, path));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::run::plan::StepPlan;

    fn def(name: &str, tools: Option<&[&str]>, command: bool) -> AgentDef {
        let mut text = format!("---\nname: {name}\ndescription: d\n");
        if let Some(tools) = tools {
            text.push_str(&format!("tools: {}\n", tools.join(", ")));
        }
        if command {
            text.push_str("command: [\"true\"]\n");
        }
        text.push_str("---\nbody\n");
        shepherd_core::agent_def::parse_agent_def(
            text.as_bytes(),
            shepherd_core::agent_def::AgentSource::User,
            PathBuf::from("/x.md"),
        )
        .unwrap()
        .def
    }

    fn plan(mode: Mode, tasks: &[(&str, &str, bool)], cwd: &Path) -> RunPlan {
        RunPlan {
            mode,
            steps: tasks
                .iter()
                .map(|(agent, task, isolate)| StepPlan {
                    agent: (*agent).to_owned(),
                    task: (*task).to_owned(),
                    cwd: cwd.to_path_buf(),
                    isolate: *isolate,
                    label: None,
                })
                .collect(),
            session_name: None,
            timeout_minutes: None,
            backend: None,
        }
    }

    fn resolver(name: &str) -> Result<AgentDef, CliError> {
        match name {
            "scout" => Ok(def("scout", Some(&["read", "grep"]), false)),
            "worker" => Ok(def("worker", None, false)),
            "tool" => Ok(def("tool", Some(&["read"]), true)),
            other => Err(CliError::new(
                "unknown_agent",
                format!("no agent `{other}`"),
            )),
        }
    }

    #[test]
    fn writers_are_command_agents_and_pi_agents_that_can_write() {
        assert!(!is_writer(&def("s", Some(&["read", "grep"]), false)));
        assert!(is_writer(&def("w", Some(&["read", "Bash"]), false)));
        assert!(is_writer(&def("w", None, false)));
        assert!(is_writer(&def("c", Some(&["read"]), true)));
    }

    #[test]
    fn overlapping_parallel_writers_are_refused_unless_isolated_or_readers() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path().canonicalize().unwrap();
        let settings = EffectiveSettings::default();
        let both = plan(
            Mode::Parallel,
            &[
                ("worker", "edit src/main.rs", false),
                ("tool", "fix the bug in ./src/main.rs", false),
            ],
            &cwd,
        );
        let err = check(&both, &settings, &cwd, resolver).unwrap_err();
        assert_eq!(err.code, "write_conflict");
        assert!(
            err.message.contains("tasks 1 (worker) and 2 (tool)"),
            "{}",
            err.message
        );

        let reader = plan(
            Mode::Parallel,
            &[
                ("worker", "edit src", false),
                ("scout", "edit src/main.rs", false),
            ],
            &cwd,
        );
        assert!(check(&reader, &settings, &cwd, resolver).is_ok());
        let chain = plan(
            Mode::Chain,
            &[
                ("worker", "edit src/main.rs", false),
                ("worker", "edit src/main.rs", false),
            ],
            &cwd,
        );
        assert!(check(&chain, &settings, &cwd, resolver).is_ok());
    }

    #[test]
    fn limits_depth_and_chain_rules_are_enforced() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path().canonicalize().unwrap();
        let settings = EffectiveSettings {
            max_parallel_tasks: 2,
            ..EffectiveSettings::default()
        };
        let three = plan(
            Mode::Parallel,
            &[
                ("scout", "a", false),
                ("scout", "b", false),
                ("scout", "c", false),
            ],
            &cwd,
        );
        let err = check(&three, &settings, &cwd, resolver).unwrap_err();
        assert_eq!(
            err.message,
            "Too many parallel tasks (3). Max is 2 (setting maxParallelTasks)."
        );
        let previous = plan(Mode::Chain, &[("scout", "use {previous}", false)], &cwd);
        assert!(
            check(&previous, &settings, &cwd, resolver)
                .unwrap_err()
                .message
                .contains("step 1 uses {previous}")
        );
        let unknown = plan(Mode::Single, &[("nobody", "x", false)], &cwd);
        assert_eq!(
            check(&unknown, &settings, &cwd, resolver).unwrap_err().code,
            "unknown_agent"
        );
        assert!(depth(1, 2).is_ok());
        assert_eq!(depth(2, 2).unwrap_err().code, "depth_exceeded");
    }
}
