//! Shepherd's end-to-end scenarios, one test binary: each module is a scenario file that drives
//! the real `shepherd` binary (and real tmux, Herdr, sshd, pi and agent CLIs where it says so).
//! One binary instead of one per file: linking each file against the whole workspace cost a
//! gigabyte of disk per dozen files and most of a clean build's time.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

// Helpers the scenario files share.
mod agents_support;
mod attack_support;
mod dash_support;
mod harness_support;
mod herd_support;
mod herdr_real_support;
mod host_setup;
mod mcp_support;
mod merge_support;
mod notify_support;
mod pi_support;
mod remote_support;
mod web_support;

mod agents_cli;
mod attack_git;
mod attack_git_land;
mod attack_git_workdir;
mod attack_limits;
mod attack_output;
mod attack_process;
mod attack_project;
mod attack_remote;
mod attack_socket;
mod attack_state;
mod cli_habits;
mod controls;
mod crash_campaign;
mod crash_restart;
mod dash_tmux;
mod deadlines;
mod dependency_licenses;
mod doctor;
mod fieldnotes_index_lag;
mod fieldnotes_lanes_crash;
mod harness_chain;
mod harness_fallback;
mod harness_limits;
mod harness_merge;
mod harness_release;
mod harness_remote;
mod harness_sheep;
mod harness_visible;
mod herd_authority;
mod herd_clock;
mod herd_lifecycle;
mod herd_messaging;
mod herd_recovery;
mod herdr_broker;
mod herdr_real_faults;
mod herdr_real_lifecycle;
mod herdr_real_remote;
mod idle_wakeups;
mod mates_receipts;
mod mcp_bounds;
mod mcp_controls;
mod mcp_environment;
mod mcp_herds;
mod mcp_hosts;
mod mcp_lifecycle;
mod mcp_merge;
mod mcp_protocol;
mod mcp_runs;
mod mcp_sessions;
mod mcp_sheep;
mod merge_choose;
mod merge_faults;
mod merge_land;
mod merge_queue;
mod merge_stop;
mod merge_verify;
mod merge_words;
mod notes_cli;
mod notify_desktop;
mod one_parent_one_session;
mod outcomes;
mod pi_completion;
mod pi_controls;
mod pi_extension;
mod pi_herd;
mod pi_limits;
mod pi_mates;
mod pi_merge;
mod pi_models;
mod pi_reach;
mod pi_remote;
mod pi_sheep_side;
mod pi_steer;
mod pi_tui;
mod process_tree;
mod remote_hosts;
mod remote_sheep;
mod run_cancel;
mod run_crash;
mod run_isolate;
mod run_modes;
mod run_nested;
mod run_pi;
mod run_tmux;
mod sandbox_agents;
mod sandbox_installs;
mod sandbox_pi;
mod sandbox_remote;
mod sandbox_sheep;
mod settings_cli;
mod shell_sheep;
mod short_ids;
mod system_prompt;
mod tmux_backend;
mod web_browser;
mod web_browser_board;
mod web_browser_land;
mod web_security;

/// A test file that its crate's `tests/main.rs` does not name is never compiled, so its tests
/// would silently stop running; this names the ones left out, in every crate whose integration
/// tests are one binary (`autotests = false`).
#[test]
fn every_scenario_file_is_a_module_here() {
    let crates = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut missing = Vec::new();
    let mut roots = 0;
    for krate in std::fs::read_dir(&crates).expect("crates/ lists") {
        let tests = krate.expect("a crates/ entry").path().join("tests");
        let Ok(root) = std::fs::read_to_string(tests.join("main.rs")) else {
            continue;
        };
        roots += 1;
        for entry in std::fs::read_dir(&tests).expect("tests/ lists") {
            let path = entry.expect("a tests/ entry").path();
            let Some(name) = path.file_stem().and_then(|stem| stem.to_str()) else {
                continue;
            };
            let is_rust = path.extension().is_some_and(|ext| ext == "rs");
            if is_rust && name != "main" && !root.contains(&format!("\nmod {name};\n")) {
                missing.push(path.display().to_string());
            }
        }
    }
    assert!(
        roots >= 4,
        "found only {roots} crates with tests/main.rs under {crates:?}"
    );
    missing.sort();
    assert!(
        missing.is_empty(),
        "these test files are not declared in their crate's tests/main.rs, so they never run: \
         {missing:?}"
    );
}
