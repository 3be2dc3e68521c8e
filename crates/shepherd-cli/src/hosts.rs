//! `shepherd hosts`: the hosts a user defined for remote sheep, and what each one lacks.
//!
//! Asking a host what it has goes over SSH by the broker's remote link, which the binary hands
//! in ([`Probe`]), so this crate does not link the broker.

use shepherd_core::error_code::ErrorCode;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use serde::Serialize;
use shepherd_core::hosts::HostDef;

use crate::Printer;
use shepherd_client::CliError;
use shepherd_client::Context;

/// The arguments of `shepherd hosts`.
#[derive(Debug, Args)]
#[command(
    args_conflicts_with_subcommands = true,
    after_help = "Hosts are defined in the user settings file only, under \"hosts\": \
                  {\"devbox\": {\"destination\": \"me@devbox\", \"projectPath\": \"/srv/app\", \
                  \"backend\": \"tmux\"}}. docs/remote.md says more."
)]
pub struct HostsArgs {
    #[command(subcommand)]
    command: Option<HostsCommand>,
}

#[derive(Debug, Subcommand)]
enum HostsCommand {
    /// List the hosts defined (the default).
    List,
    /// Say what a host has and what it lacks for remote sheep, in one screen.
    Check {
        /// The host's name.
        name: String,
    },
}

/// What a host's `shepherd` said it has, as `hosts check` reads it.
#[derive(Debug, Clone)]
pub struct HostProbe {
    /// The host's `shepherd` executable.
    pub exe: PathBuf,
    /// Its version.
    pub version: String,
    /// The broker protocol it speaks.
    pub protocol: u32,
    /// Whether the host's project path is a directory.
    pub project_exists: bool,
    /// Which backends can run there.
    pub backends: BTreeMap<String, bool>,
    /// Which of the asked programs are on the host's PATH.
    pub programs: BTreeMap<String, bool>,
}

/// Asks a host whether it answers and what it has, naming the programs to look for; `Err`
/// says why it could not (starting with `reachable` when SSH reached it). The binary hands it
/// in.
pub type Probe = fn(&HostDef, Vec<String>) -> Result<HostProbe, String>;

