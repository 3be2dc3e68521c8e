//! The machine's side of `shepherd doctor`: where sheep can run (headless always; tmux and
//! Herdr when installed), the coding agents that run them (found, with their versions), the
//! runtime directory, and what the agent definitions need from the environment.
//!
//! An agent that is not installed is a miss only when a definition runs it; otherwise it is
//! listed as absent. Versions come from each program's own `--version`, run at once with a
//! deadline.

// This module runs the programs it checks (`--version`), each bounded by a deadline.
#![allow(clippy::disallowed_types)]

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt as _;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use shepherd_client::Context;
use shepherd_client::needs::{Lack, lacks, which};
use shepherd_core::agent_def::AgentDef;
use shepherd_core::harness::Harness;
use shepherd_core::settings::Backend;
use shepherd_harness::{Program, UserEnv, profile};

use super::Finding;

/// How long a program's `--version` may take.
const VERSION_DEADLINE: Duration = Duration::from_secs(10);

/// Headless, tmux and Herdr.
pub(super) fn backends(setting: Backend, env: &dyn UserEnv) -> Vec<Finding> {
    let mut findings = vec![Finding::ok("headless", "always there")];
    let tmux = which("tmux", env);
    let herdr_named = env
        .var("HERDR_BIN_PATH")
        .filter(|v| !v.is_empty())
        .map_or_else(|| "herdr".to_owned(), |v| v.to_string_lossy().into_owned());
    let herdr = which(&herdr_named, env);
    let found: Vec<Probe> = tmux
        .iter()
        .map(|path| Probe {
            key: "tmux".to_owned(),
            path: path.clone(),
            args: &["-V"],
            own_home: None,
        })
        .collect();
    let versions = versions(found);
    findings.push(match &tmux {
        Some(path) => Finding::ok("tmux", found_at(path, versions.get("tmux"))),
        None if setting == Backend::Tmux => Finding::miss(
            "tmux",
            "not found, and the backend setting is tmux",
            "install tmux, or `shepherd settings set backend auto`",
        ),
        None => Finding::absent("tmux", "not found (optional: sheep in tmux windows)"),
    });
    findings.push(match &herdr {
        Some(path) => Finding::ok("herdr", path.display().to_string()),
        None if setting == Backend::Herdr => Finding::miss(
            "herdr",
            format!("`{herdr_named}` not found, and the backend setting is herdr"),
            "install Herdr (or set HERDR_BIN_PATH), or `shepherd settings set backend auto`",
        ),
        None => Finding::absent("herdr", "not found (optional: sheep in Herdr panes)"),
    });
    findings
}

/// pi and the other coding agents, and the programs of `command` definitions.
pub(super) fn agents(defs: &[AgentDef], env: &dyn UserEnv) -> Vec<Finding> {
    let programs: Vec<(Harness, &Program, String)> = Harness::ALL
        .into_iter()
        .map(|harness| {
            let program = &profile(harness).program;
            (harness, program, program.named(env))
        })
        .collect();
    let located: Vec<(Harness, Option<PathBuf>)> = programs
        .iter()
        .map(|(harness, _, named)| (*harness, which(named, env)))
        .collect();
    let versions = versions(
        located
            .iter()
            .filter_map(|(harness, path)| {
                path.as_ref().map(|p| Probe {
                    key: harness.as_str().to_owned(),
                    path: p.clone(),
                    args: &["--version"],
                    own_home: profile(*harness).program.version_home,
                })
            })
            .collect(),
    );
    let mut findings = Vec::new();
    for ((harness, program, named), (_, path)) in programs.iter().zip(&located) {
        let users: Vec<&str> = defs
            .iter()
            .filter(|def| def.command.is_none() && runs_on(def, *harness))
            .map(|def| def.name.as_str())
            .collect();
        let what = harness.as_str();
        findings.push(match path {
            Some(path) => Finding::ok(what, found_at(path, versions.get(what))),
            None if users.is_empty() => {
                Finding::absent(what, format!("`{named}` not found (no definition runs it)"))
            }
            None => Finding::miss(
                what,
                format!("`{named}` not found; needed by {}", users.join(", ")),
                format!("{}, or set {} to its path", program.install, program.var),
            ),
        });
    }
    // A `command` sheep's own program.
    for lack in lacks(defs, env) {
        if let Lack::Program {
            program,
            var: None,
            agents,
        } = &lack
        {
            findings.push(Finding::miss(
                format!("command of {}", agents.join(", ")),
                format!("`{program}` not found"),
                "install it, or give the definition's `command` its full path",
            ));
        }
    }
    findings
}

