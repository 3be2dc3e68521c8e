//! The broker's one error type: a stable wire code and one line for the caller. Every refusal
//! leaves state unchanged; failures after an accepted change say what was changed.

use shepherd_core::error_code::ErrorCode;
use shepherd_core::herd::HerdError;
use shepherd_core::protocol::WireError;

/// A failed request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct BrokerError {
    /// Stable machine code.
    pub code: ErrorCode,
    /// One human line.
    pub message: String,
}

impl BrokerError {
    /// An error with `code` and `message`.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }

    /// A request whose parameters do not parse.
    pub fn invalid_params(method: &str, err: &impl std::fmt::Display) -> Self {
        Self::new(
            ErrorCode::InvalidRequest,
            format!("invalid parameters for `{method}`: {err}"),
        )
    }

    /// The wire form.
    pub fn to_wire(&self) -> WireError {
        WireError {
            code: self.code,
            message: self.message.clone(),
        }
    }
}

impl From<HerdError> for BrokerError {
    fn from(err: HerdError) -> Self {
        Self::new(err.code, err.message)
    }
}

impl From<shepherd_term::TermError> for BrokerError {
    fn from(err: shepherd_term::TermError) -> Self {
        Self::new(err.code(), err.to_string())
    }
}

/// The result of a broker operation.
pub(crate) type BrokerResult<T> = Result<T, BrokerError>;
