//! Everything a run can refuse, checked before anything launches: nesting depth, task limits,
//! mode, session name, backend, labels, agent definitions, chain rules, isolation and parallel
//! write conflicts. A refused run changes nothing — no note, no worktree, no sheep.

use shepherd_core::error_code::ErrorCode;
use std::path::{Path, PathBuf};

use shepherd_core::agent_def::AgentDef;
use shepherd_core::harness::ToolSet;
use shepherd_core::protocol::RunSubmitParams;
use shepherd_core::settings::EffectiveSettings;
use shepherd_notes::Mode;

use super::conflict;
use super::model::{RunSpec, SpecStep};
use crate::error::{BrokerError, BrokerResult};
use crate::sheep::worktree;

/// Refuses a run nested deeper than `maxDepth` allows (`depth` is this herd's: 0 for a person's
/// herd, 1 for a herd a sheep started, …).
pub(crate) fn depth(depth: u32, max_depth: u32) -> BrokerResult<()> {
    if depth.saturating_add(1) > max_depth {
        return Err(BrokerError::new(
            ErrorCode::DepthExceeded,
            format!(
                "shepherd run is nested {depth} deep (SHEPHERD_DEPTH={depth}) and maxDepth is {max_depth}; \
                 a sheep at this depth may not start sheep of its own"
            ),
        ));
    }
    Ok(())
}

fn invalid(message: impl Into<String>) -> BrokerError {
    BrokerError::new(ErrorCode::InvalidRun, message)
}

/// Checks a submitted run against the settings and the agent definitions `resolve` finds;
/// relative working directories resolve against `root`.
pub(crate) fn check(
    params: &RunSubmitParams,
    settings: &EffectiveSettings,
    home: &Path,
    root: &Path,
    resolve: impl Fn(&str) -> BrokerResult<AgentDef>,
) -> BrokerResult<RunSpec> {
    let mode: Mode = params.mode;
    let count = params.steps.len();
    if count == 0 {
        return Err(invalid("a run needs at least one task"));
    }
    if mode == Mode::Single && count != 1 {
        return Err(invalid(format!(
            "a single run has exactly one task, not {count}"
        )));
    }
    let max_tasks = settings.max_parallel_tasks as usize;
    if mode == Mode::Parallel && count > max_tasks {
        return Err(BrokerError::new(
            ErrorCode::TooManyTasks,
            format!(
                "Too many parallel tasks ({count}). Max is {max_tasks} (setting maxParallelTasks)."
            ),
        ));
    }
    if let Some(name) = &params.session_name {
        shepherd_core::slug::validate_session_name(name)
            .map_err(|err| BrokerError::new(ErrorCode::InvalidSessionName, err.to_string()))?;
    }
    let timeout_minutes = params.timeout.unwrap_or(settings.timeout_minutes);
    if !(timeout_minutes.is_finite() && timeout_minutes > 0.0) {
        return Err(invalid(format!(
            "timeout `{timeout_minutes}` must be a positive number of minutes"
        )));
    }
    check_labels(mode, params)?;
    let mut defs = Vec::with_capacity(count);
    for (index, step) in params.steps.iter().enumerate() {
        if step.task.trim().is_empty() {
            return Err(invalid(format!("the task for `{}` is empty", step.agent)));
        }
        let def = resolve(&step.agent)?;
        let runtime = crate::sheep::harness::runtime_of(&def, step.harness)?;
        let given = match (params.budget, step.budget) {
            (Some(run), Some(own)) => Some(run.overlay(own)),
            (run, own) => own.or(run),
        };
        crate::sheep::controls::check_budget(
            given.as_ref(),
            def.budget.as_ref(),
            crate::sheep::harness::Controls::of(runtime),
            &format!("task {} ({})", index + 1, def.name),
        )?;
        defs.push(def);
    }
    if mode == Mode::Chain {
        if let Some(first) = params.steps.first()
            && first.task.contains("{previous}")
        {
            return Err(invalid(
                "chain step 1 uses {previous}, but there is no previous step",
            ));
        }
        if let Some(number) = params.steps.iter().position(|s| s.isolate) {
            return Err(invalid(format!(
                "chain step {} asks for isolate; chain steps share one directory so each sees the previous step's work \
                 (isolate single or parallel tasks instead)",
                number + 1
            )));
        }
    }
    let mut steps = Vec::with_capacity(count);
    for (index, step) in params.steps.iter().enumerate() {
        let host = step.host.clone().or_else(|| params.host.clone());
        if let Some(name) = &host {
            shepherd_core::hosts::validate_host_name(name).map_err(|err| {
                BrokerError::new(ErrorCode::UnknownHost, format!("task {}: {err}", index + 1))
            })?;
        }
        let cwd = resolve_cwd(root, step.cwd.as_deref(), index + 1)?;
        // A task on a host gets its worktree there, from its spawn.
        let remote_isolate = step.isolate && host.is_some();
        let repo = if step.isolate && !remote_isolate {
            Some(worktree::probe(&cwd, index + 1)?)
        } else {
            None
        };
        steps.push(SpecStep {
            agent: step.agent.clone(),
            task: step.task.clone(),
            cwd,
            label: step.label.clone(),
            harness: step.harness,
            host,
            remote_isolate,
            repo,
            budget: step.budget,
        });
    }
    if mode == Mode::Parallel {
        check_conflicts(&steps, &defs, home)?;
    }
    Ok(RunSpec {
        mode,
        steps,
        session_name: params.session_name.clone(),
        timeout_minutes,
        backend: params.backend,
        parent_model: params.parent_model.clone(),
        parent_thinking: params.parent_thinking,
        caller: params.caller.clone().unwrap_or_default(),
        pi_command: params.pi_command.clone(),
        keep_pane: settings.keep_open,
        max_concurrency: settings.max_concurrency.max(1) as usize,
        fieldnotes: true,
        budget: params.budget,
        sandbox: params.sandbox,
        user_sandbox: params.user_sandbox,
    })
}

