//! The binary's two ends of output: the writer every command's [`Printer`] writes through, and
//! the one place an error is rendered (a human line on stderr and, with `--json`,
//! `{"error":{code,message,hint}}` on stdout).

use std::io::Write;
use std::process::ExitCode;

use shepherd_cli::Printer;
use shepherd_client::CliError;

/// A printer writing to this process's stdout.
pub(crate) fn printer(json: bool) -> Printer {
    Printer::new(json, write_stdout)
}

/// Renders `err` and returns the exit status to end the process with.
pub(crate) fn error(json: bool, err: &CliError) -> ExitCode {
    let hint = err.code.hint();
    if json {
        let mut error = serde_json::json!({ "code": err.code, "message": err.message });
        if let Some(hint) = hint {
            error["hint"] = hint.into();
        }
        write_stdout(&format!("{}\n", serde_json::json!({ "error": error })));
    }
    let mut stderr = std::io::stderr().lock();
    // A message may quote a sheep (the end of its output when it failed to start).
    let message = shepherd_core::printable::printable(&err.message);
    let _ignored = writeln!(stderr, "shepherd: {message}");
    if let Some(hint) = hint {
        let _ignored = writeln!(stderr, "hint: {hint}");
    }
    ExitCode::from(err.exit.max(1))
}

fn write_stdout(text: &str) {
    let mut stdout = std::io::stdout().lock();
    // A closed pipe (e.g. `| head`) is not an error worth reporting.
    let _ignored = stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush());
}
