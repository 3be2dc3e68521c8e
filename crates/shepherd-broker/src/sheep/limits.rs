//! The resource limits a sheep runs with, decided where the definition, the spawn and the
//! user's settings meet, and handed to its supervisor as `--limit-…` options.
//!
//! The rule itself is `AgentDef::limits` (defaults, then the user's `limits` setting, then the
//! definition's `limits:`, a project's definition only lowering them); a spawn's own
//! `limits` (and a resumed sheep's recipe) may only lower what that gives. The supervisor
//! applies them on the machine the sheep runs on and says how; this module only decides them
//! and, when the sheep ends, words the limit that stopped it.

use shepherd_core::agent_def::AgentDef;
use shepherd_core::ids::AgentId;
use shepherd_core::resources::{Limits, Resource};
use shepherd_core::spawn::SpawnParams;

use crate::state::broker::Broker;
use crate::state::broker::BrokerConfig;

/// The limits a sheep of `def` spawned with `params` runs with.
pub(crate) fn chosen(config: &BrokerConfig, params: &SpawnParams, def: &AgentDef) -> Limits {
    let settings = shepherd_config::load_sandbox_options(&config.dirs).0.limits;
    let limits = def.limits(&settings);
    match &params.limits {
        Some(asked) => limits.tightest(asked),
        None => limits,
    }
}

/// The supervisor's options that carry `limits`.
pub(crate) fn supervisor_args(limits: &Limits) -> Vec<String> {
    let mut args = Vec::new();
    if let Some(pids) = limits.pids {
        args.extend(["--limit-pids".to_owned(), pids.to_string()]);
    }
    if let Some(memory) = limits.memory {
        args.extend(["--limit-memory".to_owned(), memory.get().to_string()]);
    }
    if let Some(cpus) = limits.cpus {
        args.extend(["--limit-cpus".to_owned(), cpus.to_string()]);
    }
    if let Some(disk) = limits.disk {
        args.extend(["--limit-disk".to_owned(), disk.get().to_string()]);
    }
    args
}

/// Why a sheep ended when its supervisor says a limit stopped it: `was stopped by its memory
/// limit (8 GiB; killed by signal 9)`.
pub(crate) fn stop_reason(
    broker: &Broker,
    id: &AgentId,
    resource: Resource,
    how: &shepherd_core::herd::ExitInfo,
) -> String {
    let limits = broker
        .store
        .read(|herd| {
            herd.sheep
                .get(id)
                .and_then(|sheep| sheep.recipe.as_ref())
                .and_then(|recipe| recipe.limits)
        })
        .unwrap_or(Limits::NONE);
    let stopped = shepherd_core::resources::stopped_by(resource, &limits);
    format!("{stopped}: it {}", how.describe())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_limit_goes_to_the_supervisor_in_bytes_and_none_is_left_out() {
        let args = supervisor_args(&Limits {
            cpus: shepherd_core::resources::Cpus::from_millis(1500),
            ..Limits::DEFAULT
        });
        assert_eq!(
            args,
            [
                "--limit-pids",
                "4096",
                "--limit-memory",
                "8589934592",
                "--limit-cpus",
                "1.5",
                "--limit-disk",
                "4294967296"
            ]
        );
        assert!(supervisor_args(&Limits::NONE).is_empty());
    }
}