/// A task's working directory: absolute, existing, a directory.
fn resolve_cwd(root: &Path, requested: Option<&str>, number: usize) -> BrokerResult<PathBuf> {
    let path = match requested {
        None | Some("") => root.to_path_buf(),
        Some(text) => root.join(text),
    };
    match path.canonicalize() {
        Ok(dir) if dir.is_dir() => Ok(dir),
        _ => Err(BrokerError::new(
            ErrorCode::InvalidCwd,
            format!(
                "task {number}'s directory `{}` is not an existing directory",
                path.display()
            ),
        )),
    }
}

fn check_labels(mode: Mode, params: &RunSubmitParams) -> BrokerResult<()> {
    let mut seen: Vec<(&str, String)> = Vec::new();
    for (index, step) in params.steps.iter().enumerate() {
        let Some(label) = &step.label else { continue };
        let label = shepherd_core::label::validate_label(label)
            .map_err(|err| BrokerError::new(err.code(), err.to_string()))?;
        if label.is_empty() || mode != Mode::Parallel {
            continue;
        }
        let key = (step.agent.as_str(), label.as_str().to_owned());
        if seen.contains(&key) {
            return Err(BrokerError::new(
                ErrorCode::DuplicateLabel,
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
pub(crate) fn is_writer(def: &AgentDef) -> bool {
    if def.command.is_some() {
        return true;
    }
    def.tools
        .as_deref()
        .is_none_or(|tools| !ToolSet::classify(tools).is_read_only())
}

/// Refuses two parallel writers (not isolated) whose tasks claim the same file or directory.
fn check_conflicts(steps: &[SpecStep], defs: &[AgentDef], home: &Path) -> BrokerResult<()> {
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
                return Err(BrokerError::new(
                    ErrorCode::WriteConflict,
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
    use shepherd_core::protocol::RunStepParams;

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

    fn plan(mode: Mode, tasks: &[(&str, &str, bool)], cwd: &Path) -> RunSubmitParams {
        RunSubmitParams {
            mode,
            steps: tasks
                .iter()
                .map(|(agent, task, isolate)| RunStepParams {
                    agent: (*agent).to_owned(),
                    task: (*task).to_owned(),
                    cwd: Some(cwd.display().to_string()),
                    isolate: *isolate,
                    label: None,
                    harness: None,
                    host: None,
                    budget: None,
                })
                .collect(),
            ..RunSubmitParams::default()
        }
    }

    fn resolver(name: &str) -> BrokerResult<AgentDef> {
        match name {
            "scout" => Ok(def("scout", Some(&["read", "grep"]), false)),
            "worker" => Ok(def("worker", None, false)),
            "tool" => Ok(def("tool", Some(&["read"]), true)),
            other => Err(BrokerError::new(
                ErrorCode::UnknownAgent,
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
        let err = check(&both, &settings, &cwd, &cwd, resolver).unwrap_err();
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
        assert!(check(&reader, &settings, &cwd, &cwd, resolver).is_ok());
        let chain = plan(
            Mode::Chain,
            &[
                ("worker", "edit src/main.rs", false),
                ("worker", "edit src/main.rs", false),
            ],
            &cwd,
        );
        assert!(check(&chain, &settings, &cwd, &cwd, resolver).is_ok());
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
        let err = check(&three, &settings, &cwd, &cwd, resolver).unwrap_err();
        assert_eq!(
            err.message,
            "Too many parallel tasks (3). Max is 2 (setting maxParallelTasks)."
        );
        let previous = plan(Mode::Chain, &[("scout", "use {previous}", false)], &cwd);
        assert!(
            check(&previous, &settings, &cwd, &cwd, resolver)
                .unwrap_err()
                .message
                .contains("step 1 uses {previous}")
        );
        let unknown = plan(Mode::Single, &[("nobody", "x", false)], &cwd);
        assert_eq!(
            check(&unknown, &settings, &cwd, &cwd, resolver)
                .unwrap_err()
                .code,
            "unknown_agent"
        );
        assert!(depth(1, 2).is_ok());
        assert_eq!(depth(2, 2).unwrap_err().code, "depth_exceeded");
    }

    #[test]
    fn budgets_are_checked_and_refused_for_command_agents() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path().canonicalize().unwrap();
        let settings = EffectiveSettings::default();
        let two_turns = shepherd_core::budget::Budget {
            turns: Some(2),
            ..shepherd_core::budget::Budget::default()
        };
        let mut run = plan(Mode::Single, &[("worker", "x", false)], &cwd);
        run.budget = Some(two_turns);
        let spec = check(&run, &settings, &cwd, &cwd, resolver).unwrap();
        assert_eq!(spec.budget, Some(two_turns));

        let mut command = plan(Mode::Single, &[("tool", "x", false)], &cwd);
        command.steps[0].budget = Some(two_turns);
        let err = check(&command, &settings, &cwd, &cwd, resolver).unwrap_err();
        assert_eq!(err.code, "budget_unsupported");
        assert!(
            err.message.starts_with("task 1 (tool) is a command sheep"),
            "{}",
            err.message
        );

        let mut zero = plan(Mode::Single, &[("worker", "x", false)], &cwd);
        zero.steps[0].budget = Some(shepherd_core::budget::Budget {
            tokens: Some(0),
            ..shepherd_core::budget::Budget::default()
        });
        assert_eq!(
            check(&zero, &settings, &cwd, &cwd, resolver)
                .unwrap_err()
                .code,
            "invalid_budget"
        );
    }
}
