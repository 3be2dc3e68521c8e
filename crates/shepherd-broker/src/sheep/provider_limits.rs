//! The broker's side of provider limits: which account a new sheep spends, and what the error
//! that ended a sheep's run means.
//!
//! Each harness reads its own agent's error words (`shepherd_harness` per agent; pi's here, as
//! its sheep extension reports pi's `errorMessage` as pi wrote it); the herd decides what a
//! limit does (`shepherd_core::herd::limits`). The key of a sheep is made at its spawn from the
//! environment it inherits, so every sheep on one account is held together from its first turn.

use shepherd_core::agent_def::AgentDef;
use shepherd_core::harness::{Harness, Runtime};
use shepherd_core::herd::limits::LimitWaits;
use shepherd_core::ids::AgentId;
use shepherd_core::limit::{LimitSignal, ProviderKey};
use shepherd_core::protocol::SpawnParams;
use shepherd_harness::ProcessEnv;

use crate::state::broker::Broker;

/// The provider key of a sheep of `def` run by `runtime` (on `host`, when not here); `None`
/// for a plain command.
pub(crate) fn key_for(
    runtime: Runtime,
    def: &AgentDef,
    params: &SpawnParams,
    host: Option<&str>,
) -> Option<ProviderKey> {
    let Runtime::Agent(harness) = runtime else {
        return None;
    };
    let model = def.model_for(
        harness,
        params.model.as_deref(),
        params.parent_model.as_deref(),
    );
    Some(shepherd_harness::provider_key(
        harness,
        model.as_deref(),
        &ProcessEnv,
        &[],
        host,
    ))
}

/// What the error that ended `agent_id`'s run means, when it is a limit or a server error (a
/// fatal error, or one from a sheep that is no coding agent, is `None`: the task fails).
pub(crate) fn signal_of(broker: &Broker, agent_id: &AgentId, error: &str) -> Option<LimitSignal> {
    let runtime = broker.read(|herd| herd.sheep.get(agent_id).map(|s| s.runtime))?;
    let now = jiff::Timestamp::from_millisecond(broker.clock.now_ms()).ok()?;
    let classified = match runtime {
        Runtime::Agent(Harness::Pi) => crate::sheep::pi::classify_error(error),
        Runtime::Agent(harness) => shepherd_harness::adapter(harness)?.classify_error(error, now),
        Runtime::Command => return None,
    };
    classified.class.waits().then(|| LimitSignal {
        class: classified.class,
        reset_at: classified.reset.map(|r| r.at(now.as_millisecond())),
        message: error.to_owned(),
    })
}

/// The waits the settings give a limit whose error names no reset.
pub(crate) fn waits(broker: &Broker) -> LimitWaits {
    let wait = broker.settings().rate_limit_wait();
    LimitWaits {
        limit_ms: i64::try_from(wait.as_millis()).unwrap_or(i64::MAX),
        ..LimitWaits::default()
    }
}
