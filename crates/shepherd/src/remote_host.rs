//! What the `shepherd` binary does with the broker crate's remote machinery: the host's side of
//! a remote sheep (`shepherd remote <op>`, run by a broker over SSH), and the probe
//! `shepherd hosts check` asks a host with.
//!
//! Both live in the binary because they run the broker crate's code, and no front end links
//! the broker: the command-line crate's `hosts check` gets the probe handed in (its
//! `hosts::Probe`).

use std::io::Read as _;
use std::process::ExitCode;

use shepherd_cli::Printer;
use shepherd_cli::hosts::HostProbe;
use shepherd_client::{CliError, Context};
use shepherd_core::error_code::ErrorCode;
use shepherd_core::hosts::HostDef;

/// The arguments of `shepherd remote`.
#[derive(Debug, clap::Args)]
pub(crate) struct RemoteArgs {
    /// The op (hello, launch, read, close, presence, files, branch, agent); its JSON request
    /// comes on standard input. `serve` answers many: one JSON line each, until input ends.
    op: String,
}

/// Runs `shepherd remote <op>` on a host: one JSON request in, one JSON answer out.
pub(crate) fn remote(args: &RemoteArgs, printer: &Printer) -> Result<ExitCode, CliError> {
    let ctx = Context::from_env()?;
    if args.op == shepherd_broker::remote::ops::SERVE {
        return serve(&ctx);
    }
    let mut input = String::new();
    std::io::stdin()
        .read_to_string(&mut input)
        .map_err(|err| CliError::new(ErrorCode::Io, format!("reading the request: {err}")))?;
    let answer = shepherd_broker::remote::host::run_op(&args.op, &input, &ctx.dirs)
        .map_err(|err| CliError::new(ErrorCode::InvalidRequest, err.to_string()))?;
    printer.line(&answer);
    Ok(ExitCode::SUCCESS)
}

/// `shepherd remote serve`: many ops over one session. The session's own standard input and
/// output move to private descriptors first, and the process's are pointed at `/dev/null`, so
/// nothing an op starts (a supervisor, tmux, git) can read the next op or write into an answer.
fn serve(ctx: &Context) -> Result<ExitCode, CliError> {
    use std::os::fd::AsFd as _;
    let io_error = |what: &str, err: std::io::Error| {
        CliError::new(ErrorCode::Io, format!("{what} for `remote serve`: {err}"))
    };
    let private = |fd: std::os::fd::BorrowedFd<'_>| {
        rustix::io::fcntl_dupfd_cloexec(fd, 3).map_err(std::io::Error::from)
    };
    let input = private(std::io::stdin().as_fd()).map_err(|err| io_error("keeping stdin", err))?;
    let output =
        private(std::io::stdout().as_fd()).map_err(|err| io_error("keeping stdout", err))?;
    let null = rustix::fs::open(
        "/dev/null",
        rustix::fs::OFlags::RDWR | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )
    .map_err(|err| io_error("opening /dev/null", err.into()))?;
    rustix::stdio::dup2_stdin(&null)
        .and_then(|()| rustix::stdio::dup2_stdout(&null))
        .map_err(|err| io_error("detaching stdio", err.into()))?;
    shepherd_broker::remote::host::serve(
        std::io::BufReader::new(std::fs::File::from(input)),
        std::io::BufWriter::new(std::fs::File::from(output)),
        &ctx.dirs,
    )
    .map_err(|err| io_error("answering", err))?;
    Ok(ExitCode::SUCCESS)
}

/// `hosts check`'s probe: the broker's own `hello` to the host over SSH, as the check reads it.
pub(crate) fn probe(def: &HostDef, programs: Vec<String>) -> Result<HostProbe, String> {
    shepherd_broker::remote::probe(def, programs).map(|hello| HostProbe {
        exe: hello.exe,
        version: hello.version,
        protocol: hello.protocol,
        project_exists: hello.project_exists,
        backends: hello.backends,
        programs: hello.programs,
    })
}
