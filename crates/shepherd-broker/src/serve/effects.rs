//! Carrying out what commits ask for.
//!
//! [`crate::state::store::Store::commit`] applies a change and returns, besides its own wake-ups,
//! the [`Effect`]s the change calls for; the broker runs them through [`carry_out`], which
//! `serve` hands the broker when it starts it. This is the one place that connects the commit
//! path to the modules that act on a change (auto-close, the note finaliser, run followers), so
//! the shared state in `broker` depends on none of them. Each effect is started in commit order
//! right after its commit, as the commit path used to do itself: a run's followers get its
//! view before the commit's caller answers, and anything slow runs in a task of its own.

use std::sync::Arc;

use crate::state::broker::{Broker, Effect};

/// Carries out one effect of a commit.
pub(crate) fn carry_out(broker: &Arc<Broker>, effect: Effect) {
    match effect {
        Effect::AutoClose(task_id) => crate::handlers::autoclose::schedule(broker, task_id),
        Effect::FinalizeNote { task_id, pos } => {
            crate::sheep::notes::finalize(broker, task_id, pos);
        }
        Effect::PushRun(run_id) => crate::run::push_view(broker, &run_id),
    }
}
