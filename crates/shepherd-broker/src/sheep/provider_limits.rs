//! The broker's side of provider limits: which account a new sheep spends, and what the error
//! that ended a sheep's run means.
//!
//! Each harness reads its own agent's error words (`shepherd_harness` per agent; pi's here, as
//! its sheep extension reports pi's `errorMessage` as pi wrote it); the herd decides what a
//! limit does (`shepherd_core::herd::limits`). The key of a sheep is made at its spawn from the
//! environment it inherits, so every sheep on one account is held together from its first turn.
//! A sheep spawned with a `credential` (a fallback onto another account of the same provider)
//! has a key of its own, made from that credential's value (`super::credential` hands it the
//! value); only the variable's name is ever kept or shown.

use shepherd_core::agent_def::AgentDef;
use shepherd_core::harness::Runtime;
use shepherd_core::herd::limits::LimitWaits;
use shepherd_core::ids::AgentId;
use shepherd_core::limit::{LimitSignal, ProviderKey};
use shepherd_core::protocol::SpawnParams;
use shepherd_harness::ProcessEnv;

use crate::error::BrokerResult;
use crate::state::broker::BrokerConfig;
use crate::state::store::Store;

/// The provider key of a sheep of `def` run by `runtime` (on `host`, when not here), spending
/// the spawn's credential when it names one; `None` for a plain command.
pub(crate) fn key_for(
    runtime: Runtime,
    def: &AgentDef,
    params: &SpawnParams,
    host: Option<&str>,
) -> BrokerResult<Option<ProviderKey>> {
    let Runtime::Agent(harness) = runtime else {
        return Ok(None);
    };
    let model = def.model_for(
        harness,
        params.model.as_deref(),
        params.parent_model.as_deref(),
    );
    let overrides: Vec<(String, String)> =
        crate::sheep::credential::credential_env(runtime, def, params)?
            .into_iter()
            .collect();
    Ok(Some(shepherd_harness::provider_key(
        harness,
        model.as_deref(),
        &ProcessEnv,
        &overrides,
        host,
    )))
}

/// The provider as people see it, with the account when the spawn named a credential:
/// `anthropic`, `anthropic, account WORK_ANTHROPIC_KEY`.
pub(crate) fn provider_name(key: &ProviderKey, params: &SpawnParams) -> String {
    match &params.credential {
        Some(credential) => format!("{}, account {}", key.provider(), credential.var),
        None => key.provider().to_owned(),
    }
}

/// What the error that ended `agent_id`'s run means, when it is a limit or a server error (a
/// fatal error, or one from a sheep that is no coding agent, is `None`: the task fails). A
/// reset its words do not name is the wait the agent's own last retry announced, when it did.
pub(crate) fn signal_of(
    store: &Store,
    agent_id: &AgentId,
    error: &str,
    retry_after_ms: Option<u64>,
) -> Option<LimitSignal> {
    let runtime = store.read(|herd| herd.sheep.get(agent_id).map(|s| s.runtime))?;
    let now = jiff::Timestamp::from_millisecond(store.clock.now_ms()).ok()?;
    let classified = match runtime {
        Runtime::Agent(harness) => shepherd_harness::classify_error(harness, error, now),
        Runtime::Command => return None,
    };
    let announced = retry_after_ms
        .and_then(|ms| i64::try_from(ms).ok())
        .map(shepherd_core::limit::Reset::AfterMs);
    let classified = classified.or_reset(announced.filter(|_| classified.class.waits()));
    classified.class.waits().then(|| LimitSignal {
        class: classified.class,
        reset_at: classified.reset.map(|r| r.at(now.as_millisecond())),
        message: error.to_owned(),
    })
}

/// The waits the settings give a limit whose error names no reset.
pub(crate) fn waits(config: &BrokerConfig) -> LimitWaits {
    let wait = config.settings().rate_limit_wait();
    LimitWaits {
        limit_ms: i64::try_from(wait.as_millis()).unwrap_or(i64::MAX),
        ..LimitWaits::default()
    }
}
