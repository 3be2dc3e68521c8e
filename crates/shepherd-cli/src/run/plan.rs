//! What a `shepherd run` was asked to do, read from its arguments or from a plan file, and made
//! into one checked [`RunPlan`].
//!
//! The same plan comes from three places — `AGENT TASK`, `--parallel`/`--chain` items, and a
//! YAML or JSON plan file (`-` is stdin, which the pi `subagent` tool uses) — so they are all
//! turned into one shape here, and everything after this module sees only that shape. Exactly one
//! mode per call; every refusal names the bad value and what is accepted.

use shepherd_core::error_code::ErrorCode;
use std::io::Read as _;
use std::path::{Path, PathBuf};

use shepherd_core::harness::Harness;

use serde::Deserialize;
use shepherd_core::budget::Budget;

use shepherd_client::CliError;

pub(super) use shepherd_core::fieldnotes::status::Mode;
use shepherd_core::settings::Backend;

/// One task of a run, with its working directory made absolute.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct StepPlan {
    pub(super) agent: String,
    pub(super) task: String,
    pub(super) cwd: PathBuf,
    pub(super) isolate: bool,
    pub(super) label: Option<String>,
    pub(super) harness: Option<Harness>,
    pub(super) host: Option<String>,
    pub(super) budget: Option<Budget>,
}

/// A whole run as asked for (not yet checked against settings or agent definitions).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct RunPlan {
    pub(super) mode: Mode,
    pub(super) steps: Vec<StepPlan>,
    pub(super) session_name: Option<String>,
    pub(super) timeout_minutes: Option<f64>,
    pub(super) backend: Option<Backend>,
    pub(super) budget: Option<Budget>,
    /// The least sandbox every task's sheep runs in (a plan may only confine more).
    pub(super) sandbox: Option<shepherd_core::sandbox::Sandbox>,
    /// Land the tasks' branches once the run is over (`merge: true`), with this check and
    /// strategy.
    pub(super) merge: bool,
    pub(super) merge_check: Option<String>,
    pub(super) merge_strategy: Option<shepherd_core::land::Strategy>,
}

/// The command-line side of a plan: everything `RunArgs` can say about the tasks.
#[derive(Debug, Clone, Default)]
pub(super) struct PlanInput<'a> {
    pub(super) agent: Option<&'a str>,
    pub(super) task: Option<&'a str>,
    pub(super) parallel: &'a [String],
    pub(super) chain: &'a [String],
    pub(super) plan_file: Option<&'a Path>,
    pub(super) session_name: Option<&'a str>,
    pub(super) cwd: Option<&'a Path>,
    pub(super) isolate: bool,
    pub(super) timeout: Option<f64>,
    pub(super) backend: Option<Backend>,
    pub(super) label: Option<&'a str>,
    pub(super) harness: Option<Harness>,
    pub(super) host: Option<&'a str>,
    pub(super) budget: Option<Budget>,
}

/// A plan file: `single`, top-level `agent` + `task`, `tasks` or `chain`, plus defaults.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct PlanFile {
    session_name: Option<String>,
    cwd: Option<PathBuf>,
    timeout: Option<f64>,
    backend: Option<Backend>,
    label: Option<String>,
    harness: Option<Harness>,
    host: Option<String>,
    single: Option<StepSpec>,
    agent: Option<String>,
    task: Option<String>,
    isolate: Option<bool>,
    tasks: Option<Vec<StepSpec>>,
    chain: Option<Vec<StepSpec>>,
    budget: Option<Budget>,
    /// Confine every task's sheep at least this much (it never loosens the definition's or
    /// the user's setting).
    sandbox: Option<shepherd_core::sandbox::Sandbox>,
    /// Land the tasks' branches once the run is over, as `--merge` does.
    merge: Option<bool>,
    /// The check that gates each landing step, as `--check` does.
    merge_check: Option<String>,
    /// How each branch lands, as `shepherd merge --strategy` says.
    merge_strategy: Option<shepherd_core::land::Strategy>,
}

/// One task as a plan file writes it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct StepSpec {
    agent: String,
    task: String,
    #[serde(default)]
    cwd: Option<PathBuf>,
    #[serde(default)]
    isolate: bool,
    #[serde(default)]
    label: Option<String>,
    #[serde(default)]
    harness: Option<Harness>,
    #[serde(default)]
    host: Option<String>,
    budget: Option<Budget>,
}

