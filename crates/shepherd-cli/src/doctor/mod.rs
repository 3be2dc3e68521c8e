//! `shepherd doctor`: one screen saying what this machine and project have and lack for each
//! backend, each harness and each MCP host the user registered Shepherd in, with the fix for
//! each miss.
//!
//! A first run goes wrong in the seams between programs: a coding agent not on `PATH`, a key a
//! sheep needs that is not set, an MCP host that refuses Shepherd's tools or starts it without
//! the user's keys. Each is found here by reading, never changing: the machine (`machine`:
//! backends, agents and their versions, the runtime directory, what the definitions need) and
//! the hosts' own configuration files (`hosts`). The exit status is 0 when nothing is missing,
//! 69 (unavailable) otherwise, so a script can gate on it. `shepherd hosts check NAME` is the
//! twin for a remote host.

mod hosts;
mod machine;

use std::process::ExitCode;

use clap::Args;
use serde::Serialize;
use shepherd_client::{CliError, Context};
use shepherd_core::agent_def::AgentScope;
use shepherd_core::error_code::EXIT_UNAVAILABLE;
use shepherd_harness::ProcessEnv;

use crate::{Printer, ProjectArg};

/// The arguments of `shepherd doctor`.
#[derive(Debug, Args)]
#[command(
    after_help = "Reads, never changes: the backends and agents on PATH, the runtime directory, \
                  what your agent definitions need, and the MCP configuration of Claude Code \
                  (~/.claude.json, ~/.claude/settings.json), Codex (~/.codex/config.toml), \
                  Gemini CLI (~/.gemini/settings.json) and opencode \
                  (~/.config/opencode/opencode.json). Exit status 0 when nothing is missing, \
                  69 otherwise. docs/cli.md says more."
)]
pub struct DoctorArgs {
    #[command(flatten)]
    project: ProjectArg,
}

/// How one thing stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Status {
    /// It is there and set up.
    Ok,
    /// Something needs it and it is missing or wrong: the machine is not ready.
    Miss,
    /// It is not there, and nothing needs it.
    Absent,
}

/// One line of the report.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Finding {
    what: String,
    status: Status,
    detail: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    fix: Option<String>,
}

impl Finding {
    pub(crate) fn ok(what: impl Into<String>, detail: impl Into<String>) -> Self {
        Self {
            what: what.into(),
            status: Status::Ok,
            detail: detail.into(),
            fix: None,
        }
    }

    pub(crate) fn absent(what: impl Into<String>, detail: impl Into<String>) -> Self {
        Self {
            what: what.into(),
            status: Status::Absent,
            detail: detail.into(),
            fix: None,
        }
    }

    pub(crate) fn miss(
        what: impl Into<String>,
        detail: impl Into<String>,
        fix: impl Into<String>,
    ) -> Self {
        Self {
            what: what.into(),
            status: Status::Miss,
            detail: detail.into(),
            fix: Some(fix.into()),
        }
    }

    /// An absent one with the step that would add it.
    pub(crate) fn with_fix(mut self, fix: impl Into<String>) -> Self {
        self.fix = Some(fix.into());
        self
    }
}

/// A group of findings.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Section {
    name: &'static str,
    findings: Vec<Finding>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Report<'a> {
    ready: bool,
    project: String,
    sections: &'a [Section],
    remote_hosts: Vec<String>,
}

/// Runs `shepherd doctor`.
pub fn run(args: &DoctorArgs, ctx: &Context, printer: &Printer) -> Result<ExitCode, CliError> {
    let project = ctx.project_root(args.project.project.as_deref());
    let settings = shepherd_config::load_settings(&ctx.dirs, &project);
    let discovery = shepherd_config::discover_agents(
        &ctx.dirs,
        &project,
        AgentScope::Both,
        settings.settings.include_bundled_agents,
    );
    let defs = &discovery.agents;
    let env = ProcessEnv;
    let sections = vec![
        Section {
            name: "Backends",
            findings: machine::backends(settings.settings.backend, &env),
        },
        Section {
            name: "Agents",
            findings: machine::agents(defs, &env),
        },
        Section {
            name: "Environment",
            findings: machine::environment(ctx, defs, &env),
        },
        Section {
            name: "MCP hosts",
            findings: hosts::all(&project, defs, &env),
        },
    ];
    let hosts = shepherd_config::load_hosts(&ctx.dirs);
    let remote_hosts: Vec<String> = hosts
        .defined
        .keys()
        .chain(hosts.broken.keys())
        .cloned()
        .collect();
    let misses = sections
        .iter()
        .flat_map(|s| &s.findings)
        .filter(|f| f.status == Status::Miss)
        .count();
    let report = Report {
        ready: misses == 0,
        project: project.display().to_string(),
        sections: &sections,
        remote_hosts,
    };
    printer.emit(&report, || render(&report, misses));
    Ok(if misses == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_UNAVAILABLE)
    })
}

fn render(report: &Report<'_>, misses: usize) -> String {
    let mut out = if misses == 0 {
        format!("shepherd doctor: ready ({})\n", report.project)
    } else {
        let things = if misses == 1 { "thing" } else { "things" };
        format!(
            "shepherd doctor: not ready, {misses} {things} to fix ({})\n",
            report.project
        )
    };
    let width = report
        .sections
        .iter()
        .flat_map(|s| &s.findings)
        .map(|f| f.what.chars().count())
        .max()
        .unwrap_or(0);
    for section in report.sections {
        out.push('\n');
        out.push_str(section.name);
        out.push('\n');
        for finding in &section.findings {
            let mark = match finding.status {
                Status::Ok => "ok  ",
                Status::Miss => "MISS",
                Status::Absent => "--  ",
            };
            out.push_str(&format!(
                "  {mark} {:<width$}  {}\n",
                finding.what, finding.detail
            ));
            if let Some(fix) = &finding.fix {
                let label = if finding.status == Status::Miss {
                    "fix"
                } else {
                    "to add"
                };
                out.push_str(&format!("       {:<width$}  {label}: {fix}\n", ""));
            }
        }
    }
    out.push('\n');
    if report.remote_hosts.is_empty() {
        out.push_str("Remote hosts: none defined (docs/remote.md).\n");
    } else {
        out.push_str(&format!(
            "Remote hosts: {} — `shepherd hosts check NAME` checks one.\n",
            report.remote_hosts.join(", ")
        ));
    }
    out
}