/// Whether a sheep of `def` may run on `harness`: its own, or one it falls back to.
fn runs_on(def: &AgentDef, harness: Harness) -> bool {
    def.harness == harness || def.fallback.iter().any(|f| f.harness == harness)
}

/// The runtime directory, and the keys and variables the definitions need.
pub(super) fn environment(ctx: &Context, defs: &[AgentDef], env: &dyn UserEnv) -> Vec<Finding> {
    let mut findings = Vec::new();
    let dir = &ctx.dirs.runtime_dir;
    let from = if env.var("XDG_RUNTIME_DIR").is_some_and(|v| !v.is_empty()) {
        "in $XDG_RUNTIME_DIR"
    } else {
        "XDG_RUNTIME_DIR is not set"
    };
    let uid = rustix::process::getuid().as_raw();
    findings.push(match fs_err::metadata(dir) {
        Ok(meta) if meta.is_dir() && meta.uid() == uid && meta.mode() & 0o077 == 0 => {
            Finding::ok("runtime dir", format!("{} ({from})", dir.display()))
        }
        Ok(_) => Finding::miss(
            "runtime dir",
            format!(
                "{} is not a private directory of yours ({from})",
                dir.display()
            ),
            format!(
                "remove it, or point XDG_RUNTIME_DIR at your own (`chmod 700 {}` if it is yours)",
                dir.display()
            ),
        ),
        Err(_) => Finding::ok(
            "runtime dir",
            format!("{} (made on first use; {from})", dir.display()),
        ),
    });
    for lack in lacks(defs, env) {
        match &lack {
            Lack::Credential { harness, vars, .. } => findings.push(Finding::miss(
                vars.first().cloned().unwrap_or_default(),
                lack.describe(),
                format!(
                    "export one of {} in your shell profile, or log in with {}",
                    vars.join(", "),
                    profile(*harness).login_with
                ),
            )),
            Lack::Variable { name, .. } => findings.push(Finding::miss(
                name.clone(),
                lack.describe(),
                format!("export {name}=… in your shell profile"),
            )),
            Lack::Program { .. } => {}
        }
    }
    findings
}

/// `path (version)`.
fn found_at(path: &std::path::Path, version: Option<&String>) -> String {
    match version {
        Some(version) => format!("{} ({version})", path.display()),
        None => path.display().to_string(),
    }
}

/// One program whose version doctor asks for.
struct Probe {
    key: String,
    path: PathBuf,
    args: &'static [&'static str],
    /// Run it with `HOME` (and this variable, its agent's home) in a directory of its own,
    /// removed after: for an agent that writes state under its home even to say its version,
    /// since doctor reads and never changes.
    own_home: Option<&'static str>,
}

/// Each program's version (the first line of what it prints for `args`), run side by side
/// and each bounded by [`VERSION_DEADLINE`]; a program that fails or does not answer has none.
fn versions(programs: Vec<Probe>) -> HashMap<String, String> {
    let deadline = Instant::now() + VERSION_DEADLINE;
    std::thread::scope(|scope| {
        let runs: Vec<_> = programs
            .into_iter()
            .map(|probe| {
                scope.spawn(move || {
                    let Probe {
                        key,
                        path,
                        args,
                        own_home,
                    } = probe;
                    let mut command = std::process::Command::new(&path);
                    command.args(args);
                    let home = own_home
                        .map(|var| tempfile::TempDir::new().map(|dir| (var, dir)))
                        .transpose()
                        .ok()?;
                    if let Some((var, home)) = &home {
                        command.env("HOME", home.path()).env(var, home.path());
                    }
                    let output = shepherd_term::process::run_with_deadline(&mut command, deadline)
                        .ok()
                        .filter(|out| out.success)?;
                    drop(home);
                    let text = if output.stdout.trim().is_empty() {
                        output.stderr
                    } else {
                        output.stdout
                    };
                    let line = text.lines().next()?.trim().to_owned();
                    (!line.is_empty()).then_some((key, line))
                })
            })
            .collect();
        runs.into_iter()
            .filter_map(|run| run.join().ok().flatten())
            .collect()
    })
}
