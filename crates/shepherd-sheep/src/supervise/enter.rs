//! `shepherd sandbox-enter`: the first program inside a sheep's sandbox, which locks what the
//! sandbox's mounts and namespaces cannot, then becomes the sheep's program.
//!
//! - **The terminal**: a sheep in a tmux or Herdr pane keeps its controlling terminal (so a
//!   confined TUI still resizes and takes Ctrl-C), and a program with a terminal could push
//!   keystrokes into it (`TIOCSTI`) or, on a virtual console, read and paste it (`TIOCLINUX`):
//!   a line pushed there would run in the user's shell once the sheep is gone. A seccomp
//!   filter answers both `ioctl`s with `EPERM`, for the sheep and everything it starts (a
//!   headless sheep has no terminal at all: bubblewrap starts it in a session of its own).
//! - **The host's abstract unix sockets** (X11, some D-Bus buses, other agents' sockets) live
//!   in the network namespace, which a sheep with `network: all` shares with the machine. A
//!   Landlock scope (Linux 6.12, Landlock ABI 6) refuses connections to abstract sockets made
//!   outside the sandbox, and signals to processes outside it; on an older kernel the scope is
//!   left out, as the docs say.
//! - With `network: model`, it runs the bridge ([`super::net_bridge`]) that carries the
//!   sheep's connections to the allow-listing proxy outside.
//!
//! Both locks set `no_new_privs`, which a confined sheep never needs: nothing inside gains
//! privileges (bubblewrap already dropped every capability).

// The entry owns the sheep's process inside the sandbox: it becomes it, or starts it.
#![allow(clippy::disallowed_types)]

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use shepherd_client::CliError;
use shepherd_core::error_code::ErrorCode;

/// The `ioctl` requests refused: `TIOCSTI` pushes a byte into the terminal's input queue,
/// `TIOCLINUX` does virtual console operations, selection and paste among them.
const REFUSED_IOCTLS: [libc::Ioctl; 2] = [libc::TIOCSTI, libc::TIOCLINUX];

#[derive(Debug, Clone, Args)]
pub struct EnterArgs {
    /// With `network: model`: the allow-listing proxy's socket, bound into the sandbox; the
    /// bridge to it runs first and starts the program.
    #[arg(long, value_name = "FILE")]
    bridge: Option<PathBuf>,
    /// `HOST:PORT` the sheep may reach through the bridge (repeatable): loopback ones are
    /// listened on inside.
    #[arg(long, value_name = "HOST:PORT", requires = "bridge")]
    allow: Vec<String>,
    /// The sheep's program and arguments.
    #[arg(last = true, required = true)]
    program: Vec<String>,
}

pub fn run(args: &EnterArgs) -> Result<ExitCode, CliError> {
    guard_terminal()?;
    scope_outside();
    match &args.bridge {
        Some(socket) => super::net_bridge::run(socket, &args.allow, &args.program),
        None => {
            use std::os::unix::process::CommandExt as _;
            let (program, rest) = args.program.split_first().expect("clap requires a program");
            let err = std::process::Command::new(program).args(rest).exec();
            Err(CliError::new(
                ErrorCode::SpawnFailed,
                format!("could not run `{program}`: {err}"),
            )
            .with_exit(127))
        }
    }
}

/// Refuses `TIOCSTI` and `TIOCLINUX` from here on. Fails where seccomp cannot be set: a sheep
/// in a pane must not start with its terminal unguarded.
fn guard_terminal() -> Result<(), CliError> {
    let filter = terminal_filter().map_err(|why| {
        CliError::new(
            ErrorCode::SandboxUnavailable,
            format!("the sandbox's terminal guard cannot be made here: {why}"),
        )
    })?;
    seccompiler::apply_filter(&filter).map_err(|err| {
        CliError::new(
            ErrorCode::SandboxUnavailable,
            format!("the sandbox's terminal guard cannot be set: {err}"),
        )
    })
}

/// The seccomp program: `ioctl(_, TIOCSTI | TIOCLINUX, …)` fails with `EPERM`; everything else
/// is allowed.
fn terminal_filter() -> Result<seccompiler::BpfProgram, String> {
    use seccompiler::{
        SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
        SeccompRule, TargetArch,
    };
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(|err| err.to_string())?;
    let request = |value: u64| -> Result<SeccompRule, String> {
        // The request is an `unsigned long` whose upper half the kernel ignores for these.
        let condition = SeccompCondition::new(1, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, value)
            .map_err(|err| err.to_string())?;
        SeccompRule::new(vec![condition]).map_err(|err| err.to_string())
    };
    // libc's `Ioctl` is `c_ulong` with glibc and `c_int` with musl: the conversion is real there.
    #[allow(clippy::useless_conversion)]
    let refused = REFUSED_IOCTLS
        .iter()
        .map(|ioctl| request(u64::try_from(*ioctl).unwrap_or_default()))
        .collect::<Result<Vec<_>, _>>()?;
    let rules = [(libc::SYS_ioctl, refused)].into_iter().collect();
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(u32::try_from(rustix::io::Errno::PERM.raw_os_error()).unwrap_or(1)),
        arch,
    )
    .map_err(|err| err.to_string())?;
    filter
        .try_into()
        .map_err(|err: seccompiler::BackendError| err.to_string())
}

/// Scopes the sandbox off the host's abstract unix sockets and processes, where the kernel's
/// Landlock offers it; a kernel without it is left as it is (network namespaces still cover
/// `network: model` and `none`).
fn scope_outside() {
    use landlock::{ABI, Access, CompatLevel, Compatible, Ruleset, RulesetAttr, Scope};
    let restricted = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .scope(Scope::from_all(ABI::V6))
        .and_then(Ruleset::create)
        .and_then(landlock::RulesetCreated::restrict_self);
    if let Err(err) = restricted {
        tracing::debug!("no Landlock scope for this sandbox: {err}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_terminal_filter_compiles_for_this_machine() {
        let program = terminal_filter().unwrap();
        assert!(program.len() > 4, "{program:?}");
    }
}
