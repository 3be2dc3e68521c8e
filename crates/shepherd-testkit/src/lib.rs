//! Test support for Shepherd's own tests and benchmarks. Never installed for users.
//!
//! - [`script`]: the action language of the scripted test sheep (`shepherd-test-sheep`), a
//!   deterministic sheep that can answer, ask, sleep, settle with any status, crash, forget to
//!   call done, or ignore messages — so every broker rule can be driven without a model.

pub mod script;