const ONE_MODE: &str = "give exactly one of: AGENT TASK (single), --parallel AGENT=TASK..., \
                        --chain AGENT=TASK..., --plan FILE";

fn invalid(message: impl Into<String>) -> CliError {
    CliError::new(ErrorCode::InvalidRun, message).with_exit(2)
}

/// Builds the plan from the command line (and the plan file it names). `cwd` is the process's
/// directory (relative paths resolve against it) and `root` the project root (the default
/// working directory).
pub(super) fn build(input: &PlanInput<'_>, cwd: &Path, root: &Path) -> Result<RunPlan, CliError> {
    let given = [
        input.agent.is_some(),
        !input.parallel.is_empty(),
        !input.chain.is_empty(),
        input.plan_file.is_some(),
    ];
    match given.iter().filter(|g| **g).count() {
        0 => return Err(invalid(format!("nothing to run: {ONE_MODE}"))),
        1 => {}
        _ => return Err(invalid(format!("more than one mode given: {ONE_MODE}"))),
    }
    let (mode, specs, file) = if let Some(agent) = input.agent {
        let task = input.task.ok_or_else(|| {
            invalid(format!(
                "missing TASK after agent `{agent}`: usage `shepherd run AGENT TASK`"
            ))
        })?;
        let spec = StepSpec {
            agent: agent.to_owned(),
            task: task.to_owned(),
            cwd: None,
            isolate: false,
            label: None,
            harness: None,
            host: None,
            budget: None,
        };
        (Mode::Single, vec![spec], PlanFile::default())
    } else if !input.parallel.is_empty() {
        (
            Mode::Parallel,
            pairs("--parallel", input.parallel)?,
            PlanFile::default(),
        )
    } else if !input.chain.is_empty() {
        (
            Mode::Chain,
            pairs("--chain", input.chain)?,
            PlanFile::default(),
        )
    } else {
        let path = input.plan_file.expect("one mode was given");
        let file = read_plan_file(path)?;
        let (mode, specs) = file_mode(&file, path)?;
        (mode, specs, file)
    };
    if input.agent.is_none()
        && let Some(task) = input.task
    {
        return Err(invalid(format!(
            "unexpected argument `{task}`: a task goes after its agent (`shepherd run AGENT TASK`)"
        )));
    }

    let base = match input.cwd.or(file.cwd.as_deref()) {
        Some(dir) => existing_dir(&cwd.join(dir), "--cwd / plan cwd")?,
        None => root.to_path_buf(),
    };
    let default_label = input.label.map(str::to_owned).or(file.label.clone());
    let mut steps = Vec::with_capacity(specs.len());
    for (index, spec) in specs.into_iter().enumerate() {
        let number = index + 1;
        if spec.agent.trim().is_empty() {
            return Err(invalid(format!("task {number} has an empty agent name")));
        }
        if spec.task.trim().is_empty() {
            return Err(invalid(format!(
                "task {number} ({}) has an empty task text",
                spec.agent
            )));
        }
        let step_cwd = match &spec.cwd {
            Some(dir) => existing_dir(&base.join(dir), &format!("cwd of task {number}"))?,
            None => base.clone(),
        };
        steps.push(StepPlan {
            agent: spec.agent.trim().to_owned(),
            task: spec.task,
            cwd: step_cwd,
            isolate: spec.isolate || input.isolate,
            label: spec.label.or_else(|| default_label.clone()),
            harness: spec.harness.or(input.harness).or(file.harness),
            host: spec
                .host
                .or_else(|| input.host.map(str::to_owned))
                .or_else(|| file.host.clone()),
            budget: spec.budget,
        });
    }
    let timeout_minutes = input.timeout.or(file.timeout);
    if let Some(minutes) = timeout_minutes
        && !(minutes.is_finite() && minutes > 0.0)
    {
        return Err(invalid(format!(
            "timeout `{minutes}` must be a positive number of minutes"
        )));
    }
    // The command line's budget over the plan file's, key by key; each task's own over both
    // (in the broker, which also checks the values).
    let budget = match (file.budget, input.budget) {
        (Some(file), Some(given)) => Some(file.overlay(given)),
        (file, given) => given.or(file),
    };
    Ok(RunPlan {
        mode,
        steps,
        session_name: input.session_name.map(str::to_owned).or(file.session_name),
        timeout_minutes,
        backend: input.backend.or(file.backend),
        budget,
        sandbox: file.sandbox,
        merge: file.merge == Some(true),
        merge_check: file.merge_check,
        merge_strategy: file.merge_strategy,
    })
}

