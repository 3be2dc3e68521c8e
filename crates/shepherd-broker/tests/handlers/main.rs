//! The request handlers, driven in process: a broker started by `serve::start` in this test
//! process, on a private directory, and real client connections to it — the parent's, a
//! sheep's (the test speaks for a sheep its fake supervisor started, `support`), an observer's
//! — for each family of methods: the parent's (`parent`), the sheep's (`sheep`), the herd's
//! controls and the dispatcher's checks (`controls`), and runs (`runs`). The process-level
//! tests in `crates/shepherd/tests` run the same handlers through the `shepherd` binary and
//! real sheep; these pin down each handler's answers and refusals (with their codes) without
//! them.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

mod controls;
mod parent;
mod runs;
mod sheep;
mod support;

/// Not a test of its own: the supervisor the broker starts for each spawned sheep is this test
/// binary, run with only this test (`support::run_fake_supervisor`). Run any other way it does
/// nothing.
#[test]
#[ignore = "run by the broker as a sheep's supervisor, never by the test run"]
fn fake_supervisor() {
    support::run_fake_supervisor();
}
