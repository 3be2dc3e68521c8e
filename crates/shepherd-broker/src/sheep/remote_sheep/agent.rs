//! Claude Code, Codex, Gemini CLI and opencode sheep on a host.
//!
//! Such a sheep is the agent's own CLI under Shepherd's driver (`shepherd harness`), with a
//! home composed from its user's configuration. On a host that user is the host's: the broker
//! sends the plan (definition, model, tools, instructions, the host's directory for the
//! sheep), and the host's `shepherd` finds the agent's program there, composes the sheep's
//! configuration from the host user's own, writes the plan and answers with the driver's
//! command line. The driver reports turns, tool calls, tokens and final words through the
//! forwarded socket, as it does here.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use shepherd_core::agent_def::AgentDef;
use shepherd_core::error_code::ErrorCode;
use shepherd_core::harness::Harness;
use shepherd_core::ids::AgentId;
use shepherd_core::protocol::SpawnParams;

use crate::error::{BrokerError, BrokerResult};
use crate::remote::ops::{AgentRequest, op};
use crate::state::broker::Broker;

/// How long composing the sheep on the host may take.
const STEP_DEADLINE: Duration = Duration::from_secs(60);

/// The driver's command line for a sheep of `def` on `harness`, composed on `host`.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn launch(
    broker: &Arc<Broker>,
    host: &str,
    harness: Harness,
    def: &AgentDef,
    params: &SpawnParams,
    id: &AgentId,
    cwd: PathBuf,
    visible: bool,
) -> BrokerResult<Vec<String>> {
    let link = super::link(broker, host)?;
    let hello = link.hello().ok_or_else(|| {
        BrokerError::new(
            ErrorCode::HostUnreachable,
            format!("{harness} cannot be started on host {host}: no SSH connection"),
        )
    })?;
    let dir = hello.state_dir.join("agents").join(id.as_str());
    let plan = crate::sheep::harness::plan_for(harness, def, params, dir, cwd, visible);
    let request = AgentRequest { plan };
    let composed = tokio::task::spawn_blocking(move || {
        link.call::<op::Agent>(&request, Instant::now() + STEP_DEADLINE)
    })
    .await
    .map_err(|err| BrokerError::new(ErrorCode::Internal, err.to_string()))?;
    composed.map(|reply| reply.argv).map_err(|why| {
        BrokerError::new(
            ErrorCode::HarnessMissing,
            format!("{harness} cannot run on host {host}: {why}"),
        )
    })
}
