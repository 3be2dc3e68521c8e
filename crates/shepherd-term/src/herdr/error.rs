//! Herdr failures as values: Herdr's own structured error codes kept as a typed code, and our
//! transport failures (no server, timeout, unreadable reply, too old a protocol) each with one
//! line that names the socket, method or value involved. The backend turns them into
//! [`crate::TermError`]s with the context of the operation that failed.

use std::fmt;
use std::path::PathBuf;

use crate::TermError;

/// A structured error code from Herdr's `{"error":{"code":..}}` replies.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// `pane_not_found`: no pane with that id (closed ids are never reused).
    PaneNotFound,
    /// `agent_not_found`: no recognised agent in that pane, or no agent with that name.
    AgentNotFound,
    /// `workspace_not_found`.
    WorkspaceNotFound,
    /// `tab_not_found`.
    TabNotFound,
    /// `not_found`: the generic spelling some methods use.
    NotFound,
    /// `timeout`: a wait with `timeout_ms` ran out on Herdr's side.
    Timeout,
    /// `invalid_request`: unknown method or missing parameters.
    InvalidRequest,
    /// `invalid_params`: parameters present but unacceptable.
    InvalidParams,
    /// `agent_not_idle`: the agent is working.
    AgentNotIdle,
    /// `agent_prompt_stalled`: a prompt saw no lifecycle change in time.
    AgentPromptStalled,
    /// Any code this Shepherd does not know, kept verbatim.
    Other(String),
}

impl ErrorCode {
    /// Parses Herdr's spelling; unknown codes are kept as [`ErrorCode::Other`].
    pub fn parse(code: &str) -> Self {
        match code {
            "pane_not_found" => Self::PaneNotFound,
            "agent_not_found" => Self::AgentNotFound,
            "workspace_not_found" => Self::WorkspaceNotFound,
            "tab_not_found" => Self::TabNotFound,
            "not_found" => Self::NotFound,
            "timeout" => Self::Timeout,
            "invalid_request" => Self::InvalidRequest,
            "invalid_params" => Self::InvalidParams,
            "agent_not_idle" => Self::AgentNotIdle,
            "agent_prompt_stalled" => Self::AgentPromptStalled,
            other => Self::Other(other.to_owned()),
        }
    }

