//! Launching a sheep on a coding agent other than pi: Claude Code, Codex, Gemini CLI or
//! opencode.
//!
//! The spawn is checked first — a tool list the agent cannot enforce, or an agent that is not
//! installed, refuses the spawn before anything is started — then composed: the sheep's own
//! directory under the broker's state gets the agent's configuration (from the user's own,
//! which is only read) and the [`Plan`] the sheep's driver runs. The sheep's program is that
//! driver, `shepherd harness --plan FILE`, which runs the agent, hands it its tasks and
//! messages, and reports its runs like pi's extension does.

use std::path::PathBuf;

use shepherd_core::agent_def::AgentDef;
use shepherd_core::harness::{Harness, ToolSet};
use shepherd_core::ids::AgentId;
use shepherd_core::protocol::SpawnParams;
use shepherd_harness::{Adapter, Plan, ProcessEnv};

use crate::broker::Broker;
use crate::error::{BrokerError, BrokerResult};

/// What a checked spawn on another agent needs to launch.
pub(crate) struct Checked {
    adapter: &'static dyn Adapter,
    program: PathBuf,
}

/// Checks that `def` can run on `harness` here: the agent is installed and honours the
/// definition's tools. Nothing is changed.
pub(crate) fn check(harness: Harness, def: &AgentDef) -> BrokerResult<Checked> {
    let adapter = shepherd_harness::adapter(harness).ok_or_else(|| {
        BrokerError::new("internal", format!("{harness} has no adapter"))
    })?;
    if let Some(tools) = &def.tools {
        adapter
            .check_tools(&ToolSet::classify(tools))
            .map_err(|err| BrokerError::new("harness_unsupported", err.to_string()))?;
    }
    let program = shepherd_harness::locate_program(adapter, &ProcessEnv)
        .map_err(|message| BrokerError::new("harness_missing", message))?;
    Ok(Checked { adapter, program })
}

/// The sheep's own directory: the agent's configuration home and its plan.
pub(crate) fn sheep_dir(broker: &Broker, id: &AgentId) -> PathBuf {
    broker.config.paths.state_dir.join("agents").join(id.as_str())
}

/// Composes the sheep's configuration and plan, and returns the driver's command line.
pub(crate) fn launch(
    broker: &Broker,
    checked: &Checked,
    def: &AgentDef,
    params: &SpawnParams,
    id: &AgentId,
    cwd: PathBuf,
) -> BrokerResult<Vec<String>> {
    let harness = checked.adapter.harness();
    let dir = sheep_dir(broker, id);
    let exe = broker.config.shepherd_exe.display().to_string();
    let mut plan = Plan {
        harness,
        program: vec![checked.program.display().to_string()],
        dir: dir.clone(),
        cwd,
        model: def.model_for(
            harness,
            params.model.as_deref(),
            params.parent_model.as_deref(),
        ),
        thinking: def.thinking_for(harness, params.parent_thinking.as_deref()),
        tools: def.tools.clone(),
        instructions: def.system_prompt.clone(),
        replace_system_prompt: def.omit_system_prompt,
        mcp: vec![exe.clone(), "mcp".into(), "--sheep".into()],
        env: Vec::new(),
        session: None,
        configured_model: None,
    };
    let io = |err: shepherd_harness::HarnessError| BrokerError::new(err.code(), err.to_string());
    checked.adapter.prepare(&mut plan, &ProcessEnv).map_err(io)?;
    let file = dir.join("plan.json");
    plan.write(&file).map_err(io)?;
    Ok(vec![
        exe,
        "harness".into(),
        "--plan".into(),
        file.display().to_string(),
    ])
}
