//! The fieldnotes store's integration tests: the store across real processes and threads, and
//! against the original's own store and locking rules.
//!
//! One binary instead of one per file keeps a clean build's disk and link time small; the
//! scenarios test `every_scenario_file_is_a_module_here` names any file left out of this list.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

// Helpers the test files share.
mod common;
mod original;

mod bindings;
mod conditional_ops;
mod crash_sessions;
mod curation;
mod index_deferral;
mod interop;
mod notes;
mod original_fixtures;
mod original_node;
mod processes;
mod reading;
mod sessions;
mod shepherds_note;
