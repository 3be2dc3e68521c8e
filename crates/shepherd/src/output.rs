//! Everything the binary prints goes through [`Printer`], so `--json` always yields exactly one
//! compact JSON document on one line and errors are rendered in one place.

use std::io::Write;
use std::process::ExitCode;

use serde::Serialize;

use crate::error::CliError;

/// Prints command results as human text or as one JSON line.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Printer {
    json: bool,
}

impl Printer {
    pub(crate) fn new(json: bool) -> Self {
        Self { json }
    }

    /// Whether `--json` was given.
    pub(crate) fn is_json(self) -> bool {
        self.json
    }

    /// Prints `value` as one JSON line with `--json`, otherwise the text `human` builds.
    pub(crate) fn emit<T: Serialize>(self, value: &T, human: impl FnOnce() -> String) {
        if self.json {
            let line = serde_json::to_string(value).expect("results serialise to JSON");
            write_stdout(&line);
        } else {
            let text = human();
            if !text.is_empty() {
                write_stdout(text.trim_end_matches('\n'));
            }
        }
    }

    /// Renders `err`: one human line on stderr and, with `--json`, `{"error":{code,message}}`
    /// on stdout. Returns the exit status to end the process with.
    pub(crate) fn error(self, err: &CliError) -> ExitCode {
        let hint = err.code.hint();
        if self.json {
            let mut error = serde_json::json!({ "code": err.code, "message": err.message });
            if let Some(hint) = hint {
                error["hint"] = hint.into();
            }
            write_stdout(&serde_json::json!({ "error": error }).to_string());
        }
        let mut stderr = std::io::stderr().lock();
        let _ignored = writeln!(stderr, "shepherd: {}", err.message);
        if let Some(hint) = hint {
            let _ignored = writeln!(stderr, "hint: {hint}");
        }
        ExitCode::from(err.exit.max(1))
    }
}

fn write_stdout(text: &str) {
    let mut stdout = std::io::stdout().lock();
    // A closed pipe (e.g. `| head`) is not an error worth reporting.
    let _ignored = writeln!(stdout, "{text}");
}
