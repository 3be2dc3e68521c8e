//! How a sheep's program is run and what it can do for the controls: the seam where pi, the
//! other coding agents (Claude Code, Codex, Gemini CLI, opencode) and plain commands differ.
//!
//! The herd's rules are the same for every sheep; what differs is what its program tells the
//! broker and what it keeps. A budget needs a harness that reports each turn's usage; a resume
//! needs one that keeps its conversation in a session the broker can hand back to it. pi does
//! both (its sheep extension reports every turn, and its session file is the sheep's own);
//! the other agents report their figures once per task and a `command` sheep reports nothing,
//! so those controls are refused for them with a clear error instead of being silently
//! ignored.
//!
//! A spawn on another agent is checked first — a tool list the agent cannot enforce, or an
//! agent that is not installed, refuses the spawn before anything is started — then composed:
//! the sheep's own directory under the broker's state gets the agent's configuration (from the
//! user's own, which is only read) and the [`Plan`] the sheep's driver runs. The sheep's
//! program is that driver, `shepherd harness --plan FILE`, which runs the agent, hands it its
//! tasks and messages, and reports its runs like pi's extension does.

use shepherd_core::error_code::ErrorCode;
use std::path::PathBuf;

use shepherd_core::agent_def::AgentDef;
use shepherd_core::harness::{Harness, Runtime, ToolSet};
use shepherd_core::ids::AgentId;
use shepherd_core::protocol::SpawnParams;
use shepherd_harness::{Adapter, Plan, ProcessEnv};

use crate::error::{BrokerError, BrokerResult};
use crate::state::broker::Broker;
use crate::state::broker::BrokerConfig;

/// What a sheep's runtime can do for the controls that depend on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Controls(pub(crate) Runtime, bool);

impl Controls {
    /// The controls of a sheep's recorded runtime, run headless.
    pub(crate) fn of(runtime: Runtime) -> Self {
        Self(runtime, false)
    }

    /// The same, for a sheep that runs in a pane when `visible`: another agent's own screen
    /// reports no usage as it goes (its headless turns do).
    pub(crate) fn shown(self, visible: bool) -> Self {
        Self(self.0, visible)
    }

    /// How people read its name in errors.
    fn describe(self) -> String {
        match self.0 {
            Runtime::Command => "a command sheep".to_owned(),
            Runtime::Agent(harness) if self.1 && harness != Harness::Pi => {
                format!("a {} sheep in its own screen", harness.title())
            }
            Runtime::Agent(harness) => format!("a {} sheep", harness.title()),
        }
    }

    /// Whether it reports what each turn used, which budgets count: pi's extension does, and
    /// another agent's driver does for its headless turns, response by response.
    pub(crate) fn reports_usage(self) -> bool {
        match self.0 {
            Runtime::Command => false,
            Runtime::Agent(Harness::Pi) => true,
            Runtime::Agent(_) => !self.1,
        }
    }

    /// The session it keeps its conversation in, which a resume starts it on again, once it
    /// has one: pi's session file, or the session another agent's driver recorded.
    pub(crate) fn session(self, broker: &Broker, id: &AgentId) -> Option<String> {
        match self.0 {
            Runtime::Command => None,
            Runtime::Agent(Harness::Pi) => Some(crate::sheep::pi_launch::session_file(broker, id))
                .filter(|file| fs_err::metadata(file).is_ok_and(|m| m.len() > 0))
                .map(|file| file.display().to_string()),
            Runtime::Agent(_) => shepherd_harness::recorded_session(&sheep_dir(&broker.config, id)),
        }
    }

    /// Refuses a budget for a harness that does not report usage.
    pub(crate) fn check_budget(self, who: &str) -> BrokerResult<()> {
        if self.reports_usage() {
            return Ok(());
        }
        Err(BrokerError::new(
            ErrorCode::BudgetUnsupported,
            format!(
                "{who} is {}, which does not report turns, tool calls, tokens or cost as it \
                 goes; budgets apply to pi sheep and to other coding agents run headless",
                self.describe()
            ),
        ))
    }

    /// Refuses a resume for a sheep whose session the broker cannot hand back: a command
    /// keeps none, and another agent's TUI is not started on an earlier session (its headless
    /// turns are).
    pub(crate) fn check_resumable(self, who: &str, visible: bool) -> BrokerResult<()> {
        match self.0 {
            Runtime::Command => Err(BrokerError::new(
                ErrorCode::ResumeUnsupported,
                format!(
                    "{who} is {}, which keeps no session to reopen; coding-agent sheep can be \
                     resumed",
                    self.describe()
                ),
            )),
            Runtime::Agent(harness) if harness != Harness::Pi && visible => Err(BrokerError::new(
                ErrorCode::ResumeUnsupported,
                format!(
                    "{who} is {}, whose session Shepherd reopens in headless turns, not in its \
                     own screen; resume it with --backend headless",
                    self.describe()
                ),
            )),
            Runtime::Agent(_) => Ok(()),
        }
    }
}

/// What a checked spawn on another agent needs to launch.
pub(crate) struct Checked {
    adapter: &'static dyn Adapter,
    /// The agent's program here; `None` for a sheep on a host, where the host finds its own.
    program: Option<PathBuf>,
}

impl Checked {
    /// The coding agent.
    pub(crate) fn harness(&self) -> Harness {
        self.adapter.harness()
    }