/// `AGENT=TASK` items of `--parallel` or `--chain`.
fn pairs(flag: &str, items: &[String]) -> Result<Vec<StepSpec>, CliError> {
    items
        .iter()
        .map(|item| match item.split_once('=') {
            Some((agent, task)) if !agent.trim().is_empty() => Ok(StepSpec {
                agent: agent.trim().to_owned(),
                task: task.to_owned(),
                cwd: None,
                isolate: false,
                label: None,
                harness: None,
                host: None,
                budget: None,
            }),
            _ => Err(invalid(format!(
                "{flag} item `{item}` must be AGENT=TASK (e.g. worker=\"fix the login bug\")"
            ))),
        })
        .collect()
}

fn read_plan_file(path: &Path) -> Result<PlanFile, CliError> {
    let shown = path.display();
    let text = if path == Path::new("-") {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|err| invalid(format!("cannot read the plan from stdin: {err}")))?;
        text
    } else {
        fs_err::read_to_string(path)
            .map_err(|err| invalid(format!("cannot read plan file `{shown}`: {err}")))?
    };
    parse_plan_text(&text).map_err(|err| invalid(format!("plan `{shown}`: {err}")))
}

/// Parses a plan: JSON when it looks like JSON (better messages), YAML otherwise.
fn parse_plan_text(text: &str) -> Result<PlanFile, String> {
    if text.trim_start().starts_with('{') {
        serde_json::from_str(text).map_err(|err| err.to_string())
    } else if text.trim().is_empty() {
        Err("the plan is empty".to_owned())
    } else {
        serde_yaml_ng::from_str(text).map_err(|err| err.to_string())
    }
}

fn file_mode(file: &PlanFile, path: &Path) -> Result<(Mode, Vec<StepSpec>), CliError> {
    let shown = path.display();
    let flat = file.agent.is_some() || file.task.is_some();
    let given = [
        file.single.is_some(),
        flat,
        file.tasks.is_some(),
        file.chain.is_some(),
    ];
    if given.iter().filter(|g| **g).count() != 1 {
        return Err(invalid(format!(
            "plan `{shown}` must have exactly one of `single`, `agent` + `task`, `tasks` or `chain`"
        )));
    }
    if file.isolate.is_some() && !flat {
        return Err(invalid(format!(
            "plan `{shown}`: a top-level `isolate` goes with `agent` + `task`; put it on each task otherwise"
        )));
    }
    if let Some(single) = &file.single {
        return Ok((Mode::Single, vec![single.clone()]));
    }
    if flat {
        let (Some(agent), Some(task)) = (&file.agent, &file.task) else {
            return Err(invalid(format!(
                "plan `{shown}` gives `agent` or `task` alone; a single task needs both"
            )));
        };
        let spec = StepSpec {
            agent: agent.clone(),
            task: task.clone(),
            cwd: None,
            isolate: file.isolate.unwrap_or(false),
            label: None,
            harness: None,
            host: None,
            budget: None,
        };
        return Ok((Mode::Single, vec![spec]));
    }
    let (mode, list) = match (&file.tasks, &file.chain) {
        (Some(tasks), _) => (Mode::Parallel, tasks),
        (None, Some(chain)) => (Mode::Chain, chain),
        (None, None) => unreachable!("exactly one mode was given"),
    };
    if list.is_empty() {
        return Err(invalid(format!(
            "plan `{shown}`: `{}` is empty; give at least one task",
            if mode == Mode::Parallel {
                "tasks"
            } else {
                "chain"
            }
        )));
    }
    Ok((mode, list.clone()))
}

