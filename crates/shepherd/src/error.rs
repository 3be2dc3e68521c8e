//! The one error type the binary renders.
//!
//! Library errors are typed where they arise; each command converts them into a [`CliError`]
//! with a stable machine code (the same codes the broker sends on the wire), a one-line message
//! that names the bad value and what would be accepted, and an exit status.

use std::fmt;

/// A failure ready to be shown to a person or a program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CliError {
    /// Stable machine-readable code, e.g. `invalid_label`, `not_found`.
    pub(crate) code: String,
    /// One line, naming the bad value and what would be accepted.
    pub(crate) message: String,
    /// The process exit status.
    pub(crate) exit: u8,
}

impl CliError {
    /// A failure with exit status 1.
    pub(crate) fn new(code: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            code: code.into(),
            message: message.into(),
            exit: 1,
        }
    }

    /// The same failure with another exit status.
    pub(crate) fn with_exit(mut self, exit: u8) -> Self {
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
        Self::new("environment", err.to_string())
    }
}
