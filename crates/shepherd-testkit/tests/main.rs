//! The test kit's own tests (its fake model server, agents, sshd hosts and scripts behave as the
//! scenarios that use them assume), and the project-wide checks kept beside them: the docs'
//! links, the modules' import cycles and which crates the front ends depend on.
//!
//! One binary instead of one per file keeps a clean build's disk and link time small; the
//! scenarios test `every_scenario_file_is_a_module_here` names any file left out of this list.

// Tests set up files and run processes directly; clippy.toml's rules are for the code they test.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

mod agents;
mod agents_tui;
mod doc_links;
mod fake_llm;
mod fake_llm_bin;
mod fake_llm_formats;
mod front_end_deps;
mod module_cycles;
mod pi_print;
mod pi_rpc;
mod script;
mod sshd;
mod test_mcp;
