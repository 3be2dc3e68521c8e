//! The one error type the binary renders.
//!
//! Library errors are typed where they arise; each command converts them into a [`CliError`]
//! with a stable machine code (the same codes the broker sends on the wire), a one-line message
//! that names the bad value and what would be accepted, and an exit status.

use shepherd_core::error_code::ErrorCode;
use std::fmt;

/// A failure ready to be shown to a person or a program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CliError {
    /// Stable machine-readable code, e.g. `invalid_label`, `not_found`.
    pub code: ErrorCode,
    /// One line, naming the bad value and what would be accepted.
    pub message: String,
    /// The process exit status.
    pub exit: u8,
}

impl CliError {
    /// A failure with the exit status the catalogue gives its code.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            exit: code.exit_status(),
        }
    }

    /// The same failure with another exit status.
    pub fn with_exit(mut self, exit: u8) -> Self {
        self.exit = exit;
        self
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<shepherd_core::dirs::DirsError> for CliError {
    fn from(err: shepherd_core::dirs::DirsError) -> Self {
        Self::new(ErrorCode::Environment, err.to_string())
    }
}