    /// Herdr's spelling.
    pub fn as_str(&self) -> &str {
        match self {
            Self::PaneNotFound => "pane_not_found",
            Self::AgentNotFound => "agent_not_found",
            Self::WorkspaceNotFound => "workspace_not_found",
            Self::TabNotFound => "tab_not_found",
            Self::NotFound => "not_found",
            Self::Timeout => "timeout",
            Self::InvalidRequest => "invalid_request",
            Self::InvalidParams => "invalid_params",
            Self::AgentNotIdle => "agent_not_idle",
            Self::AgentPromptStalled => "agent_prompt_stalled",
            Self::Other(code) => code,
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A failed exchange with Herdr.
#[derive(Debug, thiserror::Error)]
pub enum HerdrError {
    /// Nothing accepts connections on the socket (no server, or a stale socket file).
    #[error("no Herdr server answers at {}: {source}", path.display())]
    Unreachable {
        /// The socket tried.
        path: PathBuf,
        /// Why the connection failed.
        #[source]
        source: std::io::Error,
    },
    /// Herdr did not answer before the deadline.
    #[error("Herdr at {} did not answer `{method}` within {timeout_ms} ms", path.display())]
    TimedOut {
        /// The socket.
        path: PathBuf,
        /// The request's method.
        method: String,
        /// The time it had.
        timeout_ms: u128,
    },
    /// The connection failed mid-exchange.
    #[error("talking to Herdr at {} (`{method}`): {source}", path.display())]
    Io {
        /// The socket.
        path: PathBuf,
        /// The request's method.
        method: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The server closed the connection without a reply (a server that is stopping does).
    #[error("Herdr at {} closed the connection without answering `{method}`", path.display())]
    NoReply {
        /// The socket.
        path: PathBuf,
        /// The request's method.
        method: String,
    },
    /// Herdr answered with a structured error.
    #[error("Herdr refused `{method}` ({code}): {message}")]
    Api {
        /// The request's method.
        method: String,
        /// Herdr's code.
        code: ErrorCode,
        /// Herdr's message.
        message: String,
    },
    /// Herdr's reply could not be understood.
    #[error("Herdr sent an unreadable reply to `{method}`: {detail}")]
    Protocol {
        /// The request's method.
        method: String,
        /// What was wrong.
        detail: String,
    },
    /// The server speaks a protocol older than Shepherd needs.
    #[error(
        "Herdr {version} at {} speaks protocol {found}; Shepherd needs protocol {} or newer: upgrade Herdr",
        path.display(),
        super::MIN_PROTOCOL
    )]
    ProtocolTooOld {
        /// The socket.
        path: PathBuf,
        /// Herdr's version string.
        version: String,
        /// The protocol it reported.
        found: u32,
    },
    /// A session name Herdr would not accept as a directory name.
    #[error("invalid Herdr session name {0:?}: use letters, digits, `-`, `_` or `.`")]
    BadSession(String),
    /// No socket could be derived from the environment.
    #[error(
        "cannot find the Herdr socket: none of HERDR_SOCKET_PATH, XDG_CONFIG_HOME or HOME is set"
    )]
    NoSocketPath,
    /// `herdr server` could not be started or did not come up in time.
    #[error("could not start a Herdr server with `{} server`: {detail}", bin.display())]
    ServerStart {
        /// The `herdr` executable used.
        bin: PathBuf,
        /// What went wrong.
        detail: String,
    },
}

impl HerdrError {
    /// Herdr's structured code, when Herdr answered with one.
    pub fn code(&self) -> Option<&ErrorCode> {
        match self {
            Self::Api { code, .. } => Some(code),
            _ => None,
        }
    }

    /// Whether Herdr said the pane does not exist (`pane_not_found`, or the generic
    /// `not_found`).
    pub fn is_pane_gone(&self) -> bool {
        matches!(
            self.code(),
            Some(ErrorCode::PaneNotFound | ErrorCode::NotFound)
        )
    }

    /// Whether no server could be reached at all (as opposed to a server that answered).
    pub fn is_unreachable(&self) -> bool {
        matches!(self, Self::Unreachable { .. })
    }

    /// Whether no server listens on the socket any more (nothing accepts there, or the socket
    /// file is gone): its panes went with it. A socket we may not open says nothing of the
    /// kind.
    pub fn is_server_gone(&self) -> bool {
        matches!(self, Self::Unreachable { source, .. }
            if matches!(source.kind(), std::io::ErrorKind::ConnectionRefused | std::io::ErrorKind::NotFound))
    }
}

impl From<HerdrError> for TermError {
    /// Without more context, an unreachable or unusable server makes the backend unavailable;
    /// anything else is reported as a launch failure. Operations with more context (read,
    /// close) map errors themselves.
    fn from(err: HerdrError) -> Self {
        match err {
            HerdrError::Unreachable { .. }
            | HerdrError::ProtocolTooOld { .. }
            | HerdrError::BadSession(_)
            | HerdrError::NoSocketPath
            | HerdrError::ServerStart { .. } => Self::Unavailable(err.to_string()),
            other => Self::Launch(other.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_keep_unknown_ones() {
        for code in [
            "pane_not_found",
            "agent_not_found",
            "workspace_not_found",
            "tab_not_found",
            "not_found",
            "timeout",
            "invalid_request",
            "invalid_params",
            "agent_not_idle",
            "agent_prompt_stalled",
            "brand_new_code",
        ] {
            assert_eq!(ErrorCode::parse(code).as_str(), code);
        }
        assert_eq!(
            ErrorCode::parse("brand_new_code"),
            ErrorCode::Other("brand_new_code".into())
        );
    }
}
