//! What runs under a sheep, started by Shepherd itself: the supervisor that holds one sheep's
//! process and speaks for it to the broker ([`supervise`], `shepherd supervise`), and the
//! driver that runs a sheep on a coding agent other than pi, headless or in a pane
//! ([`driver`], `shepherd harness`). They sit beside `shepherd-harness` (the agents' adapters)
//! and `shepherd-term` (processes and terminal backends), the code they run on.

#![deny(clippy::print_stdout)]
#![cfg_attr(test, allow(clippy::disallowed_methods, clippy::disallowed_types))]

pub mod driver;
pub mod supervise;