fn existing_dir(path: &Path, what: &str) -> Result<PathBuf, CliError> {
    match fs_err::canonicalize(path) {
        Ok(dir) if dir.is_dir() => Ok(dir),
        Ok(_) => Err(invalid(format!(
            "{what} `{}` is not a directory",
            path.display()
        ))),
        Err(_) => Err(invalid(format!(
            "{what} `{}` is not an existing directory",
            path.display()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dirs() -> tempfile::TempDir {
        tempfile::tempdir().unwrap()
    }

    fn build_in(dir: &Path, input: &PlanInput<'_>) -> Result<RunPlan, CliError> {
        let root = dir.canonicalize().unwrap();
        build(input, &root, &root)
    }

    #[test]
    fn single_parallel_and_chain_come_from_the_command_line() {
        let dir = dirs();
        let single = build_in(
            dir.path(),
            &PlanInput {
                agent: Some("worker"),
                task: Some("fix it"),
                isolate: true,
                ..PlanInput::default()
            },
        )
        .unwrap();
        assert_eq!(single.mode, Mode::Single);
        assert_eq!(single.steps[0].task, "fix it");
        assert!(single.steps[0].isolate);

        let items = vec!["a=one=two".to_owned(), "b=second".to_owned()];
        let chain = build_in(
            dir.path(),
            &PlanInput {
                chain: &items,
                ..PlanInput::default()
            },
        )
        .unwrap();
        assert_eq!(chain.mode, Mode::Chain);
        assert_eq!(chain.steps[0].agent, "a");
        assert_eq!(chain.steps[0].task, "one=two");
    }

    #[test]
    fn modes_are_exclusive_and_items_need_an_agent() {
        let dir = dirs();
        let items = vec!["a=x".to_owned()];
        let err = build_in(
            dir.path(),
            &PlanInput {
                agent: Some("a"),
                task: Some("x"),
                parallel: &items,
                ..PlanInput::default()
            },
        )
        .unwrap_err();
        assert!(
            err.message.contains("more than one mode"),
            "{}",
            err.message
        );
        let err = build_in(dir.path(), &PlanInput::default()).unwrap_err();
        assert!(err.message.contains("nothing to run"), "{}", err.message);
        let bad = vec!["no-equals".to_owned()];
        let err = build_in(
            dir.path(),
            &PlanInput {
                parallel: &bad,
                ..PlanInput::default()
            },
        )
        .unwrap_err();
        assert!(
            err.message.contains("`no-equals` must be AGENT=TASK"),
            "{}",
            err.message
        );
    }

    #[test]
    fn plan_files_parse_as_yaml_or_json_and_refuse_unknown_keys() {
        let yaml = "sessionName: demo\ntimeout: 5\nchain:\n  - agent: a\n    task: list\n  - {agent: b, task: \"sum {previous}\"}\n";
        let plan = parse_plan_text(yaml).unwrap();
        assert_eq!(plan.session_name.as_deref(), Some("demo"));
        assert_eq!(plan.chain.unwrap().len(), 2);
        let json = r#"{"tasks":[{"agent":"a","task":"x","isolate":true}],"cwd":"."}"#;
        let plan = parse_plan_text(json).unwrap();
        assert!(plan.tasks.unwrap()[0].isolate);
        let flat = parse_plan_text(r#"{"agent":"a","task":"x"}"#).unwrap();
        assert_eq!(flat.agent.as_deref(), Some("a"));
        let err = parse_plan_text(r#"{"tasks":[],"agentScope":"user"}"#).unwrap_err();
        assert!(err.contains("agentScope"), "{err}");
        let err = parse_plan_text("chain:\n  - agent: a\n    tsk: x\n").unwrap_err();
        assert!(err.contains("tsk"), "{err}");
    }

    #[test]
    fn a_plan_file_needs_exactly_one_mode() {
        let two: PlanFile =
            serde_json::from_str(r#"{"single":{"agent":"a","task":"x"},"tasks":[]}"#).unwrap();
        let err = file_mode(&two, Path::new("p.json")).unwrap_err();
        assert!(err.message.contains("exactly one of"), "{}", err.message);
        let empty: PlanFile = serde_json::from_str(r#"{"chain":[]}"#).unwrap();
        let err = file_mode(&empty, Path::new("p.json")).unwrap_err();
        assert!(err.message.contains("`chain` is empty"), "{}", err.message);
    }

    #[test]
    fn working_directories_must_exist() {
        let dir = dirs();
        let err = build_in(
            dir.path(),
            &PlanInput {
                agent: Some("a"),
                task: Some("x"),
                cwd: Some(Path::new("missing")),
                ..PlanInput::default()
            },
        )
        .unwrap_err();
        assert!(
            err.message.contains("is not an existing directory"),
            "{}",
            err.message
        );
    }
}