/// Runs `shepherd hosts`; `check` asks the host with `probe`.
pub fn run(
    args: HostsArgs,
    ctx: &Context,
    printer: &Printer,
    probe: Probe,
) -> Result<ExitCode, CliError> {
    match args.command.unwrap_or(HostsCommand::List) {
        HostsCommand::List => list(ctx, printer),
        HostsCommand::Check { name } => check(&name, ctx, printer, probe),
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct HostRow {
    name: String,
    #[serde(flatten)]
    def: Option<HostDef>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    /// The links running herds keep to it (none: no herd has connected to it).
    links: Vec<LinkRow>,
}

/// One herd's link to a host.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct LinkRow {
    /// The herd whose broker keeps it.
    herd: String,
    #[serde(flatten)]
    status: shepherd_core::protocol::HostLinkStatus,
}

impl LinkRow {
    /// `link up (herd cli-…)`, `link down since … (herd …): why`.
    fn words(&self) -> String {
        let herd = &self.herd;
        if self.status.up {
            return format!("link up (herd {herd})");
        }
        let since = self
            .status
            .down_since
            .and_then(|ms| jiff::Timestamp::from_millisecond(ms).ok())
            .map(|at| format!(" since {at}"))
            .unwrap_or_default();
        let why = self
            .status
            .error
            .as_deref()
            .map(|why| format!(": {why}"))
            .unwrap_or_default();
        format!("link down{since} (herd {herd}){why}")
    }
}

fn list(ctx: &Context, printer: &Printer) -> Result<ExitCode, CliError> {
    let hosts = shepherd_config::load_hosts(&ctx.dirs);
    // Links belong to the brokers that keep them: ask every herd of this user.
    let herds = shepherd_client::connect::runtime()?
        .block_on(shepherd_client::herds::list(&ctx.dirs.runtime_dir));
    let links_to = |host: &str| -> Vec<LinkRow> {
        herds
            .iter()
            .flat_map(|herd| {
                herd.links
                    .iter()
                    .filter(|link| link.host == host)
                    .map(|link| LinkRow {
                        herd: herd.identity.clone(),
                        status: link.clone(),
                    })
            })
            .collect()
    };
    let mut rows: Vec<HostRow> = hosts
        .defined
        .iter()
        .map(|(name, def)| HostRow {
            name: name.clone(),
            def: Some(def.clone()),
            error: None,
            links: links_to(name),
        })
        .collect();
    rows.extend(hosts.broken.iter().map(|(name, err)| HostRow {
        name: name.clone(),
        def: None,
        error: Some(err.to_string()),
        links: links_to(name),
    }));
    printer.emit(&rows, || {
        if rows.is_empty() {
            return format!(
                "No hosts are defined. Define them under \"hosts\" in {} (docs/remote.md).",
                shepherd_config::settings::user_settings_file(&ctx.dirs).display()
            );
        }
        rows.iter()
            .map(|row| {
                let line = match (&row.def, &row.error) {
                    (Some(def), _) => format!(
                        "{:<12} {:<24} {:<10} {}",
                        row.name,
                        def.destination,
                        def.backend.as_str(),
                        def.project_path.display()
                    ),
                    (None, Some(err)) => format!("{:<12} unusable: {err}", row.name),
                    (None, None) => row.name.clone(),
                };
                let links: Vec<String> = if row.links.is_empty() {
                    vec!["no link (no running herd has connected to it)".to_owned()]
                } else {
                    row.links.iter().map(LinkRow::words).collect()
                };
                let links: String = links.iter().map(|l| format!("\n  {l}")).collect();
                format!("{line}{links}")
            })
            .collect::<Vec<_>>()
            .join("\n")
    });
    Ok(ExitCode::SUCCESS)
}

/// One line of `hosts check`.
#[derive(Serialize)]
struct Finding {
    what: String,
    ok: bool,
    detail: String,
}

fn check(name: &str, ctx: &Context, printer: &Printer, probe: Probe) -> Result<ExitCode, CliError> {
    let hosts = shepherd_config::load_hosts(&ctx.dirs);
    let def = hosts
        .get(name)
        .map_err(|err| CliError::new(ErrorCode::UnknownHost, err.to_string()))?
        .clone();
    let programs: Vec<String> = [
        "git", "tmux", "bwrap", "pi", "claude", "codex", "gemini", "opencode",
    ]
    .map(str::to_owned)
    .to_vec();
    let mut findings = Vec::new();
    let mut finding = |what: &str, ok: bool, detail: String| {
        findings.push(Finding {
            what: what.to_owned(),
            ok,
            detail,
        });
    };
    match probe(&def, programs) {
        Err(why) => {
            let reached = why.starts_with("reachable");
            finding("reachable", reached, format!("ssh {}", def.destination));
            finding("shepherd", false, why);
        }
        Ok(hello) => {
            finding("reachable", true, format!("ssh {}", def.destination));
            let same = hello.protocol == shepherd_core::protocol::PROTOCOL_VERSION;
            finding(
                "shepherd",
                same,
                format!(
                    "{} {} (protocol {}{})",
                    hello.exe.display(),
                    hello.version,
                    hello.protocol,
                    if same {
                        String::new()
                    } else {
                        format!(
                            "; this one speaks {}: install the same version there",
                            shepherd_core::protocol::PROTOCOL_VERSION
                        )
                    }
                ),
            );
            finding(
                "project",
                hello.project_exists,
                def.project_path.display().to_string(),
            );
            let backend = def.backend.as_str();
            finding(
                &format!("backend {backend}"),
                hello.backends.get(backend) == Some(&true),
                if hello.backends.get(backend) == Some(&true) {
                    "runs there".to_owned()
                } else {
                    "not available there; set \"backend\" to one it has".to_owned()
                },
            );
            for (program, present) in &hello.programs {
                finding(
                    program,
                    *present,
                    match (*present, program.as_str()) {
                        (true, _) => "on PATH".to_owned(),
                        // bubblewrap is what confines a sandboxed sheep.
                        (false, "bwrap") => "not on PATH: sheep with a sandbox cannot run there \
                                             (install bubblewrap: apt-get install bubblewrap)"
                            .to_owned(),
                        (false, _) => "not on PATH (needed only by sheep that run it)".to_owned(),
                    },
                );
            }
        }
    }
    let essential = ["reachable", "shepherd", "project"];
    let ready = findings
        .iter()
        .filter(|f| essential.contains(&f.what.as_str()) || f.what.starts_with("backend "))
        .all(|f| f.ok);
    #[derive(Serialize)]
    struct Report<'a> {
        host: &'a str,
        ready: bool,
        findings: &'a [Finding],
    }
    printer.emit(
        &Report {
            host: name,
            ready,
            findings: &findings,
        },
        || {
            let mut lines = vec![format!(
                "host {name}: {}",
                if ready {
                    "ready for remote sheep"
                } else {
                    "not ready"
                }
            )];
            lines.extend(findings.iter().map(|f| {
                format!(
                    "  {} {:<10} {}",
                    if f.ok { "ok  " } else { "MISS" },
                    f.what,
                    f.detail
                )
            }));
            lines.join("\n")
        },
    );
    Ok(if ready {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(ErrorCode::HostUnreachable.exit_status())
    })
}
