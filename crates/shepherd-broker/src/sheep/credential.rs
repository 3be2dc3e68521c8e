//! Another account of a provider for one sheep: a spawn's `credential` (a `fallback:` entry's)
//! names the herd's variable that holds the key, and the sheep gets its value under the
//! variable its agent reads its key from.
//!
//! It exists apart from `provider_limits` so that the launchers (`harness`, `pi_launch`) can
//! hand a sheep its credential without reaching into the limits code, which itself reads pi's
//! errors. Only the variable's name is ever kept or shown, never the key.

use shepherd_core::agent_def::AgentDef;
use shepherd_core::error_code::ErrorCode;
use shepherd_core::harness::Runtime;
use shepherd_core::protocol::SpawnParams;
use shepherd_harness::{ProcessEnv, UserEnv};

use crate::error::{BrokerError, BrokerResult};

/// The variable and value a sheep spending the spawn's credential starts with: the key held in
/// the herd's variable `credential.var`, under the variable its agent reads its key from.
/// `None` without a credential; an error when the variable is not set here, or the agent's key
/// variable cannot be told.
pub(crate) fn credential_env(
    runtime: Runtime,
    def: &AgentDef,
    params: &SpawnParams,
) -> BrokerResult<Option<(String, String)>> {
    let Some(credential) = &params.credential else {
        return Ok(None);
    };
    let refuse = |why: String| {
        Err(BrokerError::new(
            ErrorCode::SpawnFailed,
            format!("credential {}: {why}", credential.var),
        ))
    };
    let Runtime::Agent(harness) = runtime else {
        return refuse("a command sheep spends no provider's credential".to_owned());
    };
    if params.host.is_some() || def.host.is_some() {
        return refuse(
            "a credential is handed only to sheep on this machine, not on a host".to_owned(),
        );
    }
    let model = def.model_for(
        harness,
        params.model.as_deref(),
        params.parent_model.as_deref(),
    );
    let into = match &credential.into {
        Some(into) => into.clone(),
        None => match shepherd_harness::key_var(harness, model.as_deref(), &ProcessEnv) {
            Some(var) => var.to_owned(),
            None => {
                return refuse(format!(
                    "which variable {} reads its key from cannot be told for model {}; name it \
                     with as: in the fallback entry",
                    harness.title(),
                    model.as_deref().unwrap_or("(its default)")
                ));
            }
        },
    };
    match ProcessEnv
        .var(&credential.var)
        .and_then(|value| value.into_string().ok())
        .filter(|value| !value.is_empty())
    {
        Some(value) => Ok(Some((into, value))),
        None => refuse("the variable is not set in the herd's environment".to_owned()),
    }
}