    /// The agent's program here (none for a sheep on a host).
    pub(crate) fn program(&self) -> Option<&std::path::Path> {
        self.program.as_deref()
    }
}

/// Checks that `def` can run on `harness` here: the agent is installed and honours the
/// definition's tools. Nothing is changed.
pub(crate) fn check(harness: Harness, def: &AgentDef, here: bool) -> BrokerResult<Checked> {
    let adapter = shepherd_harness::adapter(harness).ok_or_else(|| {
        BrokerError::new(ErrorCode::Internal, format!("{harness} has no adapter"))
    })?;
    if let Some(tools) = &def.tools {
        adapter
            .check_tools(&ToolSet::classify(tools))
            .map_err(|err| BrokerError::new(ErrorCode::HarnessUnsupported, err.to_string()))?;
    }
    let program = if here {
        Some(
            shepherd_harness::locate_program(adapter, &ProcessEnv)
                .map_err(|message| BrokerError::new(ErrorCode::HarnessMissing, message))?,
        )
    } else {
        None
    };
    Ok(Checked { adapter, program })
}

/// The sheep's own directory: the agent's configuration home and its plan.
pub(crate) fn sheep_dir(config: &BrokerConfig, id: &AgentId) -> PathBuf {
    config.paths.sheep_dir(id.as_str())
}

/// Composes the sheep's configuration and plan, and returns the driver's command line. A
/// `visible` sheep (in a pane) runs the agent's own TUI there.
pub(crate) fn launch(
    config: &BrokerConfig,
    checked: &Checked,
    def: &AgentDef,
    params: &SpawnParams,
    id: &AgentId,
    cwd: PathBuf,
    visible: bool,
) -> BrokerResult<Vec<String>> {
    let harness = checked.adapter.harness();
    let dir = sheep_dir(config, id);
    // A confined sheep wrote here: nothing it linked elsewhere is written through or read.
    if fs_err::symlink_metadata(&dir).is_ok() {
        shepherd_fs::remove_symlinks_under(&dir).map_err(|err| {
            BrokerError::new(
                ErrorCode::Io,
                format!("cleaning the sheep's directory {}: {err}", dir.display()),
            )
        })?;
    }
    let exe = config.shepherd_exe.display().to_string();
    let mut plan = plan_for(harness, def, params, dir.clone(), cwd, visible);
    plan.program = checked
        .program
        .iter()
        .map(|program| program.display().to_string())
        .collect();
    plan.mcp = vec![exe.clone(), "mcp".into(), "--sheep".into()];
    // A sheep reopened by `resume` continues the session its earlier turns recorded.
    plan.resume = shepherd_harness::recorded_session(&dir);
    let io = |err: shepherd_harness::HarnessError| BrokerError::new(err.code(), err.to_string());
    // Another account of its provider, when a fallback named one: the agent reads it where it
    // reads its key, and its home is composed as if the user had that key.
    let credential =
        crate::sheep::credential::credential_env(Runtime::Agent(harness), def, params)?;
    checked
        .adapter
        .prepare(&mut plan, &WithCredential(credential.as_ref()))
        .map_err(io)?;
    plan.env.extend(credential);
    let file = dir.join("plan.json");
    plan.write(&file).map_err(io)?;
    Ok(vec![
        exe,
        "harness".into(),
        "--plan".into(),
        file.display().to_string(),
    ])
}

/// The user's environment with a credential a fallback spends in place of the agent's key.
struct WithCredential<'a>(Option<&'a (String, String)>);

impl shepherd_harness::UserEnv for WithCredential<'_> {
    fn var(&self, name: &str) -> Option<std::ffi::OsString> {
        match self.0 {
            Some((into, value)) if into == name => Some(value.into()),
            _ => ProcessEnv.var(name),
        }
    }
}

/// The plan for a sheep of `def` on `harness` in `dir`, working in `cwd`: everything but where
/// its program, its sheep tools and its earlier session are (the machine it runs on finds
/// those).
pub(crate) fn plan_for(
    harness: Harness,
    def: &AgentDef,
    params: &SpawnParams,
    dir: PathBuf,
    cwd: PathBuf,
    visible: bool,
) -> Plan {
    Plan {
        harness,
        program: Vec::new(),
        dir,
        cwd,
        model: def.model_for(
            harness,
            params.model.as_deref(),
            params.parent_model.as_deref(),
        ),
        thinking: def.thinking_for(harness, params.parent_thinking),
        tools: def.tools.clone(),
        instructions: def.system_prompt.clone(),
        replace_system_prompt: def.omit_system_prompt,
        mcp: Vec::new(),
        env: Vec::new(),
        session: None,
        configured_model: None,
        resume: None,
        visible,
    }
}

/// What runs a sheep of `def`: its command, else the coding agent `requested` (a spawn's or a
/// plan step's `harness`) or the definition names. A command definition cannot run on an
/// agent.
pub(crate) fn runtime_of(def: &AgentDef, requested: Option<Harness>) -> BrokerResult<Runtime> {
    match (&def.command, requested) {
        (Some(_), Some(harness)) if harness != Harness::Pi => Err(BrokerError::new(
            ErrorCode::InvalidHarness,
            format!(
                "harness {harness} applies to coding-agent definitions; \"{}\" runs a command",
                def.name
            ),
        )),
        (Some(_), _) => Ok(Runtime::Command),
        (None, requested) => Ok(Runtime::Agent(requested.unwrap_or(def.harness))),
    }
}
