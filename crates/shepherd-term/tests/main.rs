//! The Herdr client's integration tests, against a fake Herdr and a real one.
//!
//! One binary instead of one per file keeps a clean build's disk and link time small; the
//! scenarios test `every_scenario_file_is_a_module_here` names any file left out of this list.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

// Helpers the test files share.
mod herdr_support;

mod herdr_backend;
mod herdr_client;
mod herdr_contract;
mod herdr_events;
mod herdr_identity;
mod herdr_real;
mod herdr_server;
